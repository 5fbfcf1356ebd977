#!/usr/bin/env bash
# Builds libctxpack (cdylib, with the `ffi-test-hooks` feature) and tests the C ABI as C
# and C++ hosts see it:
#   * the header compiles standalone as C99 and as C++17 (-Wall -Wextra -Werror
#     -pedantic) and survives double inclusion; it equals a fresh generation;
#   * every exported function is called by the tests or the quickstart example;
#   * tests/c/test_api.c, test_policy.c, test_json.c, test_boundary.c, test_threads.c,
#     test_cancel.c, test_tokenizer.c, test_groups.c, test_chat.c, test_variants.c,
#     test_prefix.c, test_oneshot.c,
#     test_cpp.cpp and examples/quickstart.c run
#     plain, under AddressSanitizer + UBSan, and under valgrind memcheck (zero errors,
#     zero definite/indirect leaks).
# The last line is "N passed, M failed"; the exit status is non-zero on any failure.
#
# Environment: CARGO_TARGET_DIR (default ./target), CC, CXX, CTXPACK_C_MODES (default
# "plain asan valgrind"; valgrind is skipped with a note when it is not installed).
set -uo pipefail

CC="${CC:-cc}"
CXX="${CXX:-c++}"
MODES="${CTXPACK_C_MODES:-plain asan valgrind}"

# shellcheck source=../harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../harness.sh"
start ctests

INC="-I$ROOT/include -I$ROOT/tests/c"
WARN="-Wall -Wextra -Werror -pedantic"
CFLAGS="-std=c99 $WARN -g -pthread $INC"
CXXFLAGS="-std=c++17 $WARN -g -pthread $INC"
LDFLAGS="-L$LIBDIR -Wl,-rpath,$LIBDIR -lctxpack -lm"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

echo "== header"
step header_c99_standalone "$CC" -std=c99 $WARN -fsyntax-only -x c "$ROOT/include/ctxpack.h"
step header_cxx17_standalone "$CXX" -std=c++17 $WARN -fsyntax-only -x c++ "$ROOT/include/ctxpack.h"
step header_twice_c99 sh -c "$CC $CFLAGS '$ROOT/tests/c/header_twice.c' -o '$OUT/header_twice_c' $LDFLAGS && '$OUT/header_twice_c'"
step header_twice_cxx17 sh -c "$CXX $CXXFLAGS -x c++ '$ROOT/tests/c/header_twice.c' -x none -o '$OUT/header_twice_cxx' $LDFLAGS && '$OUT/header_twice_cxx'"

header_is_current() {
    local fresh
    fresh=$(ls -t "$LIBDIR"/build/ctxpack-*/out/ctxpack.h 2>/dev/null | head -n 1)
    [[ -n "$fresh" ]] || { echo "no generated header under $LIBDIR/build"; return 1; }
    cmp "$fresh" "$ROOT/include/ctxpack.h" || return 1
    # In CI (a clean clone) the build must not have changed the committed header.
    if [[ -n "${CI:-}" ]] && git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$ROOT" diff --exit-code -- include/ctxpack.h
    fi
}
step header_is_current header_is_current

every_export_is_called() {
    local missing=0 sym
    for sym in $(nm -D --defined-only "$LIBDIR/libctxpack.so" | awk '$3 ~ /^ctxpack_/ {print $3}'); do
        if ! grep -qw "$sym" "$ROOT"/tests/c/*.c "$ROOT"/tests/c/*.cpp "$ROOT"/examples/*.c; then
            echo "not called by any C/C++ test: $sym"
            missing=1
        fi
    done
    return $missing
}
step every_export_is_called every_export_is_called

# The exports are exactly the header's functions, plus the ctxpack_test_* hooks of this
# test build (scripts/test-install.sh checks the release build with no exception). The
# count is printed, not written down anywhere: it comes from the build.
exports_match_header() {
    local exported declared
    exported=$(nm -D --defined-only "$LIBDIR/libctxpack.so" | awk '$3 ~ /^ctxpack_/ && $3 !~ /^ctxpack_test_/ {print $3}' | LC_ALL=C sort -u)
    declared=$(grep -v '^ *//' "$ROOT/include/ctxpack.h" | grep -oE '(^|[ *])ctxpack_[a-z0-9_]+\(' |
        grep -oE 'ctxpack_[a-z0-9_]+' | LC_ALL=C sort -u)
    diff -u <(echo "$declared") <(echo "$exported") || return 1
    echo "$(wc -l <<<"$exported") functions exported and declared"
}
step exports_match_header exports_match_header

