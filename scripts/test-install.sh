#!/usr/bin/env bash
# Installs ctxpack into a temporary tree the way a distribution does and uses it the way an
# application does (`make test-install`; docs/packaging.md):
#   * `make install DESTDIR=<tmp> PREFIX=/usr/local`: the exact file layout and modes (no
#     DESTDIR and no @PLACEHOLDER@ left in the installed files), the soname and symlinks,
#     the exported symbols (only ctxpack_*, exactly the functions of the header), the
#     header, the pkg-config file, the `ctxpack` tool;
#   * every examples/*.c built with `pkg-config --cflags --libs ctxpack` (run against the
#     installed libctxpack.so) and with `pkg-config --static --cflags --libs ctxpack`
#     linking libctxpack.a (no dependency on libctxpack.so), and run;
#   * the C++ binding: the C++ quickstart built with `pkg-config --cflags --libs ctxpack`,
#     and as a CMake project (tests/packaging/cxx) through find_package and ctxpack::cxx,
#     printing what the C quickstart prints;
#   * the Go binding as a module: published into a file-system module proxy, fetched
#     with `go get` by a new module outside the checkout (tests/packaging/go), built
#     through `#cgo pkg-config: ctxpack` with no run path, and run; the binding's Example
#     runs from the module cache;
#   * the C# binding's NuGet package layout (bindings/csharp/pack.sh) of the installed
#     library, and a program compiled with mcs against it (tests/packaging/csharp) that
#     runs with no LD_LIBRARY_PATH;
#   * the Swift package as a dependency of another package (tests/packaging/swift), built
#     and run in the Swift root against the installed tree, when that root exists;
#   * the CMake package: tests/packaging/cmake builds the examples against both targets
#     (cmake is installed with apt-get when missing and possible, otherwise skipped);
#   * a second install with LIBDIR/INCLUDEDIR/BINDIR overridden, and `make uninstall`
#     leaving no file behind in either tree;
#   * the build tree: a program linked against target/release runs (build.rs links
#     libctxpack.so.MAJOR there).
# The last line is "N passed, M failed"; the exit status is non-zero on any failure.
#
# Environment: CARGO_TARGET_DIR (default ./target), CC (default cc), CXX (default c++),
# GO (default go), MCS (default mcs), MONO (default mono), MAKE (default make),
# CTXPACK_KEEP_TMP=1 keeps the temporary tree (it is kept anyway when a check fails).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
RELEASE_DIR="$CARGO_TARGET_DIR/release"
CC="${CC:-cc}"
MAKE="${MAKE:-make}"
CFLAGS=(-std=c99 -Wall -Wextra -Werror -pedantic)

TMP="$(mktemp -d "${TMPDIR:-/tmp}/ctxpack-test-install.XXXXXX")"
LOGS="$TMP/logs"
OUT="$TMP/out"
mkdir -p "$LOGS" "$OUT"
started=$SECONDS
passed=0
failed=0
skipped=0

finish() {
    if [[ $failed -eq 0 && -z "${CTXPACK_KEEP_TMP:-}" ]]; then
        rm -rf "$TMP"
    else
        echo "temporary tree kept: $TMP"
    fi
}
trap finish EXIT

# check NAME COMMAND...: one check; its output is shown only when it fails.
check() {
    local name=$1
    shift
    if "$@" >"$LOGS/$name.log" 2>&1; then
        passed=$((passed + 1))
        echo "ok   $name"
    else
        failed=$((failed + 1))
        echo "FAIL $name"
        tail -n 40 "$LOGS/$name.log" | sed 's/^/    /'
        return 1
    fi
}

skip() {
    skipped=$((skipped + 1))
    echo "skip $1 ($2)"
}

# expect WHAT ACTUAL EXPECTED: fails with a message naming both when they differ.
expect() {
    if [[ "$2" != "$3" ]]; then
        printf '%s:\n  got      %s\n  expected %s\n' "$1" "$2" "$3"
        return 1
    fi
}

# The version from cargo itself, not from the Makefile's reading of Cargo.toml.
pkgid="$(cd "$ROOT" && cargo pkgid)"
VERSION="${pkgid##*[#@]}"
LIB_VERSION="${VERSION%%[-+]*}"
MAJOR="${VERSION%%.*}"
REAL_LIB="libctxpack.so.$LIB_VERSION"
SONAME="libctxpack.so.$MAJOR"
echo "== ctxpack $VERSION: soname $SONAME, temporary tree $TMP"

