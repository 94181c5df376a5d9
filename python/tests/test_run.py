"""loom.run() on the local backend: real jobs, real PyTorch, through the real `loom` binary."""

import os
import signal
import subprocess
import sys
import time

import pytest

import loom
from loom import TaskSpec


def allreduce(scale):
    import os

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")  # MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE: set by Loom
    t = torch.tensor([float(dist.get_rank() + 1) * scale])
    dist.all_reduce(t)
    out = {"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": t.item(),
           "task": os.environ["LOOM_TASK_ID"]}
    dist.destroy_process_group()
    return out


def test_run_returns_the_chief_value_of_a_pytorch_allreduce(loom_home):
    result = loom.run(allreduce, args=(10.0,), framework="pytorch",
                      task_specs={"worker": TaskSpec(instances=2, memory="1g", vcores=1)}, timeout=120)
    # (1 + 2) * 10 summed over both ranks, as worker:0 (rank 0) saw it.
    assert result == {"rank": 0, "world": 2, "sum": 30.0, "task": "worker:0"}


def tf_task(seen_dir, tag=""):
    import json
    import os

    task = os.environ["LOOM_TASK_ID"]
    with open(os.path.join(seen_dir, task.replace(":", "-")), "w") as f:
        f.write(tag)
    return {"task": task, "tf": json.loads(os.environ["TF_CONFIG"])["task"], "tag": tag}


def test_run_calls_fn_in_every_task_and_returns_the_chief_type(loom_home, tmp_path):
    seen = tmp_path / "seen"
    seen.mkdir()
    result = loom.run(tf_task, args=(str(seen),), kwargs={"tag": "kw"}, framework="tensorflow",
                      task_specs={"chief": TaskSpec(instances=1, memory=512), "worker": TaskSpec(instances=2)},
                      timeout=120)
    assert result == {"task": "chief:0", "tf": {"type": "chief", "index": 0}, "tag": "kw"}
    assert sorted(os.listdir(seen)) == ["chief-0", "worker-0", "worker-1"]
    assert {(seen / f).read_text() for f in os.listdir(seen)} == {"kw"}


def fails_on_worker_1(token):
    import os
    import sys

    if os.environ["LOOM_TASK_ID"] == "worker:1":
        print("loading shard 1", file=sys.stderr)
        raise ValueError("bad shard 1 " + token)
    import time
    time.sleep(30)  # stopped by the AM when worker:1 fails
    return "unreachable"


def test_a_failing_task_raises_with_its_last_stderr_lines(loom_home):
    token = "t%d" % os.getpid()
    with pytest.raises(loom.JobFailedError) as info:
        loom.run(fails_on_worker_1, args=(token,), task_specs={"worker": TaskSpec(instances=2)}, timeout=120)
    e = info.value
    assert e.task == "worker:1"
    assert e.status.state == "FAILED"
    assert e.stderr_tail[-1] == "ValueError: bad shard 1 " + token
    assert "loading shard 1" in e.stderr_tail
    assert "worker:1" in str(e) and "ValueError: bad shard 1 " + token in str(e)


def task_env():
    import os

    keys = ("MY_SETTING", "MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME")
    return {k: os.environ.get(k) for k in keys}


def test_env_reaches_every_task_and_overrides_forwarded_mlflow_variables(loom_home, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from-the-submitter")
    result = loom.run(task_env, env={"MY_SETTING": "a b=c", "MLFLOW_EXPERIMENT_NAME": "explicit"}, timeout=60)
    assert result == {"MY_SETTING": "a b=c", "MLFLOW_TRACKING_URI": "http://mlflow.example:5000",
                      "MLFLOW_EXPERIMENT_NAME": "explicit"}


def sleeps():
    import time
    time.sleep(120)


def test_timeout_kills_the_job(loom_home):
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        loom.run(sleeps, timeout=2)
    assert time.monotonic() - start < 30
    (job_id,) = os.listdir(os.path.join(loom_home, "jobs"))
    assert loom.Job(job_id).status().state == "KILLED"


def test_returns_what_the_chief_returns_even_after_unterminated_output(loom_home):
    def no_newline():
        import sys
        sys.stdout.write("partial line without a newline")
        return [1, "two", {"three": 3.0}]

    assert loom.run(no_newline, timeout=60) == [1, "two", {"three": 3.0}]


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_driver_stopped_by_a_signal_kills_its_job(loom_home, tmp_path, how):
    """run() owns its job: Ctrl-C, SIGTERM (a scheduler's timeout) or even SIGKILL of the
    calling process ends the job too."""
    driver = tmp_path / "driver.py"
    driver.write_text("import sys, time\nsys.path.insert(0, %r)\nimport loom\n"
                      "def forever():\n    import time\n    while True:\n        time.sleep(1)\n"
                      "loom.run(forever)\n" % os.path.dirname(os.path.dirname(loom.__file__)))
    proc = subprocess.Popen([sys.executable, str(driver)], stderr=subprocess.PIPE, text=True)
    try:
        jobs = os.path.join(loom_home, "jobs")
        deadline = time.monotonic() + 60
        while True:  # until its task runs
            ids = os.listdir(jobs) if os.path.isdir(jobs) else []
            if ids and [t["state"] for t in loom.Job(ids[0]).status().tasks] == ["RUNNING"]:
                break
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(how)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    if how == signal.SIGINT:
        assert "KeyboardInterrupt" in err
    elif how == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM, err
    job = loom.Job(ids[0])
    deadline = time.monotonic() + 60  # after SIGKILL the job's own follower ends it
    while not job.status().final and time.monotonic() < deadline:
        time.sleep(0.1)
    assert job.status().state == "KILLED"
