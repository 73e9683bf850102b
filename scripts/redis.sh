#!/usr/bin/env bash
# Runs Redis for the stream relay's tests (shared/relay, docs/architecture.md §3): on AWS the
# relay writes to ElastiCache Serverless for Valkey, which speaks the same protocol; here
# Debian's redis-server, installed with apt when missing, on loopback on a free port, without
# persistence. Like ElastiCache Serverless it runs in cluster mode with every slot on one node,
# so a command whose keys lie in two slots fails here as it would there. The starting, stopping and pid/address bookkeeping are scripts/lib/service.sh's.
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

# answers succeeds once the server serves keys (service.sh passes http://127.0.0.1:PORT): a
# fresh cluster node owns no slot, so the first call gives it all of them; the cluster state
# turns ok a moment later.
answers() {
  local hostport=${1#*://} port
  port=${hostport##*:}
  [[ $(redis-cli -p "$port" PING 2>/dev/null) == PONG ]] || return 1
  redis-cli -p "$port" CLUSTER INFO | grep -q '^cluster_slots_assigned:16384' ||
    redis-cli -p "$port" CLUSTER ADDSLOTSRANGE 0 16383 >/dev/null
  redis-cli -p "$port" CLUSTER INFO | grep -q '^cluster_state:ok'
}

# service_command is service.sh's hook: loopback only, no data written to disk (the cluster
# file only records the node's slots, and the last start's is removed).
# The cluster bus gets a free port of its own: by default it is the port plus 10 000, which does
# not exist above 55 535 (Redis then refuses to start).
service_command() {
  rm -f "$dir"/nodes-*.conf
  cmd=(redis-server --bind 127.0.0.1 --port "$1" --save "" --appendonly no --daemonize no --protected-mode yes
    --cluster-enabled yes --cluster-config-file "$dir/nodes-$1.conf" --cluster-port "$(free_port)")
}

service_main "$@"
