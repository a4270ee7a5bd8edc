#!/usr/bin/env bash
# Check the Go side of the process protocol: the SDK (conformance/go) and the Go
# template provider (fakes/go-template), each its own Go module with no requirements
# beyond the standard library, so everything runs offline (GOPROXY=off).
#
#   1. installs Debian's golang-go when `go` is missing (needs root and apt);
#   2. builds fake-libvirtd (cargo) and exports FAKE_LIBVIRTD, which the tests of
#      conformance/go/fakelibvirt start (a prebuilt one is taken from $FAKE_LIBVIRTD);
#   3. fails if `gofmt -l` lists any file, then runs `go vet` and `go test` per module;
#   4. builds the Go template's server into target/go/go-template-serve;
#   5. runs the conformance suite against it and writes target/ci-report/go-template,
#      but only after a first run into a scratch directory gave the verdict pass.
#
# The suite binary is target/debug/conformance (or $CONFORMANCE_BIN); without it the
# script builds it with `cargo build -p conformance --features remote --bin conformance`.
#
# Usage: scripts/go-check.sh
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export GOPROXY=off
export GOCACHE="${GOCACHE:-$root/target/go/cache}"
modules=(conformance/go fakes/go-template)

if ! command -v go >/dev/null 2>&1; then
    echo "go-check: installing golang-go" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "go-check: go is missing and installing it needs root" >&2
        exit 1
    fi
    apt-get install -y -qq golang-go >/dev/null \
        || { apt-get update -qq >/dev/null && apt-get install -y -qq golang-go >/dev/null; }
fi
echo "go-check: $(go version)"

if [ -z "${FAKE_LIBVIRTD:-}" ]; then
    cargo build -q -p libvirt-fake --bin fake-libvirtd
    FAKE_LIBVIRTD="$root/${CARGO_TARGET_DIR:-target}/debug/fake-libvirtd"
    case "${CARGO_TARGET_DIR:-}" in /*) FAKE_LIBVIRTD="$CARGO_TARGET_DIR/debug/fake-libvirtd" ;; esac
fi
export FAKE_LIBVIRTD
echo "go-check: fake-libvirtd for the fixture package's tests: $FAKE_LIBVIRTD"

unformatted="$(gofmt -l "${modules[@]}")"
if [ -n "$unformatted" ]; then
    echo "go-check: gofmt would change these files:" >&2
    echo "$unformatted" >&2
    exit 1
fi

for m in "${modules[@]}"; do
    echo "go-check: go vet + go test in $m"
    (cd "$m" && go vet ./... && go test -count=1 ./...)
done

mkdir -p target/go
(cd fakes/go-template && go build -o "$root/target/go/go-template-serve" ./cmd/go-template-serve)
echo "go-check: built target/go/go-template-serve"

suite="${CONFORMANCE_BIN:-target/debug/conformance}"
if [ ! -x "$suite" ]; then
    cargo build -q -p conformance --features remote --bin conformance
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
if ! "$suite" run --provider-command "$root/target/go/go-template-serve" --out "$scratch/report" \
        >"$scratch/run.log" 2>&1; then
    cat "$scratch/run.log" >&2
    echo "go-check: the Go template does not pass the whole suite; no report written" >&2
    exit 1
fi
if ! grep -q '^verdict: pass' "$scratch/run.log"; then
    cat "$scratch/run.log" >&2
    echo "go-check: the suite's verdict against the Go template is not pass" >&2
    exit 1
fi
rm -rf target/ci-report/go-template
mkdir -p target/ci-report
"$suite" run --provider-command "$root/target/go/go-template-serve" --out target/ci-report/go-template
