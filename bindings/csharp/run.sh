#!/usr/bin/env bash
# Builds libctxpack (debug, with the `ffi-test-hooks` feature, as tests/c/run.sh does),
# compiles the C# binding and its test program with Mono's mcs (warnings are errors), and
# runs the tests with mono:
#   * struct layouts against tests/layout.c, generated from every struct of the header;
#   * the quickstart, compared with the output of examples/quickstart.c;
#   * the pipeline vectors, every status code, C# custom components, concurrency.
# The last line is the test program's "N passed, M failed"; the exit status is non-zero
# on any failure.
#
# Environment: CARGO_TARGET_DIR (default ./target), CC (default cc), MCS (default mcs),
# MONO (default mono), CTXPACK_CONFORMANCE_DIRS (extra vector directories).
# Debian packages: mono-devel (mcs, mono), a C compiler.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CC="${CC:-cc}"
MCS="${MCS:-mcs}"
MONO="${MONO:-mono}"

# The library build; the test program counts and prints the results itself.
# shellcheck source=../../tests/harness.sh
source "$HERE/../../tests/harness.sh"
start csharp-tests

die() {
    echo "$1"
    echo "0 passed, 1 failed"
    exit 1
}

echo "== struct layouts and the C quickstart"
awk '/^typedef struct [a-z_]+ \{/ { name = $3; inside = 1; print "S(" name ")"; next }
     inside && /^\}/ { inside = 0; next }
     inside && /;[ \t]*$/ && !/^[ \t]*\/\// {
         line = $0; sub(/;[ \t]*$/, "", line); sub(/\[[0-9]+\]$/, "", line); n = split(line, parts, /[ *]+/)
         print "F(" name ", " parts[n] ")" }' "$ROOT/include/ctxpack.h" >"$OUT/layout_fields.h"
"$CC" -std=c99 -Wall -Werror -I"$ROOT/include" -I"$OUT" "$HERE/tests/layout.c" -o "$OUT/layout" || die "layout.c failed to build"
"$OUT/layout" >"$OUT/layout.txt" || die "layout failed to run"
"$CC" -std=c99 -I"$ROOT/include" "$ROOT/examples/quickstart.c" -L"$LIBDIR" -lctxpack -Wl,-rpath,"$LIBDIR" \
    -o "$OUT/quickstart" || die "examples/quickstart.c failed to build"
"$OUT/quickstart" >"$OUT/quickstart.txt" || die "the C quickstart failed"

echo "== $("$MCS" --version)"
"$MCS" -unsafe -debug -warnaserror -nologo -target:library -out:"$OUT/Ctxpack.dll" "$HERE"/src/*.cs ||
    die "the binding failed to compile"
"$MCS" -unsafe -debug -warnaserror -nologo -r:"$OUT/Ctxpack.dll" -out:"$OUT/Ctxpack.Tests.exe" "$HERE"/tests/*.cs ||
    die "the tests failed to compile"

echo "== $("$MONO" --version | head -n 1)"
# The status tests inject a panic into the library; keep its report to one line.
export RUST_BACKTRACE=0
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CTXPACK_REPO_ROOT="$ROOT"
export CTXPACK_LAYOUT_FILE="$OUT/layout.txt"
export CTXPACK_QUICKSTART_C_OUTPUT="$OUT/quickstart.txt"
export CTXPACK_TEST_HOOKS=1
exec "$MONO" --debug "$OUT/Ctxpack.Tests.exe" "$@"
