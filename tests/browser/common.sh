# Sourced by the run_*_test.sh scripts of this folder: what each does before its own steps.
#
#   browser_test_init NAME ARTEFACT_DIR
# sets test_name, here (this folder), root (the source tree), artefacts (ARTEFACT_DIR, made and
# resolved), scratch (a fresh folder under $TMPDIR; the caller's clean-up removes it) and pids
# (background processes for stop_background); installs playwright-core if it is missing.

browser_test_init() {
  test_name=$1
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  root=$(cd "$here/../.." && pwd)
  (cd "$here" && { [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --loglevel=error; })
  mkdir -p "$2"
  artefacts=$(realpath "$2")
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/loom-$test_name.XXXXXX")
  pids=()
}

# loom_browser_test_init NAME LOOM ARTEFACT_DIR: browser_test_init for the scripts that drive the
# real `loom` (LOOM, resolved, in loom) in a LOOM_HOME of their own under scratch.
loom_browser_test_init() {
  loom=$(realpath "$2")
  browser_test_init "$1" "$3"
  export LOOM_HOME=$scratch/home
  mkdir -p "$LOOM_HOME"
}

log() { echo "$test_name: $*"; }

# Signals every process in pids, then reaps them.
stop_background() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}

# answering_url LOOM JOB FIELD [PATTERN]: the URL in FIELD of `LOOM status --json JOB` (a
# regular expression PATTERN must match it) once an AM answers api/info there (redirects not
# followed: a proxy that redirects has no AM behind it any more); nothing otherwise.
answering_url() {
  "$1" status --json "$2" 2>/dev/null | node -e '
    const [field, pattern] = process.argv.slice(1);
    let s = "";
    process.stdin.on("data", (d) => (s += d)).on("end", async () => {
      try {
        const u = JSON.parse(s)[field] || "";
        if (!u || (pattern && !new RegExp(pattern).test(u))) return;
        const r = await fetch(new URL("api/info", u), { redirect: "manual", signal: AbortSignal.timeout(5000) });
        if (r.ok && (await r.json()).server === "am") console.log(u);
      } catch (e) {}
    });' "$3" "${4:-}" || true
}

# poll_dashboard FIELD [PATTERN]: one look for the job's id (in $scratch/submit.out, into id)
# and then for its dashboard (answering_url's URL, into url); succeeds once there is one.
poll_dashboard() {
  [ -n "$id" ] || id=$(job_id "$scratch/submit.out")
  [ -n "$id" ] || return 1
  url=$(answering_url "$loom" "$id" "$@")
  [ -n "$url" ]
}

# job_id FILE: the first job id FILE names.
job_id() { { grep -o 'job_[0-9]*_[0-9a-f]*' "$1" || true; } | head -1; }
