#!/usr/bin/env bash
# The Swift toolchain of the project's tests: Debian 13 ("trixie") in a separate root,
# with its `swiftlang` package (Swift 6.0.3), on a Debian 12 host. The root lives outside
# the checkout and is shared by every checkout of the same user:
#
#   ${CTXPACK_SWIFT_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxpack/swift-trixie}
#
#   swift-root.sh path                print the root's folder
#   swift-root.sh ensure              create the root unless a complete one is there
#   swift-root.sh run [OPTIONS] -- COMMAND...
#                                     run COMMAND inside the root (after `ensure`), with
#       --ro HOST GUEST               HOST bound read-only at GUEST (an absolute path
#       --rw HOST GUEST               inside the root; it is created), or read-write;
#       --cd GUEST                    the working directory (default /).
#     COMMAND starts with a clean environment (PATH, HOME=/root, LANG=C.UTF-8); prefix
#     it with `env NAME=VALUE...` for more.
#
# Creation (a few minutes and 2.6 GB; the log is the root's path + ".log"): debootstrap
# --variant=minbase from the Debian mirror the host's apt uses (CTXPACK_DEBIAN_MIRROR
# overrides it), then apt-get install --no-install-recommends of the packages below,
# and apt's caches are emptied. All of it happens in ROOT.partial, which is renamed to
# ROOT only after a marker file naming the recipe has been written last: an interrupted
# creation leaves no ROOT behind, and the next use starts it again. A root whose marker
# names another recipe (a package added below) is recreated.
#
# Concurrency: a lock file beside the root (ROOT.lock, flock) is held shared while a
# command runs and exclusively while the root is created or removed, so concurrent first
# uses create it once and a root in use is never replaced.
#
# Mounts: every `run` happens in a private mount namespace (unshare --mount). /proc
# (swift's tools locate their libraries through /proc/self/exe) and the bind mounts are
# made there, undone by an exit trap, and in any case vanish with the namespace when its
# last process ends: nothing is ever left mounted on the host, also after a crash or a
# kill.
#
# Needs root for debootstrap, chroot and mount; as another user it runs itself through
# sudo and the command inside runs with the caller's user and group ids. Host packages:
# debootstrap, util-linux (flock, unshare, mount) — scripts/deps.sh installs them.
set -euo pipefail

SUITE=trixie
PACKAGES=(swiftlang libc6-dev libstdc++-14-dev pkg-config)
# What the marker records; a root made by another recipe is recreated.
RECIPE="debootstrap --variant=minbase $SUITE; apt-get install --no-install-recommends ${PACKAGES[*]}"
MARKER=.ctxpack-swift-root
LOCK_WAIT_SECONDS=3600

ROOTFS="${CTXPACK_SWIFT_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxpack/swift-trixie}"
SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"

die() {
    echo "swift-root: $*" >&2
    exit 1
}

# As another user, run through sudo with the root's path fixed (sudo changes HOME) and
# remember who to run commands as.
become_root() {
    [[ $(id -u) -eq 0 ]] && return
    command -v sudo >/dev/null || die "needs root (or sudo) for debootstrap, chroot and mount"
    exec sudo CTXPACK_SWIFT_ROOT="$ROOTFS" CTXPACK_SWIFT_USER="$(id -u):$(id -g)" \
        ${CTXPACK_DEBIAN_MIRROR:+CTXPACK_DEBIAN_MIRROR="$CTXPACK_DEBIAN_MIRROR"} "$SELF" "$@"
}

complete() { [[ -f "$ROOTFS/$MARKER" && "$(cat "$ROOTFS/$MARKER")" == "$RECIPE" ]]; }

# The host's Debian mirror: the archive of its own release (not -security, -updates).
mirror() {
    if [[ -n "${CTXPACK_DEBIAN_MIRROR:-}" ]]; then
        echo "$CTXPACK_DEBIAN_MIRROR"
        return
    fi
    local found
    found=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
        awk '$2 !~ /-/ && $1 ~ /debian\/?$/ { print $1; exit }' || true)
    echo "${found:-http://deb.debian.org/debian/}"
}

