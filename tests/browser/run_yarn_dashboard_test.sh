#!/usr/bin/env bash
# The AM's live dashboard in a real browser while a real job runs on YARN, through the
# ResourceManager's web proxy: starts the YARN test double as a process (DOUBLE, i.e.
# bench/yarn_double_cluster, in a work dir of its own), submits the 2-worker PyTorch DDP example
# to it with `loom submit --cluster yarn` (HADOOP_CONF_DIR from the double; samples every
# 300 ms; small memory asks), finds the application's tracking URL in `loom status --json`
# (tracking_url: http://localhost:PORT/proxy/APPLICATION_ID/) once the AM answers api/info
# through it, and runs dashboard.test.mjs against that URL (LOOM_TEST_BACKEND=yarn): the page
# opened under /proxy/APPLICATION_ID/, every request it makes while the job runs on that path,
# the task table and the plots changing. The proxy redirects to the RM's application page once
# the AM has unregistered, which the double does not serve, so the page's end is checked as
# dashboard.test.mjs says. Then the job must have succeeded. Screenshots go to ARTEFACT_DIR.
#
#   tests/browser/run_yarn_dashboard_test.sh LOOM DOUBLE ARTEFACT_DIR
#
# Exits with the tests' code. On every exit the job is killed (`loom kill`) if it still runs,
# the double is stopped (which kills its containers) and the scratch folder removed; only the
# processes this script started are signalled. LOOM_YARN_DASHBOARD_EPOCHS: the job's epochs
# (200 by default: about a minute with nothing else running); LOOM_YARN_DASHBOARD_BUDGET_S: the
# seconds everything but the clean-up may take (250, below ctest's TIMEOUT of 300).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 LOOM DOUBLE ARTEFACT_DIR" >&2; exit 2; }
source "$(dirname "$0")/common.sh"
loom_browser_test_init yarn-dashboard-test "$1" "$3"
double=$(realpath "$2")
export HADOOP_CONF_DIR=$scratch/cluster/conf
export USER=${USER:-$(id -un)}

