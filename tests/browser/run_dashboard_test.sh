#!/usr/bin/env bash
# The AM's live dashboard in a real browser while a real job runs: submits the 2-worker PyTorch
# DDP example (examples/pytorch, 100 epochs so that it runs a while, samples every 300 ms) with
# the real `loom` in a LOOM_HOME of its own, finds the dashboard's address in
# `loom status --json` (dashboard_url) once the AM answers api/info, and runs
# dashboard.test.mjs against it: / opens the job, the task table and the plots change while it
# runs, the page shows its end. Screenshots go to ARTEFACT_DIR.
#
#   tests/browser/run_dashboard_test.sh LOOM ARTEFACT_DIR
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 LOOM ARTEFACT_DIR" >&2; exit 2; }
source "$(dirname "$0")/common.sh"
loom_browser_test_init dashboard-test "$1" "$2"
id=""
cleanup() {
  local rc=$?
  [ -z "$id" ] || "$loom" kill "$id" >/dev/null 2>&1 || true
  stop_background
  cp "$scratch"/*.out "$artefacts/" 2>/dev/null || true
  rm -rf "$scratch"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$here"

(cd "$root" && exec "$loom" submit --src_dir examples/pytorch --executes train_ddp.py \
  --python_binary_path /usr/bin/python3 --conf_file examples/pytorch/tony.xml \
  --task_params "--epochs 100" --conf loom.task.metrics-interval-ms=300) >"$scratch/submit.out" 2>&1 &
submit=$!
pids+=("$submit")

# The job's id, then its dashboard once the AM answers there.
url=""
for _ in $(seq 1 600); do
  poll_dashboard dashboard_url && break
  kill -0 "$submit" 2>/dev/null || { cat "$scratch/submit.out"; log "the job ended before its dashboard answered"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$scratch/submit.out"; log "no dashboard answered"; exit 1; }
log "job $id, dashboard at $url"

# In the background, so that a signal to this script is handled at once (bash runs a trap only
# once its foreground command has ended).
LOOM_DASHBOARD_URL=$url LOOM_BROWSER_ARTEFACTS=$artefacts LOOM_TEST_JOB=$id \
  node --test --test-reporter=spec dashboard.test.mjs &
pids+=("$!")
rc=0
wait "$!" || rc=$?
wait "$submit" || true
exit $rc
