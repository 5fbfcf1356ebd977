#!/usr/bin/env bash
# Builds the NuGet package of the C# binding from what can be built here (`make
# csharp-package`; README.md, "Install"):
#
#   OUT/package/                                  the package's layout, unpacked
#     Ctxpack.nuspec                              from Ctxpack.nuspec.in, version from Cargo.toml
#     lib/netstandard2.0/Ctxpack.dll              src/*.cs compiled by Mono's mcs (optimized)
#     lib/netstandard2.0/Ctxpack.xml              its documentation comments
#     runtimes/linux-x64/native/libctxpack.so     the native library, debug information stripped
#   OUT/Ctxpack.VERSION.nupkg                     the same files as a .nupkg (a zip with the
#                                                 Open Packaging Conventions' content types)
#
# Not built here, because the dotnet SDK cannot be installed on these machines:
# lib/net8.0/Ctxpack.dll (the project's second target framework); .NET 8 applications use
# the netstandard2.0 assembly, and the host finds runtimes/linux-x64/native/ itself for
# a PackageReference. Only the linux-x64 native library is packed (the one built here).
#
# Usage: pack.sh [--lib PATH] [--out DIR]
#   --lib  the libctxpack.so to pack (default: CARGO_TARGET_DIR/release/libctxpack.so, after
#          `cargo build --release`); an installed libctxpack.so.X.Y.Z works too
#   --out  the output folder (default: CARGO_TARGET_DIR/nuget), emptied first
# Environment: CARGO_TARGET_DIR (default ./target), MCS (default mcs). Needs mono-devel,
# binutils (strip) and zip.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
MCS="${MCS:-mcs}"
LIB="$TARGET/release/libctxpack.so"
OUT="$TARGET/nuget"
RID=linux-x64

while [[ $# -gt 0 ]]; do
    case $1 in
        --lib) LIB=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        *) echo "pack.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

OUT="$(realpath -m "$OUT")"
[[ -f "$LIB" ]] || { echo "pack.sh: no native library at $LIB (cargo build --release)" >&2; exit 1; }
case $(uname -s)-$(uname -m) in
    Linux-x86_64) ;;
    *) echo "pack.sh: packs the native library as $RID; this is $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
VERSION=$(awk -F'"' '/^\[/ { pkg = ($0 == "[package]") } pkg && /^version *=/ { print $2; exit }' "$ROOT/Cargo.toml")

PKG="$OUT/package"
rm -rf "$OUT"
mkdir -p "$PKG/lib/netstandard2.0" "$PKG/runtimes/$RID/native"

# The assembly's version, which the dotnet SDK would take from the project's <Version>.
mkdir -p "$OUT/obj"
printf '%s\n' "[assembly: System.Reflection.AssemblyVersion(\"${VERSION%%[-+]*}\")]" \
    "[assembly: System.Reflection.AssemblyInformationalVersion(\"$VERSION\")]" >"$OUT/obj/Version.cs"
# -nowarn:1591 as the project file (NoWarn CS1591): members without a documentation comment.
"$MCS" -unsafe -optimize+ -warnaserror -nowarn:1591 -nologo -target:library \
    -doc:"$PKG/lib/netstandard2.0/Ctxpack.xml" -out:"$PKG/lib/netstandard2.0/Ctxpack.dll" \
    "$HERE"/src/*.cs "$OUT/obj/Version.cs"
# Without its debug information (the release build keeps line tables): 3-4 MB, not 18.
strip --strip-debug -o "$PKG/runtimes/$RID/native/libctxpack.so" "$LIB"
chmod 644 "$PKG/runtimes/$RID/native/libctxpack.so"
sed -e "s|@VERSION@|$VERSION|g" -e "s|@RIDS@|$RID|g" "$HERE/Ctxpack.nuspec.in" >"$PKG/Ctxpack.nuspec"
# A .nupkg is an OPC package: [Content_Types].xml names a content type for every file
# extension in it.
cat >"$PKG/[Content_Types].xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
  <Default Extension="nuspec" ContentType="application/octet" />
  <Default Extension="dll" ContentType="application/octet" />
  <Default Extension="xml" ContentType="application/octet" />
  <Default Extension="so" ContentType="application/octet" />
</Types>
XML
(cd "$PKG" && zip -q -X -D -r "$OUT/Ctxpack.$VERSION.nupkg" Ctxpack.nuspec "[Content_Types].xml" lib runtimes)
echo "pack.sh: $OUT/Ctxpack.$VERSION.nupkg (unpacked: $PKG)"
