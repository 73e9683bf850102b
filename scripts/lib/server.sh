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