# Creates the root in ROOTFS.partial and renames it; the caller holds the lock exclusively.
create() {
    local partial="$ROOTFS.partial" log="$ROOTFS.log" started=$SECONDS
    local from
    from=$(mirror)
    command -v debootstrap >/dev/null || die "debootstrap is not installed (scripts/deps.sh installs it)"
    echo "swift-root: creating $ROOTFS (Debian $SUITE from $from, then ${PACKAGES[*]}; a few minutes; log: $log)"
    # Nothing is ever mounted below these folders outside a private namespace, so a
    # recursive removal is safe; --one-file-system guards against surprises anyway.
    rm -rf --one-file-system "$partial" "$ROOTFS"
    {
        # In a private namespace too, so that what debootstrap mounts inside the new root
        # cannot outlive it.
        unshare --mount --propagation private -- debootstrap --variant=minbase "$SUITE" "$partial" "$from" &&
            cp -L /etc/resolv.conf "$partial/etc/resolv.conf" &&
            in_namespace "$partial" / -- env DEBIAN_FRONTEND=noninteractive sh -ec "
                apt-get update -q
                apt-get install -y -q --no-install-recommends ${PACKAGES[*]}
                apt-get clean
                rm -rf /var/lib/apt/lists/*"
    } >"$log" 2>&1 || {
        tail -n 40 "$log" >&2
        die "creating the root failed (log: $log); the next use starts again"
    }
    echo "$RECIPE" >"$partial/$MARKER"
    mv "$partial" "$ROOTFS"
    echo "swift-root: created in $((SECONDS - started)) s"
}

ensure() {
    mkdir -p "$(dirname "$ROOTFS")"
    exec {lock}>"$ROOTFS.lock"
    flock -s -w "$LOCK_WAIT_SECONDS" "$lock" || die "timed out waiting for $ROOTFS.lock"
    if ! complete; then
        # flock converts the lock (releasing the shared one first), so concurrent first
        # uses queue here; the first creates the root, the others find it complete.
        flock -x -w "$LOCK_WAIT_SECONDS" "$lock" || die "timed out waiting for $ROOTFS.lock"
        complete || create
        flock -s "$lock"
    fi
    # The descriptor stays open, and the shared lock held, until this process and the
    # command it runs have ended.
}

# in_namespace ROOT CWD [ro|rw HOST GUEST]... -- COMMAND...: COMMAND inside ROOT, in a
# private mount namespace.
in_namespace() {
    unshare --mount --propagation private -- "$SELF" __inside "$@"
}

# Unmounts what `inside` mounted, last first.
undo() {
    local i
    for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTED[i]}" 2>/dev/null || true; done
}

# The body of in_namespace, already in the new namespace.
inside() {
    local rootfs=$1 cwd=$2
    shift 2
    # Global: the exit trap runs after this function has returned.
    MOUNTED=()
    trap undo EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    mount -t proc proc "$rootfs/proc"
    MOUNTED+=("$rootfs/proc")
    while [[ $# -gt 0 && "$1" != -- ]]; do
        local mode=$1 host=$2 guest=$3
        shift 3
        [[ -d "$host" ]] || die "not a folder: $host"
        mkdir -p "$rootfs$guest"
        mount --bind "$host" "$rootfs$guest"
        MOUNTED+=("$rootfs$guest")
        [[ "$mode" == rw ]] || mount -o remount,bind,ro "$rootfs$guest"
    done
    shift
    local user=()
    [[ -z "${CTXPACK_SWIFT_USER:-}" ]] || user=(--userspec="$CTXPACK_SWIFT_USER")
    # Not exec: the trap must run after the command.
    chroot "${user[@]}" "$rootfs" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
        HOME=/root LANG=C.UTF-8 /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$cwd" "$@"
}

run() {
    local binds=() cwd=/
    while [[ $# -gt 0 ]]; do
        case $1 in
        --ro | --rw)
            [[ $# -ge 3 && "$3" == /* ]] || die "$1 needs HOST and an absolute GUEST path"
            [[ -d "$2" ]] || die "not a folder: $2"
            binds+=("${1#--}" "$(cd "$2" && pwd)" "$3")
            shift 3
            ;;
        --cd)
            cwd=$2
            shift 2
            ;;
        --)
            shift
            break
            ;;
        *) die "unknown option $1" ;;
        esac
    done
    [[ $# -gt 0 ]] || die "run: no command"
    ensure
    in_namespace "$ROOTFS" "$cwd" "${binds[@]}" -- "$@"
}

case "${1:-}" in
path) echo "$ROOTFS" ;;
ensure)
    become_root "$@"
    ensure
    ;;
run)
    become_root "$@"
    shift
    run "$@"
    ;;
__inside)
    shift
    inside "$@"
    ;;
*)
    sed -n '2,/^set -euo/p' "$SELF" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
