"""The API on the yarn backend, against the YARN test double run as a process
(bench/yarn_double_cluster): staging through its WebHDFS, tasks in its NodeManagers' containers,
return values and logs read back through the binary."""

import os
import time

import pytest

import loom
from loom import TaskSpec

SMALL = {"worker": TaskSpec(instances=2, memory="512m")}


def env_of_task(extra):
    import os

    keys = ("LOOM_TASK_ID", "RANK", "WORLD_SIZE", "MY_SETTING", "MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID",
            "MLFLOW_EXPERIMENT_NAME", "MLFLOW_TRACKING_TOKEN")
    return {"env": {k: os.environ.get(k) for k in keys}, "extra": extra}


def test_run_on_yarn_returns_the_chief_value_with_env_and_mlflow(loom_home, yarn_double, monkeypatch):
    monkeypatch.setenv("HADOOP_CONF_DIR", yarn_double)
    # A YARN container does not inherit the submitter's environment: these reach the tasks only
    # because `loom submit` forwards MLFLOW_* (and --shell_env for MY_SETTING).
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    monkeypatch.setenv("MLFLOW_RUN_ID", "run-42")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from-the-submitter")  # the job's own value wins
    # A credential rides in the containers' credentials, never in config.xml (nor HDFS).
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok-on-yarn-1234")
    result = loom.run(env_of_task, args=({"nested": [1, 2]},), cluster="yarn", framework="pytorch",
                      task_specs=SMALL, env={"MY_SETTING": "on-yarn", "MLFLOW_EXPERIMENT_NAME": "explicit"},
                      conf={"loom.am.memory": "256m"},
                      timeout=120)
    assert result == {"env": {"LOOM_TASK_ID": "worker:0", "RANK": "0", "WORLD_SIZE": "2",
                              "MY_SETTING": "on-yarn", "MLFLOW_TRACKING_URI": "http://mlflow.example:5000",
                              "MLFLOW_RUN_ID": "run-42", "MLFLOW_EXPERIMENT_NAME": "explicit",
                              "MLFLOW_TRACKING_TOKEN": "tok-on-yarn-1234"},
                      "extra": {"nested": [1, 2]}}
    assert ran_on_yarn(loom_home)
    (job_id,) = os.listdir(os.path.join(loom_home, "jobs"))
    config = open(os.path.join(loom_home, "jobs", job_id, "config.xml")).read()
    assert "MLFLOW_RUN_ID=run-42" in config and "tok-on-yarn-1234" not in config


def ran_on_yarn(home):
    (job_id,) = os.listdir(os.path.join(home, "jobs"))
    status = loom.Job(job_id).status()
    return status["backend"] == "yarn" and status["backend_id"].startswith("application_")


def fails_on_yarn():
    import os
    import sys

    if os.environ["LOOM_TASK_ID"] == "worker:0":
        print("about to fail on yarn", file=sys.stderr)
        raise RuntimeError("yarn task failed on purpose")
    return 1


def test_a_failing_task_on_yarn_raises_with_its_stderr(loom_home, yarn_double, monkeypatch):
    monkeypatch.setenv("HADOOP_CONF_DIR", yarn_double)
    with pytest.raises(loom.JobFailedError) as info:
        loom.run(fails_on_yarn, cluster="yarn", task_specs=SMALL, timeout=120)
    e = info.value
    assert e.task == "worker:0"
    assert e.stderr_tail[-1] == "RuntimeError: yarn task failed on purpose"
    assert "about to fail on yarn" in e.stderr_tail
    assert ran_on_yarn(loom_home)


def test_submit_status_and_kill_on_yarn(loom_home, yarn_double, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "forever.py").write_text("import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(1)\n")
    job = loom.submit("forever.py", src_dir=str(src), python_binary_path="/usr/bin/python3", cluster="yarn",
                      task_specs={"worker": TaskSpec(instances=1, memory="512m")},
                      client_env={"HADOOP_CONF_DIR": yarn_double})
    deadline = time.monotonic() + 60
    while True:
        status = job.status()
        if [t["state"] for t in status.tasks] == ["RUNNING"] and job.logs(task="worker:0") == "started\n":
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.1)
    assert status["backend"] == "yarn" and status["backend_id"].startswith("application_")
    # The application id opens the same job.
    assert loom.Job(status["backend_id"], client_env={"HADOOP_CONF_DIR": yarn_double}).status().state == "RUNNING"
    final = job.kill()
    assert final.state == "KILLED"
    assert final["backend_state"] == "KILLED"