# --- the default install ----------------------------------------------------------------

PREFIX=/usr/local
DEST="$TMP/dest"
LIB="$DEST$PREFIX/lib"

check build "$MAKE" -C "$ROOT" build || { echo "$passed passed, $failed failed"; exit 1; }
check install "$MAKE" -C "$ROOT" install DESTDIR="$DEST" PREFIX="$PREFIX" ||
    { echo "$passed passed, $failed failed"; exit 1; }

# listing DIR: every file and symlink under DIR, relative, with its mode or its target.
listing() {
    (cd "$1" && find . \( -type f -printf '%P %m\n' \) -o \( -type l -printf '%P -> %l\n' \)) |
        LC_ALL=C sort
}

layout() {
    local expected
    expected=$(LC_ALL=C sort <<EOF
bin/ctxpack 755
include/ctxpack.h 644
include/ctxpack.hpp 644
lib/$REAL_LIB 644
lib/$SONAME -> $REAL_LIB
lib/libctxpack.so -> $REAL_LIB
lib/libctxpack.a 644
lib/pkgconfig/ctxpack.pc 644
lib/cmake/ctxpack/ctxpackConfig.cmake 644
lib/cmake/ctxpack/ctxpackConfigVersion.cmake 644
EOF
    )
    diff -u <(echo "$expected") <(listing "$DEST$PREFIX") &&
        expect "top level of DESTDIR" "$(ls "$DEST")" "usr" || return 1
    if grep -rlF "$DEST" "$LIB/pkgconfig" "$LIB/cmake"; then
        echo "DESTDIR is written into the files above"
        return 1
    fi
    if grep -rE '@[A-Z_]+@' "$LIB/pkgconfig" "$LIB/cmake"; then
        echo "template placeholders left unfilled"
        return 1
    fi
}
check layout layout || true

