#!/usr/bin/env bash
# Makes the release packages from a finished build (what `cmake --build BUILD --target package`
# does) into a scratch dir and checks them as a user would meet them: the tarball and the .deb
# hold both binaries, the wheel and the README; the tarball's `loom` is still self-contained
# after CPack stripped it, prints its version inside an older userland (OLD_ROOT, a Debian 11
# root) and runs a local job from the unpacked tree.
#
#   tests/check_release_package.sh BUILD_DIR OLD_ROOT
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR OLD_ROOT" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
old_root=$2
here=$(cd "$(dirname "$0")" && pwd)
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT  # the bind mount below lives in its own mount namespace

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

cpack --config "$build/CPackConfig.cmake" -B "$scratch/out" >"$scratch/cpack.log" 2>&1 ||
  { cat "$scratch/cpack.log" >&2; fail "cpack failed"; }
tarball=$scratch/out/loom-$version-linux-x86_64.tar.gz
deb=$scratch/out/loom_${version}_amd64.deb
[ -f "$tarball" ] || fail "no $(basename "$tarball") in: $(ls "$scratch/out")"
[ -f "$deb" ] || fail "no $(basename "$deb") in: $(ls "$scratch/out")"

expect_files() {  # LISTING PREFIX: every file a release must carry
  local listing=$1 prefix=$2 f
  for f in bin/loom bin/loom-kerberos "share/loom/python/loom-$version-py3-none-any.whl" share/doc/loom/README.md; do
    grep -qx "$prefix$f" <<<"$listing" || fail "the package lacks $f; it holds:"$'\n'"$listing"
  done
}
expect_files "$(tar tzf "$tarball")" "loom-$version-linux-x86_64/"
expect_files "$(dpkg-deb --fsys-tarfile "$deb" | tar tf - | sed 's|^\./||')" "usr/"

tar xzf "$tarball" -C "$scratch"
tree=$scratch/loom-$version-linux-x86_64
"$here/check_static_binary.sh" "$tree/bin/loom"
[ "$("$tree/bin/loom" --version)" = "$("$build/src/cli/loom" --version)" ] || fail "the packaged loom is another version"
python3 -m zipfile -t "$tree/share/loom/python/loom-$version-py3-none-any.whl" >/dev/null || fail "the wheel is no zip"
# Listed whole first: `| grep -q` would close the pipe at the first match, and under pipefail
# the lister's broken pipe failed the check now and then.
wheel_listing=$(python3 -m zipfile -l "$tree/share/loom/python/loom-$version-py3-none-any.whl")
grep -q 'loom/job.py' <<<"$wheel_listing" || fail "the wheel lacks the loom package"

# The stripped binary in the older userland, seen from inside the root through a private bind
# mount (the cached root itself is never written).
unshare --mount --propagation private sh -c \
  "mount --bind '$tree/bin' '$old_root/mnt' && chroot '$old_root' /mnt/loom --version" >"$scratch/old.out" ||
  fail "the packaged loom does not start in $old_root"
grep -q . "$scratch/old.out" || fail "the packaged loom printed no version in $old_root"

# A local job from the unpacked tree, in its own LOOM_HOME.
LOOM_HOME=$scratch/home "$tree/bin/loom" submit --quiet --conf loom.worker.instances=2 \
  --conf "loom.worker.command=test -n \"\$TASK_INDEX\"" --conf loom.worker.memory=64m ||
  fail "a local job from the unpacked package did not succeed"
echo "release packages are complete: $(basename "$tarball"), $(basename "$deb")"
