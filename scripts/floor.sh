#!/usr/bin/env bash
# What this machine makes a durable publish wait before the server's own work, set beside what
# a publish takes (docs/performance.md §13).
#
# Builds the binary and scripts/loadgen, issues a live API key into a fresh temporary data
# folder, starts the server, and runs `loadgen floor` RUNS times: a bare net/http round trip
# on loopback, an append of 300 bytes synced with fdatasync in the server's data folder (as
# its write-ahead log appends), and POST /v1/events on the server, each REQUESTS times at RATE
# a second from one client, each request timed from when it was sent. An acknowledged publish
# pays the round trip and the sync, and a live delivery comes after the sync: their sum is the
# least either could take on this machine, whatever the server did. The median of each
# figure over the runs ends the output. The server is stopped and the folder removed on exit,
# whatever happens.
#
# Environment (defaults in brackets):
#   RUNS [3]  runs   REQUESTS [1000]  requests per probe and run   RATE [200]  per second
#   SERVER_BIN  a server binary to measure instead of building this checkout
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=lib/server.sh
source "$root/scripts/lib/server.sh"

runs=${RUNS:-3}
requests=${REQUESTS:-1000}
rate=${RATE:-200}

scratch floor

build_with_key "$tmp" "floor test"
start_roadevents "$tmp/roadevents" "$tmp/server.log"

for run in $(seq 1 "$runs"); do
	log "run $run of $runs: $requests requests per probe at $rate a second"
	"$tmp/loadgen" floor -dir "$tmp/data" -base "$base" -requests "$requests" -rate "$rate" | tee -a "$tmp/results" | grep -v '^{"phase"'
done

log "median of $runs runs"
"$tmp/loadgen" median "$tmp/results" | grep -v '^{"phase"'
