"""tf-yarn's API on Loom (loom.tf_yarn): a tf-yarn-style run_on_yarn call runs unchanged, but
for `import loom.tf_yarn as tf_yarn`, as a real job through the real `loom` binary (the local
backend, picked by $LOOM_CLUSTER); what does not map is refused by name before anything starts.
"""

import os

import pytest

import loom
import loom.tf_yarn as tf_yarn
from loom.task_spec import memory_mib
from loom.tf_yarn.pytorch import run_on_yarn as pytorch_run_on_yarn


def experiment_fn():
    """What a tf-yarn experiment reads in its container: its task, env, files, the hook's export."""
    import json
    import os

    import helper_module  # shipped by files=, importable as in tf-yarn's containers

    with open(os.path.join("data", "rows.txt")) as f:
        rows = f.read().split()
    return {"task": json.loads(os.environ["TF_CONFIG"])["task"], "env": os.environ.get("MY_SETTING"),
            "hook": os.environ.get("FROM_HOOK"), "helper": helper_module.ANSWER, "rows": rows,
            "name": os.environ["JOB_NAME"]}


@pytest.fixture
def local_cluster(loom_home, monkeypatch):
    monkeypatch.setenv("LOOM_CLUSTER", "local")
    return loom_home


def job_config(home):
    (job_id,) = os.listdir(os.path.join(home, "jobs"))
    return open(os.path.join(home, "jobs", job_id, "config.xml")).read()


def test_a_tf_yarn_style_call_runs_unchanged(local_cluster, tmp_path):
    helper = tmp_path / "helper_module.py"
    helper.write_text("ANSWER = 42\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.txt").write_text("a b c\n")
    # As a tf-yarn program writes it (tf_yarn.client.run_on_yarn's parameters).
    result = tf_yarn.run_on_yarn(
        experiment_fn,
        task_specs={
            "chief": tf_yarn.TaskSpec(memory="512 MiB", vcores=1),
            "worker": tf_yarn.TaskSpec(memory="0.25 GiB", vcores=1, instances=1, label=tf_yarn.NodeLabel.CPU),
        },
        files={"helper_module.py": str(helper), "data": str(data)},
        env={"MY_SETTING": "from-env"},
        queue="default",
        name="tf-yarn-style",
        nb_retries=1,
        pre_script_hook="export FROM_HOOK=hooked; echo preparing",
    )
    assert result == {"task": {"type": "chief", "index": 0}, "env": "from-env", "hook": "hooked", "helper": 42,
                      "rows": ["a", "b", "c"], "name": "chief"}
    config = job_config(local_cluster)
    for key, value in (("loom.chief.memory", "512"), ("loom.worker.memory", "256"), ("loom.am.retry-count", "1"),
                       ("loom.yarn.queue", "default"), ("loom.application.name", "tf-yarn-style")):
        assert "<name>%s</name><value>%s</value>" % (key, value) in config.replace("\n", "").replace(" ", ""), key


def ranks(local_rank_unused=None):
    import os

    import torch.distributed as dist

    dist.init_process_group("gloo")
    out = (dist.get_world_size(), sorted({int(os.environ["LOCAL_WORLD_SIZE"])}))
    dist.destroy_process_group()
    return out


def test_nb_proc_per_worker_is_processes_per_task(local_cluster):
    world, local = pytorch_run_on_yarn(
        ranks, task_specs={"worker": tf_yarn.TaskSpec(memory="1g", vcores=1, instances=2, nb_proc_per_worker=2)},
        timeout=120)
    assert (world, local) == (4, [2])


def test_a_failing_hook_fails_the_task(local_cluster):
    with pytest.raises(tf_yarn.RunFailed, match="pre_script_hook failed with exit code 7"):
        tf_yarn.run_on_yarn(experiment_fn, task_specs={"worker": tf_yarn.TaskSpec(memory=256, vcores=1)},
                            pre_script_hook="exit 7", timeout=120)


@pytest.mark.parametrize("option, value, why", [
    ("custom_task_module", "tf_yarn.pytorch.tasks.worker", "skein's key-value store"),
    ("skein_client", object(), "not skein"),
    ("acls", object(), "no YARN application ACLs"),
    ("eval_monitor_log_thresholds", {"awake_time_ratio": (0.1, None)}, "evaluator metrics"),
    ("cuda_runtime_hdfs_path", "hdfs:///cuda.tgz", "ship CUDA"),
    ("pyenv_zip_path", {tf_yarn.NodeLabel.CPU: "cpu.pex", tf_yarn.NodeLabel.GPU: "gpu.pex"}, "one environment"),
])
def test_what_does_not_map_is_refused_by_name(local_cluster, option, value, why):
    with pytest.raises(loom.LoomError, match=r"run_on_yarn\(%s=.*%s" % (option, why)) as e:
        tf_yarn.run_on_yarn(experiment_fn, task_specs={"worker": tf_yarn.TaskSpec(memory=256, vcores=1)},
                            **{option: value})
    assert e.value.exit_code == 2
    assert not os.path.exists(os.path.join(local_cluster, "jobs"))  # nothing was submitted


