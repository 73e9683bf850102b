#!/usr/bin/env bash
# Load test of the events routes on the local server (`go run .`, embedded store).
#
# Builds the binary and scripts/loadgen, issues a live API key into a fresh temporary data
# folder (roadevents apikey issue), starts the server on a free loopback port, seeds a city of
# EVENTS events, then measures GET /v1/events at radius 1000 m and 9780 m (spec 8's maximum)
# RUNS times each and prints the median of each figure. The server is stopped and the folder
# removed on exit, whatever happens.
#
# Environment (defaults in brackets):
#   EVENTS [100000]  events to publish          CLIENTS [64]  concurrent keep-alive clients
#   DURATION [20s]   measured time per query run RUNS [3]      query runs per radius
#   SEED [1]         city and query points       KEEP_LOG      set to keep the server log
# Exit status is non-zero when any phase had more than a few failed requests.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)

events=${EVENTS:-100000}
clients=${CLIENTS:-64}
duration=${DURATION:-20s}
runs=${RUNS:-3}
seed=${SEED:-1}
radii=(1000 9780)

log() { printf '\n== %s\n' "$*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/roadevents-load.XXXXXX")
server_pid=
cleanup() {
	status=$?
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [[ -n ${KEEP_LOG:-} && -f $tmp/server.log ]]; then
		cp "$tmp/server.log" "$root/load-server.log" && echo "server log kept in $root/load-server.log" >&2
	fi
	rm -rf "$tmp"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "machine"
echo "cpus: $(nproc)  $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo 2>/dev/null)"
go version
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
echo "EVENTS=$events CLIENTS=$clients DURATION=$duration RUNS=$runs SEED=$seed"

log "building"
go build -o "$tmp/roadevents" .
go build -o "$tmp/loadgen" ./scripts/loadgen

log "issuing a live API key"
# The embedded store admits one process at a time: the key is issued before the server starts.
export ROADEVENTS_STORE=embedded ROADEVENTS_DATA="$tmp/data"
LOADGEN_API_KEY=$("$tmp/roadevents" apikey issue -org org_loadtest -env live -label "load test")
export LOADGEN_API_KEY

log "starting the server"
# Port 0: the kernel picks a free port and the server prints the address it got.
"$tmp/roadevents" -addr 127.0.0.1:0 >"$tmp/server.log" 2>&1 &
server_pid=$!
base=
for _ in $(seq 1 300); do
	base=$(sed -n 's/^road events service on \(http:[^ ]*\).*/\1/p' "$tmp/server.log" | head -n 1)
	[[ -n $base ]] && break
	kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/server.log" >&2; echo "the server exited" >&2; exit 1; }
	sleep 0.1
done
[[ -n $base ]] || { cat "$tmp/server.log" >&2; echo "the server did not report its address" >&2; exit 1; }
for _ in $(seq 1 100); do
	curl -fsS "$base/health" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fsS "$base/health" >/dev/null || { echo "GET $base/health failed" >&2; exit 1; }
echo "server on $base (pid $server_pid)"

results="$tmp/results.jsonl"
# phase runs one loadgen phase, shows its table and keeps its result line.
phase() {
	local out
	if ! out=$("$tmp/loadgen" "$@" -base "$base" -clients "$clients" -seed "$seed"); then
		printf '%s\n' "$out"
		echo "loadgen $1 failed" >&2
		return 1
	fi
	printf '%s\n' "$out" | grep -v '^{"phase"'
	printf '%s\n' "$out" | grep '^{"phase"' >>"$results"
}

log "seed: publishing $events events"
phase seed -events "$events"

for run in $(seq 1 "$runs"); do
	for radius in "${radii[@]}"; do
		log "query run $run/$runs at radius $radius m for $duration"
		phase query -radius "$radius" -duration "$duration"
	done
done

log "medians over $runs runs (requests and errors are totals)"
"$tmp/loadgen" median "$results" | grep -v '^{"phase"'
echo
echo "result lines:"
cat "$results"

if grep -qi '"level":"\(ERROR\|WARN\)"' "$tmp/server.log"; then
	log "server warnings and errors"
	grep -i '"level":"\(ERROR\|WARN\)"' "$tmp/server.log" | head -n 20 >&2
fi
