#!/usr/bin/env bash
# promtool.sh <dest-dir>
# Unpacks Debian's prometheus package into <dest-dir> for its `promtool`, with which the tests
# check Loom's /metrics pages (`promtool check metrics`). Unpacked, not installed: installing
# the package would start a Prometheus server on the machine, which the tests do not want.
# A second run is a no-op. Prints the path of promtool.
set -euo pipefail
die() { echo "promtool: error: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: $0 <dest-dir>"
mkdir -p "$1"
dest=$(cd "$1" && pwd)
tool=$dest/usr/bin/promtool
if [ ! -x "$tool" ]; then
  exec 9>"$dest/.lock"
  flock 9
  if [ ! -x "$tool" ]; then
    cd "$dest"
    rm -f prometheus_*.deb
    # As root, apt downloads as _apt, which may not be able to write here.
    opts=()
    [ "$(id -u)" -ne 0 ] || opts+=(-o APT::Sandbox::User=root)
    apt-get download "${opts[@]}" prometheus >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 || true; apt-get download "${opts[@]}" prometheus >/dev/null; } ||
      die "could not download Debian's prometheus package"
    dpkg -x prometheus_*.deb "$dest" && rm -f prometheus_*.deb
    [ -x "$tool" ] || die "no usr/bin/promtool in Debian's prometheus package"
  fi
fi
echo "$tool"
