#!/usr/bin/env bash
# Fails when BINARY needs anything at run time from the machine it lands on: a shared library
# (a NEEDED entry) or a program interpreter (the dynamic loader). YARN ships `loom` into every
# container, on nodes whose OS may be older than the build machine's.
#
#   tests/check_static_binary.sh BINARY
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BINARY" >&2
  exit 2
fi
bin=$1
if ! command -v readelf >/dev/null 2>&1; then
  echo "readelf (binutils) is missing" >&2
  exit 2
fi
# readelf fails on a file that is not ELF: that is a failure here too.
headers=$(readelf --wide --program-headers "$bin")
dynamic=$(readelf --wide --dynamic "$bin")

failed=0
if needed=$(grep '(NEEDED)' <<<"$dynamic"); then
  echo "$bin needs shared libraries:" >&2
  sed 's/^/  /' <<<"$needed" >&2
  failed=1
fi
if interp=$(grep 'Requesting program interpreter' <<<"$headers"); then
  echo "$bin needs a dynamic loader:$interp" >&2
  failed=1
fi
if [ "$failed" -eq 0 ]; then
  echo "$bin is self-contained (no NEEDED entry, no program interpreter)"
fi
exit "$failed"
