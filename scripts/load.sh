#!/usr/bin/env bash
# Load test of the events routes on the local server (`go run .`, embedded store).
#
# Builds the binary and scripts/loadgen, issues a live API key into a fresh temporary data
# folder (roadevents apikey issue), starts the server on a free loopback port, seeds a city of
# EVENTS events, then measures GET /v1/events at radius 1000 m and 9780 m (the maximum of
# docs/api.md §8) RUNS times each, closed loop (every client sends again as soon as it has its
# answer: the throughput at saturation) and open loop at each offered rate of RATES_1000 and
# RATES_9780 (a fixed schedule spread over the clients, latency from each request's due time, so
# that queueing is measured: the latency at that throughput), then publishes PUBLISH_EVENTS more
# events RUNS times (after the queries, so that every query run sees the same city), and prints the
# median of each figure: the seed and the publish runs together make the median of "seed". Each
# phase also prints the load average and the CPU seconds the server and the load generator spent
# (the machine is shared with the load generator, so its share bounds what the server can get). The
# server is stopped and the folder removed on exit, whatever happens.
#
# Environment (defaults in brackets):
#   EVENTS [100000]  events to publish          CLIENTS [64]  concurrent keep-alive clients
#   DURATION [20s]   measured time per query run RUNS [3]      query runs per radius
#   SEED [1]         city and query points       KEEP_LOG      set to keep the server log
#   PUBLISH_EVENTS [20000] events per publish run (0: none)
#   RATES_1000 [2000]     open-loop offered rates (queries/s) at 1000 m ("" for none)
#   RATES_9780 [500 800]  open-loop offered rates (queries/s) at 9780 m ("" for none)
#   SERVER_BIN       a server binary to measure instead of building this checkout (for A/B
#                    comparisons of two builds in interleaved runs)
#   PROFILE_DIR      when set, a CPU profile of the server per phase is written there
#                    (through the loopback pprof listener of ROADEVENTS_PPROF_ADDR)
#   STORE [embedded] embedded, or dynamodb: the server on a fresh table of DynamoDB Local
#                    (scripts/dynamodb-local.sh, started here unless it runs already, stopped on
#                    exit if started here); each phase then also prints DynamoDB Local's CPU,
#                    the time a Lambda function and DynamoDB would spend (docs/operations.md §5)
# Exit status is non-zero when any phase had more than a few failed requests.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=lib/server.sh
source "$root/scripts/lib/server.sh"

