#!/usr/bin/env bash
# debian-source.sh <package> <dest-dir>
# Unpacks Debian's source package <package> (Debian's patches applied) into <dest-dir>/source,
# for libraries Loom links statically that Debian ships no static archive of. The version is
# the one of the installed binary packages built from it (a -dev one first), so the headers
# the build uses match. A stamp makes a second run a no-op.
set -euo pipefail

die() { echo "debian-source: error: $*" >&2; exit 1; }
say() { echo "debian-source: $*"; }

[ $# -eq 2 ] || die "usage: $0 <package> <dest-dir>"
pkg=$1
mkdir -p "$2"
dest=$(cd "$2" && pwd)
stamp=$dest/.debian-source.stamp

# The installed version, from the binary packages built from this source: a -dev one first.
version=$(dpkg-query -W -f='${db:Status-Abbrev} ${source:Package} ${source:Version} ${Package}\n' \
            2>/dev/null |
          awk -v s="$pkg" '$1 == "ii" && $2 == s { print ($4 ~ /-dev$/ ? 0 : 1), $3 }' |
          sort -n | head -n1 | cut -d' ' -f2)
want="$pkg${version:+=$version}"

done_already() {
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$dest/source" ]; then
    say "$want already in $dest/source"
    exit 0
  fi
}
done_already

# Runs a command as root: directly, or with sudo when not root.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    die "not root and no sudo, cannot run: $*"
  fi
}
apt_opts=(-qq --download-only)
# As root, apt downloads as _apt, which may not be able to write to <dest-dir>.
[ "$(id -u)" -ne 0 ] || apt_opts+=(-o APT::Sandbox::User=root)

# Serialises two builds sharing <dest-dir>.
exec 9>"$dest/.lock"
flock 9
done_already

# dpkg-source (dpkg-dev) unpacks and patches the source.
if ! command -v dpkg-source >/dev/null; then
  say "installing dpkg-dev (for dpkg-source)"
  as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends dpkg-dev || die "could not install dpkg-dev"
fi

# A deb-src entry mirroring the Types: deb entries of Debian's deb822 sources (same URIs,
# suites, components and keyring); any existing deb-src entry is left as it is.
updated=0
list=/etc/apt/sources.list.d/loom-deb-src.sources
if [ ! -f "$list" ] &&
   ! grep -Eqs '^[[:space:]]*(Types:.*deb-src|deb-src[[:space:]])' \
       /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; then
  base=/etc/apt/sources.list.d/debian.sources
  [ -f "$base" ] ||
    die "no deb-src entry, and no $base to derive one from: add a deb-src entry for bookworm"
  entries=$(awk 'BEGIN { RS = ""; ORS = "\n\n" }
                 /(^|\n)Types:[^\n]*[[:space:]]deb([[:space:]]|$)/ {
                   sub(/(^|\n)Types:[^\n]*/, "\nTypes: deb-src"); sub(/^\n/, ""); print }' "$base")
  [ -n "$entries" ] || die "no 'Types: deb' entry in $base to mirror as deb-src"
  say "adding $list (deb-src mirroring $base)"
  printf '# Written by Loom scripts/debian-source.sh: Debian source packages built into Loom.\n%s' \
    "$entries" | as_root tee "$list" >/dev/null
  say "apt-get update (new deb-src entry)"
  as_root apt-get update -qq || die "apt-get update failed"
  updated=1
fi

# A fresh download directory holds only this version's files.
rm -rf "$dest/download" "$dest/source"
mkdir -p "$dest/download"
cd "$dest/download"
say "downloading source $want into $dest/download"
if ! apt-get source "${apt_opts[@]}" "$want"; then
  [ "$updated" -eq 0 ] || die "apt-get source $want failed (is $want still on the mirror?)"
  say "apt-get update (no source lists yet)"
  as_root apt-get update -qq || die "apt-get update failed"
  if ! apt-get source "${apt_opts[@]}" "$want"; then
    [ -n "$version" ] || die "no source package $pkg in the deb-src lists"
    die "apt-get source $want failed: the mirror may no longer carry that version" \
        "(upgrade the installed package, then rerun)"
  fi
fi

# apt has checked every file against the signed Sources index, so --no-check skips only
# dpkg-source's check of the uploader's signature (whose keyring is not installed).
# dpkg-source applies debian/patches.
dscs=("${pkg}"_*.dsc)
dsc=${dscs[0]}
[ -f "$dsc" ] || die "no ${pkg}_*.dsc in $dest/download after apt-get source"
say "unpacking $dsc with Debian's patches"
dpkg-source --no-check -q -x "$dsc" source.tmp >/dev/null || die "dpkg-source -x $dsc failed"
mv source.tmp "$dest/source"
echo "$want" >"$stamp"
say "$want ready in $dest/source"