# build VARIANT EXTRA_FLAGS: compiles every program into $OUT/VARIANT.
build() {
    local variant=$1 extra=$2 dir="$OUT/$1"
    mkdir -p "$dir"
    $CC $CFLAGS $extra "$ROOT/tests/c/test_api.c" -o "$dir/test_api" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/tests/c/test_policy.c" -o "$dir/test_policy" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/tests/c/test_json.c" -o "$dir/test_json" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/tests/c/test_threads.c" -o "$dir/test_threads" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/tests/c/test_cancel.c" -o "$dir/test_cancel" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/tests/c/test_tokenizer.c" -o "$dir/test_tokenizer" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/tests/c/test_groups.c" -o "$dir/test_groups" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/tests/c/test_chat.c" -o "$dir/test_chat" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/tests/c/test_boundary.c" -o "$dir/test_boundary" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/tests/c/test_variants.c" -o "$dir/test_variants" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/tests/c/test_prefix.c" -o "$dir/test_prefix" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/tests/c/test_oneshot.c" -o "$dir/test_oneshot" $LDFLAGS &&
        $CXX $CXXFLAGS $extra "$ROOT/tests/c/test_cpp.cpp" -o "$dir/test_cpp" $LDFLAGS &&
        $CC $CFLAGS $extra "$ROOT/examples/quickstart.c" -o "$dir/quickstart" $LDFLAGS
}

# The quickstart prints no test summary: wrap it so that it counts as one test.
quickstart() {
    "$@" && echo "1 passed, 0 failed"
}

# test_chat compares ctxpack_chat_trim with what the CLI prints for the same request,
# budget and options: the CLI's outputs are written here first (the CLI is built on the
# same library build) and the program finds them through CTXPACK_CHAT_EXPECTED.
chat_expected() {
    (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --bin ctxpack --features ffi-test-hooks) || return 1
    local cli="$LIBDIR/ctxpack" dir="$OUT/chat_expected" data="$ROOT/examples/data" f b
    mkdir -p "$dir"
    for f in openai anthropic; do
        for b in 100000 6000 3000 1500; do
            "$cli" --format "$f" "$data/$f-request.json" --max "$b" >"$dir/$f-$b.json" || return 1
        done
    done
    "$cli" --format openai "$data/openai-request.json" --max 3000 --encoding cl100k_base \
        >"$dir/openai-3000-cl100k.json" &&
        "$cli" --format anthropic "$data/anthropic-request.json" --max 3000 --no-pin-last-turn \
            >"$dir/anthropic-3000-unpinned.json" &&
        "$cli" --format openai "$data/openai-request.json" --max 3000 --head-tail 60:40 \
            >"$dir/openai-3000-short.json" &&
        "$cli" --format anthropic "$data/anthropic-request.json" --max 1500 --head-tail 30:20 \
            >"$dir/anthropic-1500-short.json"
}
step chat_expected chat_expected
export CTXPACK_ROOT="$ROOT" CTXPACK_CHAT_EXPECTED="$OUT/chat_expected"

PROGRAMS="test_api test_policy test_json test_boundary test_threads test_cancel test_tokenizer test_groups test_chat test_variants test_prefix test_oneshot test_cpp"
for mode in $MODES; do
    echo "== $mode"
    case $mode in
    plain)
        step build_plain build plain "" || continue
        for p in $PROGRAMS; do program "plain_$p" "$OUT/plain/$p"; done
        program plain_quickstart quickstart "$OUT/plain/quickstart"
        ;;
    asan)
        # The executables carry libasan (linked first, so no LD_PRELOAD is needed); the
        # Rust library is not instrumented but its malloc/free go through ASan's
        # interceptors, so leaks and bad frees across the boundary are caught.
        # allocator_may_return_null=1: ASan's malloc returns NULL for an impossible size
        # (as glibc's does) instead of stopping the program, so the out-of-memory tests
        # see ctxpack's own handling of it (CTXPACK_OUT_OF_MEMORY).
        step build_asan build asan "$SAN" || continue
        export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:fast_unwind_on_malloc=0:allocator_may_return_null=1"
        export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
        for p in $PROGRAMS; do program "asan_$p" "$OUT/asan/$p"; done
        program asan_quickstart quickstart "$OUT/asan/quickstart"
        unset ASAN_OPTIONS UBSAN_OPTIONS
        ;;
    valgrind)
        if ! command -v valgrind >/dev/null; then
            echo "note: valgrind is not installed; skipping the valgrind run"
            continue
        fi
        [[ -x "$OUT/plain/test_api" ]] || step build_plain build plain "" || continue
        # Tests that read freed memory on purpose (a released handle's tag) skip
        # themselves under valgrind, which reports every such read.
        export CTXPACK_TEST_VALGRIND=1
        VG="valgrind -q --leak-check=full --error-exitcode=1 --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect"
        for p in $PROGRAMS; do program "valgrind_$p" $VG "$OUT/plain/$p"; done
        program valgrind_quickstart quickstart $VG "$OUT/plain/quickstart"
        unset CTXPACK_TEST_VALGRIND
        ;;
    *)
        echo "unknown mode $mode"
        fail "mode_$mode"
        ;;
    esac
done

finish
