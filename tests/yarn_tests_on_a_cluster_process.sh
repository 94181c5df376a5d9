#!/usr/bin/env bash
# Runs the YARN integration tests in their real-cluster mode (LOOM_TEST_HADOOP_CONF_DIR, see
# tests/integration/yarn_double_cluster.h) against the YARN test double run as a separate process
# (bench/yarn_double_cluster: two NodeManagers, log aggregation on), as they would run against a
# real cluster: no test may reach into the double, size its asks to a node it assumes, or read a
# file only the double's machine has. A test that needs the double's hooks skips, saying why;
# this prints which ones, and fails if any test fails.
#
#   tests/yarn_tests_on_a_cluster_process.sh BUILD_DIR
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
double=$build/bench/yarn_double_cluster
scratch=$(mktemp -d)
double_pid=
cleanup() {
  exec 3>&- 2>/dev/null || true  # the double stops (killing its containers) when its stdin closes
  if [ -n "$double_pid" ]; then wait "$double_pid" || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

mkfifo "$scratch/stdin"
"$double" "$scratch/cluster" --nodes 2 --node-memory-mb 16384 --heartbeat-ms 250 --log-aggregation TFile \
  <"$scratch/stdin" >"$scratch/double.out" 2>"$scratch/double.err" &
double_pid=$!
exec 3>"$scratch/stdin"
for _ in $(seq 100); do
  grep -q '^ready$' "$scratch/double.out" && break
  kill -0 "$double_pid" 2>/dev/null || { cat "$scratch/double.err" >&2; echo "FAIL: the double did not start" >&2; exit 1; }
  sleep 0.1
done
grep -q '^ready$' "$scratch/double.out" || { echo "FAIL: the double is not ready after 10 s" >&2; exit 1; }

export LOOM_TEST_HADOOP_CONF_DIR=$scratch/cluster/conf
export LOOM_TEST_NM_LOG_DIR=$scratch/cluster/yarn/logs,$scratch/cluster/yarn/nm1/logs
export USER=${USER:-$(id -un)}
# Every integration test binary that can start a YarnDoubleCluster, whole (several run each
# case on both backends). old_userland_test's YARN case needs the double's chroot NodeManager,
# and its other cases a Debian 11 root that only the integration label builds.
here=$(cd "$(dirname "$0")" && pwd)
# The whole run ends before ctest's TIMEOUT (2400 s) would kill this script without its clean-up.
deadline=$((SECONDS + ${LOOM_REHEARSAL_BUDGET_S:-2100}))
rc=0
for source in $(grep -l 'YarnDoubleCluster' "$here"/integration/*_test.cc | sort); do
  name=$(basename "$source" .cc)
  [ "$name" = old_userland_test ] && continue
  echo "== $name"
  left=$((deadline - SECONDS))
  if [ "$left" -le 0 ]; then
    echo "FAIL: out of time before $name" >&2
    rc=1
    break
  fi
  set +e
  # 3>&-: only this script holds the double's stdin, so the double stops with it.
  timeout "$((left < 1200 ? left : 1200))" "$build/tests/integration/$name" >"$scratch/$name.out" 2>&1 3>&-
  status=$?
  set -e
  grep -E '^\[  (PASSED|SKIPPED|FAILED) +\]' "$scratch/$name.out" | grep -v '^\[  SKIPPED \] [A-Za-z]' || true
  if [ "$status" -ne 0 ]; then
    rc=1
    cat "$scratch/$name.out"
  fi
done
passed=$(cat "$scratch"/*_test.out | sed -n 's/^\[       OK \] .*/x/p' | wc -l)
skipped=$(cat "$scratch"/*_test.out | grep -h '^\[  SKIPPED \] [A-Za-z]' | sed 's/ ([0-9]* ms)$//' | sort -u)
echo "== real-cluster mode against the double as a process: $passed passed, $(grep -c . <<<"$skipped") skipped:"
echo "$skipped"
exit "$rc"