double_pid=""
submit_pid=""
test_pid=""
id=""
# Waits up to $2 seconds for process $1 (a child of this script) to exit, then SIGKILLs it.
stop_within() {
  local pid=$1 left=$(($2 * 10))
  while kill -0 "$pid" 2>/dev/null && [ "$left" -gt 0 ]; do
    sleep 0.1
    left=$((left - 1))
  done
  kill -0 "$pid" 2>/dev/null && { log "pid $pid still runs after $2 s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; }
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  # The page test (`timeout` passes the signal on to node, whose playwright closes the browser).
  if [ -n "$test_pid" ]; then
    kill -TERM "$test_pid" 2>/dev/null || true
    stop_within "$test_pid" 15
  fi
  # The job first, while its RM is up; then `loom submit`, which follows it.
  if [ -n "$id" ] && [ -n "$submit_pid" ] && kill -0 "$submit_pid" 2>/dev/null; then
    timeout 60 "$loom" kill "$id" >"$scratch/kill.out" 2>&1 || log "loom kill $id: $(cat "$scratch/kill.out")"
  fi
  if [ -n "$submit_pid" ]; then
    kill -0 "$submit_pid" 2>/dev/null && kill -TERM "$submit_pid" 2>/dev/null
    stop_within "$submit_pid" 30
  fi
  # The double stops, killing every container it runs, when its stdin closes.
  exec 3>&- 2>/dev/null || true
  [ -z "$double_pid" ] || stop_within "$double_pid" 30
  cp "$scratch"/*.out "$scratch"/*.err "$artefacts/" 2>/dev/null || true
  if [ "$rc" -ne 0 ]; then
    # The containers' logs (am.log, executor.log, stdout...) of each NodeManager.
    for nm in "$scratch"/cluster/yarn/logs "$scratch"/cluster/yarn/nm*/logs; do
      [ -d "$nm" ] && mkdir -p "$artefacts/nm-logs" && cp -r "$nm" "$artefacts/nm-logs/$(basename "$(dirname "$nm")")" 2>/dev/null
    done
  fi
  rm -rf "$scratch"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$here"

# Everything up to the clean-up ends by then (ctest's TIMEOUT is 300 s).
deadline=$((SECONDS + ${LOOM_YARN_DASHBOARD_BUDGET_S:-250}))

mkfifo "$scratch/double.in"
"$double" "$scratch/cluster" --nodes 2 --heartbeat-ms 250 <"$scratch/double.in" >"$scratch/double.out" 2>"$scratch/double.err" &
double_pid=$!
exec 3>"$scratch/double.in"
for _ in $(seq 1 300); do
  grep -q '^ready$' "$scratch/double.out" && break
  kill -0 "$double_pid" 2>/dev/null || { cat "$scratch/double.err" >&2; log "the YARN double did not start"; exit 1; }
  sleep 0.1
done
grep -q '^ready$' "$scratch/double.out" || { log "the YARN double is not ready after 30 s"; exit 1; }

# 3>&-: only this script holds the double's stdin, so the double stops with it.
(cd "$root" && exec "$loom" submit --cluster yarn --src_dir examples/pytorch --executes train_ddp.py \
  --python_binary_path /usr/bin/python3 --conf_file examples/pytorch/tony.xml \
  --task_params "--epochs ${LOOM_YARN_DASHBOARD_EPOCHS:-200}" --conf loom.task.metrics-interval-ms=300 \
  --conf loom.am.memory=512m --conf loom.worker.memory=512m) >"$scratch/submit.out" 2>&1 3>&- &
submit_pid=$!

# The job's id, then the application's tracking URL (the RM's proxy) once the AM answers there.
url=""
while [ "$SECONDS" -lt "$((deadline - 90))" ]; do
  poll_dashboard tracking_url '^http://[^/]+/proxy/application_[0-9]+_[0-9]+/$' && break
  kill -0 "$submit_pid" 2>/dev/null || { cat "$scratch/submit.out"; log "the job ended before its dashboard answered through the proxy"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$scratch/submit.out"; log "no dashboard answered through the proxy"; exit 1; }
log "job $id, dashboard through the RM's proxy at $url"

# The page test ends (on its own or by `timeout`) in time for the clean-up to run before
# ctest's TIMEOUT (300 s), which would kill this script without it.
left=$((deadline - SECONDS))
[ "$left" -gt 60 ] || { log "out of time before the page test ($SECONDS s)"; exit 1; }
# In the background, so that a signal to this script is handled at once (bash runs a trap only
# once its foreground command has ended); TMPDIR: the browser's profile goes with the scratch.
mkdir -p "$scratch/tmp"
LOOM_DASHBOARD_URL=$url LOOM_BROWSER_ARTEFACTS=$artefacts LOOM_TEST_JOB=$id LOOM_TEST_BACKEND=yarn \
  LOOM_TEST_SCREENSHOT_PREFIX=yarn-dashboard LOOM_TEST_END_TIMEOUT_S=$((left - 40)) TMPDIR=$scratch/tmp \
  timeout "$left" node --test --test-reporter=spec dashboard.test.mjs 3>&- &
test_pid=$!
rc=0
wait "$test_pid" || rc=$?
test_pid=""
[ "$rc" -eq 0 ] || exit "$rc"
# The job ended (the page test waited for it); `loom submit` follows it to the end: it must
# have succeeded.
for _ in $(seq 1 300); do
  kill -0 "$submit_pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$submit_pid" 2>/dev/null && { cat "$scratch/submit.out"; log "loom submit still runs 30 s after the page saw the end"; exit 1; }
submit_rc=0
wait "$submit_pid" || submit_rc=$?
submit_pid=""
if [ "$submit_rc" -ne 0 ] || ! grep -q "^Job $id SUCCEEDED" "$scratch/submit.out"; then
  cat "$scratch/submit.out"
  log "the job did not succeed (loom submit exited $submit_rc)"
  exit 1
fi
