#!/usr/bin/env bash
# Builds Loom and runs every benchmark; writes bench/results/results.{md,json}.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec /usr/bin/python3 bench/run.py "$@"
