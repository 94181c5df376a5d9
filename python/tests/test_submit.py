"""loom.submit() and the Job handle (status, logs, wait, kill) on the local backend."""

import os
import subprocess
import time

import pytest

import loom
from loom import TaskSpec
from conftest import processes_with_env


def write_src(tmp_path, name, text):
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / name).write_text(text)
    return str(src)


def test_submit_status_logs_wait(loom_home, tmp_path):
    src = write_src(tmp_path, "hello.py",
                    "import os, sys\n"
                    "print('hello from', os.environ['LOOM_TASK_ID'], sys.argv[1:])\n"
                    "print('to stderr', os.environ['GREETING'], file=sys.stderr)\n")
    job = loom.submit("hello.py", src_dir=src, task_params=["two words", "x"],
                      python_binary_path="/usr/bin/python3",
                      task_specs={"worker": TaskSpec(instances=2, memory="256m")}, shell_env={"GREETING": "hi"},
                      name="py-api-test")
    assert job.id.startswith("job_") and os.path.isdir(job.job_dir)
    final = job.wait(timeout=60)
    assert final.state == "SUCCEEDED" and final.final
    assert [t["task"] for t in final.tasks] == ["worker:0", "worker:1"]
    assert final.task("worker:1")["exit_code"] == 0
    assert job.logs(task="worker:1") == "hello from worker:1 ['two words', 'x']\n"
    assert job.logs(task="worker:0", stderr=True) == "to stderr hi\n"
    assert job.status()["name"] == "py-api-test"
    # The same job opened by id from another handle (no follower of its own: wait polls).
    other = loom.Job(job.id)
    assert other.wait(timeout=10).state == "SUCCEEDED"
    assert "hello from worker:0" in other.logs()


def test_kill_stops_a_running_job(loom_home, tmp_path):
    src = write_src(tmp_path, "forever.py", "import time\nwhile True:\n    time.sleep(1)\n")
    job = loom.submit("forever.py", src_dir=src, python_binary_path="/usr/bin/python3",
                      task_specs={"worker": TaskSpec(instances=2)})
    deadline = time.monotonic() + 60
    while True:
        status = job.status()
        if [t["state"] for t in status.tasks] == ["RUNNING", "RUNNING"]:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    with pytest.raises(TimeoutError):
        job.wait(timeout=0.2)  # follows with its `loom submit`
    other = loom.Job(job.id)
    with pytest.raises(TimeoutError):
        other.wait(timeout=0.3)  # polls `loom status`
    final = job.kill()
    assert final.state == "KILLED"
    assert job.wait(timeout=10).state == "KILLED"
    assert other.wait(timeout=10).state == "KILLED"
    assert {t["state"] for t in final.tasks} == {"KILLED"}
    deadline = time.monotonic() + 10
    while processes_with_env("LOOM_JOB_ID=" + job.id):
        assert time.monotonic() < deadline, "processes of the killed job remain"
        time.sleep(0.05)


def test_bad_configuration_raises_the_binarys_message(loom_home, tmp_path):
    src = write_src(tmp_path, "x.py", "print(1)\n")
    with pytest.raises(loom.LoomError) as info:
        loom.submit("x.py", src_dir=src, conf={"loom.wrker.instances": 1})
    assert info.value.exit_code == 2
    assert "unknown task type 'wrker' (loom.wrker.instances); did you mean worker?" in str(info.value)
    assert not str(info.value).startswith("loom: ")
    assert not os.path.exists(os.path.join(loom_home, "jobs")) or not os.listdir(os.path.join(loom_home, "jobs"))
    with pytest.raises(loom.LoomError, match="no such backend"):
        loom.submit("x.py", src_dir=src, cluster="nowhere")
    with pytest.raises(ValueError, match="task type 'bad type'"):
        loom.submit("x.py", src_dir=src, task_specs={"bad type": TaskSpec()})


def test_submit_argv_mirrors_loom_submit():
    argv = loom.job.submit_argv("train.py", src_dir="src", task_params="--epochs 3", python_venv="v.tgz",
                                python_binary_path="bin/python", conf_file="tony.xml", cluster="yarn",
                                shell_env={"A": "1"}, container_env={"B": "2"}, framework="pytorch", name="n",
                                queue="q", task_specs={"worker": TaskSpec(instances=3, gpus=1, label="gpu")},
                                conf={"loom.am.retry-count": 1, "loom.task.gpu-metrics.enabled": False})
    assert argv == ["submit", "--quiet", "--cluster", "yarn", "--executes", "train.py", "--src_dir", "src",
                    "--python_venv", "v.tgz", "--python_binary_path", "bin/python", "--conf_file", "tony.xml",
                    "--task_params", "--epochs 3", "--shell_env", "A=1", "--container_env", "B=2",
                    "--conf", "loom.worker.instances=3", "--conf", "loom.worker.gpus=1",
                    "--conf", "loom.worker.node-label=gpu", "--conf", "loom.application.framework=pytorch",
                    "--conf", "loom.application.name=n", "--conf", "loom.yarn.queue=q",
                    "--conf", "loom.am.retry-count=1", "--conf", "loom.task.gpu-metrics.enabled=false"]


def test_missing_binary_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("LOOM_BIN", "/nonexistent/loom")
    with pytest.raises(loom.LoomError, match="LOOM_BIN=/nonexistent/loom is not an executable file"):
        loom.Job("job_x").status()
    monkeypatch.delenv("LOOM_BIN")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(loom.LoomError, match="cannot find the loom binary"):
        loom.find_binary()


def test_mlflow_variables_reach_tasks_of_a_plain_loom_submit(loom_home, loom_bin, tmp_path):
    """The binary itself forwards MLFLOW_*: also without the Python API."""
    src = write_src(tmp_path, "m.py", "import os\nprint(os.environ.get('MLFLOW_TRACKING_URI'))\n"
                                      "print(os.environ.get('MLFLOW_TRACKING_TOKEN'))\n")
    env = dict(os.environ, MLFLOW_TRACKING_URI="http://tracking:5000", MLFLOW_TAGS="a=1,b=2",
               MLFLOW_TRACKING_TOKEN="tok-local-5678")
    done = subprocess.run([loom_bin, "submit", "--quiet", "--src_dir", src, "--executes", "m.py",
                           "--python_binary_path", "/usr/bin/python3", "--conf", "loom.worker.instances=1"],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # A comma cannot travel in loom.execution.envs: left out, saying so, and the job runs.
    assert "warning: MLFLOW_TAGS not forwarded to the tasks: its value has a comma" in done.stderr
    (job_id,) = os.listdir(os.path.join(loom_home, "jobs"))
    assert loom.Job(job_id).logs(task="worker:0") == "http://tracking:5000\ntok-local-5678\n"
    config = open(os.path.join(loom_home, "jobs", job_id, "config.xml")).read()
    assert "MLFLOW_TRACKING_URI=http://tracking:5000" in config
    # A credential is not kept in the job's record: the task inherited it from the submitter.
    assert "tok-local-5678" not in config
