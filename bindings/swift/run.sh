#!/usr/bin/env bash
# Builds and tests the Swift binding with a real Swift toolchain: Swift 6.0.3, Debian 13's
# `swiftlang`, in a Debian trixie root that swift-root.sh creates on first use (a few
# minutes, 2.6 GB, under ~/.cache/ctxpack) and reuses afterwards.
#   * the system-library module CCtxpack (Sources/CCtxpack/module.modulemap) is loaded
#     by clang -fmodules on the host, the way Swift's ClangImporter loads it:
#     check/module_check.c imports it (as C with `#pragma clang module import`, and as
#     Objective-C with `@import`), is compiled with -Wall -Wextra -Werror and no implicit
#     module maps, and runs a small selection; without the module map it must not
#     compile, and its object file carries the module's `link "ctxpack"` entry;
#   * `swift build --build-tests -Xswiftc -warnings-as-errors` builds the package (the
#     repository's root Package.swift, whose targets are in bindings/swift) and its
#     tests in Swift 6 language mode (strict concurrency checking), inside the root,
#     against the libctxpack built here;
#   * `swift test` runs the XCTests: each test case passed counts one, each failed or
#     skipped one counts one failure (run.sh gives the tests everything they need, so
#     nothing may be skipped);
#   * a package outside the checkout that depends on this one (tests/packaging/swift)
#     builds and runs against the release library installed into a staging tree
#     (`make install`, which builds the release first when it is missing or stale).
# The last line is "N passed, M failed"; the exit status is non-zero on any failure,
# a compile error included.
#
# Inside the root (paths the Swift tests see; swift-root.sh explains the mounts):
#   /ctxpack/src        this checkout, read-only
#   /ctxpack/out        TARGET/bindings-swift: build products (build/), the library
#                       (lib/libctxpack.so, a copy, and its soname link libctxpack.so.0),
#                       the C quickstart's output
#   /ctxpack/shared     ../shared of the checkout, read-only, when it exists (the shared
#                       conformance vectors)
#   /ctxpack/vectors/N  each folder of CTXPACK_VECTOR_DIRS, read-only
#
# Environment: CARGO_TARGET_DIR (default ./target), CLANG (default clang), CC (default
# cc), CTXPACK_VECTOR_DIRS (colon-separated folders of pipeline vectors replacing the
# defaults: tests/vectors/pipeline and ../shared/conformance/{required,optional}/pipeline),
# CTXPACK_SWIFT_ROOT and CTXPACK_DEBIAN_MIRROR (see swift-root.sh).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLANG="${CLANG:-clang}"
CC="${CC:-cc}"
MODULEMAP="$HERE/Sources/CCtxpack/module.modulemap"

# shellcheck source=../../tests/harness.sh
source "$HERE/../../tests/harness.sh"
start bindings-swift

echo "== module map (clang -fmodules)"
if ! command -v "$CLANG" >/dev/null; then
    fail "clang_available (install Debian's clang package)"
    finish
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

echo "== Swift toolchain"
# The first use creates the root (its progress goes to the console and to a log).
if ! "$HERE/swift-root.sh" ensure; then
    fail swift_root
    finish
fi

# What the package and its tests get: the library under its soname with a pkg-config
# file (the system-library target finds the header and the library through it, as after
# `make install`), and the output of the C quickstart, which the Swift quickstart must
# reproduce.
prepare() {
    rm -rf "${OUT:?}/lib" && mkdir -p "$OUT/lib/pkgconfig" "$OUT/home" "$OUT/tmp" &&
        cp "$LIBDIR/libctxpack.so" "$OUT/lib/libctxpack.so" &&
        ln -s libctxpack.so "$OUT/lib/libctxpack.so.0" &&
        printf '%s\n' "Name: ctxpack" "Description: libctxpack of the checkout in /ctxpack/src" \
            "Version: $(awk -F'"' '/^version *=/ { print $2; exit }' "$ROOT/Cargo.toml")" \
            "Cflags: -I/ctxpack/src/include" "Libs: -L/ctxpack/out/lib -lctxpack" >"$OUT/lib/pkgconfig/ctxpack.pc" &&
        "$CC" -std=c99 -I"$ROOT/include" "$ROOT/examples/quickstart.c" -o "$OUT/quickstart_c" \
            -L"$LIBDIR" -Wl,-rpath,"$LIBDIR" -lctxpack &&
        "$OUT/quickstart_c" >"$OUT/quickstart_c.txt"
}
step swift_inputs prepare || finish

