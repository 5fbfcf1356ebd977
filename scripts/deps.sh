#!/usr/bin/env bash
# Installs the system packages the test suite needs, when they are missing.
# Idempotent; needs root (or sudo) only when something is actually missing.
set -euo pipefail

# zip makes the Go module and the NuGet package of the install test (scripts/test-install.sh),
# which reads the package back with unzip.
# debootstrap creates the Debian 13 root holding the Swift toolchain
# (bindings/swift/swift-root.sh; it also needs util-linux's flock and unshare, which every
# Debian system has).
packages=(make pkg-config valgrind cmake g++ binutils clang golang-go mono-devel debootstrap zip unzip)
declare -A provides=([make]=make [pkg-config]=pkg-config [valgrind]=valgrind [cmake]=cmake [g++]=g++ [binutils]=nm
    [clang]=clang [golang-go]=go [mono-devel]=mcs [debootstrap]=debootstrap [zip]=zip [unzip]=unzip)

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
    # Another install (unattended-upgrades, a second checkout's tests) may hold the package
    # manager's lock: wait for it, up to CTXPACK_APT_WAIT seconds (default 300), instead of
    # failing at once. apt waits on the dpkg lock itself; the retry loop also covers the
    # lists lock of `apt-get update`.
    wait_s=${CTXPACK_APT_WAIT:-300}
    apt_get() {
        local deadline=$((SECONDS + wait_s))
        until $sudo apt-get -o DPkg::Lock::Timeout="$wait_s" "$@"; do
            if ((SECONDS >= deadline)); then
                echo "deps: apt-get $1 kept failing for ${wait_s}s (is another install stuck?)" >&2
                return 1
            fi
            echo "deps: apt-get $1 failed (package manager busy?); retrying in 10 s" >&2
            sleep 10
        done
    }
    apt_get update -qq
    apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
