# shellcheck shell=bash
# Shared helpers of the shell test drivers (tests/c/run.sh, bindings/*/run.sh). A driver
# sources it and calls `start NAME` first; it ends with `finish`, whose last line is
# "N passed, M failed" and whose status is non-zero on any failure.
#
# Sourcing sets ROOT (the checkout), TARGET (CARGO_TARGET_DIR, default ROOT/target) and
# LIBDIR (TARGET/debug, where `start` builds libctxpack).

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
# shellcheck disable=SC2034 # used by the drivers
LIBDIR="$TARGET/debug"
passed=0
failed=0

# start NAME: per-step logs go to OUT=TARGET/NAME; builds libctxpack into LIBDIR. Every
# driver tests the same build (debug, with the `ffi-test-hooks` feature so that status
# tests can reach CTXPACK_PANIC through a real run), so cargo builds it once for all of
# them. A failed build ends the driver with "0 passed, 1 failed".
start() {
    OUT="$TARGET/$1"
    mkdir -p "$OUT"
    echo "== building libctxpack (debug, ffi-test-hooks) in $TARGET"
    if ! (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET" cargo build --lib --features ffi-test-hooks); then
        echo "0 passed, 1 failed"
        exit 1
    fi
}

pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }

# step NAME COMMAND...: one check; its output is shown only when it fails.
step() {
    local name=$1
    shift
    if "$@" >"$OUT/$name.log" 2>&1; then
        pass "$name"
    else
        fail "$name"
        tail -n 60 "$OUT/$name.log" | sed 's/^/    /'
        return 1
    fi
}

# program NAME COMMAND...: runs a test program and adds its "N passed, M failed" counts;
# a crash or a sanitizer/valgrind error (non-zero exit with no failed test) counts as one
# more failure.
program() {
    local name=$1
    shift
    local log="$OUT/$name.log"
    "$@" >"$log" 2>&1
    local rc=$?
    local summary p=0 f=0
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [[ -n "$summary" ]]; then
        p=${summary%% passed*}
        f=${summary#*passed, }
        f=${f%% failed*}
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    if [[ $rc -ne 0 && $f -eq 0 ]]; then failed=$((failed + 1)); fi
    if [[ $rc -ne 0 || $f -ne 0 ]]; then
        echo "FAIL $name (exit $rc; ${summary:-no summary})"
        grep -vE '^ok   ' "$log" | tail -n 80 | sed 's/^/    /'
    else
        echo "ok   $name ($summary)"
    fi
}

# finish: the closing line and the exit status.
finish() {
    echo "$passed passed, $failed failed"
    [[ $failed -eq 0 ]]
    exit
}
