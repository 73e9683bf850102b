#!/usr/bin/env bash
# Runs Redis for the stream relay's tests (shared/relay, docs/architecture.md §3): on AWS the
# relay writes to ElastiCache for Valkey, which speaks the same protocol; here Debian's
# redis-server, installed with apt when missing, on loopback on a free port, without
# persistence. The starting, stopping and pid/address bookkeeping are scripts/lib/service.sh's.
#
# Usage: scripts/redis.sh start|stop|address|pid|install
#   start    install if needed, start (unless already running), print http://127.0.0.1:PORT
#            (service.sh's form; the Redis address is the host and port)
#   stop     stop the instance this script started
#   address  print the address of the running instance (exit 1 when none)
#   pid      print the process id of the running instance (exit 1 when none)
#   install  only install the package
#
# Environment:
#   ROADEVENTS_REDIS_DIR   cache folder (default: <repo>/.cache/redis)
#   ROADEVENTS_REDIS_PORT  port to use (default: a free loopback port)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/service.sh
source "$repo/scripts/lib/service.sh"

service=redis
dir=${ROADEVENTS_REDIS_DIR:-$repo/.cache/redis}
pidfile=$dir/redis.pid
urlfile=$dir/address
logfile=$dir/redis.log
url_command=address
port=${ROADEVENTS_REDIS_PORT:-}
cmdline_pattern=redis-server

install() {
  mkdir -p "$dir"
  command -v redis-server >/dev/null && return
  local sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "--- $(date -u +%FT%TZ) apt-get install redis-server" >>"$logfile"
  { $sudo_cmd apt-get update && $sudo_cmd apt-get install -y --no-install-recommends redis-server; } >>"$logfile" 2>&1 ||
    die "apt-get install redis-server failed; see $logfile"
}

# answers succeeds when the address answers PING (service.sh passes http://127.0.0.1:PORT).
answers() {
  local hostport=${1#*://}
  { exec 8<>"/dev/tcp/${hostport%:*}/${hostport##*:}"; } 2>/dev/null || return 1
  printf 'PING\r\n' >&8
  local reply
  read -r -t 2 reply <&8 || { exec 8>&-; return 1; }
  exec 8>&-
  [[ $reply == +PONG* ]]
}

# service_command is service.sh's hook: loopback only, nothing written to disk.
service_command() {
  cmd=(redis-server --bind 127.0.0.1 --port "$1" --save "" --appendonly no --daemonize no --protected-mode yes)
}

service_main "$@"
