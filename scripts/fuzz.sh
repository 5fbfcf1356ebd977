#!/usr/bin/env bash
# Fuzz ctxpack with cargo-fuzz / libFuzzer for a bounded time (see docs/fuzzing.md).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   build, then run each target in turn
#   scripts/fuzz.sh check                              only `cargo check` the fuzz crate
#
# SECONDS_PER_TARGET defaults to 60; TARGETs default to every target of fuzz/Cargo.toml.
# Targets run one after the other in a single libFuzzer process each (one core). New
# corpus entries go to fuzz/generated/<target>/ (git-ignored) next to the committed seeds
# in fuzz/corpus/<target>/, findings to fuzz/artifacts/<target>/, logs to
# fuzz/generated/logs/. fuzz/dict/<target>.dict, when present, is passed as the libFuzzer
# dictionary. Extra libFuzzer flags can be given in FUZZ_FLAGS.
#
# The exit status is 0 when no target found anything, 1 otherwise.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fuzz_dir="$root/fuzz"
cd "$root"

# cargo-fuzz passes -Z flags (sanitizer, coverage instrumentation) that only nightly
# compilers accept. RUSTC_BOOTSTRAP=1 lets the installed stable toolchain accept them
# (its ASan runtime ships with rust-std); nothing else in the project uses it.
export RUSTC_BOOTSTRAP=1
# The fuzz crate is built apart from the main crate, with its own target directory.
export CARGO_TARGET_DIR="$fuzz_dir/target"

if [[ "${1:-}" == "check" ]]; then
    cargo check --manifest-path "$fuzz_dir/Cargo.toml" --bins --lib
    exit 0
fi

seconds="${1:-60}"
[[ $# -gt 0 ]] && shift
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [[ "$seconds" -eq 0 ]]; then
    echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...] | scripts/fuzz.sh check" >&2
    exit 2
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    mapfile -t targets < <(cargo fuzz list --fuzz-dir "$fuzz_dir")
fi

# -a: debug assertions on, so integer overflow panics (a wrapped token sum is a crash).
echo "== building ${targets[*]}"
for target in "${targets[@]}"; do
    cargo fuzz build --fuzz-dir "$fuzz_dir" -a "$target"
done

mkdir -p "$fuzz_dir/generated/logs"
summary=()
failed=0
for target in "${targets[@]}"; do
    generated="$fuzz_dir/generated/$target"
    artifacts="$fuzz_dir/artifacts/$target"
    log="$fuzz_dir/generated/logs/$target.log"
    mkdir -p "$generated" "$artifacts"
    dict=()
    [[ -f "$fuzz_dir/dict/$target.dict" ]] && dict=(-dict="$fuzz_dir/dict/$target.dict")
    before=$(find "$artifacts" -type f | wc -l)
    echo "== fuzzing $target for ${seconds}s (log: ${log#"$root"/})"
    status=0
    # shellcheck disable=SC2086 # FUZZ_FLAGS is a list of flags
    cargo fuzz run --fuzz-dir "$fuzz_dir" -a "$target" "$generated" "$fuzz_dir/corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
        -print_final_stats=1 "${dict[@]}" ${FUZZ_FLAGS:-} >"$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    new=$(($(find "$artifacts" -type f | wc -l) - before))
    line="$target: ${runs:-?} executions in ${secs:-?}s, exit $status, $new new finding(s)"
    if [[ $status -ne 0 || $new -ne 0 ]]; then
        failed=1
        line+=" -> see ${log#"$root"/} and ${artifacts#"$root"/}/"
        grep -E '^(==[0-9]+==ERROR|thread .* panicked|SUMMARY)' "$log" | head -5 || true
    fi
    echo "$line"
    summary+=("$line")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$failed"
