#!/usr/bin/env bash
# Builds a Debian 11 (bullseye) root at DIR for the old-userland tests (tests/integration/
# old_userland_test.cc): the static `loom` must run there, as it would on a node with an older OS.
#
#   scripts/bullseye-root.sh DIR
#
# Idempotent: a complete root carries a stamp naming what it was built with, and a rerun with the
# same stamp returns at once. The root is built in DIR.tmp.* beside DIR and renamed into place only
# once debootstrap succeeded, so an interrupted run never leaves a half root that looks complete.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
DIR=$(realpath -m "$1")
SUITE=bullseye
# python3 for the tasks, procps for ps/pkill in tasks; bash is already in minbase (Essential).
INCLUDE=python3,procps
STAMP_NAME=.loom-root-complete
STAMP="suite=$SUITE variant=minbase include=$INCLUDE"

# The fast path, taken by every rerun: no lock, no tools, no network.
if [ -f "$DIR/$STAMP_NAME" ] && [ "$(cat "$DIR/$STAMP_NAME")" = "$STAMP" ]; then
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# One builder at a time per DIR (ctest -j or two build trees sharing a cache).
mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
flock 9
if [ -f "$DIR/$STAMP_NAME" ] && [ "$(cat "$DIR/$STAMP_NAME")" = "$STAMP" ]; then
  exit 0   # another run finished it while this one waited for the lock
fi

# /usr/sbin is not on every user's PATH.
find_debootstrap() {
  command -v debootstrap 2>/dev/null || { [ -x /usr/sbin/debootstrap ] && echo /usr/sbin/debootstrap; }
}
if ! DEBOOTSTRAP=$(find_debootstrap); then
  echo "bullseye-root: installing debootstrap"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends debootstrap
  DEBOOTSTRAP=$(find_debootstrap)
fi

# The mirror this machine already uses (deb822 sources, then the one-line format), so the root
# comes from the same place as the host's packages.
mirror_from_sources() {
  local f=/etc/apt/sources.list.d/debian.sources
  if [ -f "$f" ]; then
    # First URIs line of a stanza that is not the security archive.
    awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' "$f"
    return
  fi
  if [ -f /etc/apt/sources.list ]; then
    awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list
  fi
}
MIRROR=${LOOM_DEBIAN_MIRROR:-$(mirror_from_sources)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}

# A root left without its stamp is a failed or older build: never reuse it. Nothing may be mounted
# under it (the tests mount only inside private namespaces), and --one-file-system keeps rm from
# crossing into a mount that somehow is.
remove_root() {
  local d=$1
  [ -e "$d" ] || return 0
  if findmnt -rn -o TARGET | awk -v d="$d" '$0 == d || index($0, d "/") == 1 { f = 1 } END { exit !f }'; then
    echo "bullseye-root: $d has mounts under it; unmount them first" >&2
    exit 1
  fi
  $SUDO rm -rf --one-file-system -- "$d"
}
for stale in "$DIR".tmp.*; do remove_root "$stale"; done
remove_root "$DIR"

TMP=$(mktemp -d "$DIR.tmp.XXXXXX")
chmod 0755 "$TMP"  # mktemp's 0700 would become the root's /
trap 'remove_root "$TMP"' EXIT
start=$(date +%s)
echo "bullseye-root: debootstrap $SUITE from $MIRROR into $DIR (include: $INCLUDE)"
# In a private mount namespace: whatever debootstrap mounts (proc, sys, dev in its second stage)
# disappears with it, even when it is interrupted.
if ! $SUDO unshare --mount --propagation private \
    "$DEBOOTSTRAP" --variant=minbase --include="$INCLUDE" "$SUITE" "$TMP" "$MIRROR" \
    >"$TMP.log" 2>&1; then
  tail -n 30 "$TMP.log" >&2
  echo "bullseye-root: debootstrap failed (full log: $TMP.log)" >&2
  exit 1
fi
# Keep the root small: the package cache and lists are not needed to run anything.
$SUDO rm -rf "$TMP"/var/cache/apt/archives/*.deb "$TMP"/var/lib/apt/lists/*_Packages
# Mount points the tests bind onto (proc, dev) exist already; the loom binary goes here.
$SUDO mkdir -p "$TMP/opt/loom/bin"
echo "$STAMP" | $SUDO tee "$TMP/$STAMP_NAME" >/dev/null
$SUDO mv -T "$TMP" "$DIR"
trap - EXIT
rm -f "$TMP.log"
echo "bullseye-root: $DIR ready in $(( $(date +%s) - start )) s, $(du -sh --one-file-system "$DIR" | cut -f1)"
