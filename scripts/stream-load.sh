#!/usr/bin/env bash
# Load test of the live stream (GET /v1/stream) on the local server, through real loopback
# connections: the embedded store's change feed (`go run .`) and DynamoDB Streams on DynamoDB
# Local (the reader the streamer uses on AWS).
#
# For each store, each number of subscribers and each run, it builds nothing twice, starts a
# fresh server (fresh data folder or table) with a live API key, and runs scripts/streamload:
# N SSE subscribers of 1000 m spread over a 20 km city, the server's memory read from /proc
# with every stream open and idle, then 200 publishes a second through POST /v1/events for
# DURATION, every delta timed from publication to reception. It prints each run, then the
# median of each figure over the runs, against the targets:
#
#   embedded:  p95 <= 50 ms at 10 000 subscribers and 200 publishes/s; <= 20 KiB per idle stream
#   DynamoDB Local's stream: p95 <= 500 ms
#
# Environment (defaults in brackets):
#   STORES ["embedded dynamodb"]   SUBSCRIBERS ["1000 10000"]   RUNS [3]
#   RATE [200]  DURATION [20s]  RADIUS [1000]  SEED [1]  KEEP_LOG (set: keep the server logs)
#   STORES may also name relay: DynamoDB Local, Redis, `streamer -relay` and SERVERS [3] streamer
#   processes (the container's binary) following the relay's log (docs/architecture.md §3), the
#   subscribers spread over them, each coming back to the next streamer when its stream ends, the
#   publishes sent to a server of its own on the same table; KILL_AFTER (seconds, unset: never)
#   kills the first streamer with SIGKILL that long after publishing starts, and its clients must
#   resume on the others without losing or repeating a delta.
#   RECONNECT [0]: every subscriber drops its stream after about this long and resumes it with
#   Last-Event-ID after AWAY [1s], again and again (0: never); the missed deltas must all come,
#   once each, without a snapshot (docs/api.md §10.2, Stream, resuming)
#   SERVER_BIN: a server binary to measure instead of building this checkout (A/B runs)
#   POLL_INTERVAL [250ms]: ROADEVENTS_STREAM_POLL_INTERVAL of the DynamoDB runs. One server reads
#   the stream here, so it may use the whole per-shard read budget: 250 ms is the
#   setting for a deployment with one streamer task (docs/operations.md §6); the default, 400 ms,
#   is for two.
# Everything listens on loopback; each run is bounded (streamload -duration and -settle, and a
# timeout around it). DynamoDB Local is fetched on first use (scripts/dynamodb-local.sh install)
# and each run gets a fresh instance of its own, apart from any instance the tests share; the
# servers and that instance are stopped on exit, Ctrl-C included.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=lib/server.sh
source "$root/scripts/lib/server.sh"

stores=${STORES:-embedded dynamodb}
sizes=${SUBSCRIBERS:-1000 10000}
runs=${RUNS:-3}
rate=${RATE:-200}
duration=${DURATION:-20s}
radius=${RADIUS:-1000}
seed=${SEED:-1}
reconnect=${RECONNECT:-0}
away=${AWAY:-1s}
servers=${SERVERS:-3}
kill_after=${KILL_AFTER:-}
poll=${POLL_INTERVAL:-250ms}

# 10 000 streams are 10 000 sockets in the server and as many in streamload.
ulimit -n "$(ulimit -Hn)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/roadevents-stream-load.XXXXXX")
server_pid=
extra_pids=()
load_pid=
started_ddb=
started_redis=
cleanup() {
	status=$?
	if [[ -n $load_pid ]] && kill -0 "$load_pid" 2>/dev/null; then
		kill -TERM "$load_pid" 2>/dev/null || true
		wait "$load_pid" 2>/dev/null || true
	fi
	stop_server
	if [[ -n $started_ddb ]]; then
		ddb stop >/dev/null 2>&1 || true
	fi
	if [[ -n $started_redis ]]; then
		rds stop >/dev/null 2>&1 || true
	fi
	if [[ -n ${KEEP_LOG:-} ]]; then
		mkdir -p "$root/stream-load-logs" && cp "$tmp"/*.log "$root/stream-load-logs/" 2>/dev/null &&
			echo "server logs kept in $root/stream-load-logs" >&2
	fi
	rm -rf "$tmp"
	exit "$status"
}
stop_server() {
	local pid
	for pid in "${extra_pids[@]}" $server_pid; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	server_pid= extra_pids=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "machine"
echo "cpus: $(nproc)  $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo 2>/dev/null)"
echo "open files: $(ulimit -n)"
go version
print_commit
echo "STORES='$stores' SUBSCRIBERS='$sizes' RUNS=$runs RATE=$rate DURATION=$duration RADIUS=$radius SEED=$seed POLL_INTERVAL=$poll RECONNECT=$reconnect AWAY=$away"

max_subscribers=0
for n in $sizes; do ((n > max_subscribers)) && max_subscribers=$n; done
if (($(ulimit -n) < max_subscribers + 1024)); then
	echo "open files limited to $(ulimit -n): $max_subscribers streams need more (raise the hard limit)" >&2
	exit 1
fi

# ddb runs scripts/dynamodb-local.sh on an instance of this script's own: its pid and
# endpoint files live in $tmp, the jar and launcher are the shared cache's (linked, not copied),
# so the instance the tests share (if any) is neither used nor stopped.
ddb_cache=${ROADEVENTS_DYNAMODB_LOCAL_DIR:-$root/.cache/dynamodb-local}
ddb_dir=$tmp/dynamodb-local
ddb() { ROADEVENTS_DYNAMODB_LOCAL_DIR=$ddb_dir ROADEVENTS_DYNAMODB_LOCAL_PORT= "$root/scripts/dynamodb-local.sh" "$@"; }
if [[ " $stores " == *" dynamodb "* || " $stores " == *" relay "* ]]; then
	log "DynamoDB Local"
	"$root/scripts/dynamodb-local.sh" install
	mkdir -p "$ddb_dir"
	for entry in "$ddb_cache"/*; do
		case ${entry##*/} in
		dynamodb-local.pid | endpoint | lock | *.log | pack.*) ;;
		*) ln -s "$entry" "$ddb_dir/" ;;
		esac
	done
