#!/usr/bin/env bash
# Builds and runs the Swift consumer (this folder: a SwiftPM package that depends on the
# repository) inside the Swift root of bindings/swift/swift-root.sh, against an installed
# ctxpack:
#
#   consumer.sh TREE WORK
#
# TREE is what `make install PREFIX=/usr/local` put under DESTDIR/usr/local; it is mounted
# read-only at /usr/local in the root, so pkg-config (its default search path) and the
# linker find ctxpack there as they find an installed library. WORK is an empty scratch
# folder mounted at /work: the consumer's copy (/work/consumer), its build, HOME and TMPDIR.
# The checkout is mounted read-only at /work/ctxpack, the consumer's `.package(path:
# "../ctxpack")`: SwiftPM reads its root Package.swift as it reads a URL dependency's.
#
# Checks: `swift build` of the consumer with warnings as errors; the executable needs
# libctxpack.so.MAJOR (the installed library, through the system-library target's
# `link "ctxpack"`); run with LD_LIBRARY_PATH=/usr/local/lib (the root's loader cache does
# not list /usr/local/lib), it prints "ctxpack VERSION: 3 of 3 items selected" with the
# version of Cargo.toml. The exit status is non-zero on any failure.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
[[ $# -eq 2 && -d "$1" && -d "$2" ]] || { echo "usage: consumer.sh TREE WORK (two folders)" >&2; exit 2; }
TREE="$(cd "$1" && pwd)"
WORK="$(cd "$2" && pwd)"
VERSION=$(awk -F'"' '/^\[/ { pkg = ($0 == "[package]") } pkg && /^version *=/ { print $2; exit }' "$ROOT/Cargo.toml")
SONAME="libctxpack.so.${VERSION%%.*}"

mkdir -p "$WORK/consumer" "$WORK/home" "$WORK/tmp"
cp -R "$HERE/Package.swift" "$HERE/Sources" "$WORK/consumer/"

in_root() {
    "$ROOT/bindings/swift/swift-root.sh" run --rw "$WORK" /work --ro "$ROOT" /work/ctxpack \
        --ro "$TREE" /usr/local --cd /work/consumer -- \
        env HOME=/work/home TMPDIR=/work/tmp "$@"
}

echo "== swift build (the consumer, with ctxpack as a path dependency)"
in_root swift build --scratch-path /work/build -Xswiftc -warnings-as-errors

exe="$WORK/build/debug/Consumer"
echo "== $exe"
readelf -d "$exe" | grep -F "(NEEDED)" | grep -qF "[$SONAME]" ||
    { echo "the consumer does not need $SONAME"; readelf -d "$exe" | grep -F "(NEEDED)"; exit 1; }
out=$(in_root env LD_LIBRARY_PATH=/usr/local/lib /work/build/debug/Consumer)
echo "$out"
[[ "$out" == "ctxpack $VERSION: 3 of 3 items selected" ]] ||
    { echo "expected: ctxpack $VERSION: 3 of 3 items selected"; exit 1; }
echo "consumer: ok"
