#!/usr/bin/env bash
# Sets up, builds, and runs the example: a 2-worker PyTorch DDP training on sklearn's digits,
# on the local backend. Exits with `loom submit`'s code (0: the job SUCCEEDED).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec build/src/cli/loom submit \
  --src_dir examples/pytorch \
  --executes train_ddp.py \
  --python_binary_path /usr/bin/python3 \
  --conf_file examples/pytorch/tony.xml \
  "$@"
