#!/usr/bin/env python3
"""Loom benchmarks: every figure is measured side by side, in this run, on this machine, and
reported as a ratio against its baseline (the physical floor, a direct launch, or torchrun).

Writes bench/results/results.md and bench/results/results.json. Run through bench/run.sh, which
builds first. Options: --quick (fewer repetitions and sizes), --reps N, --only SECTION (run only
that section, e.g. `--only yarn`, keeping the others' figures from results.json).
"""
import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from static_binary import bench_binary, binary_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))
LOOM = os.path.join(BUILD, "src/cli/loom")
STAMP = os.path.join(BUILD, "bench/stamp")
FLOOR = os.path.join(BUILD, "bench/fork_exec_floor")
AM_LOAD = os.path.join(BUILD, "bench/am_load")
YARN_DOUBLE = os.path.join(BUILD, "bench/yarn_double_cluster")
LOOM_DYNAMIC = os.path.join(BUILD, "src/cli/loom-kerberos")
PYTHON = "/usr/bin/python3"
EXAMPLE = os.path.join(ROOT, "examples/pytorch")


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def read_stamps(d):
    return [int(open(os.path.join(d, f)).read()) for f in os.listdir(d)]


def events_of(loom_home):
    jobs = os.path.join(loom_home, "jobs")
    (job,) = os.listdir(jobs)
    with open(os.path.join(jobs, job, "events.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def loom_env(home):
    env = dict(os.environ)
    env["LOOM_HOME"] = home
    return env


def run_loom(args, home, **kw):
    return subprocess.run([LOOM, "submit", "--quiet"] + args, env=loom_env(home),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


# 1. Launch overhead -------------------------------------------------------------------------
def bench_launch(sizes, reps):
    rows, footprint = [], {}
    for n in sizes:
        floors, looms, floor_runs, loom_runs, exit_gaps = [], [], [], [], []
        for _ in range(reps):
            with tempfile.TemporaryDirectory() as d:
                t0 = time.time_ns()
                subprocess.run([FLOOR, str(n), STAMP, d], check=True)
                floor_runs.append((time.time_ns() - t0) / 1e6)
                stamps = read_stamps(d)
                assert len(stamps) == n
                floors.append((max(stamps) - t0) / 1e6)
            with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as home:
                t0 = time.time_ns()
                r = run_loom(["--conf", f"loom.worker.instances={n}", "--conf", f"loom.worker.command={STAMP} {d}",
                              "--conf", "loom.worker.memory=64m"], home)
                t_exit = time.time_ns()
                assert r.returncode == 0, r.stderr
                loom_runs.append((t_exit - t0) / 1e6)
                finished = [e["ts"] for e in events_of(home) if e.get("event") == "JOB_FINISHED"]
                exit_gaps.append(t_exit / 1e6 - finished[0])  # the events' clock has ms resolution
                stamps = read_stamps(d)
                assert len(stamps) == n
                looms.append((max(stamps) - t0) / 1e6)
                if n in (2, 32) and n not in footprint:
                    ev = events_of(home)
                    execs = [e["executor_peak_rss_bytes"] for e in ev if "executor_peak_rss_bytes" in e]
                    am = [e["am_peak_rss_bytes"] for e in ev if e.get("event") == "JOB_FINISHED"]
                    footprint[n] = {"executor_peak_rss_mib": max(execs) / 2**20, "am_peak_rss_mib": am[0] / 2**20}
        f, l = median(floors), median(looms)
        fr, lr = median(floor_runs), median(loom_runs)
        rows.append({"tasks": n, "floor_ms": f, "loom_ms": l, "ratio": l / f, "overhead_ms": l - f,
                     "run_floor_ms": fr, "run_loom_ms": lr, "run_over_floor_ms": lr - fr,
                     "exit_after_job_end_ms": median(exit_gaps)})
        print(f"launch n={n}: floor {f:.1f} ms, loom {l:.1f} ms; whole run: floor {fr:.1f} ms, loom {lr:.1f} ms, "
              f"exit {median(exit_gaps):.1f} ms after the job's end", file=sys.stderr)
    return rows, footprint


# 2. End-to-end training -----------------------------------------------------------------------
def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def run_direct(script_args, cwd):
    port = free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2",
                   LOCAL_RANK="0")
        procs.append(subprocess.Popen([PYTHON] + script_args, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
    return [p.wait() for p in procs]


def torchrun_cmd(monitor):
    cmd = [PYTHON, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1", "--nnodes", "1",
           "--nproc_per_node", "2", "--master_port", str(free_port())]
    if monitor is not None:
        cmd += ["--monitor_interval", str(monitor)]
    return cmd


def bench_e2e(reps):
    results = {k: [] for k in ("direct", "loom", "torchrun", "torchrun_monitor_0.1")}
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as cwd:
            shutil.copy(os.path.join(EXAMPLE, "train_ddp.py"), cwd)
            t = time.monotonic()
            assert run_direct(["train_ddp.py"], cwd) == [0, 0]
            results["direct"].append(time.monotonic() - t)
        with tempfile.TemporaryDirectory() as home:
            t = time.monotonic()
            r = run_loom(["--src_dir", EXAMPLE, "--executes", "train_ddp.py", "--python_binary_path", PYTHON,
                          "--conf_file", os.path.join(EXAMPLE, "tony.xml")], home)
            results["loom"].append(time.monotonic() - t)
            assert r.returncode == 0, r.stderr
        for key, monitor in (("torchrun", None), ("torchrun_monitor_0.1", 0.1)):
            with tempfile.TemporaryDirectory() as cwd:
                shutil.copy(os.path.join(EXAMPLE, "train_ddp.py"), cwd)
                t = time.monotonic()
                r = subprocess.run(torchrun_cmd(monitor) + ["train_ddp.py"], cwd=cwd, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
                results[key].append(time.monotonic() - t)
                assert r.returncode == 0
        print("e2e rep:", {k: round(v[-1], 2) for k, v in results.items()}, file=sys.stderr)
    base = median(results["direct"])
    return {k: {"median_s": median(v), "runs_s": v, "ratio_vs_direct": median(v) / base} for k, v in results.items()}


# 2b. Several processes per task ---------------------------------------------------------------
def torchrun_two_nodes(script_args, epochs, monitor):
    """torchrun as two "nodes" on this host (static rendezvous), 2 processes each: returns codes."""
    port = free_port()
    procs, dirs = [], []
    for node in range(2):
        d = tempfile.mkdtemp()
        dirs.append(d)
        shutil.copy(os.path.join(EXAMPLE, "train_ddp.py"), d)
        # --redirects/--tee as in torchrun_cmd (PyTorch 1.13 on Python 3.11 cannot parse 0 or 3 for them).
        cmd = [PYTHON, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1", "--nnodes", "2", "--node_rank",
               str(node), "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port", str(port)]
        if monitor is not None:
            cmd += ["--monitor_interval", str(monitor)]
        cmd += script_args + ["--epochs", str(epochs)]
        procs.append(subprocess.Popen(cmd, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    codes = [p.wait() for p in procs]
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    return codes


def bench_processes(reps, epochs=30):
    """The DDP example as 2 tasks x 2 processes (loom.worker.processes=2) against torchrun
    --nnodes 2 --nproc_per_node 2 started as two nodes on this host: same script, same run."""
    results = {"loom_2x2": [], "torchrun_2x2": [], "torchrun_monitor_0.1_2x2": []}
    for rep in range(reps):
        # Rotate which goes first, so none always runs on a warmer page cache.
        order = list(results)[rep % 3:] + list(results)[:rep % 3]
        for key in order:
            if key == "loom_2x2":
                with tempfile.TemporaryDirectory() as home:
                    t = time.monotonic()
                    r = run_loom(["--src_dir", EXAMPLE, "--executes", "train_ddp.py", "--python_binary_path", PYTHON,
                                  "--conf_file", os.path.join(EXAMPLE, "tony.xml"), "--conf", "tony.worker.processes=2",
                                  "--task_params", f"--epochs {epochs}"], home)
                    results[key].append(time.monotonic() - t)
                    assert r.returncode == 0, r.stderr
            else:
                t = time.monotonic()
                codes = torchrun_two_nodes(["train_ddp.py"], epochs, 0.1 if "monitor" in key else None)
                results[key].append(time.monotonic() - t)
                assert codes == [0, 0], codes
        print("processes rep:", {k: round(v[-1], 2) for k, v in results.items()}, file=sys.stderr)
    out = {k: {"median_s": median(v), "runs_s": v} for k, v in results.items()}
    out["ratio_loom_vs_torchrun"] = median(results["loom_2x2"]) / median(results["torchrun_2x2"])
    out["ratio_loom_vs_torchrun_monitor_0.1"] = median(results["loom_2x2"]) / median(results["torchrun_monitor_0.1_2x2"])
    return out


# 3. Failure reaction ------------------------------------------------------------------------
def bench_failure(reps):
    crash = os.path.join(ROOT, "bench/crash_after.py")
    out = {"loom_marked_failed_ms": [], "loom_submit_exit_ms": [], "torchrun_exit_ms": [],
           "torchrun_monitor_0.1_exit_ms": []}
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as d:
            stamp = os.path.join(d, "crash")
            r = run_loom(["--src_dir", os.path.join(ROOT, "bench"), "--executes", "crash_after.py",
                          "--python_binary_path", PYTHON, "--task_params", f"--stamp {stamp}",
                          "--conf", "loom.application.framework=pytorch", "--conf", "loom.worker.instances=2",
                          "--conf", "loom.task.stop-grace-ms=1000"], home)
            exited = time.time_ns()
            assert r.returncode == 1
            crashed = int(open(stamp).read())
            finished = [e["ts"] for e in events_of(home) if e.get("event") == "JOB_FINISHED"][0]
            out["loom_marked_failed_ms"].append(finished - crashed / 1e6)
            out["loom_submit_exit_ms"].append((exited - crashed) / 1e6)
        for key, monitor in (("torchrun_exit_ms", None), ("torchrun_monitor_0.1_exit_ms", 0.1)):
            with tempfile.TemporaryDirectory() as d:
                stamp = os.path.join(d, "crash")
                r = subprocess.run(torchrun_cmd(monitor) + [crash, "--stamp", stamp], cwd=d,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                exited = time.time_ns()
                assert r.returncode != 0
                out[key].append((exited - int(open(stamp).read())) / 1e6)
        print("failure rep:", {k: round(v[-1], 1) for k, v in out.items()}, file=sys.stderr)
    return {k: {"median_ms": median(v), "runs_ms": v} for k, v in out.items()}


# 5. AM scale --------------------------------------------------------------------------------
def bench_am_scale(sizes, seconds):
    rows = []
    for n in sizes:
        r = subprocess.run([AM_LOAD, "--tasks", str(n), "--heartbeat-seconds", str(seconds)], capture_output=True,
                           text=True, timeout=600)
        row = json.loads(r.stdout.strip().splitlines()[-1])
        rows.append(row)
        print("am scale:", row, file=sys.stderr)
    return rows


# 6. The yarn backend on the YARN test double ---------------------------------------------------
YARN_NODES = 2
YARN_HEARTBEAT_MS = 1000  # Hadoop's yarn.resourcemanager.nodemanagers.heartbeat-interval-ms


class YarnDouble:
    """bench/yarn_double_cluster as a child: the RM with its NodeManagers and WebHDFS."""

    def __init__(self, dir, nodes, heartbeat_ms):
        self.dir = dir
        self.proc = subprocess.Popen([YARN_DOUBLE, dir, "--nodes", str(nodes), "--heartbeat-ms", str(heartbeat_ms)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        assert line == "ready", line

    def stats(self):
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


TIMELINE = ("submitted", "staged", "am_started", "first_container", "all_containers", "all_running", "job_end",
            "backend_end", "exit")


def timeline(events, t0, t_exit):
    """When each step of a job happened, in ms after `loom submit` started (the events' clock has
    ms resolution): the application submitted (staged), the AM up, the containers launched, every
    task running, the AM's end of the job, the backend's (YARN FINISHED), the client's exit."""
    def ts(pred, pick=min):
        xs = [e["ts"] for e in events if pred(e)]
        return pick(xs) - t0 / 1e6 if xs else None
    return {
        "submitted": ts(lambda e: e.get("event") == "JOB_SUBMITTED"),
        "staged": ts(lambda e: e.get("event") == "BACKEND_SUBMITTED"),
        "am_started": ts(lambda e: e.get("event") == "AM_STARTED"),
        "first_container": ts(lambda e: e.get("event") == "TASK_STATE" and e.get("state") == "LAUNCHED"),
        "all_containers": ts(lambda e: e.get("event") == "TASK_STATE" and e.get("state") == "LAUNCHED", max),
        "all_running": ts(lambda e: e.get("event") == "TASK_STATE" and e.get("state") == "RUNNING", max),
        "job_end": ts(lambda e: e.get("event") == "JOB_FINISHED"),
        "backend_end": ts(lambda e: e.get("event") == "BACKEND_STATE" and e.get("state") in ("FINISHED", "FAILED", "KILLED")),
        "exit": (t_exit - t0) / 1e6,
    }


def yarn_submit(double, backend, conf, n):
    """One `loom submit --cluster BACKEND` of n stamp workers; the times are ms after the submit
    started. For yarn, also what the double saw: bytes written to HDFS, the application's AM and
    worker containers and when each was allocated."""
    before = double.stats() if double else None
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as home:
        env = loom_env(home)
        if double:
            env["HADOOP_CONF_DIR"] = os.path.join(double.dir, "conf")
        t0 = time.time_ns()
        r = subprocess.run([LOOM, "submit", "--quiet", "--cluster", backend] + conf +
                           ["--conf", f"loom.worker.command={STAMP} {d}"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        t_exit = time.time_ns()
        assert r.returncode == 0, r.stderr
        stamps = read_stamps(d)
        assert len(stamps) == n
        out = {"running_ms": (max(stamps) - t0) / 1e6, "timeline": timeline(events_of(home), t0, t_exit)}
    if double:
        after = double.stats()
        old = {c["id"] for c in before["containers"]}
        new = [c for c in after["containers"] if c["id"] not in old]
        ams = [c for c in new if c["am"]]
        workers = [c for c in new if not c["am"]]
        assert len(ams) == 1 and len(workers) == n, new
        out.update({
            "hdfs_bytes": after["hdfs_bytes_created"] - before["hdfs_bytes_created"],
            "hdfs_files": after["hdfs_files_created"] - before["hdfs_files_created"],
            "am_allocated_ms": (ams[0]["allocated_ns"] - t0) / 1e6,
            "all_allocated_ms": (max(c["allocated_ns"] for c in workers) - t0) / 1e6,
            "worker_nodes": len({c["node"] for c in workers}),
        })
    return out


def bench_yarn(n, reps):
    """Submit to all n user processes running through the yarn backend (staging over WebHDFS,
    submitApplication, the AM container, allocate, startContainers) against the YARN test
    double, with Hadoop's 1 s NodeManager heartbeat and two nodes that the gang must share, vs.
    the same job on the local backend in the same run. The first submit of the build uploads
    the `loom` binary to the HDFS cache; later ones find it there."""
    reps = max(reps, 3)
    yarns, locals_ = [], []
    conf = ["--conf", f"loom.worker.instances={n}", "--conf", "loom.worker.memory=128m"]
    with tempfile.TemporaryDirectory() as cluster:
        double = YarnDouble(cluster, YARN_NODES, YARN_HEARTBEAT_MS)
        try:
            for i in range(reps):
                yarns.append(yarn_submit(double, "yarn", conf, n))
                locals_.append(yarn_submit(None, "local", conf, n))
                print(f"yarn double rep {i}: yarn {yarns[-1]}, local {locals_[-1]}", file=sys.stderr)
        finally:
            double.close()
    cached = yarns[1:]  # the binary is in the HDFS cache from the second submit on

    def med(key, runs=cached):
        return median([r[key] for r in runs])

    y, l = med("running_ms"), median([r["running_ms"] for r in locals_])
    res = {"tasks": n, "nodes": YARN_NODES, "nm_heartbeat_ms": YARN_HEARTBEAT_MS, "reps": reps,
           "yarn_ms": y, "local_ms": l, "ratio": y / l,
           "am_allocated_ms": med("am_allocated_ms"), "all_allocated_ms": med("all_allocated_ms"),
           "worker_nodes": med("worker_nodes"),
           "first_submit": yarns[0], "second_submit": yarns[1],
           "timeline": {k: median([r["timeline"][k] for r in cached if r["timeline"][k] is not None])
                        for k in TIMELINE},
           "local_timeline": {k: median([r["timeline"][k] for r in locals_ if r["timeline"][k] is not None])
                              for k in TIMELINE},
           "binary_bytes": os.path.getsize(LOOM), "runs": {"yarn": yarns, "local": locals_}}
    print(f"yarn double n={n}: yarn {y:.1f} ms, local {l:.1f} ms; HDFS bytes first "
          f"{yarns[0]['hdfs_bytes']}, second {yarns[1]['hdfs_bytes']}", file=sys.stderr)
    return res


def mib(b):
    return f"{b / 2**20:.1f} MiB" if b >= 2**20 else f"{b / 2**10:.1f} KiB"


def yarn_report(y, date, run_date):
    L = ["", "## 6. YARN test double: submit to all user processes running, and what a submit stages", ""]
    if date and date != run_date:
        L += [f"Measured {date}, in a run of `bench/run.py --only yarn` (the sections above are from the run "
              f"named at the top).", ""]
    if "first_submit" not in y:  # a result from before the double had heartbeats and a binary cache
        return L + ["| tasks | yarn (double) ms | local ms | ratio |", "|---|---|---|---|",
                    f"| {y['tasks']} | {y['yarn_ms']:.0f} | {y['local_ms']:.0f} | {y['ratio']:.2f} |", ""]
    first, second = y["first_submit"], y["second_submit"]
    L += [f"`loom submit --cluster yarn` of {y['tasks']} workers (each a `stamp` process, 128 MiB, one vcore) "
          f"through the whole yarn backend (getQueueInfo and getClusterNodes, WebHDFS staging, submitApplication, "
          f"the AM container, allocate, startContainers) against the YARN test double on this machine: "
          f"{y['nodes']} NodeManagers of 8 GiB and 8 vcores, so the gang and its AM need both, each heartbeating "
          f"every {y['nm_heartbeat_ms']} ms as Hadoop's do by default; the scheduler places containers only on "
          f"heartbeats (all node-local asks that fit, at most one off-switch container per heartbeat). Baseline: "
          f"the same job on the local backend, alternating with it in the same run. Times are from the start of "
          f"`loom submit` to the last worker's start (each `stamp` writes its start time), medians of "
          f"{y['reps'] - 1} submits after the first (the first uploads the binary); allocation times are when "
          f"the double's scheduler placed the containers. The real-cluster figure is measured at acceptance.", "",
          f"Workers allocated after the AM, in NodeManager heartbeats: {y['tasks']} asks for \"*\" alone on "
          f"{y['nodes']} nodes take {y['tasks'] / y['nodes']:.0f} (one off-switch container per node heartbeat); "
          f"node-local asks that fit land in one.", "",
          "| tasks | yarn (double) ms | local ms | ratio | AM allocated (ms) | all workers allocated (ms) "
          "| workers allocated after the AM (heartbeats) | nodes used by workers |",
          "|---:|---:|---:|---:|---:|---:|---:|---:|",
          f"| {y['tasks']} | {y['yarn_ms']:.0f} | {y['local_ms']:.0f} | {y['ratio']:.1f}x | "
          f"{y['am_allocated_ms']:.0f} | {y['all_allocated_ms']:.0f} | "
          f"{(y['all_allocated_ms'] - y['am_allocated_ms']) / y['nm_heartbeat_ms']:.1f} | {y['worker_nodes']:.0f} |", "",
          "Bytes written to HDFS by two submits of the same build in a row (FakeHdfs counts the body of every "
          f"DataNode CREATE); the `loom` binary is {mib(y['binary_bytes'])}:", "",
          "| submit | HDFS bytes written | files | submit to all running (ms) |", "|---|---:|---:|---:|",
          f"| first | {first['hdfs_bytes']} ({mib(first['hdfs_bytes'])}) | {first['hdfs_files']} | "
          f"{first['running_ms']:.0f} |",
          f"| second | {second['hdfs_bytes']} ({mib(second['hdfs_bytes'])}) | {second['hdfs_files']} | "
          f"{second['running_ms']:.0f} |", ""]
    if "timeline" in y:
        names = {"submitted": "job submitted (written locally)", "staged": "staged, application submitted",
                 "am_started": "AM started", "first_container": "first container launched",
                 "all_containers": "all containers launched", "all_running": "every task running",
                 "job_end": "job ended (the AM's JOB_FINISHED)", "backend_end": "backend's end (YARN FINISHED)",
                 "exit": "`loom submit` exited"}
        L += ["Timeline of one submit (ms after `loom submit` started, medians of the same submits; the local "
              "backend's run of the same job beside it):", "",
              "| step | yarn (double) | local |", "|---|---:|---:|"]
        for k, label in names.items():
            yv, lv = y["timeline"].get(k), y["local_timeline"].get(k)
            fmt = lambda v: "-" if v is None or v != v else f"{v:.0f}"
            L.append(f"| {label} | {fmt(yv)} | {fmt(lv)} |")
        L.append("")
    return L


def write_report(res):
    os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench/results/results.json"), "w") as f:
        json.dump(res, f, indent=2)
    m = res["machine"]
    L = [f"# Loom benchmarks", "",
         f"Measured {m['date']} on {m['cpus']} CPUs, Linux {m['kernel']}, one run of `bench/run.sh`"
         f"{' --quick' if res['quick'] else ''}. Medians; every ratio is against a baseline measured in the same run.", "",
         "## 1. Launch overhead: `loom submit` to every user process running", "",
         "Floor: the same N trivial processes started by `fork_exec_floor` (posix_spawn). Each process writes the time it started; "
         "the figure is the last start minus the moment the launcher was started.", "",
         "| tasks | floor (ms) | Loom (ms) | ratio | Loom overhead (ms) |", "|---:|---:|---:|---:|---:|"]
    for r in res["launch"]:
        L.append(f"| {r['tasks']} | {r['floor_ms']:.1f} | {r['loom_ms']:.1f} | {r['ratio']:.1f}x | {r['overhead_ms']:.1f} |")
    if all("run_floor_ms" in r for r in res["launch"]):
        L += ["", "### 1b. The whole run: `loom submit` started to `loom submit` exited", "",
              "Floor: `fork_exec_floor` started to exited (it waits for its N processes). \"Exit after the job's end\": "
              "`loom submit` exited minus the job's JOB_FINISHED event (the AM stopping its server, the executors, the "
              "client's last read).", "",
              "| tasks | floor (ms) | Loom (ms) | ratio | Loom over the floor (ms) | exit after the job's end (ms) |",
              "|---:|---:|---:|---:|---:|---:|"]
        for r in res["launch"]:
            L.append(f"| {r['tasks']} | {r['run_floor_ms']:.1f} | {r['run_loom_ms']:.1f} | "
                     f"{r['run_loom_ms'] / r['run_floor_ms']:.1f}x | {r['run_over_floor_ms']:.1f} | "
                     f"{r['exit_after_job_end_ms']:.1f} |")
    e = res["e2e"]
    L += ["", "## 2. End-to-end: 2-worker DDP digits example (wall time)", "",
          "| launcher | median (s) | ratio vs direct |", "|---|---:|---:|"]
    for k in ("direct", "loom", "torchrun", "torchrun_monitor_0.1"):
        L.append(f"| {k} | {e[k]['median_s']:.2f} | {e[k]['ratio_vs_direct']:.3f} |")
    if "processes" in res:
        p = res["processes"]
        L += ["", "## 2b. Several processes per task: the DDP example as 2 tasks x 2 processes (wall time)", "",
              "Loom: `loom.worker.processes=2` on the local backend. torchrun: two `torchrun --nnodes 2 --node_rank i "
              "--nproc_per_node 2 --master_addr 127.0.0.1` started together as two nodes on this host (static "
              "rendezvous). Same script, same epochs, alternating order.", "",
              "| launcher | median (s) |", "|---|---:|"]
        for k in ("loom_2x2", "torchrun_2x2", "torchrun_monitor_0.1_2x2"):
            L.append(f"| {k} | {p[k]['median_s']:.2f} |")
        L.append(f"| ratio loom / torchrun | {p['ratio_loom_vs_torchrun']:.3f} |")
        L.append(f"| ratio loom / torchrun --monitor_interval 0.1 | {p['ratio_loom_vs_torchrun_monitor_0.1']:.3f} |")
    fr = res["failure"]
    L += ["", "## 3. Failure reaction: worker crash to the job failing", "",
          "| measure | median (ms) |", "|---|---:|"]
    for k, v in fr.items():
        L.append(f"| {k} | {v['median_ms']:.0f} |")
    L += ["", "## 4. Footprint (peak RSS)", "", "| job | executor (MiB) | AM (MiB) |", "|---|---:|---:|"]
    for n, v in sorted(res["footprint"].items(), key=lambda kv: int(kv[0])):
        L.append(f"| {n} tasks | {v['executor_peak_rss_mib']:.1f} | {v['am_peak_rss_mib']:.1f} |")
    L += ["", "TonY's executor is a JVM started with -Xmx1536m.", "",
          "## 5. AM scale: simulated executors over the real gRPC protocol against a real AM", "",
          "| tasks | gang complete (s) | AM CPU, steady heartbeats (fraction of one core) | AM RSS (MiB) | AM peak RSS (MiB) |",
          "|---:|---:|---:|---:|---:|"]
    for r in res["am_scale"]:
        L.append(f"| {r['tasks']} | {r['gang_seconds']:.2f} | {r['am_cpu_fraction_of_one_core']:.3f} | "
                 f"{r['am_rss_mib']:.1f} | {r['am_peak_rss_mib']:.1f} |")
    L += yarn_report(res["yarn"], res.get("dates", {}).get("yarn"), m["date"])
    L += binary_report(res.get("binary"))
    with open(os.path.join(ROOT, "bench/results/results.md"), "w") as f:
        f.write("\n".join(L))
    print("\n".join(L))


SECTIONS = ("launch", "e2e", "processes", "failure", "am_scale", "yarn", "binary")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=0)
    ap.add_argument("--only", action="append", choices=SECTIONS,
                    help="run only this section (repeatable); the others are kept from results.json")
    args = ap.parse_args()
    reps = args.reps or (2 if args.quick else 5)
    only = set(args.only or SECTIONS)
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine = {"cpus": os.cpu_count(), "kernel": platform.release(), "date": date}
    res = {"quick": args.quick, "machine": machine}
    if args.only:
        with open(os.path.join(ROOT, "bench/results/results.json")) as f:
            res = json.load(f)
    res.setdefault("dates", {})
    for k in only:
        res["dates"][k] = date
    if "launch" in only:
        res["launch"], res["footprint"] = bench_launch([1, 2, 4, 8] if args.quick else [1, 2, 4, 8, 16, 32], reps)
    if "e2e" in only:
        res["e2e"] = bench_e2e(max(1, reps if not args.quick else 1))
    if "processes" in only:
        res["processes"] = bench_processes(max(3, reps if not args.quick else 3))
    if "failure" in only:
        res["failure"] = bench_failure(max(1, reps // 2 + 1))
    if "am_scale" in only:
        res["am_scale"] = bench_am_scale([1000] if args.quick else [1000, 10000], 5 if args.quick else 10)
    if "yarn" in only:
        res["yarn"] = bench_yarn(8, args.reps or (4 if args.quick else 6))
    if "binary" in only:
        res["binary"] = bench_binary(LOOM, LOOM_DYNAMIC, args.reps or (3 if args.quick else 8))
    write_report(res)


if __name__ == "__main__":
    main()