fi

# rds runs scripts/redis.sh on an instance of this script's own, as ddb does DynamoDB Local.
rds() { ROADEVENTS_REDIS_DIR=$tmp/redis ROADEVENTS_REDIS_PORT= "$root/scripts/redis.sh" "$@"; }
if [[ " $stores " == *" relay "* ]]; then
	log "Redis"
	started_redis=1
	redis_addr=$(rds start)
	redis_addr=${redis_addr#http://}
	echo "Redis at $redis_addr"
fi

log "building"
server_binary "$tmp/roadevents"
go build -o "$tmp/streamload" ./scripts/streamload
[[ " $stores " != *" relay "* ]] || go build -o "$tmp/streamer" ./streamer

# start_streamer LOGFILE starts a streamer on a free loopback port and returns once GET /health
# answers (it follows the log), with server_pid and base set.
start_streamer() {
	ROADEVENTS_ADDR=127.0.0.1:0 "$tmp/streamer" >"$1" 2>&1 &
	server_pid=$!
	await_server "$1" 's/.*"msg":"streamer listening","addr":"\([^"]*\)".*/http:\/\/\1/p'
}

# start_relay RUN: `streamer -relay`, a server to publish to (publish_base), then SERVERS
# streamers following the log; base lists the streamers, server_pid is the second (measured:
# the first may be killed).
start_relay() {
	local run=$1 i bases=() pids=()
	export ROADEVENTS_STORE=dynamodb ROADEVENTS_TABLE="streamload-$$-$run"
	export ROADEVENTS_RELAY_REDIS="redis://$redis_addr" ROADEVENTS_RELAY_KEY="streamload-$$-$run"
	STREAMLOAD_API_KEY=$("$tmp/roadevents" apikey issue -org org_streamload -env live -label "stream load" 2>/dev/null)
	export STREAMLOAD_API_KEY
	# Its GET /health goes unused here: the log tells when it runs.
	ROADEVENTS_ADDR=127.0.0.1:0 "$tmp/streamer" -relay >"$tmp/relay-$run.log" 2>&1 &
	extra_pids+=($!)
	# The servers follow the log once the relay's starting gap is in it (docs/architecture.md §3).
	for _ in $(seq 1 300); do
		[[ $(redis-cli -h "${redis_addr%:*}" -p "${redis_addr##*:}" GET "{$ROADEVENTS_RELAY_KEY}:last") =~ ^[1-9] ]] && break
		sleep 0.1
	done
	start_roadevents "$tmp/roadevents" "$tmp/server-relay-$run-publish.log"
	publish_base=$base
	extra_pids+=("$server_pid")
	for i in $(seq 1 "$servers"); do
		start_streamer "$tmp/server-relay-$run-$i.log"
		bases+=("$base") pids+=("$server_pid")
	done
	extra_pids+=("${pids[@]}")
	server_pid=${pids[1]:-${pids[0]}}
	kill_pid=${pids[0]}
	base=$(IFS=,; echo "${bases[*]}")
}

# start_server STORE RUN: a fresh server for one run, its key in STREAMLOAD_API_KEY.
start_server() {
	local store=$1 run=$2 logfile
	logfile="$tmp/server-$store-$run.log"
	unset ROADEVENTS_RELAY_REDIS ROADEVENTS_RELAY_KEY
	export ROADEVENTS_STORE=$store
	if [[ $store == dynamodb ]]; then
		export ROADEVENTS_TABLE="streamload-$$-$run"
	else
		export ROADEVENTS_DATA="$tmp/data-$run"
	fi
	# Issued before the server starts (the embedded store admits one process); on DynamoDB
	# this also creates the table and writes to it before the server follows its stream.
	STREAMLOAD_API_KEY=$("$tmp/roadevents" apikey issue -org org_streamload -env live -label "stream load" 2>/dev/null)
	export STREAMLOAD_API_KEY
	start_roadevents "$tmp/roadevents" "$logfile"
}

results="$tmp/results.jsonl"
: >"$results"
for store in $stores; do
	settle=5s
	if [[ $store == dynamodb || $store == relay ]]; then
		settle=15s
		export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local
		export ROADEVENTS_STREAM_POLL_INTERVAL=$poll
	fi
	for n in $sizes; do
		for run in $(seq 1 "$runs"); do
			log "$store: $n subscribers, run $run/$runs"
			if [[ $store == dynamodb || $store == relay ]]; then
				# DynamoDB Local keeps every table and stream record in memory and gets markedly
				# slower as they pile up (docs/performance.md §8), so each run gets a fresh one.
				ddb stop >/dev/null 2>&1 || true
				started_ddb=1
				endpoint=$(ddb start)
				echo "DynamoDB Local at $endpoint"
				export AWS_ENDPOINT_URL_DYNAMODB=$endpoint AWS_ENDPOINT_URL_DYNAMODB_STREAMS=$endpoint
			fi
			failover=false
			publish_base=
			if [[ $store == relay ]]; then
				start_relay "$n-$run"
				failover=true
			else
				start_server "$store" "$n-$run"
			fi
			echo "server on $base (pid $server_pid); load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
			# In the background and waited for, so that Ctrl-C stops the run at once.
			: >"$tmp/err"
			timeout 900 "$tmp/streamload" run -base "$base" -subscribers "$n" -rate "$rate" \
				-duration "$duration" -radius "$radius" -settle "$settle" -seed "$((seed + run))" -failover="$failover" ${publish_base:+-publish "$publish_base"} \
				-reconnect "$reconnect" -away "$away" -server-pid "$server_pid" -label "$store" >"$tmp/out" 2> >(tee "$tmp/err" >&2) &
			load_pid=$!
			if [[ $store == relay && -n $kill_after ]]; then
				# KILL_AFTER counts from the end of the idle measurement, when publishing begins.
				(until grep -q 'streamload: publishing' "$tmp/err" 2>/dev/null; do sleep 0.2; done
					sleep "$kill_after" && kill -KILL "$kill_pid" 2>/dev/null && echo "killed the first server (pid $kill_pid)") &
			fi
			wait "$load_pid" || echo "streamload failed" >&2
			load_pid=
			echo "load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
			grep -v '^{"phase"' "$tmp/out" || true
			grep '^{"phase"' "$tmp/out" >>"$results" || true
			stop_server
			for f in "$tmp"/server-"$store"-"$n-$run"*.log; do
				if grep -qi '"level":"ERROR"' "$f"; then
					echo "server errors ($f):" >&2
					grep -i '"level":"ERROR"' "$f" | head -n 5 >&2 || true
				fi
			done
		done
	done
done

log "medians over $runs runs (errors are totals)"
"$tmp/streamload" median "$results" | grep -v '^{"phase"'
echo
echo "result lines:"
cat "$results"

log "targets"
"$tmp/streamload" median "$results" | grep '^{"phase"' | while read -r line; do
	label=$(sed -n 's/.*"label":"\([^"]*\)".*/\1/p' <<<"$line")
	n=$(sed -n 's/.*"subscribers":\([0-9]*\).*/\1/p' <<<"$line")
	p95=$(sed -n 's/.*"p95_ms":\([0-9.e+-]*\).*/\1/p' <<<"$line")
	kib=$(sed -n 's/.*"rss_per_conn_kib":\([0-9.e+-]*\).*/\1/p' <<<"$line")
	limit=50
	[[ $label == dynamodb || $label == relay ]] && limit=500
	verdict=$(awk -v p="$p95" -v l="$limit" 'BEGIN { print (p <= l ? "met" : "MISSED") }')
	if [[ $label == dynamodb || $label == relay ]]; then
		# The memory target is the embedded path's; the DynamoDB server also holds the SDK's
		# connection pools, so its figure is reported, not judged.
		mem="no target"
	else
		mem="target <= 20 KiB: $(awk -v k="$kib" 'BEGIN { print (k <= 20 ? "met" : "MISSED") }')"
	fi
	echo "$label, $n subscribers: p95 ${p95} ms (target <= $limit ms: $verdict); ${kib} KiB per idle stream ($mem)"
done
