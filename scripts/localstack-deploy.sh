#!/usr/bin/env bash
# Deploys the LocalStack target of the stack (infra/, -c target=localstack) to a running
# LocalStack community edition with cdklocal (npm aws-cdk-local, a wrapper of the CDK CLI that
# points it at LocalStack), then runs beside it what LocalStack's community edition lacks: the
# streamer (`go run ./streamer` on LocalStack's DynamoDB Streams) and a local front that puts
# the function URLs, the stream and the console on one address (scripts/localfront). It stays
# in the foreground; Ctrl-C stops the two. docs/operations.md §5 says what the target holds.
#
#   scripts/localstack-deploy.sh [extra cdk args]
#   LOCALSTACK_ENDPOINT=http://localhost:4566          (default)
#   LOCALSTACK_S3_ENDPOINT=http://s3.<host>:<port>   (only when LocalStack is not on this machine)
#
# Start LocalStack (pinned: infra/stack.LocalStackVersion) with the functions' outbox mounted,
# so that the sign-in codes they e-mail land in data/localstack-outbox:
#
#   docker run --rm -p 4566:4566 -v /var/run/docker.sock:/var/run/docker.sock \
#     -e LAMBDA_DOCKER_FLAGS="-v $PWD/data/localstack-outbox:/tmp/roadevents/outbox" \
#     localstack/localstack:4.14.0
#
# LocalStack needs Docker, which this project's CI machine does not have, so this script is not
# run by scripts/test.sh: the target's template is tested by go test ./infra/..., and the front
# by go test ./scripts/localfront.
set -euo pipefail

cd "$(dirname "$0")/.."

cdk_version=2.1108.0
cdklocal_version=3.0.4
endpoint=${LOCALSTACK_ENDPOINT:-http://localhost:4566}
streamer_addr=127.0.0.1:8081
front_addr=127.0.0.1:8090
outputs=build/localstack-outputs.json

if ! curl -fsS "$endpoint/_localstack/health" >/dev/null 2>&1; then
	echo "LocalStack does not answer at $endpoint (start it as the comment at the top of $0 says)" >&2
	exit 1
fi

# The functions run on LocalStack's machine, built for it: host-architecture bootstraps.
scripts/build-lambdas.sh --host >/dev/null
mkdir -p data/localstack-outbox build

# cdklocal 3.0.4 refuses AWS_ENDPOINT_URL without AWS_ENDPOINT_URL_S3, whose host must carry an
# "s3." label (that is how it tells S3 requests apart): LocalStack answers any subdomain of
# localhost.localstack.cloud (which resolves to 127.0.0.1), so the S3 endpoint is that name on the
# endpoint's port unless LOCALSTACK_S3_ENDPOINT gives another. cdklocal also drops every other AWS_*
# variable it is not told to keep (AWS_ENVAR_ALLOWLIST).
port=${endpoint##*:}
port=${port%%/*}
export AWS_ENDPOINT_URL=$endpoint
export AWS_ENDPOINT_URL_S3=${LOCALSTACK_S3_ENDPOINT:-http://s3.localhost.localstack.cloud:$port}
export AWS_ENVAR_ALLOWLIST=AWS_REGION,AWS_DEFAULT_REGION,AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test}
export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test}
export AWS_REGION=${AWS_REGION:-us-east-1}
export AWS_DEFAULT_REGION=$AWS_REGION
export CDK_DEFAULT_ACCOUNT=${CDK_DEFAULT_ACCOUNT:-000000000000}
export CDK_DEFAULT_REGION=$AWS_REGION

cdklocal() {
	npx -y -p "aws-cdk@$cdk_version" -p "aws-cdk-local@$cdklocal_version" cdklocal "$@"
}
cdklocal bootstrap "aws://$CDK_DEFAULT_ACCOUNT/$AWS_REGION"
cdklocal deploy --require-approval never -c target=localstack --outputs-file "$outputs" "$@"

output() {
	node -e 'const o = require(process.argv[1]); for (const s of Object.values(o)) if (s[process.argv[2]]) { console.log(s[process.argv[2]]); break; }' \
		"$(pwd)/$outputs" "$1"
}
table=$(output TableName)
stream_arn=$(output TableStreamArn)

pids=()
stop() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap stop EXIT INT TERM

# The streamer follows the table's stream on LocalStack, as the Fargate task does on AWS.
ROADEVENTS_STORE=dynamodb ROADEVENTS_TABLE=$table ROADEVENTS_STREAM_ARN=$stream_arn ROADEVENTS_ADDR=$streamer_addr \
	AWS_ENDPOINT_URL_DYNAMODB=$endpoint AWS_ENDPOINT_URL_DYNAMODB_STREAMS=$endpoint \
	go run ./streamer &
pids+=($!)
go run ./scripts/localfront -addr "$front_addr" -outputs "$outputs" -stream "http://$streamer_addr" &
pids+=($!)

cat <<EOF

The LocalStack target is up:
  API, stream and console   http://$front_addr   (the console: http://$front_addr/app/)
  function URLs             $outputs
  streamer                  http://$streamer_addr
  table                     $table
Point a client at http://$front_addr (the API's base URL; the stream is /v1/stream there), and
sign in to the console with the code e-mailed to data/localstack-outbox. Ctrl-C stops the
streamer and the front; the stack stays in LocalStack until it stops.
EOF
wait
