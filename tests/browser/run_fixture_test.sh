#!/usr/bin/env bash
# The page alone, without `loom`: serves a built page (DIST, e.g. build/web/dist) from
# fixture_server.mjs with made-up jobs and runs the same browser tests as against the real
# servers: portal.test.mjs over the fixture's jobs, and dashboard.test.mjs against the fixture
# as an AM whose job runs for 20 s. Screenshots go to ARTEFACT_DIR.
#
#   tests/browser/run_fixture_test.sh DIST ARTEFACT_DIR
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 DIST ARTEFACT_DIR" >&2; exit 2; }
source "$(dirname "$0")/common.sh"
dist=$(realpath "$1")
browser_test_init fixture-test "$2"
mkdir -p "$artefacts/portal" "$artefacts/dashboard"
cleanup() {
  local rc=$?
  stop_background
  rm -rf "$scratch"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$here"

# Starts the fixture server with ARGS; sets `url`.
serve() {
  local out=$scratch/server-${#pids[@]}.out
  node fixture_server.mjs --port 0 --dist "$dist" "$@" >"$out" 2>&1 &
  pids+=("$!")
  url=""
  for _ in $(seq 1 100); do
    url=$(sed -n '1s/^Portal: \(http[^ ]*\).*/\1/p' "$out")
    [ -n "$url" ] && return 0
    sleep 0.1
  done
  cat "$out"
  return 1
}

serve
LOOM_PORTAL_URL=$url LOOM_BROWSER_ARTEFACTS=$artefacts/portal \
  LOOM_TEST_JOBS='{"ddp":"job_20261129093000_d0d0","failed":"job_20261129094000_fa11","killed":"job_20261129095000_k111","xss":"job_20261129096000_0bad","ddp_log":"epoch"}' \
  node --test --test-reporter=spec portal.test.mjs
live=job_20261129099000_11fe
serve --am "$live" --run-seconds 20
LOOM_DASHBOARD_URL=$url LOOM_BROWSER_ARTEFACTS=$artefacts/dashboard LOOM_TEST_JOB=$live LOOM_TEST_END_TIMEOUT_S=60 \
  node --test --test-reporter=spec dashboard.test.mjs
