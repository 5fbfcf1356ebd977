#!/usr/bin/env bash
# Compare what a C host sees from the shared library of several revisions
# (docs/performance.md, "Scoring in blocks, and what a host sees"): builds libctxpack.so of each revision in a
# worktree under $TMPDIR, builds scripts/host-bench.c once against this checkout's header,
# then runs the host against each library in turn, ROUNDS times, alternating.
#
#   scripts/host-bench.sh [-n SIZES] [-r RUNS] [-R ROUNDS] REV [REV...]
#
# SIZES (item counts, comma-separated) defaults to 100000; RUNS, the runs of each form per
# host process at N = 100 000, to 150 (smaller N run proportionally more, up to 20 000);
# ROUNDS to 3. "." names the working tree as it is (uncommitted changes included).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
items=100000 runs=150 rounds=3
while getopts "n:r:R:" opt; do
    case "$opt" in
        n) items="$OPTARG" ;;
        r) runs="$OPTARG" ;;
        R) rounds="$OPTARG" ;;
        *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [[ $# -eq 0 ]]; then
    echo "usage: $0 [-n SIZES] [-r RUNS] [-R ROUNDS] REV [REV...]" >&2
    exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/ctxpack-host-bench.XXXXXX")"
trap 'git -C "$root" worktree prune; rm -rf "$work"' EXIT

libs=()
for rev in "$@"; do
    name="$(echo "$rev" | tr -c 'A-Za-z0-9._\n-' '_')"
    lib="$work/lib-$name"
    mkdir -p "$lib"
    if [[ "$rev" == "." ]]; then
        (cd "$root" && cargo build --release --quiet)
        cp "$root/target/release/libctxpack.so" "$lib/libctxpack.so.0"
    else
        tree="$work/tree-$name"
        git -C "$root" worktree add --quiet --detach "$tree" "$rev"
        # Each revision builds into a target directory of its own under $work, so the
        # revisions do not rebuild each other's artefacts.
        (cd "$tree" && CARGO_TARGET_DIR="$work/target-$name" cargo build --release --quiet)
        cp "$work/target-$name/release/libctxpack.so" "$lib/libctxpack.so.0"
        git -C "$root" worktree remove --force "$tree"
    fi
    libs+=("$rev=$lib")
done

cc -O2 -Wall -Wextra -I"$root/include" "$root/scripts/host-bench.c" \
    -L"${libs[0]#*=}" -l:libctxpack.so.0 -o "$work/host-bench"

for round in $(seq 1 "$rounds"); do
    for n in ${items//,/ }; do
        scaled=$((runs * 100000 / n))
        scaled=$((scaled < runs ? runs : scaled > 20000 ? 20000 : scaled))
        for entry in "${libs[@]}"; do
            printf '%-12s ' "${entry%%=*}"
            LD_LIBRARY_PATH="${entry#*=}" "$work/host-bench" "$n" "$scaled"
        done
    done
done
