#!/usr/bin/env bash
# Restart of a loaded server on the embedded store (docs/performance.md §5).
#
# Builds the binary and scripts/loadgen, issues a live API key into a fresh temporary data
# folder, starts the server, seeds a city of EVENTS events (loadgen seed), prints the server's
# resident memory 2 s after, stops it with SIGTERM, starts it again on the same folder, and
# prints how long GET /health took to answer. It then times a 1 000 m query at PLACES places
# across the city, each place asked twice (curl, a new connection each): the first time is
# what a client meets after a restart, the second what it meets once the area is cached. Each
# answer's events are counted, and an empty one fails the run: a place outside the seeded city
# would time nothing but an empty area. The server is stopped and the folder removed on exit,
# whatever happens.
#
# Environment (defaults in brackets):
#   EVENTS [100000]  events to publish     CLIENTS [64]  concurrent clients of the seed
#   PLACES [8]       places queried         SEED [1]      city
#   CITY_LAT [48.85], CITY_LON [2.35], CITY_SIDE [50000]: the city's centre and side in metres
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
city_lat=${CITY_LAT:-48.85}
city_lon=${CITY_LON:-2.35}
city_side=${CITY_SIDE:-50000}

scratch restart

build_with_key "$tmp" "restart test"

log "seed: publishing $events events"
start_roadevents "$tmp/roadevents" "$tmp/server.log"
"$tmp/loadgen" seed -events "$events" -base "$base" -clients "$clients" -seed "$seed" \
	-lat "$city_lat" -lon "$city_lon" -side "$city_side" | grep -v '^{"phase"'
sleep 2
echo "resident memory 2 s after: $(awk '/^VmRSS:/ {printf "%.0f MiB", $2 / 1024}' "/proc/$server_pid/status")"

log "restart"
stop_roadevents
start=$(date +%s.%N)
start_roadevents "$tmp/roadevents" "$tmp/server2.log"
awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "GET /health answered %.2f s after the start\n", e - s }'
grep -o '"msg":"area cache warmed"[^}]*' "$tmp/server2.log" || true

log "1 000 m queries at $places places: first, then again"
query() { # prints the time taken and the events of the answer
	curl -fsS -o "$tmp/answer.json" -w '%{time_total}' -H "Authorization: Bearer $LOADGEN_API_KEY" \
		"$base/v1/events?lat=$1&lon=$2&radius=1000"
	echo " $(grep -o '"event_id"' "$tmp/answer.json" | wc -l)"
}
empty=0
for i in $(seq 1 "$places"); do
	# Along the city's diagonal, from 40 % of its side one way to 40 % the other.
	read -r lat lon < <(awk -v i="$i" -v n="$places" -v lat="$city_lat" -v lon="$city_lon" -v side="$city_side" 'BEGIN {
		f = -0.4 + 0.8 * i / (n + 1); m = side / 111320
		printf "%.5f %.5f\n", lat + f * m, lon - f * m / cos(lat * atan2(0, -1) / 180) }')
	answer=$(query "$lat" "$lon")
	read -r first first_n <<<"$answer"
	answer=$(query "$lat" "$lon")
	read -r again again_n <<<"$answer"
	awk -v a="$first" -v b="$again" -v n="$first_n" -v lat="$lat" -v lon="$lon" \
		'BEGIN { printf "%s,%s: %d events, first %.1f ms, again %.1f ms\n", lat, lon, n, a * 1000, b * 1000 }'
	if [ "$first_n" -eq 0 ] || [ "$again_n" -eq 0 ]; then
		empty=$((empty + 1))
	fi
done
if [ "$empty" -gt 0 ]; then
	echo "restart-load: $empty of $places places answered no events: they lie outside the seeded city" >&2
	exit 1
fi
