#!/usr/bin/env bash
# Restart of a loaded server on the embedded store (docs/performance.md §5).
#
# Builds the binary and scripts/loadgen, issues a live API key into a fresh temporary data
# folder, starts the server, seeds a city of EVENTS events (loadgen seed), prints the server's
# resident memory 2 s after, stops it with SIGTERM, starts it again on the same folder, and
# prints how long GET /health took to answer. It then times a 1 000 m query at PLACES places
# across the city, each place asked twice (curl, a new connection each): the first time is
# what a client meets after a restart, the second what it meets once the area is cached. The
# server is stopped and the folder removed on exit, whatever happens.
#
# Environment (defaults in brackets):
#   EVENTS [100000]  events to publish     CLIENTS [64]  concurrent clients of the seed
#   PLACES [8]       places queried         SEED [1]      city
#   SERVER_BIN       a server binary to measure instead of building this checkout
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=lib/server.sh
source "$root/scripts/lib/server.sh"

events=${EVENTS:-100000}
clients=${CLIENTS:-64}
places=${PLACES:-8}
seed=${SEED:-1}

scratch restart

build_with_key "$tmp" "restart test"

log "seed: publishing $events events"
start_roadevents "$tmp/roadevents" "$tmp/server.log"
"$tmp/loadgen" seed -events "$events" -base "$base" -clients "$clients" -seed "$seed" | grep -v '^{"phase"'
sleep 2
echo "resident memory 2 s after: $(awk '/^VmRSS:/ {printf "%.0f MiB", $2 / 1024}' "/proc/$server_pid/status")"

log "restart"
stop_roadevents
start=$(date +%s.%N)
start_roadevents "$tmp/roadevents" "$tmp/server2.log"
awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "GET /health answered %.2f s after the start\n", e - s }'
grep -o '"msg":"area cache warmed"[^}]*' "$tmp/server2.log" || true

log "1 000 m queries at $places places: first, then again"
query() {
	curl -fsS -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $LOADGEN_API_KEY" \
		"$base/v1/events?lat=$1&lon=$2&radius=1000"
}
for i in $(seq 1 "$places"); do
	# Across the city's 50 km square (scripts/loadgen), away from its centre.
	lat=$(awk -v i="$i" -v n="$places" 'BEGIN { printf "%.5f", 48.1371 - 0.18 + 0.36 * i / (n + 1) }')
	lon=$(awk -v i="$i" -v n="$places" 'BEGIN { printf "%.5f", 11.5754 + 0.25 - 0.5 * i / (n + 1) }')
	first=$(query "$lat" "$lon")
	again=$(query "$lat" "$lon")
	awk -v a="$first" -v b="$again" -v lat="$lat" -v lon="$lon" \
		'BEGIN { printf "%s,%s: first %.1f ms, again %.1f ms\n", lat, lon, a * 1000, b * 1000 }'
done
