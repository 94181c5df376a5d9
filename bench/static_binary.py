"""Section `binary` of bench/run.py: the self-contained `loom` (linked -static, what YARN ships to
every node) against the same code linked to this machine's glibc and libstdc++ as shared
libraries (loom-kerberos, the client for Kerberized clusters, built beside it), measured side by side in the same run.

Figures per binary: file size, executor and AM peak RSS, and the time from the AM's launch of an
executor (TASK_STATE LAUNCHED) to that executor's registration (REGISTERED), which spans the
executor's exec, its start-up and its first call to the AM.
"""
import json
import os
import shutil
import statistics
import subprocess
import tempfile


def _events(home):
    jobs = os.path.join(home, "jobs")
    (job,) = os.listdir(jobs)
    with open(os.path.join(jobs, job, "events.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def _one_job(loom, tasks):
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, LOOM_HOME=home)
        r = subprocess.run([loom, "submit", "--quiet", "--conf", f"loom.worker.instances={tasks}",
                            "--conf", "loom.worker.command=true", "--conf", "loom.worker.memory=64m"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{loom} submit failed: {r.stderr}")
        events = _events(home)
    launched, registered = {}, {}
    for e in events:
        if e.get("event") == "TASK_STATE" and e.get("state") == "LAUNCHED":
            launched.setdefault(e["task"], e["ts"])
        if e.get("event") == "TASK_STATE" and e.get("state") == "REGISTERED":
            registered.setdefault(e["task"], e["ts"])
    to_registered = [registered[t] - launched[t] for t in registered if t in launched]
    executor_rss = [e["executor_peak_rss_bytes"] for e in events if "executor_peak_rss_bytes" in e]
    am_rss = [e["am_peak_rss_bytes"] for e in events if e.get("event") == "JOB_FINISHED"]
    return to_registered, max(executor_rss), am_rss[0]


def _shipped_bytes(loom):
    """The file's size without debug sections, as it would be shipped (`loom` already has none)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "stripped")
        subprocess.run(["objcopy", "--strip-debug", loom, out], check=True)
        return os.path.getsize(out)


def _measure(loom, tasks, reps):
    to_registered, executor_rss, am_rss = [], [], []
    for _ in range(reps):
        t, e, a = _one_job(loom, tasks)
        to_registered += t
        executor_rss.append(e)
        am_rss.append(a)
    return {"binary_bytes": _shipped_bytes(loom),
            "launched_to_registered_ms": statistics.median(to_registered),
            "executor_peak_rss_mib": statistics.median(executor_rss) / 2**20,
            "am_peak_rss_mib": statistics.median(am_rss) / 2**20}


def _localized_copy(loom, into):
    """A fresh copy, as YARN's localizer writes the binary on a node. Peak RSS counts the binary's
    mapped file pages, and how many get mapped depends on how the file came into the page cache:
    on kernels whose page cache holds large folios (ext4 since 6.16), a fault maps the whole folio,
    and the folios a linker leaves behind are large: run straight from the build dir, the static
    executor peaked at 14.3 MiB instead of 9.2 (2026-11-26, kernel 6.18)."""
    path = os.path.join(into, os.path.basename(loom))
    shutil.copyfile(loom, path)
    os.chmod(path, 0o755)
    return path


def bench_binary(static_loom, dynamic_loom, reps, tasks=4):
    """Interleaves the two binaries, rep by rep, so that both see the same machine load."""
    runs = {"static": [], "dynamic": []}
    with tempfile.TemporaryDirectory() as d:
        static_copy = _localized_copy(static_loom, d)
        dynamic_copy = _localized_copy(dynamic_loom, d)
        for _ in range(reps):
            runs["static"].append(_measure(static_copy, tasks, 1))
            runs["dynamic"].append(_measure(dynamic_copy, tasks, 1))
    out = {"tasks": tasks, "reps": reps}
    for kind, rows in runs.items():
        out[kind] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    out["ratio"] = {k: out["static"][k] / out["dynamic"][k] if out["dynamic"][k] else float("nan")
                    for k in out["static"]}
    return out


def binary_report(res):
    if not res:
        return []
    s, d, r = res["static"], res["dynamic"], res["ratio"]
    rows = [("file size without debug sections (MiB)", "binary_bytes", 2**20), ("executor peak RSS (MiB)", "executor_peak_rss_mib", 1),
            ("AM peak RSS (MiB)", "am_peak_rss_mib", 1),
            ("executor launched to registered (ms)", "launched_to_registered_ms", 1)]
    L = ["", "## 7. The self-contained binary: `loom` (-static) against the same code linked dynamically", "",
         f"{res['tasks']}-task local jobs of `true`, {res['reps']} interleaved repetitions each; the baseline is "
         "loom-kerberos, the same objects linked to this machine's shared glibc and libstdc++ (what the "
         "binary was before it had to run on older nodes: it then also loaded libspdlog, libfmt and libpugixml, "
         "and dlopened libcurl and libcrypto). Both run from a fresh copy of the file, as a node's "
         "localizer writes it (see `_localized_copy` for why that matters to RSS).", "",
         "| measure | static | dynamic | ratio static / dynamic |", "|---|---:|---:|---:|"]
    for label, key, div in rows:
        L.append(f"| {label} | {s[key] / div:.1f} | {d[key] / div:.1f} | {r[key]:.2f}x |")
    return L
