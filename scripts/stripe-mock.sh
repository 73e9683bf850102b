#!/usr/bin/env bash
# Runs stripe-mock (Stripe's own mock of its API, driven by its OpenAPI description) for the
# billing tests (shared/billing): checkout and portal are tested against it instead of Stripe.
# The binary is built once with `go install` at a pinned version into a cache folder of the
# repository, and started on loopback on a free port.
# The starting, stopping and pid/address bookkeeping are scripts/lib/service.sh's, shared
# with the other test service's script; this file holds what is specific to this service.
#
# Usage: scripts/stripe-mock.sh start|stop|address|pid|install
#   start    install if needed, start (unless already running), print the base URL
#   stop     stop the instance this script started
#   address  print the base URL of the running instance (exit 1 when none)
#   pid      print the process id of the running instance (exit 1 when none)
#   install  only install the binary
#
# Environment:
#   ROADEVENTS_STRIPE_MOCK_DIR   cache folder (default: <repo>/.cache/stripe-mock)
#   ROADEVENTS_STRIPE_MOCK_PORT  port to use (default: a free loopback port)
set -euo pipefail

readonly MODULE=github.com/stripe/stripe-mock
readonly VERSION=v0.203.0

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/service.sh
source "$repo/scripts/lib/service.sh"

service=stripe-mock
dir=${ROADEVENTS_STRIPE_MOCK_DIR:-$repo/.cache/stripe-mock}
pidfile=$dir/stripe-mock.pid
urlfile=$dir/address
logfile=$dir/stripe-mock.log
url_command=address
port=${ROADEVENTS_STRIPE_MOCK_PORT:-}
cmdline_pattern=stripe-mock
bindir=$dir/bin-$VERSION
bin=$bindir/stripe-mock

install() {
  mkdir -p "$dir"
  [[ -x $bin ]] && return
  command -v go >/dev/null || die "go is needed to build $MODULE"
  echo "--- $(date -u +%FT%TZ) go install $MODULE@$VERSION into $bindir" >>"$logfile"
  # GOBIN puts the binary in the cache folder, not in the user's GOPATH; GOFLAGS=-mod=mod keeps
  # the module's own go.mod in charge, whatever the caller's environment says.
  GOBIN=$bindir GOFLAGS=-mod=mod go install "$MODULE@$VERSION" >>"$logfile" 2>&1 ||
    die "go install $MODULE@$VERSION failed; see $logfile"
  [[ -x $bin ]] || die "go install did not produce $bin"
}

# answers succeeds when the address serves the Stripe API (any HTTP answer).
answers() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' -u sk_test_123: "$1/v1/customers" 2>/dev/null) || return 1
  [[ $code != 000 ]]
}

# service_command is service.sh's hook.
service_command() {
  # -http-addr binds loopback only. stripe-mock also opens HTTPS, by default on port 12112 of
  # every interface, which a second instance would collide on: keep it on loopback, on a port
  # the system chooses.
  cmd=("$bin" -http-addr "127.0.0.1:$1" -https-addr "127.0.0.1:0")
}

service_main "$@"
