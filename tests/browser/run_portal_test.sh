#!/usr/bin/env bash
# The portal in a real browser, over real jobs: runs, with the real `loom` in a LOOM_HOME of its
# own, the 2-worker PyTorch DDP example (examples/pytorch, samples every 300 ms), a job that
# fails (its command exits 1), a job named <script>alert(1)</script>, and a job killed with
# `loom kill` while it runs; then starts `loom portal --port 0` and runs portal.test.mjs against
# it (Debian's chromium through playwright-core). Screenshots go to ARTEFACT_DIR.
#
#   tests/browser/run_portal_test.sh LOOM ARTEFACT_DIR
#
# Exits with the tests' code. Everything it started is stopped on exit (jobs with `loom kill`).
# For working on the page before a change to `loom portal` is built: LOOM_PORTAL_COMMAND, a
# command run instead of `LOOM portal --port 0` (it must print "Portal: URL" first; e.g.
# 'node fixture_server.mjs --port 0 --loom "$LOOM" --loom-home "$LOOM_HOME"', run in this
# folder); LOOM_PORTAL_TEST_KEEP=1 keeps the scratch folder and its LOOM_HOME.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 LOOM ARTEFACT_DIR" >&2; exit 2; }
source "$(dirname "$0")/common.sh"
loom_browser_test_init portal-test "$1" "$2"

jobs_started=()
cleanup() {
  local rc=$?
  for id in "${jobs_started[@]}"; do "$loom" kill "$id" >/dev/null 2>&1 || true; done
  stop_background
  cp "$scratch"/*.out "$artefacts/" 2>/dev/null || true
  if [ "${LOOM_PORTAL_TEST_KEEP:-}" = 1 ]; then log "kept $scratch"; else rm -rf "$scratch"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export LOOM=$loom
# The job's state in `loom status --json`, or its tasks' states with "tasks".
status_of() {
  "$loom" status --json "$1" 2>/dev/null | node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      const j = JSON.parse(s);
      console.log(process.argv[1] === "tasks" ? j.tasks.map((t) => t.state).join(",") : j.state);
    });' "${2:-}" || true
}

# 1. The DDP example, as scripts/run-example.sh submits it.
log "the DDP example"
(cd "$root" && "$loom" submit --quiet --src_dir examples/pytorch --executes train_ddp.py \
  --python_binary_path /usr/bin/python3 --conf_file examples/pytorch/tony.xml \
  --conf loom.task.metrics-interval-ms=300) >"$scratch/ddp.out" 2>&1 ||
  { cat "$scratch/ddp.out"; log "the DDP example did not succeed"; exit 1; }
ddp=$(job_id "$scratch/ddp.out")

# 2. A job whose command exits 1.
log "a job that fails"
if "$loom" submit --quiet --conf loom.application.name=fails-on-purpose --conf loom.worker.instances=1 \
  --conf loom.worker.memory=64m --conf 'loom.worker.command=echo about to fail; exit 1' >"$scratch/failed.out" 2>&1; then
  cat "$scratch/failed.out"; log "the failing job succeeded"; exit 1
fi
failed=$(job_id "$scratch/failed.out")

# 3. A job whose name, output and configuration hold markup.
log "a job named <script>alert(1)</script>"
"$loom" submit --quiet --conf 'loom.application.name=<script>alert(1)</script>' --conf loom.worker.instances=1 \
  --conf loom.worker.memory=64m --conf "loom.worker.command=echo '<script>alert(2)</script>'" >"$scratch/xss.out" 2>&1 ||
  { cat "$scratch/xss.out"; exit 1; }
xss=$(job_id "$scratch/xss.out")

# 4. A job killed while it runs: submitted in the background, `loom kill` once its tasks run.
log "a job killed with loom kill"
"$loom" submit --quiet --conf loom.application.name=sleeps --conf loom.worker.instances=2 --conf loom.worker.memory=64m \
  --conf 'loom.worker.command=sleep 600' --conf loom.task.stop-grace-ms=500 \
  --conf loom.task.metrics-interval-ms=300 >"$scratch/killed.out" 2>&1 &
submit=$!
pids+=("$submit")
killed=""
for _ in $(seq 1 300); do
  killed=$(job_id "$scratch/killed.out")
  [ -n "$killed" ] && [ "$(status_of "$killed" tasks)" = "RUNNING,RUNNING" ] && break
  sleep 0.1
done
[ -n "$killed" ] || { cat "$scratch/killed.out"; log "the job to kill did not start"; exit 1; }
jobs_started+=("$killed")
sleep 1  # a few samples
"$loom" kill "$killed" >"$scratch/kill.out" 2>&1
wait "$submit" || true
[ "$(status_of "$killed")" = KILLED ] || { cat "$scratch/killed.out"; log "the job did not end KILLED"; exit 1; }

# The portal, on a free port; its first line names its address.
if [ -n "${LOOM_PORTAL_COMMAND:-}" ]; then
  (cd "$here" && exec bash -c "exec $LOOM_PORTAL_COMMAND") >"$scratch/portal.out" 2>&1 &
else
  "$loom" portal --port 0 >"$scratch/portal.out" 2>&1 &
fi
pids+=("$!")
url=""
for _ in $(seq 1 200); do
  url=$(sed -n '1s/^Portal: \(http[^ ]*\).*/\1/p' "$scratch/portal.out" 2>/dev/null)
  [ -n "$url" ] && break
  kill -0 "${pids[-1]}" 2>/dev/null || { cat "$scratch/portal.out"; log "loom portal exited"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$scratch/portal.out"; log "loom portal printed no address"; exit 1; }
log "portal at $url; jobs: ddp $ddp, failed $failed, xss $xss, killed $killed"

export LOOM_PORTAL_URL=$url LOOM_BROWSER_ARTEFACTS=$artefacts
export LOOM_TEST_JOBS="{\"ddp\":\"$ddp\",\"failed\":\"$failed\",\"killed\":\"$killed\",\"xss\":\"$xss\"}"
cd "$here"
node --test --test-reporter=spec portal.test.mjs
