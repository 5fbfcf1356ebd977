#!/usr/bin/env bash
# Builds and tests the C++ binding (bindings/cpp/include/ctxpack.hpp) against the real
# libctxpack:
#   * the header compiles standalone with g++ -std=c++17 -Wall -Wextra -Werror -pedantic;
#   * tests/test_api.cpp (statuses, ownership, components, lambdas, reports, threads),
#     tests/test_vectors.cpp (pipeline conformance vectors read from their TOML files),
#     tests/test_policy_json.cpp (policy JSON reading options, scorer registry, budget JSON)
#     and tests/test_chat.cpp (token counting, chat requests: the bundled samples)
#     are compiled with the same flags and run, once plain and once under
#     AddressSanitizer + UBSan (LeakSanitizer included);
#   * examples/quickstart.cpp prints exactly what examples/quickstart.c prints.
# The library is built with the `ffi-test-hooks` feature (as tests/c/run.sh does) so the
# status table can reach CTXPACK_PANIC and CTXPACK_INVALID_POLICY through a real run.
# The last line is "N passed, M failed"; the exit status is non-zero on any failure.
#
# Environment: CARGO_TARGET_DIR (default ./target), CXX (default g++), CC (default cc),
# CTXPACK_CPP_MODES (default "plain asan"), CTXPACK_VECTOR_DIRS (colon-separated folders
# of pipeline vectors, or vector files; default: tests/vectors/cupel-1.0.0/required/pipeline,
# tests/vectors/pipeline and tests/vectors/groups/pipeline-*.toml).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CXX="${CXX:-g++}"
CC="${CC:-cc}"
MODES="${CTXPACK_CPP_MODES:-plain asan}"

# shellcheck source=../../tests/harness.sh
source "$HERE/../../tests/harness.sh"
start bindings-cpp

CXXFLAGS="-std=c++17 -Wall -Wextra -Werror -pedantic -g -pthread -I$ROOT/include -I$HERE/include"
LDFLAGS="-L$LIBDIR -Wl,-rpath,$LIBDIR -lctxpack"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

vector_dirs=()
if [[ -n "${CTXPACK_VECTOR_DIRS:-}" ]]; then
    IFS=: read -r -a vector_dirs <<<"$CTXPACK_VECTOR_DIRS"
else
    for d in "$ROOT/tests/vectors/cupel-1.0.0/required/pipeline" "$ROOT/tests/vectors/pipeline"; do
        [[ -d "$d" ]] && vector_dirs+=("$(cd "$d" && pwd)")
    done
    # The pipeline vectors of the item-group extension (docs/groups.md).
    for f in "$ROOT"/tests/vectors/groups/pipeline-*.toml; do
        [[ -f "$f" ]] && vector_dirs+=("$f")
    done
fi

echo "== header"
step header_standalone "$CXX" $CXXFLAGS -fsyntax-only -x c++ "$HERE/include/ctxpack.hpp"

# build MODE EXTRA_FLAGS: compiles the tests and both quickstarts into $OUT/MODE.
build() {
    local dir="$OUT/$1" extra=$2
    mkdir -p "$dir"
    $CXX $CXXFLAGS $extra "$HERE/tests/test_api.cpp" -o "$dir/test_api" $LDFLAGS &&
        $CXX $CXXFLAGS $extra "$HERE/tests/test_vectors.cpp" -o "$dir/test_vectors" $LDFLAGS &&
        $CXX $CXXFLAGS $extra "$HERE/tests/test_policy_json.cpp" -o "$dir/test_policy_json" $LDFLAGS &&
        $CXX $CXXFLAGS $extra "$HERE/tests/test_chat.cpp" -o "$dir/test_chat" $LDFLAGS &&
        $CXX $CXXFLAGS $extra "$HERE/examples/quickstart.cpp" -o "$dir/quickstart_cpp" $LDFLAGS &&
        $CC -std=c99 -I"$ROOT/include" $extra "$ROOT/examples/quickstart.c" -o "$dir/quickstart_c" $LDFLAGS
}

# The C++ quickstart must print exactly what the C one prints.
same_quickstart_output() {
    local dir=$1
    "$dir/quickstart_c" >"$dir/quickstart_c.out" && "$dir/quickstart_cpp" >"$dir/quickstart_cpp.out" &&
        diff -u "$dir/quickstart_c.out" "$dir/quickstart_cpp.out" && cat "$dir/quickstart_cpp.out"
}

for mode in $MODES; do
    echo "== $mode"
    case $mode in
    plain) step build_plain build plain "" || continue ;;
    asan)
        step build_asan build asan "$SAN" || continue
        # The test executables carry libasan (linked first, no LD_PRELOAD needed); the
        # Rust library's malloc/free go through its interceptors, so LeakSanitizer sees
        # leaks across the boundary too (see docs/ffi.md, "Tests"). allocator_may_return_null:
        # an impossible size makes malloc return NULL (CTXPACK_OUT_OF_MEMORY), as glibc does.
        export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:fast_unwind_on_malloc=0:allocator_may_return_null=1"
        export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
        ;;
    *)
        fail "unknown mode $mode"
        continue
        ;;
    esac
    # The status table provokes a real panic inside the library; keep its backtrace short.
    RUST_BACKTRACE=0 program "${mode}_test_api" "$OUT/$mode/test_api"
    program "${mode}_test_vectors" "$OUT/$mode/test_vectors" "${vector_dirs[@]}"
    program "${mode}_test_policy_json" "$OUT/$mode/test_policy_json"
    program "${mode}_test_chat" "$OUT/$mode/test_chat" "$ROOT/examples/data"
    step "${mode}_quickstart_same_as_c" same_quickstart_output "$OUT/$mode"
    unset ASAN_OPTIONS UBSAN_OPTIONS
done

finish
