#!/usr/bin/env bash
# Runs every test of the project, as CI does (.ci/run calls this and nothing else).
#
# It installs what the tests need that the machine lacks, starts those services on loopback,
# runs the whole suite with the race detector (tests that need a service are required to run
# here, not skip), fuzzes the JSON decoder for a bounded number of inputs, and stops what it
# started.
#
# Environment: FUZZTIME (default 350000x: inputs, about 25 s each on 2 cores; a duration such as
# 30s works too) bounds the fuzzing; TEST_ARGS adds flags to go test
# (e.g. TEST_ARGS='-run Conformance').
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
# A count, not a duration: Go's fuzzing coordinator (go1.26) can report its own -fuzztime
# deadline as a failure, "context deadline exceeded" with no failing input, on a busy machine
# (golang/go#75804, fixed in go1.27); a count has no deadline (docs/performance.md §10).
fuzztime=${FUZZTIME:-350000x}

log() {
	stage=$*
	printf '\n== %s\n' "$*"
}

# Each suite leaves its counts in $counts (a line "passed failed skipped" per suite); the last
# line of the run is their sum, also when a step failed before every suite ran.
counts=$(mktemp -d)
stage="starting"

summary() { # exit status, stage reached
	local passed=0 failed=0 skipped=0 p f s
	for file in "$counts"/*; do
		[ -e "$file" ] || continue
		read -r p f s <"$file" || continue
		passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0})) skipped=$((skipped + ${s:-0}))
	done
	if [ "$1" -ne 0 ] && [ "$failed" -eq 0 ]; then
		echo "$passed passed, $failed failed, $skipped skipped (stopped at: $2)"
	else
		echo "$passed passed, $failed failed, $skipped skipped"
	fi
}

cleanup() {
	status=$?
	local at=$stage
	log "stopping test services"
	[ -z "${server_pid:-}" ] || kill "$server_pid" 2>/dev/null || true
	"$root/scripts/dynamodb-local.sh" stop || true
	"$root/scripts/stripe-mock.sh" stop || true
	"$root/scripts/redis.sh" stop || true
	log "summary (Go, Vitest, OpenAPI lint and browser tests)"
	summary "$status" "$at"
	rm -rf "$counts"
	exit "$status"
}
trap cleanup EXIT INT TERM

log "checking tools"
go version
java -version 2>&1 | head -n 1
echo "node $(node --version), npm $(npm --version)"

log "starting DynamoDB Local"
ROADEVENTS_DYNAMODB_ENDPOINT=$("$root/scripts/dynamodb-local.sh" start)
export ROADEVENTS_DYNAMODB_ENDPOINT
echo "DynamoDB Local at $ROADEVENTS_DYNAMODB_ENDPOINT"

log "starting stripe-mock"
# The billing tests run checkout and portal against it (shared/billing).
ROADEVENTS_STRIPE_MOCK=$("$root/scripts/stripe-mock.sh" start)
export ROADEVENTS_STRIPE_MOCK
echo "stripe-mock at $ROADEVENTS_STRIPE_MOCK"

log "starting Redis"
# The stream relay's tests run against it (shared/relay); Debian's redis-server, installed when missing.
redis_url=$("$root/scripts/redis.sh" start)
export ROADEVENTS_TEST_REDIS=${redis_url#http://}
echo "Redis at $ROADEVENTS_TEST_REDIS"

log "console: npm ci && npm run build in web/, which must equal the committed web/dist"
# go build embeds web/dist (package web), so the committed files are what ships.
(cd web && npm ci --no-audit --no-fund && npm run build)
if [ -n "$(git status --porcelain -- web/dist)" ]; then
	git status --short -- web/dist
	echo "web/dist differs from a fresh build: run npm ci && npm run build in web/ and commit web/dist" >&2
	exit 1
fi

log "console unit tests (Vitest)"
rc=0
(cd web && npm test --silent -- --reporter=default --reporter=json --outputFile="$counts/vitest.json") || rc=$?
if [ -e "$counts/vitest.json" ]; then
	node -e 'const r = require(process.argv[1]); console.log(r.numPassedTests, r.numFailedTests, r.numPendingTests + r.numTodoTests)' \
		"$counts/vitest.json" >"$counts/vitest"
	rm "$counts/vitest.json"
fi
[ "$rc" -eq 0 ] || exit "$rc"

log "go vet"
go vet ./...

# Pinned, and run from the module proxy: nothing to install, and the module's requirements
# stay free of it (a go.mod tool directive would add its dependencies to them).
staticcheck=honnef.co/go/tools/cmd/staticcheck@v0.8.2 # staticcheck 2026.2.2
log "staticcheck ${staticcheck#*@}"
go run "$staticcheck" ./...

log "linting the served /openapi.json (Redocly CLI and Spectral, pinned in scripts/oaslint)"
# The rule sets integrators run (docs/api.md §10.1): any error fails, warnings are printed.
(cd scripts/oaslint && npm ci --no-audit --no-fund)
# shellcheck source=lib/server.sh
. "$root/scripts/lib/server.sh"
oas=$(mktemp -d)
go build -o "$oas/roadevents" .
ROADEVENTS_STORE=embedded start_roadevents "$oas/roadevents" "$oas/server.log" -data "$oas/data"
curl -fsS "$base/openapi.json" -o "$oas/openapi.json"
kill "$server_pid" && wait "$server_pid" || true
server_pid=
lint_passed=0 lint_failed=0
redocly_errors=$(cd scripts/oaslint && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true npx redocly lint --config redocly.yaml --format=json "$oas/openapi.json" 2>/dev/null |
	node -e 'const t = JSON.parse(require("fs").readFileSync(0)).totals; console.log(t.errors, t.warnings)') || redocly_errors="1 ?"
spectral_errors=$(cd scripts/oaslint && npx spectral lint --ruleset .spectral.yaml --format json --fail-severity error --quiet "$oas/openapi.json" 2>/dev/null |
	node -e 'const r = JSON.parse(require("fs").readFileSync(0) || "[]"); console.log(r.filter(x => x.severity === 0).length, r.filter(x => x.severity === 1).length)') || spectral_errors="1 ?"
for lint in "Redocly $redocly_errors" "Spectral $spectral_errors"; do
	read -r name errors warnings <<<"$lint"
	echo "$name: $errors errors, $warnings warnings"
	if [ "$errors" = 0 ]; then lint_passed=$((lint_passed + 1)); else lint_failed=$((lint_failed + 1)); fi
done
echo "$lint_passed $lint_failed 0" >"$counts/openapi-lint"
if [ "$lint_failed" -ne 0 ]; then
	(cd scripts/oaslint && npx redocly lint --config redocly.yaml "$oas/openapi.json"; npx spectral lint --ruleset .spectral.yaml "$oas/openapi.json") || true
	exit 1
fi
rm -rf "$oas"

log "building the Lambda bootstraps (host architecture) for the packaging test"
# test/lambda runs them as Lambda would; without them it would skip.
"$root/scripts/build-lambdas.sh" --host >/dev/null

log "go test -race (every package)"
# The summary fails the run if a test skipped for want of a service this script provides.
# shellcheck disable=SC2086
rc=0
go test -race -count=1 -timeout 30m -json ${TEST_ARGS:-} ./... 2>&1 |
	go run ./scripts/testsummary -forbid-skip 'scripts/test.sh' | tee "$counts/go.out" || rc=$?
sed -nE 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p' "$counts/go.out" >"$counts/go"
rm "$counts/go.out"
[ "$rc" -eq 0 ] || exit "$rc"

# Minimizing a new interesting input may take a minute by default, and no input is run
# meanwhile, so it is bounded to 2 s and the fuzzing time goes to running inputs
# (docs/performance.md §10).
log "fuzzing the JSON decoder for $fuzztime"
go test -run '^$' -fuzz '^FuzzDecodeJSON$' -fuzztime "$fuzztime" -fuzzminimizetime 2s ./shared/httpapi
log "fuzzing the decoder's fast path against its token parser for $fuzztime"
go test -run '^$' -fuzz '^FuzzParseWellFormed$' -fuzztime "$fuzztime" -fuzzminimizetime 2s ./shared/httpapi

log "console browser tests (Debian's Chromium, playwright-core)"
# Never a downloaded browser: Debian's package, installed here when missing.
if [ ! -x /usr/bin/chromium ]; then
	sudo_cmd=""
	[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
	$sudo_cmd apt-get update
	$sudo_cmd apt-get install -y --no-install-recommends chromium
fi
rc=0
(cd web && node --test --test-concurrency=1 --test-reporter=spec --test-reporter-destination=stdout \
	--test-reporter=tap --test-reporter-destination="$counts/browser.tap" ../test/browser/console.test.mjs) || rc=$?
browser() { sed -nE "s/^# $1 ([0-9]+)$/\1/p" "$counts/browser.tap"; }
echo "$(browser pass) $(browser fail) $(browser skipped)" >"$counts/browser"
rm -f "$counts/browser.tap"
[ "$rc" -eq 0 ] || exit "$rc"
