#!/usr/bin/env bash
# Runs stripe-mock (Stripe's own mock of its API, driven by its OpenAPI description) for the
# billing tests (shared/billing): checkout and portal are tested against it instead of Stripe.
# The binary is built once with `go install` at a pinned version into a cache folder of the
# repository, and started on loopback on a free port.
#
# Usage: scripts/stripe-mock.sh start|stop|address|install
#   start    install if needed, start (unless already running), print the base URL
#   stop     stop the instance this script started
#   address  print the base URL of the running instance (exit 1 when none)
#   install  only install the binary
#
# Environment:
#   ROADEVENTS_STRIPE_MOCK_DIR   cache folder (default: <repo>/.cache/stripe-mock)
#   ROADEVENTS_STRIPE_MOCK_PORT  port to use (default: a free loopback port)
set -euo pipefail

readonly MODULE=github.com/stripe/stripe-mock
readonly VERSION=v0.203.0
readonly START_TIMEOUT_SECONDS=60

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${ROADEVENTS_STRIPE_MOCK_DIR:-$repo/.cache/stripe-mock}
bindir=$dir/bin-$VERSION
bin=$bindir/stripe-mock
pidfile=$dir/stripe-mock.pid
addressfile=$dir/address
logfile=$dir/stripe-mock.log

die() {
  echo "stripe-mock: $*" >&2
  exit 1
}

install() {
  mkdir -p "$dir"
  [[ -x $bin ]] && return
  command -v go >/dev/null || die "go is needed to build $MODULE"
  echo "--- $(date -u +%FT%TZ) go install $MODULE@$VERSION into $bindir" >>"$logfile"
  # GOBIN puts the binary in the cache folder, not in the user's GOPATH; GOFLAGS=-mod=mod keeps
  # the module's own go.mod in charge, whatever the caller's environment says.
  GOBIN=$bindir GOFLAGS=-mod=mod go install "$MODULE@$VERSION" >>"$logfile" 2>&1 ||
    die "go install $MODULE@$VERSION failed; see $logfile"
  [[ -x $bin ]] || die "go install did not produce $bin"
}

# running succeeds when the pid file names a live stripe-mock process.
running() {
  [[ -f $pidfile && -f $addressfile ]] || return 1
  local pid
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: the process must be our binary.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'stripe-mock'
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null && return
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  die "no free port found"
}

# answers succeeds when the address serves the Stripe API (any HTTP answer).
answers() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' -u sk_test_123: "$1/v1/customers" 2>/dev/null) || return 1
  [[ $code != 000 ]]
}

start() {
  if running; then
    cat "$addressfile"
    return
  fi
  install
  command -v curl >/dev/null || die "curl is needed to check stripe-mock"
  rm -f "$pidfile" "$addressfile"
  local port=${ROADEVENTS_STRIPE_MOCK_PORT:-$(free_port)}
  local address=http://127.0.0.1:$port
  # -http-addr binds loopback only. stripe-mock also opens HTTPS, by default on port 12112 of
  # every interface, which a second instance would collide on: keep it on loopback, on a port
  # the system chooses.
  local -a cmd=("$bin" -http-addr "127.0.0.1:$port" -https-addr "127.0.0.1:0")
  echo "--- $(date -u +%FT%TZ) starting: ${cmd[*]}" >>"$logfile"
  # setsid: the server outlives the shell that started it; 9>&-: it must not hold the lock.
  (exec setsid nohup "${cmd[@]}") >>"$logfile" 2>&1 </dev/null 9>&- &
  local pid=$!
  echo "$pid" >"$pidfile"
  local deadline=$((SECONDS + START_TIMEOUT_SECONDS))
  until answers "$address"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$pidfile"
      die "stripe-mock exited while starting; see $logfile"
    fi
    if ((SECONDS >= deadline)); then
      kill "$pid" 2>/dev/null || true
      rm -f "$pidfile"
      die "stripe-mock did not answer within ${START_TIMEOUT_SECONDS}s; see $logfile"
    fi
    sleep 0.2
  done
  echo "$address" >"$addressfile"
  echo "$address"
}

stop() {
  if ! running; then
    rm -f "$pidfile" "$addressfile"
    return
  fi
  local pid
  pid=$(<"$pidfile")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile" "$addressfile"
  echo "--- $(date -u +%FT%TZ) stopped pid $pid" >>"$logfile"
}

# One command at a time per cache folder, as scripts/dynamodb-local.sh does.
lock() {
  mkdir -p "$dir"
  exec 9>"$dir/lock"
  flock -w 600 9 || die "another stripe-mock.sh kept $dir/lock for 10 minutes"
}

case ${1:-} in
start) lock && start ;;
stop) lock && stop ;;
address)
  running || die "not running (start it with: $0 start)"
  cat "$addressfile"
  ;;
install) lock && install ;;
*)
  echo "usage: $0 start|stop|address|install" >&2
  exit 2
  ;;
esac
