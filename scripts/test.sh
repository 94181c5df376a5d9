#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite: unit, then integration (real processes, real
# PyTorch), then the `slow` label when there is one. Exits non-zero on the first failing label.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cd "${BUILD_DIR:-build}"
jobs=$(nproc)
ctest -L unit --output-on-failure -j"$jobs"
# Integration tests start real jobs with several processes each: one at a time.
ctest -L integration --output-on-failure -j1
if ctest -N -L slow | grep -q "Total Tests: [1-9]"; then
  ctest -L slow --output-on-failure -j1
fi
