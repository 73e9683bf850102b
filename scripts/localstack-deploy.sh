#!/usr/bin/env bash
# Deploys the AWS stack (infra/, run by cdk.json) to a running LocalStack with cdklocal (npm
# aws-cdk-local, a wrapper of the CDK CLI that points it at LocalStack). Both are pinned.
#
#   LOCALSTACK_ENDPOINT=http://localhost:4566 scripts/localstack-deploy.sh [extra cdk args]
#   LOCALSTACK_S3_ENDPOINT=http://s3.<host>:<port>   (only when LocalStack is not on this machine)
#
# It builds the Lambda bundles first (scripts/build-lambdas.sh). LocalStack needs Docker,
# which this project's CI machine does not have, so this script is not run by
# scripts/test.sh; docs/operations.md §5 says what is and is not tested. Some resources
# of the stack (CloudFront, ECS on Fargate, the load balancer) are LocalStack Pro features:
# the community edition stops at them.
set -euo pipefail

cd "$(dirname "$0")/.."

cdk_version=2.1108.0
cdklocal_version=3.0.4
endpoint=${LOCALSTACK_ENDPOINT:-http://localhost:4566}

if ! curl -fsS "$endpoint/_localstack/health" >/dev/null 2>&1; then
	echo "LocalStack does not answer at $endpoint (start it with: docker run -p 4566:4566 localstack/localstack)" >&2
	exit 1
fi

scripts/build-lambdas.sh

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
cdklocal deploy --require-approval never -c stage=dev "$@"
