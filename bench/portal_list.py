#!/usr/bin/env python3
"""`loom portal` with 10,000 job records: how long the job list takes to answer.

Makes N synthetic job records (job.json, events.jsonl with a few tasks, status.json; states
mixed: succeeded, failed, killed, running) in a fresh $LOOM_HOME, starts `loom portal` on them
and times, over keep-alive HTTP from this process, each query the job list makes: the first
page, a state filter, a name search, the last page, and the page itself. The baseline is
GET api/info on the same server in the same run (the server's floor: one request, no jobs);
each figure is reported as milliseconds and as a ratio to it. The issue's bar: the list page
under 300 ms. Writes bench/results/portal.{md,json}. Usage: bench/portal_list.py [--jobs N]
"""
import argparse
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))
LOOM = os.path.join(BUILD, "src/cli/loom")
STATES = ["SUCCEEDED"] * 6 + ["FAILED"] * 2 + ["KILLED", "RUNNING"]


def make_jobs(home, n):
    rng = random.Random(7)
    t0 = 1_764_000_000_000
    for i in range(n):
        job_id = "job_2026%010d_%04x" % (i, i & 0xFFFF)
        d = os.path.join(home, "jobs", job_id)
        os.makedirs(d)
        ms = t0 + i * 60_000
        state = rng.choice(STATES)
        tasks = ["worker:%d" % k for k in range(rng.choice([1, 2, 4, 8]))]
        with open(os.path.join(d, "job.json"), "w") as f:
            json.dump({"job_id": job_id, "name": "train-%d" % (i % 97), "user": "user%d" % (i % 13),
                       "backend": "yarn" if i % 3 else "local", "submitted_ms": ms}, f)
        with open(os.path.join(d, "events.jsonl"), "w") as f:
            f.write(json.dumps({"ts": ms, "event": "JOB_SUBMITTED", "job_id": job_id, "tasks": tasks}) + "\n")
            for t in tasks:
                f.write(json.dumps({"ts": ms + 500, "event": "TASK_STATE", "task": t, "state": "RUNNING"}) + "\n")
        if state != "RUNNING":
            with open(os.path.join(d, "status.json"), "w") as f:
                json.dump({"job_id": job_id, "state": state, "diagnostics": "", "finished_ms": ms + 30_000}, f)


def timed_gets(conn, path, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        times.append((time.perf_counter() - t) * 1000)
        assert r.status == 200, (path, r.status, body[:200])
    return statistics.median(times), max(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    home = tempfile.mkdtemp(prefix="loom-portal-bench.")
    portal = None
    try:
        t = time.perf_counter()
        make_jobs(home, a.jobs)
        made_s = time.perf_counter() - t
        env = dict(os.environ, LOOM_HOME=home)
        t = time.perf_counter()
        portal = subprocess.Popen([LOOM, "portal", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
        line = portal.stdout.readline()
        if not line.startswith("Portal: "):
            raise SystemExit("loom portal did not start: %r (exit %s)" % (line, portal.poll()))
        start_s = time.perf_counter() - t
        port = int(line.split("/")[2].rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port)
        base, _ = timed_gets(conn, "/api/info", a.reps)
        rows = []
        for label, path in [("first page (50)", "/api/jobs?limit=50"),
                            ("state=FAILED,KILLED", "/api/jobs?state=FAILED,KILLED&limit=50"),
                            ("name search", "/api/jobs?name=train-42&limit=50"),
                            ("last page", "/api/jobs?offset=%d&limit=50" % (a.jobs - 50)),
                            ("the page (index.html)", "/"),
                            ("/metrics", "/metrics")]:
            med, worst = timed_gets(conn, path, a.reps)
            rows.append({"query": label, "path": path, "median_ms": round(med, 2), "max_ms": round(worst, 2),
                         "ratio_to_baseline": round(med / base, 1)})
        result = {"jobs": a.jobs, "records_made_s": round(made_s, 1), "portal_start_s": round(start_s, 2),
                  "baseline_api_info_ms": round(base, 3), "queries": rows, "bar_ms": 300}
        os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
        with open(os.path.join(ROOT, "bench/results/portal.json"), "w") as f:
            json.dump(result, f, indent=2)
        md = ["# loom portal with %d jobs" % a.jobs, "",
              "Portal start (index of every record, then listening): %.2f s. Baseline: GET api/info, "
              "median %.3f ms (same server, same run). Medians of %d requests over one keep-alive "
              "connection; the issue's bar for the list: 300 ms." % (start_s, base, a.reps), "",
              "| query | median ms | max ms | x baseline |", "|---|---|---|---|"]
        md += ["| %s | %.2f | %.2f | %.1f |" % (r["query"], r["median_ms"], r["max_ms"], r["ratio_to_baseline"])
               for r in rows]
        with open(os.path.join(ROOT, "bench/results/portal.md"), "w") as f:
            f.write("\n".join(md) + "\n")
        print("\n".join(md))
    finally:
        if portal:
            portal.terminate()
            portal.wait(10)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
