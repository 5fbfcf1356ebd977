#!/usr/bin/env bash
# Builds the release library and the C# binding, then runs bench/TraceBench.cs (the cost of
# a traced run's report). Not part of any test suite. Argument: runs per case (default 200).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
LIBDIR="${CARGO_TARGET_DIR:-$ROOT/target}/release"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
(cd "$ROOT" && cargo build --release --quiet)
mcs -unsafe -optimize+ -nologo -target:library -out:"$OUT/Ctxpack.dll" "$HERE"/../src/*.cs
mcs -optimize+ -nologo -r:"$OUT/Ctxpack.dll" -out:"$OUT/TraceBench.exe" "$HERE/TraceBench.cs"
LD_LIBRARY_PATH="$LIBDIR" mono "$OUT/TraceBench.exe" "$@"