events=${EVENTS:-100000}
clients=${CLIENTS:-64}
duration=${DURATION:-20s}
runs=${RUNS:-3}
seed=${SEED:-1}
publish_events=${PUBLISH_EVENTS:-20000}
store=${STORE:-embedded}
case $store in
embedded | dynamodb) ;;
*) echo "STORE=$store: want embedded or dynamodb" >&2; exit 2 ;;
esac
profile_dir=${PROFILE_DIR:-}
radii=(1000 9780)
rates_1000=${RATES_1000-2000}
rates_9780=${RATES_9780-500 800}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/roadevents-load.XXXXXX")
server_pid=
dynamodb_started=
cleanup() {
	status=$?
	stop_roadevents
	if [[ -n $dynamodb_started ]]; then
		"$root/scripts/dynamodb-local.sh" stop >/dev/null 2>&1 || true
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
print_commit
echo "STORE=$store EVENTS=$events CLIENTS=$clients DURATION=$duration RUNS=$runs SEED=$seed PUBLISH_EVENTS=$publish_events"
echo "RATES_1000=\"$rates_1000\" RATES_9780=\"$rates_9780\""

log "building"
server_binary "$tmp/roadevents"
go build -o "$tmp/loadgen" ./scripts/loadgen

dynamodb_pid=
if [[ $store == dynamodb ]]; then
	log "DynamoDB Local"
	"$root/scripts/dynamodb-local.sh" endpoint >/dev/null 2>&1 || dynamodb_started=1
	endpoint=$("$root/scripts/dynamodb-local.sh" start)
	dynamodb_pid=$("$root/scripts/dynamodb-local.sh" pid)
	# A table of its own, so that a running instance's other tables do not count.
	export ROADEVENTS_STORE=dynamodb ROADEVENTS_TABLE="load-$(date +%s)-$$" AWS_REGION=us-east-1 \
		AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local \
		AWS_ENDPOINT_URL_DYNAMODB=$endpoint AWS_ENDPOINT_URL_DYNAMODB_STREAMS=$endpoint
	echo "table $ROADEVENTS_TABLE on $endpoint (pid $dynamodb_pid)"
fi

log "issuing a live API key"
# The embedded store admits one process at a time: the key is issued before the server starts.
if [[ $store == embedded ]]; then
	export ROADEVENTS_STORE=embedded ROADEVENTS_DATA="$tmp/data"
fi
LOADGEN_API_KEY=$("$tmp/roadevents" apikey issue -org org_loadtest -env live -label "load test")
export LOADGEN_API_KEY

log "starting the server"
pprof=
if [[ -n $profile_dir ]]; then
	mkdir -p "$profile_dir"
	profile_dir=$(cd "$profile_dir" && pwd)
	# Port 0 on loopback (httpapi.ServeDebug refuses any other host): its log line gives the port.
	export ROADEVENTS_PPROF_ADDR=127.0.0.1:0
fi
start_roadevents "$tmp/roadevents" "$tmp/server.log"
echo "server on $base (pid $server_pid)"
if [[ -n $profile_dir ]]; then
	for _ in $(seq 1 50); do
		pprof=$(sed -n 's|.*"debug listener (pprof)".*"addr":"http://\([^/"]*\)/.*|\1|p' "$tmp/server.log" | head -n 1)
		[[ -n $pprof ]] && break
		sleep 0.1
	done
	[[ -n $pprof ]] || { echo "the server did not report its pprof listener" >&2; exit 1; }
	echo "profiles of the server (pprof on $pprof) in $profile_dir"
fi

results="$tmp/results.jsonl"
ticks=$(getconf CLK_TCK)
# server_cpu prints the CPU seconds (user + system) the server has used so far.
server_cpu() { proc_cpu "$server_pid"; }
# dynamodb_cpu prints the CPU seconds DynamoDB Local has used so far (0 on the embedded store).
dynamodb_cpu() { if [[ -n $dynamodb_pid ]]; then proc_cpu "$dynamodb_pid"; else echo 0; fi; }
proc_cpu() { awk -v t="$ticks" '{printf "%.2f", ($14 + $15) / t}' "/proc/$1/stat"; }
# busy_cpu prints the CPU seconds the whole machine has been busy (every process).
busy_cpu() { awk -v t="$ticks" '/^cpu / {printf "%.2f", ($2 + $3 + $4 + $7 + $8) / t}' /proc/stat; }
profile_n=0
# phase runs one loadgen phase, shows its table and keeps its result line; with PROFILE_DIR,
# a CPU profile of the server covers the phase's first PROFILE_SECONDS [8] seconds.
phase() {
	local out srv0 ddb0 busy0 t0 gen prof_pid= requests
	srv0=$(server_cpu) ddb0=$(dynamodb_cpu) busy0=$(busy_cpu) t0=$(date +%s.%N)
	if [[ -n $pprof ]]; then
		profile_n=$((profile_n + 1))
		curl -fsS -o "$profile_dir/$profile_n-$1${radius:+-$radius}${rate:+-at$rate}.pprof" \
			"http://$pprof/debug/pprof/profile?seconds=${PROFILE_SECONDS:-8}" &
		prof_pid=$!
	fi
	# The time keyword gives the load generator's own CPU seconds (user + system).
	local TIMEFORMAT='%U %S'
	if ! { time "$tmp/loadgen" "$@" -base "$base" -clients "$clients" -seed "$seed" >"$tmp/out" 2>"$tmp/err"; } 2>"$tmp/time"; then
		cat "$tmp/out" "$tmp/err"
		echo "loadgen $1 failed" >&2
		return 1
	fi
	cat "$tmp/err" >&2
	out=$(cat "$tmp/out")
	gen=$(awk '{printf "%.2f", $1 + $2}' "$tmp/time")
	[[ -z $prof_pid ]] || wait "$prof_pid" || echo "profile of phase $profile_n failed" >&2
	printf '%s\n' "$out" | grep -v '^{"phase"'
	printf '%s\n' "$out" | grep '^{"phase"' >>"$results"
	requests=$(printf '%s\n' "$out" | sed -n 's/^{"phase".*"requests":\([0-9]*\).*/\1/p' | head -n 1)
	awk -v s0="$srv0" -v s1="$(server_cpu)" -v d0="$ddb0" -v d1="$(dynamodb_cpu)" -v g="$gen" -v b0="$busy0" -v b1="$(busy_cpu)" \
		-v t0="$t0" -v t1="$(date +%s.%N)" -v n="${requests:-0}" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
		w = t1 - t0
		printf "cpu: server %.2f cores, loadgen %.2f cores, other processes %.2f cores over %.1f s (load average %s)\n",
			(s1 - s0) / w, g / w, (b1 - b0 - (s1 - s0) - g) / w, w, load
		if (n > 0) {
			printf "cpu per request: server %.0f µs", (s1 - s0) / n * 1e6
			if (d1 > 0) printf ", DynamoDB Local %.0f µs", (d1 - d0) / n * 1e6
			printf " (%d requests)\n", n
		}
	}'
}

log "seed: publishing $events events"
phase seed -events "$events"

rate=
for run in $(seq 1 "$runs"); do
	for radius in "${radii[@]}"; do
		log "query run $run/$runs at radius $radius m for $duration (closed loop)"
		phase query -radius "$radius" -duration "$duration"
		rates_var=rates_$radius
		for rate in ${!rates_var}; do
			log "query run $run/$runs at radius $radius m for $duration (open loop, $rate/s offered)"
			phase query -radius "$radius" -duration "$duration" -rate "$rate"
		done
		rate=
	done
done
radius=

if ((publish_events > 0)); then
	for run in $(seq 1 "$runs"); do
		log "publish run $run/$runs: $publish_events more events"
		phase seed -events "$publish_events"
	done
fi

log "medians over $runs runs (requests, errors, late and unsent are totals)"
"$tmp/loadgen" median "$results" | grep -v '^{"phase"'
echo
echo "result lines:"
cat "$results"

if grep -qi '"level":"\(ERROR\|WARN\)"' "$tmp/server.log"; then
	log "server warnings and errors"
	grep -i '"level":"\(ERROR\|WARN\)"' "$tmp/server.log" | head -n 20 >&2
fi