soname() {
    local actual
    actual=$(readelf -d "$LIB/$REAL_LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    expect "SONAME of $REAL_LIB" "$actual" "$SONAME"
}
check soname soname || true

# The functions the header declares: "ctxpack_name(" outside comments, not "(*ctxpack_fn)(".
header_functions() {
    grep -v '^ *//' "$1" | grep -oE '(^|[ *])ctxpack_[a-z0-9_]+\(' | grep -oE 'ctxpack_[a-z0-9_]+' |
        LC_ALL=C sort -u
}

# Only ctxpack_* is exported, and exactly the header's functions (no header-less test hook
# in a release build). No exception is allowed: rustc's own version script for the cdylib
# exports the #[no_mangle] functions and hides everything else, _init/_fini included.
exports() {
    local defined others
    defined=$(nm -D --defined-only "$LIB/$REAL_LIB" | awk '{print $NF}' | LC_ALL=C sort -u)
    others=$(grep -v '^ctxpack_' <<<"$defined" || true)
    [[ -z "$others" ]] || { echo "exported symbols outside ctxpack_*:"; echo "$others"; return 1; }
    echo "$(wc -l <<<"$defined") exported symbols, all ctxpack_*"
    diff -u <(header_functions "$DEST$PREFIX/include/ctxpack.h") <(echo "$defined")
}
check exported_symbols exports || true

header() {
    cmp "$ROOT/include/ctxpack.h" "$DEST$PREFIX/include/ctxpack.h" &&
        cmp "$ROOT/bindings/cpp/include/ctxpack.hpp" "$DEST$PREFIX/include/ctxpack.hpp" &&
        expect "CTXPACK_VERSION_STRING" \
            "$(sed -n 's/^#define CTXPACK_VERSION_STRING "\(.*\)"/\1/p' "$DEST$PREFIX/include/ctxpack.h")" \
            "$VERSION"
}
check header header || true

cli() {
    "$DEST$PREFIX/bin/ctxpack" --help
}
check cli_help cli || true

# --- pkg-config ---------------------------------------------------------------------------

# The installed .pc file names /usr/local; PKG_CONFIG_SYSROOT_DIR maps its -I and -L to
# the staged tree, as for any staged or cross build. PKG_CONFIG_LIBDIR hides the system's
# own .pc files (and any ctxpack installed there).
pc() {
    PKG_CONFIG_LIBDIR="$LIB/pkgconfig" PKG_CONFIG_PATH="" PKG_CONFIG_SYSROOT_DIR="$DEST" \
        pkg-config "$@" ctxpack
}

# pc_out ARGS...: pc's output without the trailing blank pkgconf adds.
pc_out() {
    pc "$@" | sed 's/[[:space:]]*$//'
}

pkgconfig() {
    pc --validate &&
        expect "--modversion" "$(pc_out --modversion)" "$VERSION" &&
        expect "--cflags" "$(pc_out --cflags)" "-I$DEST$PREFIX/include" &&
        expect "--libs" "$(pc_out --libs)" "-L$LIB -lctxpack" || return 1
    grep -qxF "prefix=$PREFIX" "$LIB/pkgconfig/ctxpack.pc" || { echo "no prefix=$PREFIX"; return 1; }
    local static private
    static=$(pc_out --static --libs)
    private=${static#"-L$LIB -lctxpack"}
    [[ "$static" != "$private" && "$private" == *-l* ]] ||
        { echo "--static --libs: '$static' does not add Libs.private to '-L$LIB -lctxpack'"; return 1; }
}
check pkg_config pkgconfig || true

# --- examples/*.c against the installed library ----------------------------------------

needed() {
    readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}

build_shared() {
    local src=$1 exe=$2
    # shellcheck disable=SC2046  # pkg-config output is a list of flags
    "$CC" "${CFLAGS[@]}" "$src" $(pc --cflags --libs) -o "$exe" || return 1
    if ! needed "$exe" | grep -qx "$SONAME"; then
        echo "$exe does not need $SONAME:"
        needed "$exe"
        return 1
    fi
}

run_shared() {
    local exe=$1 resolved
    resolved=$(LD_LIBRARY_PATH="$LIB" ldd "$exe" | awk -v so="$SONAME" '$1 == so {print $3}')
    expect "$SONAME resolves to" "$resolved" "$LIB/$SONAME" &&
        LD_LIBRARY_PATH="$LIB" "$exe"
}

# pkg-config has no switch that picks the archive when libctxpack.so is beside it, so the
# static link names it: -l:libctxpack.a in place of -lctxpack (GNU ld, gold, lld).
build_static() {
    local src=$1 exe=$2 flags
    flags=$(pc --static --cflags --libs)
    # shellcheck disable=SC2086
    "$CC" "${CFLAGS[@]}" "$src" ${flags//-lctxpack/-l:libctxpack.a} -o "$exe" || return 1
    if needed "$exe" | grep -q libctxpack; then
        echo "$exe still needs libctxpack:"
        needed "$exe"
        return 1
    fi
}

run_static() {
    env -u LD_LIBRARY_PATH "$1"
}

for src in "$ROOT"/examples/*.c; do
    name=$(basename "$src" .c)
    if check "shared_build_$name" build_shared "$src" "$OUT/${name}_shared"; then
        check "shared_run_$name" run_shared "$OUT/${name}_shared" || true
    fi
    if check "static_build_$name" build_static "$src" "$OUT/${name}_static"; then
        check "static_run_$name" run_static "$OUT/${name}_static" || true
    fi
done

# What every binding's quickstart must print: the C quickstart's output, from the
# installed library.
QUICKSTART_C="$OUT/quickstart_c.txt"
LD_LIBRARY_PATH="$LIB" "$OUT/quickstart_shared" >"$QUICKSTART_C" 2>/dev/null || : >"$QUICKSTART_C"

# same_as_c_quickstart OUTPUT_FILE: the file holds exactly the C quickstart's lines.
same_as_c_quickstart() {
    [[ -s "$QUICKSTART_C" ]] || { echo "no output of the C quickstart to compare with"; return 1; }
    diff -u "$QUICKSTART_C" "$1"
}

# A copy of each consumer's sources outside the checkout, so that nothing beside them
# (a quoted #include, a go.mod) can come from the source tree.
CONSUMERS="$TMP/consumers"
mkdir -p "$CONSUMERS/cxx"
cp "$ROOT/bindings/cpp/examples/quickstart.cpp" "$CONSUMERS/cxx/quickstart.cpp"

# --- C++: ctxpack.hpp through pkg-config -----------------------------------------------

CXX="${CXX:-c++}"
cxx_pkgconfig() {
    # shellcheck disable=SC2046  # pkg-config output is a list of flags
    "$CXX" -std=c++17 -Wall -Wextra -Werror -pedantic "$CONSUMERS/cxx/quickstart.cpp" \
        $(pc --cflags --libs) -o "$OUT/quickstart_cxx" &&
        LD_LIBRARY_PATH="$LIB" "$OUT/quickstart_cxx" >"$OUT/quickstart_cxx.txt" &&
        same_as_c_quickstart "$OUT/quickstart_cxx.txt"
}
check cxx_pkg_config cxx_pkgconfig || true

# --- the CMake package --------------------------------------------------------------------

# cmake is not needed by anything else; it is installed here (Debian package `cmake`) when
# missing and apt-get can, otherwise the CMake checks are skipped.
have_cmake() {
    command -v cmake >/dev/null && return 0
    command -v apt-get >/dev/null || return 1
    local sudo=""
    [[ $(id -u) -eq 0 ]] || { command -v sudo >/dev/null && sudo="sudo -n"; } || return 1
    echo "installing cmake with apt-get (log: $LOGS/apt-cmake.log)"
    {
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends cmake ||
            { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
                $sudo apt-get install -y -qq --no-install-recommends cmake; }
    } >"$LOGS/apt-cmake.log" 2>&1
    command -v cmake >/dev/null
}

# cmake_configure TREE_PREFIX BUILD_DIR: configures tests/packaging/cmake against the tree.
cmake_configure() {
    cmake -S "$ROOT/tests/packaging/cmake" -B "$2" -DCMAKE_PREFIX_PATH="$1" \
        -DCMAKE_C_COMPILER="$CC" -DCTXPACK_VERSION="$LIB_VERSION" \
        -DCTXPACK_EXAMPLES="$ROOT/examples"
}

cmake_build() {
    cmake_configure "$DEST$PREFIX" "$TMP/cmake" &&
        cmake --build "$TMP/cmake" --parallel 2
}

cmake_run() {
    local exe
    for exe in "$TMP"/cmake/*_shared; do
        # CMake's build RPATH points at the installed tree: no LD_LIBRARY_PATH needed.
        expect "$SONAME of $exe resolves to" \
            "$(env -u LD_LIBRARY_PATH ldd "$exe" | awk -v so="$SONAME" '$1 == so {print $3}')" \
            "$LIB/$SONAME" &&
            env -u LD_LIBRARY_PATH "$exe" || return 1
    done
    for exe in "$TMP"/cmake/*_static; do
        ! needed "$exe" | grep -q libctxpack || { echo "$exe needs libctxpack"; return 1; }
        env -u LD_LIBRARY_PATH "$exe" || return 1
    done
}

# The C++ binding through find_package(ctxpack) and ctxpack::cxx (tests/packaging/cxx).
cmake_cxx() {
    cmake -S "$ROOT/tests/packaging/cxx" -B "$TMP/cmake-cxx" -DCMAKE_PREFIX_PATH="$DEST$PREFIX" \
        -DCMAKE_CXX_COMPILER="$CXX" -DCTXPACK_CXX_SOURCE="$CONSUMERS/cxx/quickstart.cpp" &&
        cmake --build "$TMP/cmake-cxx" &&
        env -u LD_LIBRARY_PATH "$TMP/cmake-cxx/quickstart_cxx" >"$TMP/cmake-cxx/out.txt" &&
        same_as_c_quickstart "$TMP/cmake-cxx/out.txt"
}

CMAKE=0
if have_cmake; then
    CMAKE=1
    if check cmake_build cmake_build; then
        check cmake_run cmake_run || true
    fi
    check cmake_cxx cmake_cxx || true
else
    skip cmake "no cmake and apt-get could not install it"
fi

# --- Go: the binding as a module dependency -------------------------------------------

# The binding is published as version v$VERSION into a module proxy on the file system
# (the GOPROXY protocol: @v/list, .info, .mod, and a .zip whose files lie under
# MODULE@VERSION/), a new module outside the checkout gets it with `go get` from there
# (offline: no other proxy, no checksum database), and builds against the installed
# library through the binding's `#cgo pkg-config: ctxpack`.
GO="${GO:-go}"
GO_MODULE=github.com/ctxpack/ctxpack/bindings/go
GO_VERSION="v$VERSION"
GO_PROXY="$TMP/goproxy"

# go_publish: the files of bindings/go that git tracks or would track (every file, outside
# a git checkout), as the proxy's zip.
go_publish() {
    expect "module path in bindings/go/go.mod" \
        "$(sed -n 's/^module //p' "$ROOT/bindings/go/go.mod")" "$GO_MODULE" || return 1
    local at="$GO_PROXY/$GO_MODULE/@v" stage="$TMP/go-zip/$GO_MODULE@$GO_VERSION" file
    mkdir -p "$at" "$stage"
    if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$ROOT/bindings/go" && git ls-files -co --exclude-standard .) >"$TMP/go-files"
    else
        (cd "$ROOT/bindings/go" && find . -type f -printf '%P\n') >"$TMP/go-files"
    fi || return 1
    while IFS= read -r file; do
        [[ ! -f "$ROOT/bindings/go/$file" ]] || install -D -m 644 "$ROOT/bindings/go/$file" "$stage/$file"
    done <"$TMP/go-files"
    [[ -f "$stage/go.mod" && -f "$stage/ctxpack.go" ]] || { echo "nothing to publish"; return 1; }
    (cd "$TMP/go-zip" && zip -qr -X -D "$at/$GO_VERSION.zip" "$GO_MODULE@$GO_VERSION") &&
        cp "$stage/go.mod" "$at/$GO_VERSION.mod" &&
        printf '{"Version":"%s","Time":"%s"}\n' "$GO_VERSION" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
            >"$at/$GO_VERSION.info" &&
        echo "$GO_VERSION" >"$at/list"
}

# go_env COMMAND...: COMMAND with only the proxy, a fresh module cache, and pkg-config
# reading only the installed tree (as pc does); no cgo flags or library path from outside.
go_env() {
    env -u CGO_CFLAGS -u CGO_LDFLAGS -u GOFLAGS -u LD_LIBRARY_PATH -u GOROOT \
        GOPROXY="file://$GO_PROXY" GOSUMDB=off GONOSUMDB= GOPRIVATE= GOWORK=off \
        GO111MODULE=on GOTOOLCHAIN=local CGO_ENABLED=1 GOPATH="$TMP/gopath" GOFLAGS=-modcacherw \
        PKG_CONFIG_LIBDIR="$LIB/pkgconfig" PKG_CONFIG_PATH="" PKG_CONFIG_SYSROOT_DIR="$DEST" "$@"
}

GO_APP="$CONSUMERS/go"
go_get_build() {
    mkdir -p "$GO_APP" && cp "$ROOT/tests/packaging/go/main.go" "$GO_APP/" &&
        (cd "$GO_APP" && go_env "$GO" mod init example.com/ctxpack-consumer &&
            go_env "$GO" get "$GO_MODULE@$GO_VERSION" && go_env "$GO" mod tidy &&
            go_env "$GO" build -o "$OUT/go_consumer" .) || return 1
    # The binding came from the module cache, at the published version.
    expect "$GO_MODULE in the consumer" \
        "$(cd "$GO_APP" && go_env "$GO" list -m -f '{{.Version}} {{.Dir}}' "$GO_MODULE")" \
        "$GO_VERSION $TMP/gopath/pkg/mod/$GO_MODULE@$GO_VERSION" || return 1
    if ! needed "$OUT/go_consumer" | grep -qx "$SONAME"; then
        echo "the Go program does not need $SONAME"
        return 1
    fi
    if readelf -d "$OUT/go_consumer" | grep -E '\((RPATH|RUNPATH)\)'; then
        echo "the Go program records a run path"
        return 1
    fi
}

go_run() {
    expect "the Go program's output" "$(LD_LIBRARY_PATH="$LIB" "$OUT/go_consumer")" \
        "ctxpack $VERSION: 3 of 3 items selected"
}

# The binding's own Example (the quickstart, whose output it states) from the module cache.
go_example() {
    (cd "$GO_APP" &&
        go_env env LD_LIBRARY_PATH="$LIB" "$GO" test -count=1 -run '^Example$' -v "$GO_MODULE") |
        tee "$OUT/go_example.txt" && grep -q '^--- PASS: Example ' "$OUT/go_example.txt"
}

if ! command -v "$GO" >/dev/null; then
    skip go "no $GO"
elif check go_publish go_publish && check go_get_build go_get_build; then
    check go_run go_run || true
    check go_example go_example || true
fi

# --- C#: the NuGet package layout -------------------------------------------------------

# bindings/csharp/pack.sh packs the installed library (not the build tree's) with the
# binding compiled by mcs. A program compiled against the package's assembly is deployed as
# a build of a linux-x64 application is (the assembly and the native library of
# runtimes/linux-x64/native/ in its folder) and run by mono with no LD_LIBRARY_PATH: mono
# finds libctxpack.so beside Ctxpack.dll.
MCS="${MCS:-mcs}"
MONO="${MONO:-mono}"
NUGET="$TMP/nuget"
CS_APP="$CONSUMERS/csharp"

csharp_pack() {
    "$ROOT/bindings/csharp/pack.sh" --lib "$LIB/$REAL_LIB" --out "$NUGET" || return 1
    local expected
    expected=$(LC_ALL=C sort <<EOF
Ctxpack.nuspec
[Content_Types].xml
lib/netstandard2.0/Ctxpack.dll
lib/netstandard2.0/Ctxpack.xml
runtimes/linux-x64/native/libctxpack.so
EOF
    )
    diff -u <(echo "$expected") <(unzip -Z1 "$NUGET/Ctxpack.$VERSION.nupkg" | LC_ALL=C sort) || return 1
    grep -qF "<version>$VERSION</version>" "$NUGET/package/Ctxpack.nuspec" ||
        { echo "the .nuspec does not name version $VERSION"; return 1; }
    expect "soname of the packed library" \
        "$(readelf -d "$NUGET/package/runtimes/linux-x64/native/libctxpack.so" |
            sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')" "$SONAME"
}

csharp_build() {
    mkdir -p "$CS_APP/bin" &&
        "$MCS" -nologo -warnaserror -r:"$NUGET/package/lib/netstandard2.0/Ctxpack.dll" \
            -out:"$CS_APP/bin/App.exe" "$ROOT/tests/packaging/csharp/App.cs" &&
        cp "$NUGET/package/lib/netstandard2.0/Ctxpack.dll" "$CS_APP/bin/"
}

csharp_run() {
    cp "$NUGET/package/runtimes/linux-x64/native/libctxpack.so" "$CS_APP/bin/" || return 1
    # Mono's log of its native library search (lines "Mono: ...", on standard output) names
    # the file it loaded: it must be the package's copy beside Ctxpack.dll, not a library
    # found on some search path.
    (cd / && env -u LD_LIBRARY_PATH -u MONO_PATH MONO_LOG_LEVEL=debug MONO_LOG_MASK=dll \
        "$MONO" "$CS_APP/bin/App.exe") >"$CS_APP/run.txt" 2>&1 || { grep -v '^Mono: ' "$CS_APP/run.txt"; return 1; }
    expect "the C# program's output" "$(grep -v '^Mono: ' "$CS_APP/run.txt")" \
        "ctxpack $VERSION: 3 of 3 items selected" &&
        expect "the libctxpack mono loaded" \
            "$(sed -n "s/^Mono: DllImport loaded library '\(.*libctxpack[^']*\)'.*/\1/p" "$CS_APP/run.txt" | sort -u)" \
            "$CS_APP/bin/libctxpack.so"
}

if ! command -v "$MCS" >/dev/null || ! command -v "$MONO" >/dev/null; then
    skip csharp "no $MCS or $MONO (Debian: mono-devel)"
elif check csharp_pack csharp_pack && check csharp_build csharp_build; then
    check csharp_run csharp_run || true
fi

# --- Swift: the package as a dependency ---------------------------------------------------

# tests/packaging/swift/consumer.sh builds a package that depends on the repository (its
# root Package.swift) inside the Swift root, with this installed tree at /usr/local there.
# Creating the root takes minutes and 2.6 GB, so this runs only when bindings/swift/run.sh
# has created it already: `make test` (and so CI, on a fresh machine) runs the bindings'
# suites before this test for that reason. run.sh also runs the same consumer itself.
swift_consumer() {
    mkdir -p "$TMP/swift" && "$ROOT/tests/packaging/swift/consumer.sh" "$DEST$PREFIX" "$TMP/swift"
}

SWIFT_ROOT="$("$ROOT/bindings/swift/swift-root.sh" path)"
if [[ -f "$SWIFT_ROOT/.ctxpack-swift-root" ]]; then
    check swift_consumer swift_consumer || true
else
    skip swift_consumer "no Swift root at $SWIFT_ROOT yet; bindings/swift/run.sh creates it and runs this consumer"
fi

# --- overridden directories -------------------------------------------------------------

# A Debian-style multiarch LIBDIR (where CMake looks too), a header subdirectory, and a
# BINDIR outside PREFIX.
DEST2="$TMP/dest-overrides"
MULTIARCH="$("$CC" -print-multiarch 2>/dev/null || true)"
LIBDIR2="lib64"
[[ -z "$MULTIARCH" ]] || LIBDIR2="lib/$MULTIARCH"
OVERRIDES=(PREFIX=/usr LIBDIR="/usr/$LIBDIR2" INCLUDEDIR=/usr/include/ctxpack
    BINDIR=/opt/ctxpack/bin)

overrides() {
    "$MAKE" -C "$ROOT" install DESTDIR="$DEST2" "${OVERRIDES[@]}" || return 1
    local expected
    expected=$(LC_ALL=C sort <<EOF
opt/ctxpack/bin/ctxpack 755
usr/include/ctxpack/ctxpack.h 644
usr/include/ctxpack/ctxpack.hpp 644
usr/$LIBDIR2/$REAL_LIB 644
usr/$LIBDIR2/$SONAME -> $REAL_LIB
usr/$LIBDIR2/libctxpack.so -> $REAL_LIB
usr/$LIBDIR2/libctxpack.a 644
usr/$LIBDIR2/pkgconfig/ctxpack.pc 644
usr/$LIBDIR2/cmake/ctxpack/ctxpackConfig.cmake 644
usr/$LIBDIR2/cmake/ctxpack/ctxpackConfigVersion.cmake 644
EOF
    )
    diff -u <(echo "$expected") <(listing "$DEST2") || return 1
    local pcfile="$DEST2/usr/$LIBDIR2/pkgconfig/ctxpack.pc"
    if ! grep -qxF "libdir=\${prefix}/$LIBDIR2" "$pcfile" ||
        ! grep -qxF "includedir=\${prefix}/include/ctxpack" "$pcfile"; then
        echo "$pcfile:"
        cat "$pcfile"
        return 1
    fi
    # The CMake package finds its files from its own place (configure checks they exist).
    if [[ $CMAKE -eq 1 ]]; then
        cmake_configure "$DEST2/usr" "$TMP/cmake-overrides" || return 1
    fi
}
check directory_overrides overrides || true

# --- uninstall ----------------------------------------------------------------------------

uninstall() {
    "$MAKE" -C "$ROOT" uninstall DESTDIR="$DEST" PREFIX="$PREFIX" &&
        "$MAKE" -C "$ROOT" uninstall DESTDIR="$DEST2" "${OVERRIDES[@]}" || return 1
    local left
    left=$(find "$DEST" "$DEST2" ! -type d)
    [[ -z "$left" ]] || { echo "left behind by make uninstall:"; echo "$left"; return 1; }
}
check uninstall uninstall || true

# --- the build tree -----------------------------------------------------------------------

build_tree() {
    expect "$RELEASE_DIR/$SONAME" "$(readlink "$RELEASE_DIR/$SONAME")" "libctxpack.so" &&
        "$CC" "${CFLAGS[@]}" -I"$ROOT/include" "$ROOT/examples/quickstart.c" \
            -L"$RELEASE_DIR" -Wl,-rpath,"$RELEASE_DIR" -lctxpack -o "$OUT/build_tree" &&
        env -u LD_LIBRARY_PATH "$OUT/build_tree"
}
check build_tree_link build_tree || true

echo "test-install: $((SECONDS - started)) s"
summary="$passed passed, $failed failed"
[[ $skipped -eq 0 ]] || summary+=", $skipped skipped"
echo "$summary"
[[ $failed -eq 0 ]]
