"""tf-yarn's API on Loom (loom.tf_yarn): a tf-yarn-style run_on_yarn call runs unchanged, but
for `import loom.tf_yarn as tf_yarn`, as a real job through the real `loom` binary (the local
backend, picked by $LOOM_CLUSTER); what does not map is refused by name before anything starts.
"""

import base64
import collections
import importlib
import importlib.util
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys

import pytest

import loom
import loom.tf_yarn as tf_yarn
import loom.tf_yarn.distributed as tf_yarn_distributed
import loom.tf_yarn.tensorflow as tf_yarn_tensorflow
from loom.task_spec import memory_mib
from loom.tf_yarn.experiment import run_experiment
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


def shipped_files(tmp_path, answer, rows):
    """The files a job ships: a module defining ANSWER and a folder holding rows.txt."""
    helper = tmp_path / "helper_module.py"
    helper.write_text(f"ANSWER = {answer}\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.txt").write_text(rows)
    return {"helper_module.py": str(helper), "data": str(data)}


def test_a_tf_yarn_style_call_runs_unchanged(local_cluster, tmp_path):
    files = shipped_files(tmp_path, 42, "a b c\n")
    # As a tf-yarn program writes it (tf_yarn.client.run_on_yarn's parameters).
    result = tf_yarn.run_on_yarn(
        experiment_fn,
        task_specs={
            "chief": tf_yarn.TaskSpec(memory="512 MiB", vcores=1),
            "worker": tf_yarn.TaskSpec(memory="0.25 GiB", vcores=1, instances=1, label=tf_yarn.NodeLabel.CPU),
        },
        files=files,
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
    result = tf_yarn.run_on_yarn(
        experiment_fn, task_specs={"chief": tf_yarn.TaskSpec(memory="512 MiB", vcores=1)},
        files=shipped_files(tmp_path, 7, "y\n"), env={"MY_SETTING": "on-yarn"},
        pre_script_hook="export FROM_HOOK=on-yarn", conf={"loom.am.memory": "256m"}, timeout=120)
    assert result == {"task": {"type": "chief", "index": 0}, "env": "on-yarn", "hook": "on-yarn", "helper": 7,
                      "rows": ["y"], "name": "chief"}
    (job_id,) = os.listdir(os.path.join(loom_home, "jobs"))
    assert loom.Job(job_id).status()["backend"] == "yarn"


# A stand-in for TensorFlow, importable as `tensorflow` from the tasks' PYTHONPATH: it records each
# train_and_evaluate and Model.fit call, with what it was given, in $FAKE_TF_RECORDS/<task>.json.
FAKE_TENSORFLOW = '''
import json, os, types

def _record(call, **seen):
    task = os.environ["LOOM_TASK_ID"]
    with open(os.path.join(os.environ["FAKE_TF_RECORDS"], task + ".json"), "w") as f:
        json.dump(dict(seen, call=call, tf_config=json.loads(os.environ["TF_CONFIG"])["task"]), f)

class Estimator:
    def __init__(self, model_dir):
        self.model_dir = model_dir

class TrainSpec:
    def __init__(self, input_fn, max_steps=None):
        self.input_fn, self.max_steps = input_fn, max_steps

class EvalSpec:
    def __init__(self, input_fn, steps=100):
        self.input_fn, self.steps = input_fn, steps

def train_and_evaluate(estimator, train_spec, eval_spec):
    _record("train_and_evaluate", model_dir=estimator.model_dir, max_steps=train_spec.max_steps,
            train_input=train_spec.input_fn(), eval_steps=eval_spec.steps, eval_input=eval_spec.input_fn())
    return {"global_step": train_spec.max_steps}, []

estimator = types.SimpleNamespace(Estimator=Estimator, TrainSpec=TrainSpec, EvalSpec=EvalSpec,
                                  train_and_evaluate=train_and_evaluate)

class Callback:
    pass

class ModelCheckpoint(Callback):
    def __init__(self, filepath):
        self.filepath = filepath

class Model:
    def fit(self, **params):
        _record("fit", x=params.get("x"), y=params.get("y"), epochs=params.get("epochs"),
                callbacks=[type(c).__name__ for c in params.get("callbacks") or []])
        return types.SimpleNamespace(history={"loss": [0.5, 0.25]}, model=self)

keras = types.SimpleNamespace(Model=Model, callbacks=types.SimpleNamespace(Callback=Callback,
                                                                            ModelCheckpoint=ModelCheckpoint))
'''


@pytest.fixture
def fake_tensorflow(tmp_path):
    """(env for run_on_yarn: the stand-in on PYTHONPATH, FAKE_TF_RECORDS; the records dir)."""
    (tmp_path / "fake_tf" / "tensorflow").mkdir(parents=True)
    (tmp_path / "fake_tf" / "tensorflow" / "__init__.py").write_text(FAKE_TENSORFLOW)
    records = tmp_path / "records"
    records.mkdir()
    return {"PYTHONPATH": str(tmp_path / "fake_tf"), "FAKE_TF_RECORDS": str(records)}, records


def records_of(records):
    return {name[:-len(".json")]: json.loads((records / name).read_text()) for name in os.listdir(records)}


def estimator_experiment():
    import tensorflow as tf

    return tf_yarn.Experiment(tf.estimator.Estimator(model_dir="/models/m"),
                              tf.estimator.TrainSpec(lambda: "train-rows", max_steps=7),
                              tf.estimator.EvalSpec(lambda: "eval-rows", steps=3))


def test_an_experiment_is_trained_and_evaluated_in_every_task(local_cluster, fake_tensorflow):
    env, records = fake_tensorflow
    result = tf_yarn.run_on_yarn(estimator_experiment, env=env, timeout=120, task_specs={
        "chief": tf_yarn.TaskSpec(memory=256, vcores=1), "worker": tf_yarn.TaskSpec(memory=256, vcores=1),
        "evaluator": tf_yarn.TaskSpec(memory=256, vcores=1)})
    assert result == ({"global_step": 7}, [])  # the chief's train_and_evaluate's
    parts = {"call": "train_and_evaluate", "model_dir": "/models/m", "max_steps": 7, "train_input": "train-rows",
             "eval_steps": 3, "eval_input": "eval-rows"}
    assert records_of(records) == {task: dict(parts, tf_config={"type": task.split(":")[0], "index": 0})
                                   for task in ("chief:0", "worker:0", "evaluator:0")}


def keras_experiment():
    import tensorflow as tf

    callbacks = [tf.keras.callbacks.ModelCheckpoint("/models/k/ckpt"), tf.keras.callbacks.Callback()]
    return tf_yarn.KerasExperiment(model=tf.keras.Model(), model_dir="/models/k",
                                   train_params={"epochs": 2, "callbacks": callbacks},
                                   input_data_fn=lambda: [1, 2, 3], target_data_fn=lambda: [0, 1, 0],
                                   validation_data_fn=lambda: "unused by fit")


def test_a_keras_experiment_is_fit_in_every_chief_and_worker(local_cluster, fake_tensorflow):
    env, records = fake_tensorflow
    # Through tf-yarn's per-framework module, as `from tf_yarn.tensorflow import run_on_yarn` writes it.
    result = tf_yarn_tensorflow.run_on_yarn(keras_experiment, env=env, timeout=120, task_specs={
        "chief": tf_yarn.TaskSpec(memory=256, vcores=1), "worker": tf_yarn.TaskSpec(memory=256, vcores=1)})
    assert result == {"loss": [0.5, 0.25]}  # the chief's History.history
    fit = {"call": "fit", "x": [1, 2, 3], "y": [0, 1, 0], "epochs": 2}
    assert records_of(records) == {
        "chief:0": dict(fit, callbacks=["ModelCheckpoint", "Callback"], tf_config={"type": "chief", "index": 0}),
        # As tf-yarn: only the chief writes checkpoints.
        "worker:0": dict(fit, callbacks=["Callback"], tf_config={"type": "worker", "index": 0})}


def test_an_experiment_without_tensorflow_fails_naming_it(local_cluster):
    if importlib.util.find_spec("tensorflow") is not None:
        pytest.skip("TensorFlow is installed: the tasks would import it")
    with pytest.raises(tf_yarn.RunFailed, match=r"tf-yarn Experiment, which the task runs with TensorFlow, but "
                                                r"`import tensorflow` failed"):
        tf_yarn.run_on_yarn(lambda: tf_yarn.Experiment("estimator", "train_spec", "eval_spec"), timeout=120,
                            task_specs={"worker": tf_yarn.TaskSpec(memory=256, vcores=1)})


@pytest.mark.parametrize("task_type, experiment, why", [
    ("evaluator", "keras", r"KerasExperiment in a task of type 'evaluator': .*polls model_dir's checkpoints"),
    ("ps", "keras", r"KerasExperiment in a task of type 'ps': .*without parameter servers"),
    ("tensorboard", "keras", r"KerasExperiment in a task of type 'tensorboard': .*only chief and worker"),
    ("worker", "pytorch", r"tf-yarn PytorchExperiment: Loom does not run tf-yarn's PyTorch worker"),
])
def test_what_the_task_cannot_run_fails_naming_it(fake_tensorflow, monkeypatch, task_type, experiment, why):
    env, _ = fake_tensorflow
    monkeypatch.syspath_prepend(env["PYTHONPATH"])
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    monkeypatch.setenv("JOB_NAME", task_type)
    # tf-yarn's own classes, for a program that still imports them: known by name and module.
    pytorch = collections.namedtuple("PytorchExperiment", "model main_fn train_dataset dataloader_args",
                                     module="tf_yarn.pytorch.experiment")
    fn = keras_experiment if experiment == "keras" else lambda: pytorch(None, None, None, None)
    try:
        with pytest.raises(ValueError, match=why):
            run_experiment(fn)
    finally:
        sys.modules.pop("tensorflow", None)  # the stand-in stays out of other tests


def test_tf_yarns_own_experiment_class_is_trained(fake_tensorflow, monkeypatch):
    env, records = fake_tensorflow
    monkeypatch.syspath_prepend(env["PYTHONPATH"])
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    for key, value in (("FAKE_TF_RECORDS", env["FAKE_TF_RECORDS"]), ("LOOM_TASK_ID", "chief:0"),
                       ("TF_CONFIG", '{"task": {"type": "chief", "index": 0}}')):
        monkeypatch.setenv(key, value)
    theirs = collections.namedtuple("Experiment", "estimator train_spec eval_spec", module="tf_yarn.experiment")
    try:
        assert run_experiment(lambda: theirs(*estimator_experiment())) == ({"global_step": 7}, [])
    finally:
        sys.modules.pop("tensorflow", None)
    assert records_of(records)["chief:0"]["model_dir"] == "/models/m"


def test_one_run_on_yarn_serves_every_framework_module():
    assert tf_yarn_distributed.run_on_yarn is pytorch_run_on_yarn  # tf-yarn's two names for one thing
    assert tf_yarn_tensorflow.Experiment is tf_yarn.Experiment
    # Each is found where it is named, as pickle looks it up.
    for module in (tf_yarn_tensorflow, tf_yarn_distributed):
        fn = module.run_on_yarn
        assert getattr(sys.modules[fn.__module__], fn.__qualname__) is fn


def hook_env():
    import os

    return {"raw": os.environb.get(b"RAW"), "path": os.environ["PATH"].split(os.pathsep)[0]}


def run_task(tmp_path, fn, pre_script_hook):
    """Runs one task of loom.run()'s job as the executor would (its entry script, in its dir, as
    chief, the interpreter named `python3` on PATH), without a job: (the process, fn's return
    value or None)."""
    run_module = importlib.import_module("loom.run")  # the module, not loom.run()
    ours = tmp_path / "our-bin"
    ours.mkdir()
    (ours / "python3").symlink_to(sys.executable)
    marker = "LOOM_RUN_RESULT_test:"
    staging = run_module._stage(fn, (), {}, None, None, marker, pre_script_hook=pre_script_hook)
    try:
        env = dict(os.environ, IS_CHIEF="true", PATH="%s:%s" % (ours, os.environ["PATH"]))
        done = subprocess.run(["python3", run_module._task.ENTRY], cwd=staging, env=env, capture_output=True,
                              timeout=60)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    lines = [line for line in done.stdout.decode().splitlines() if line.startswith(marker)]
    return done, pickle.loads(base64.b64decode(lines[-1][len(marker):])) if lines else None


def test_the_hook_keeps_values_that_are_not_utf8(tmp_path):
    done, result = run_task(tmp_path, hook_env, "export RAW=$'caf\\xe9'")
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert result["raw"] == b"caf\xe9"  # the byte the hook wrote, as it wrote it


def test_a_hook_that_changes_path_does_not_change_the_interpreter(tmp_path):
    # The task's interpreter named as `python3`, as python_binary_path may; the hook puts
    # another `python3` first on PATH (a conda env's activate does).
    other = tmp_path / "other-bin"
    other.mkdir()
    (other / "python3").write_text("#!/bin/sh\necho 'the hook PATH python ran' >&2\nexit 42\n")
    (other / "python3").chmod(0o755)
    done, result = run_task(tmp_path, hook_env, "export PATH=%s:$PATH" % other)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert result["path"] == str(other)  # fn still gets the hook's PATH


def test_a_hook_killed_by_a_signal_exits_128_plus_n(tmp_path):
    done, result = run_task(tmp_path, hook_env, "kill -TERM $$")
    assert (done.returncode, result) == (128 + signal.SIGTERM, None)
    assert "pre_script_hook killed by SIGTERM" in done.stderr.decode()
