# shellcheck shell=bash
# What the load and soak scripts share about the server they measure: building and starting it.

# server_binary DEST puts the server to measure at DEST: SERVER_BIN when set (one side of an
# interleaved A/B pair), else a build of this checkout.
server_binary() {
	if [[ -n ${SERVER_BIN:-} ]]; then
		cp "$SERVER_BIN" "$1"
	else
		go build -o "$1" .
	fi
}

# start_roadevents BIN LOGFILE [FLAGS...] starts the server BIN on a free loopback port (the
# kernel picks it, the server prints the address it got) with FLAGS and its output in
# LOGFILE, and returns once GET /health answers, with server_pid and base (its address) set.
# It exits the script when the server does not come up.
start_roadevents() {
	local bin=$1 logfile=$2
	shift 2
	"$bin" -addr 127.0.0.1:0 "$@" >"$logfile" 2>&1 &
	server_pid=$!
	await_server "$logfile" 's/^road events service on \(http:[^ ]*\).*/\1/p'
}

# await_server LOGFILE SCRIPT waits until the server server_pid has printed its address into
# LOGFILE (the sed SCRIPT prints it as a URL) and GET /health answers, and sets base. It exits
# the script when the server does not come up.
await_server() {
	local logfile=$1 script=$2
	base=
	for _ in $(seq 1 300); do
		base=$(sed -n "$script" "$logfile" | head -n 1)
		[[ -n $base ]] && break
		kill -0 "$server_pid" 2>/dev/null || { cat "$logfile" >&2; echo "the server exited" >&2; exit 1; }
		sleep 0.1
	done
	[[ -n $base ]] || { cat "$logfile" >&2; echo "the server did not report its address" >&2; exit 1; }
	for _ in $(seq 1 300); do
		curl -fsS "$base/health" >/dev/null 2>&1 && return
		sleep 0.1
	done
	echo "GET $base/health failed" >&2
	exit 1
}

# stop_roadevents stops the server server_pid, if it still runs, with SIGTERM (a clean stop:
# the store writes what it holds) and waits for it; server_pid is cleared.
stop_roadevents() {
	if [[ -n ${server_pid:-} ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	server_pid=
}

# log prints a section heading.
log() { printf '\n== %s\n' "$*"; }

# print_commit says which checkout is measured, and whether it has local changes.
print_commit() {
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
}

# build_with_key DIR LABEL builds the server (server_binary) and scripts/loadgen into DIR,
# prints the commit, and issues a live API key labelled LABEL into the embedded store's
# folder DIR/data (ROADEVENTS_STORE and ROADEVENTS_DATA are exported for the server), exported
# as LOADGEN_API_KEY. The embedded store admits one process at a time: call it before the
# server starts.
build_with_key() {
	local dir=$1 label=$2
	log "building"
	server_binary "$dir/roadevents"
	go build -o "$dir/loadgen" ./scripts/loadgen
	print_commit
	export ROADEVENTS_STORE=embedded ROADEVENTS_DATA="$dir/data"
	LOADGEN_API_KEY=$("$dir/roadevents" apikey issue -org org_loadtest -env live -label "$label")
	export LOADGEN_API_KEY
}

# scratch NAME sets tmp to a new temporary folder named after NAME and, on exit whatever
# happens (an interrupt included), stops the server (stop_roadevents) and removes the folder.
scratch() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/roadevents-$1.XXXXXX")
	server_pid=
	trap 'status=$?; stop_roadevents; rm -rf "$tmp"; exit "$status"' EXIT
	trap 'exit 130' INT TERM
}