mounts=(--ro "$ROOT" /ctxpack/src --rw "$OUT" /ctxpack/out)
[[ -d "$ROOT/../shared" ]] && mounts+=(--ro "$ROOT/../shared" /ctxpack/shared)
guest_vectors=""
if [[ -n "${CTXPACK_VECTOR_DIRS:-}" ]]; then
    IFS=: read -r -a dirs <<<"$CTXPACK_VECTOR_DIRS"
    for i in "${!dirs[@]}"; do
        mounts+=(--ro "${dirs[i]}" "/ctxpack/vectors/$i")
        guest_vectors+="${guest_vectors:+:}/ctxpack/vectors/$i"
    done
fi

# in_root COMMAND...: COMMAND in the package folder (the checkout's root, where
# Package.swift is) inside the root, with the test environment.
in_root() {
    "$HERE/swift-root.sh" run "${mounts[@]}" --cd /ctxpack/src -- \
        env HOME=/ctxpack/out/home TMPDIR=/ctxpack/out/tmp PKG_CONFIG_PATH=/ctxpack/out/lib/pkgconfig \
        RUST_BACKTRACE=0 CTXPACK_TEST_HOOKS=1 \
        CTXPACK_QUICKSTART_C_OUTPUT=/ctxpack/out/quickstart_c.txt \
        ${guest_vectors:+CTXPACK_VECTOR_DIRS="$guest_vectors"} "$@"
}

# Build products stay in /ctxpack/out (the checkout is read-only); the test binary finds
# the library through its run path.
SWIFTPM=(--scratch-path /ctxpack/out/build -Xlinker -rpath -Xlinker /ctxpack/out/lib)

step swift_version in_root swift --version && sed 's/^/    /' "$OUT/swift_version.log"
# The tests run only after a clean build (--skip-build would run the previous binaries).
step swift_build in_root swift build --build-tests -Xswiftc -warnings-as-errors "${SWIFTPM[@]}" || finish

# xctest COMMAND...: runs `swift test` and closes its output with the harness's summary
# line, counted from XCTest's "Test Case '...' passed|failed|skipped" lines.
xctest() {
    local out="$OUT/xctest.txt"
    "$@" 2>&1 | tee "$out"
    local rc=${PIPESTATUS[0]}
    local p f s
    p=$(grep -cE "^Test Case '.*' passed" "$out")
    f=$(grep -cE "^Test Case '.*' failed" "$out")
    s=$(grep -cE "^Test Case '.*' skipped" "$out")
    echo "$p passed, $((f + s)) failed"
    return "$rc"
}
program swift_test xctest in_root swift test --skip-build "${SWIFTPM[@]}"

# The package as a dependency of another package, against an installed ctxpack (the
# release build, `make install` into a staging tree): tests/packaging/swift/consumer.sh.
# scripts/test-install.sh runs it too when the Swift root exists; this run makes sure a
# fresh machine (CI) runs it once the root has been created above.
echo "== the package as a dependency (tests/packaging/swift)"
swift_consumer() {
    rm -rf "${OUT:?}/consumer" && mkdir -p "$OUT/consumer/work" &&
        make -C "$ROOT" install DESTDIR="$OUT/consumer/dest" PREFIX=/usr/local LDCONFIG=true &&
        "$ROOT/tests/packaging/swift/consumer.sh" "$OUT/consumer/dest/usr/local" "$OUT/consumer/work"
}
step swift_consumer swift_consumer

finish
