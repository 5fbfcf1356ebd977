#!/usr/bin/env bash
# Checks the Swift binding as far as a machine without a Swift toolchain can:
#   * the system-library module CCtxpack (Sources/CCtxpack/module.modulemap) is loaded
#     by clang -fmodules, the way Swift's ClangImporter loads it: check/module_check.c
#     imports it (as C with `#pragma clang module import`, and as Objective-C with
#     `@import`), is compiled with -Wall -Wextra -Werror and no implicit module maps, and
#     runs a small selection against the real library;
#   * without the module map the same file does not compile (so the declarations really
#     come from the module), and the object file carries the module's `link "ctxpack"`
#     autolink entry;
#   * every Swift source parses with the tree-sitter Swift grammar (syntax only; the
#     grammar comes from PyPI, `tree-sitter` and `tree-sitter-swift`, installed into a
#     venv under the target dir; skipped with a note when it cannot be installed).
# The Swift sources are NOT compiled or type-checked here: see README.md.
# The last line is "N passed, M failed"; the exit status is non-zero on any failure.
#
# Environment: CARGO_TARGET_DIR (default ./target), CLANG (default clang).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
LIBDIR="$TARGET/debug"
OUT="$TARGET/bindings-swift"
CLANG="${CLANG:-clang}"
MODULEMAP="$HERE/Sources/CCtxpack/module.modulemap"

# shellcheck source=../../tests/harness.sh
source "$ROOT/tests/harness.sh"


echo "== building libctxpack (target dir $TARGET)"
# Same features as bindings/cpp/run.sh and tests/c/run.sh, so the three share one build.
if ! (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --lib --features ffi-test-hooks); then
    echo "0 passed, 1 failed"
    exit 1
fi

echo "== module map (clang -fmodules)"
if ! command -v "$CLANG" >/dev/null; then
    fail "clang_available (install Debian's clang package)"
    echo "$passed passed, $failed failed"
    exit 1
fi

MODFLAGS="-fmodules -fno-implicit-module-maps -fmodules-cache-path=$OUT/module-cache -Wall -Wextra -Werror"
LINK="-L$LIBDIR -Wl,-rpath,$LIBDIR -lctxpack"

# compile_and_run LANG FLAGS...: builds check/module_check.c through the module and runs it.
compile_and_run() {
    local lang=$1
    shift
    "$CLANG" -x "$lang" "$@" $MODFLAGS -fmodule-map-file="$MODULEMAP" -c "$HERE/check/module_check.c" \
        -o "$OUT/module_check_$lang.o" &&
        "$CLANG" "$OUT/module_check_$lang.o" -o "$OUT/module_check_$lang" $LINK &&
        "$OUT/module_check_$lang"
}
step module_import_c compile_and_run c -std=c11
step module_import_objc compile_and_run objective-c

# The declarations come from the module map: without it the file must not compile.
without_module_map_fails() {
    ! "$CLANG" -x c -std=c11 $MODFLAGS -fsyntax-only "$HERE/check/module_check.c"
}
step module_is_the_only_source without_module_map_fails

# `link "ctxpack"` becomes an autolink entry (ELF: section .linker-options, "lib" then
# "ctxpack"), which is what makes Swift link libctxpack for every importer.
autolink_entry() {
    readelf -p .linker-options "$OUT/module_check_c.o" | grep -qw ctxpack
}
step module_links_ctxpack autolink_entry

echo "== Swift sources (tree-sitter syntax check)"
VENV="$OUT/syntax-venv"
if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c "import tree_sitter, tree_sitter_swift" 2>/dev/null; then
    python3 -m venv "$VENV" >/dev/null 2>&1 &&
        "$VENV/bin/pip" install -q tree-sitter tree-sitter-swift >"$OUT/syntax-venv.log" 2>&1
fi
if "$VENV/bin/python" -c "import tree_sitter, tree_sitter_swift" 2>/dev/null; then
    step swift_syntax "$VENV/bin/python" "$HERE/check/swift_syntax.py" "$HERE/Package.swift" \
        "$HERE"/Sources/Ctxpack/*.swift "$HERE"/Tests/CtxpackTests/*.swift
else
    echo "note: tree-sitter-swift could not be installed (see $OUT/syntax-venv.log); syntax check skipped"
fi

finish
