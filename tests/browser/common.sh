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

# job_id FILE: the first job id FILE names.
job_id() { { grep -o 'job_[0-9]*_[0-9a-f]*' "$1" || true; } | head -1; }
