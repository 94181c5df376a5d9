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
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
loom=$(realpath "$1")
mkdir -p "$2"
artefacts=$(realpath "$2")
scratch=$(mktemp -d "${TMPDIR:-/tmp}/loom-dashboard-test.XXXXXX")
export LOOM_HOME=$scratch/home
mkdir -p "$LOOM_HOME"
pids=()
id=""
cleanup() {
  local rc=$?
  [ -z "$id" ] || "$loom" kill "$id" >/dev/null 2>&1 || true
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  cp "$scratch"/*.out "$artefacts/" 2>/dev/null || true
  rm -rf "$scratch"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "run_dashboard_test: $*"; }
cd "$here"
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --loglevel=error

(cd "$root" && exec "$loom" submit --src_dir examples/pytorch --executes train_ddp.py \
  --python_binary_path /usr/bin/python3 --conf_file examples/pytorch/tony.xml \
  --task_params "--epochs 100" --conf loom.task.metrics-interval-ms=300) >"$scratch/submit.out" 2>&1 &
submit=$!
pids+=("$submit")

# The job's id, then its dashboard once the AM answers there.
url=""
for _ in $(seq 1 600); do
  [ -n "$id" ] || id=$({ grep -o 'job_[0-9]*_[0-9a-f]*' "$scratch/submit.out" || true; } | head -1)
  if [ -n "$id" ]; then
    url=$("$loom" status --json "$id" 2>/dev/null | node -e '
      let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", async () => {
        try {
          const u = JSON.parse(s).dashboard_url || "";
          if (u && (await fetch(new URL("api/info", u))).ok) console.log(u);
        } catch (e) {}
      });' || true)
    [ -n "$url" ] && break
  fi
  kill -0 "$submit" 2>/dev/null || { cat "$scratch/submit.out"; log "the job ended before its dashboard answered"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$scratch/submit.out"; log "no dashboard answered"; exit 1; }
log "job $id, dashboard at $url"

rc=0
LOOM_DASHBOARD_URL=$url LOOM_BROWSER_ARTEFACTS=$artefacts LOOM_TEST_JOB=$id \
  node --test --test-reporter=spec dashboard.test.mjs || rc=$?
wait "$submit" || true
exit $rc
