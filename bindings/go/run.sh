#!/usr/bin/env bash
# Builds libctxpack (debug, with the `ffi-test-hooks` feature, as tests/c/run.sh does)
# and tests the Go binding against it:
#   * gofmt and `go vet` (with and without the test-hook build tag) are clean;
#   * `go test` runs every test (quickstart against examples/quickstart.c, the pipeline
#     vectors, every status code, Go custom components, concurrency), once plainly, once
#     under the race detector and once under AddressSanitizer (`-asan`: the cgo glue is
#     instrumented and every allocation, the library's included, goes through ASan's
#     allocator), all with GODEBUG=cgocheck=2.
# The last line is "N passed, M failed" (test functions and subtests of both runs, plus
# the gofmt/vet checks); the exit status is non-zero on any failure.
#
# Environment: CARGO_TARGET_DIR (default ./target), CC, CTXPACK_CONFORMANCE_DIRS (extra
# vector directories), GO (default go). Needs Go >= 1.19 (Debian: golang-go) and a C
# compiler (cgo), pkg-config.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GO="${GO:-go}"
TAGS="-tags=ctxpack_testhooks"

# shellcheck source=../../tests/harness.sh
source "$HERE/../../tests/harness.sh"
start go-tests

# gotest NAME FLAGS...: `go test -v` and its PASS/FAIL counts; a build failure or a crash
# (non-zero exit without a failing test) counts as one failure.
gotest() {
    local name=$1
    shift
    local log="$OUT/$name.log"
    (cd "$HERE" && "$GO" test -count=1 -v "$TAGS" "$@" ./...) >"$log" 2>&1
    local rc=$?
    local p f
    p=$(grep -cE '^ *--- PASS' "$log")
    f=$(grep -cE '^ *--- FAIL' "$log")
    passed=$((passed + p))
    failed=$((failed + f))
    if [[ $rc -ne 0 && $f -eq 0 ]]; then
        failed=$((failed + 1))
    fi
    if [[ $rc -eq 0 ]]; then
        echo "ok   $name: $p passed"
    else
        echo "FAIL $name: $p passed, $f failed (log: $log)"
        grep -E -A12 '^ *--- FAIL|^panic:|^FAIL|WARNING: DATA RACE|cannot|undefined' "$log" | head -n 80 | sed 's/^/    /'
    fi
}

# The package finds the library through `#cgo pkg-config: ctxpack`, as it does after
# `make install`: here a ctxpack.pc for the checkout (include/ and the test build in
# LIBDIR), first on PKG_CONFIG_PATH, and the loader finds the library through
# LD_LIBRARY_PATH (the package records no run path).
mkdir -p "$OUT/pkgconfig"
printf '%s\n' "Name: ctxpack" "Description: libctxpack of the checkout $ROOT (bindings/go/run.sh)" \
    "Version: $(awk -F'"' '/^version *=/ { print $2; exit }' "$ROOT/Cargo.toml")" \
    "Cflags: -I$ROOT/include" "Libs: -L$LIBDIR -lctxpack" >"$OUT/pkgconfig/ctxpack.pc"
export PKG_CONFIG_PATH="$OUT/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The status tests inject a panic into the library; keep its report to one line.
export RUST_BACKTRACE=0
export CGO_ENABLED=1
export CTXPACK_LIB_DIR="$LIBDIR"
# Full cgo pointer checking: also catches Go pointers stored into C memory.
export GODEBUG=cgocheck=2
echo "== $("$GO" version)"

step gofmt bash -c "cd '$HERE' && test -z \"\$(gofmt -l .)\" || { gofmt -l .; exit 1; }"
step go-vet bash -c "cd '$HERE' && '$GO' vet ./..."
step go-vet-testhooks bash -c "cd '$HERE' && '$GO' vet $TAGS ./..."
gotest go-test
gotest go-test-race -race
# allocator_may_return_null: an impossible size makes malloc return NULL (the library
# then reports CTXPACK_OUT_OF_MEMORY), as glibc's does, instead of stopping the program.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1" gotest go-test-asan -asan

finish
