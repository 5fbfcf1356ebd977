#!/usr/bin/env bash
# Installs the system packages the test suite needs, when they are missing.
# Idempotent; needs root (or sudo) only when something is actually missing.
set -euo pipefail

# debootstrap creates the Debian 13 root holding the Swift toolchain
# (bindings/swift/swift-root.sh; it also needs util-linux's flock and unshare, which every
# Debian system has).
packages=(make pkg-config valgrind cmake g++ binutils clang golang-go mono-devel debootstrap)
declare -A provides=([make]=make [pkg-config]=pkg-config [valgrind]=valgrind [cmake]=cmake [g++]=g++ [binutils]=nm
    [clang]=clang [golang-go]=go [mono-devel]=mcs [debootstrap]=debootstrap)

missing=()
for p in "${packages[@]}"; do
    # /usr/sbin is not on every user's PATH.
    command -v "${provides[$p]}" >/dev/null 2>&1 || [ -x "/usr/sbin/${provides[$p]}" ] || missing+=("$p")
done
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Wait for other apt users (up to 15 minutes) instead of failing.
    apt=(apt-get -o DPkg::Lock::Timeout=900)
    $sudo "${apt[@]}" update -qq
    $sudo "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
