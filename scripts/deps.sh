#!/usr/bin/env bash
# Installs the system packages the test suite needs, when they are missing.
# Idempotent; needs root (or sudo) only when something is actually missing.
set -euo pipefail

packages=(make pkg-config valgrind cmake g++ binutils clang golang-go mono-devel)
declare -A provides=([make]=make [pkg-config]=pkg-config [valgrind]=valgrind [cmake]=cmake [g++]=g++ [binutils]=nm [clang]=clang [golang-go]=go [mono-devel]=mcs)

missing=()
for p in "${packages[@]}"; do
    command -v "${provides[$p]}" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
