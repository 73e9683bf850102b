# shellcheck shell=bash
# Shared by scripts/dynamodb-local.sh and scripts/stripe-mock.sh: running one local test service
# from a cache folder of the repository, on a free loopback port, with its pid and base URL in
# files so that a second start (another test run in this checkout) reuses it and stop ends it.
#
# The sourcing script sets, before calling service_main "$@":
#   service         name used in messages and log lines (dynamodb-local, stripe-mock)
#   dir             cache folder; pidfile, urlfile, logfile inside it
#   url_command     the command that prints the running instance's base URL (endpoint, address)
#   port            port to use; empty picks a free loopback port
#   cmdline_pattern what /proc/<pid>/cmdline must contain for the pid to be ours
# and defines:
#   install              fetch or build the service into $dir (idempotent)
#   answers URL          succeed when URL serves the service's API
#   service_command PORT fill the array cmd with the command that serves on 127.0.0.1:PORT;
#                        it runs in $dir and may die when a tool it needs is missing

readonly START_TIMEOUT_SECONDS=60

die() {
  echo "$service: $*" >&2
  exit 1
}

# running succeeds when the pid file names a live process of this service.
running() {
  [[ -f $pidfile && -f $urlfile ]] || return 1
  local pid
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: the process must be the service's own.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$cmdline_pattern"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null && return
  # Fallback without Python: try random high ports until bash cannot connect to one.
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

start() {
  if running; then
    cat "$urlfile"
    return
  fi
  install
  command -v curl >/dev/null || die "curl is needed to check $service"
  rm -f "$pidfile" "$urlfile"
  port=${port:-$(free_port)}
  local url=http://127.0.0.1:$port
  local -a cmd
  service_command "$port"
  echo "--- $(date -u +%FT%TZ) starting on port $port: ${cmd[*]}" >>"$logfile"
  # setsid: the server outlives the shell that started it and gets no terminal signals.
  # 9>&-: the server must not hold the lock (fd 9) for as long as it runs. It runs in the
  # cache folder so that whatever it writes into its working directory stays there.
  (cd "$dir" && exec setsid nohup "${cmd[@]}") >>"$logfile" 2>&1 </dev/null 9>&- &
  local pid=$!
  echo "$pid" >"$pidfile"
  local deadline=$((SECONDS + START_TIMEOUT_SECONDS))
  until answers "$url"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$pidfile"
      die "exited while starting; see $logfile"
    fi
    if ((SECONDS >= deadline)); then
      kill "$pid" 2>/dev/null || true
      rm -f "$pidfile"
      die "did not answer within ${START_TIMEOUT_SECONDS}s; see $logfile"
    fi
    sleep 0.2
  done
  echo "$url" >"$urlfile"
  echo "$url"
}

stop() {
  if ! running; then
    rm -f "$pidfile" "$urlfile"
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
  rm -f "$pidfile" "$urlfile"
  echo "--- $(date -u +%FT%TZ) stopped pid $pid" >>"$logfile"
}

# One command at a time per cache folder: two starts at once (say, two test runs in one
# checkout) would otherwise both launch a server and race on the pid file.
lock() {
  mkdir -p "$dir"
  exec 9>"$dir/lock"
  flock -w 600 9 || die "another $service script kept $dir/lock for 10 minutes"
}

service_main() {
  case ${1:-} in
  start) lock && start ;;
  stop) lock && stop ;;
  "$url_command")
    running || die "not running (start it with: $0 start)"
    cat "$urlfile"
    ;;
  pid)
    running || die "not running (start it with: $0 start)"
    cat "$pidfile"
    ;;
  install) lock && install ;;
  *)
    echo "usage: $0 start|stop|$url_command|pid|install" >&2
    exit 2
    ;;
  esac
}
