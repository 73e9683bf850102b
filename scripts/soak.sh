#!/usr/bin/env bash
# Soak test of the local server (`go run .`, embedded store): a bounded mixed load with
# misbehaving clients (scripts/soak: slow bodies, vanished streams, keys revoked mid-stream),
# which prints the lost acknowledged writes (must be 0), the 500 answers (must be 0), how
# fast revoked keys lost their streams and how available GET /health stayed
# (docs/operations.md §3).
#
# Builds the server and scripts/soak, starts the server on a free loopback port with a fresh
# data folder, runs the soak, and stops the server and removes the folder on exit, whatever
# happens. The server's log is printed when the soak fails.
#
# Environment (defaults in brackets):
#   DURATION [60s]  how long the load runs      SLOW [200]  slow-body clients held at once
#   STREAMERS [100] streams held 2-8 s each     SOAK_ARGS   more flags for scripts/soak
#   ROADEVENTS_MAX_CONNECTIONS  the server's connection budget (default: from the file limit)
#   SERVER_BIN      a server binary to soak instead of building this checkout (A/B runs)
# Exit status is that of the soak: non-zero when a check failed.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=lib/server.sh
source scripts/lib/server.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/roadevents-soak.XXXXXX")
server_pid=
cleanup() {
	status=$?
	stop_roadevents
	[[ $status -eq 0 ]] || { echo "--- server log (last 40 lines)" >&2; tail -n 40 "$tmp/server.log" >&2 || true; }
	rm -rf "$tmp"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== building"
server_binary "$tmp/roadevents"
go build -o "$tmp/soak" ./scripts/soak

echo "== starting the server"
export ROADEVENTS_STORE=embedded
start_roadevents "$tmp/roadevents" "$tmp/server.log" -data "$tmp/data"
echo "server on $base (pid $server_pid), open file limit $(ulimit -n)"

echo "== soaking for ${DURATION:-60s}"
# shellcheck disable=SC2086
"$tmp/soak" -base "$base" -data "$tmp/data" -duration "${DURATION:-60s}" \
	-slow "${SLOW:-200}" -streamers "${STREAMERS:-100}" ${SOAK_ARGS:-}
