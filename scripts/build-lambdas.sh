#!/usr/bin/env bash
# Builds one Lambda bundle per route group (functions/<group>/main.go): a `bootstrap` for the
# provided.al2023 runtime on arm64 (Graviton), zipped, for the CDK stack (infra/).
#
#   scripts/build-lambdas.sh            arm64 bundles: build/lambda/<group>.zip
#   scripts/build-lambdas.sh --host     host-architecture bootstraps for the packaging test
#                                       (test/lambda): build/lambda/host/<group>/bootstrap
#
# The bundles are reproducible: the same source and toolchain give byte-identical zips
# (-trimpath, -buildvcs=false, an empty build id, no symbol tables, one file per zip with a
# fixed time and mode, no extra attributes). BUILD sets the version GET /health reports
# (default "dev"); it is part of the binary, so keep it fixed to compare builds.
#
# h3-go is C (cgo), so the arm64 build needs a C cross-compiler: Debian's aarch64 toolchain,
# installed here with apt-get when missing (as root, as scripts/test.sh installs what it
# needs). The binary is linked statically (netgo and osusergo keep glibc's NSS out), so it
# needs nothing from Amazon Linux 2023's glibc (2.34); the script checks that with objdump.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
out="$root/build/lambda"
mode=arm64
case "${1:-}" in
--host) mode=host ;;
"") ;;
*)
	echo "usage: $0 [--host]" >&2
	exit 2
	;;
esac

build=${BUILD:-dev}
# 1980-01-01: the earliest time a zip entry can hold.
stamp=198001010000.00

mapfile -t groups < <(find functions -mindepth 2 -maxdepth 2 -name main.go -printf '%h\n' | xargs -n1 basename | LC_ALL=C sort)
if [ "${#groups[@]}" -eq 0 ]; then
	echo "no functions/<group>/main.go found" >&2
	exit 1
fi

goflags=(-trimpath -buildvcs=false -tags netgo,osusergo,lambda.norpc)
ldflags="-s -w -buildid= -X main.build=$build"

if [ "$mode" = host ]; then
	for g in "${groups[@]}"; do
		mkdir -p "$out/host/$g"
		CGO_ENABLED=1 go build "${goflags[@]}" -ldflags "$ldflags" -o "$out/host/$g/bootstrap" "./functions/$g"
		echo "$out/host/$g/bootstrap"
	done
	exit 0
fi

cc=aarch64-linux-gnu-gcc
if ! command -v "$cc" >/dev/null; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "$cc is missing: run as root, or apt-get install gcc-aarch64-linux-gnu" >&2
		exit 1
	fi
	echo "installing the aarch64 C toolchain (gcc-aarch64-linux-gnu)" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc-aarch64-linux-gnu >&2 ||
		{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc-aarch64-linux-gnu >&2; }
fi
objdump=aarch64-linux-gnu-objdump
command -v "$objdump" >/dev/null || objdump=objdump

for g in "${groups[@]}"; do
	dir="$out/arm64/$g"
	mkdir -p "$dir"
	CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC="$cc" \
		go build "${goflags[@]}" -ldflags "$ldflags -linkmode=external -extldflags=-static" \
		-o "$dir/bootstrap" "./functions/$g"
	# Static: no dynamic symbol table, so no glibc symbol version can be needed at all.
	if "$objdump" -T "$dir/bootstrap" 2>/dev/null | grep -q GLIBC_; then
		echo "$g: bootstrap needs glibc symbols; want a static binary" >&2
		"$objdump" -T "$dir/bootstrap" | grep -o 'GLIBC_[0-9.]*' | sort -uV >&2
		exit 1
	fi
	chmod 0755 "$dir/bootstrap"
	TZ=UTC touch -t "$stamp" "$dir/bootstrap"
	rm -f "$out/$g.zip"
	# -X: no uid/gid or extended times; -D: no directory entries. The zip's times are local.
	(cd "$dir" && TZ=UTC zip -q -X -D -9 "$out/$g.zip" bootstrap)
	printf '%-14s %9d bytes  sha256 %s\n' "$g.zip" "$(stat -c %s "$out/$g.zip")" "$(sha256sum "$out/$g.zip" | cut -c1-16)"
done