def test_files_are_checked_before_anything_starts(local_cluster, tmp_path):
    spec = {"worker": tf_yarn.TaskSpec(memory=256, vcores=1)}
    with pytest.raises(ValueError, match=r"files\['x'\] = hdfs://nn/x.py: not a local path"):
        tf_yarn.run_on_yarn(experiment_fn, spec, files={"x": "hdfs://nn/x.py"})
    with pytest.raises(ValueError, match="no such file or directory"):
        tf_yarn.run_on_yarn(experiment_fn, spec, files={"x": str(tmp_path / "missing")})
    with pytest.raises(ValueError, match="expected a relative path"):
        tf_yarn.run_on_yarn(experiment_fn, spec, files={"../up": str(tmp_path)})
    with pytest.raises(ValueError, match=r"nb_retries=-1: expected an int >= 0"):
        tf_yarn.run_on_yarn(experiment_fn, spec, nb_retries=-1)
    assert not os.path.exists(os.path.join(local_cluster, "jobs"))


def test_memory_in_skeins_forms():
    assert [memory_mib(v) for v in ("2 GiB", "512 MiB", "2g", "512m", "1.5 GiB", "2 GB", "1024", 1024, "1 TiB")] == \
        [2048, 512, 2048, 512, 1536, 1908, 1024, 1024, 1024 * 1024]
    with pytest.raises(ValueError, match=r"TaskSpec\(memory\)='2 parsecs': expected a size such as '2 GiB'"):
        tf_yarn.TaskSpec(memory="2 parsecs")
    with pytest.raises(TypeError, match="expected an int"):
        tf_yarn.TaskSpec(memory=True)


def test_task_spec_speaks_tf_yarn():
    spec = tf_yarn.TaskSpec("2 GiB", 4, 2, tf_yarn.NodeLabel.GPU, nb_proc_per_worker=2)  # tf-yarn's order
    assert spec.memory == 2048 and spec.nb_proc_per_worker == 2
    assert spec.conf("worker") == [("loom.worker.instances", "2"), ("loom.worker.memory", "2048"),
                                   ("loom.worker.vcores", "4"), ("loom.worker.node-label", "gpu"),
                                   ("loom.worker.processes", "2")]
    assert tf_yarn.TaskSpec(label=tf_yarn.NodeLabel.CPU) == tf_yarn.TaskSpec()  # CPU: no label
    assert tf_yarn.TaskSpec(memory=1024, vcores=1, tb_termination_timeout_seconds=-1).memory == 1024  # tf-yarn's default
    assert tf_yarn.TaskSpec(tb_model_dir="/logs").conf("tensorboard")[-1] == \
        ("loom.application.tensorboard-log-dir", "/logs")
    with pytest.raises(ValueError, match="only the 'tensorboard' type"):
        tf_yarn.TaskSpec(tb_model_dir="/logs").conf("worker")
    with pytest.raises(ValueError, match=r"TaskSpec\(tb_termination_timeout_seconds=30\) is tf-yarn's"):
        tf_yarn.TaskSpec(tb_termination_timeout_seconds=30)
    with pytest.raises(ValueError, match=r"TaskSpec\(tb_extra_args='--x'\) is tf-yarn's"):
        tf_yarn.TaskSpec(tb_extra_args="--x")
    with pytest.raises(ValueError, match="the same setting twice"):
        tf_yarn.TaskSpec(processes=2, nb_proc_per_worker=3)


def test_get_safe_experiment_fn_imports_in_the_task():
    fn = tf_yarn.get_safe_experiment_fn("os.path.join", "a", "b")
    assert fn() == os.path.join("a", "b")


def test_run_on_yarn_goes_to_yarn_by_default(loom_home, yarn_double, monkeypatch, tmp_path):
    monkeypatch.setenv("HADOOP_CONF_DIR", yarn_double)
    monkeypatch.delenv("LOOM_CLUSTER", raising=False)
    helper = tmp_path / "helper_module.py"
    helper.write_text("ANSWER = 7\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.txt").write_text("y\n")
    result = tf_yarn.run_on_yarn(
        experiment_fn, task_specs={"chief": tf_yarn.TaskSpec(memory="512 MiB", vcores=1)},
        files={"helper_module.py": str(helper), "data": str(data)}, env={"MY_SETTING": "on-yarn"},
        pre_script_hook="export FROM_HOOK=on-yarn", conf={"loom.am.memory": "256m"}, timeout=120)
    assert result == {"task": {"type": "chief", "index": 0}, "env": "on-yarn", "hook": "on-yarn", "helper": 7,
                      "rows": ["y"], "name": "chief"}
    (job_id,) = os.listdir(os.path.join(loom_home, "jobs"))
    assert loom.Job(job_id).status()["backend"] == "yarn"
