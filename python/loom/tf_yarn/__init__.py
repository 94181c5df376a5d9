"""tf-yarn's API on Loom: `import loom.tf_yarn as tf_yarn`, and a tf-yarn program's
`run_on_yarn(experiment_fn, task_specs, ...)` runs as a Loom job (`loom.run()`), on YARN by
default ($LOOM_CLUSTER, or cluster=, picks another backend: "local").

What maps (README, "Python API"): TaskSpec (memory as "2 GiB", "512 MiB", "2g" or MiB;
nb_proc_per_worker; NodeLabel), files, env, queue, name, nb_retries (whole-job restarts,
loom.am.retry-count), pre_script_hook, file_systems, pyenv_zip_path (one archive; without it the
tasks run this interpreter, not a pex of it). Refused by name, before anything starts:
custom_task_module (tf-yarn's task modules read the experiment from skein's key-value store),
skein_client, acls, eval_monitor_log_thresholds, cuda_runtime_hdfs_path, and a pyenv per node
label. experiment_fn runs in every task with its framework's variables set (TF_CONFIG, or
MASTER_ADDR/RANK/WORLD_SIZE). When it returns tf-yarn's Experiment or KerasExperiment, the task
trains it as tf-yarn's tasks do (train_and_evaluate, or model.fit; see experiment.py); anything
else it returns is its result, the training done by experiment_fn itself. What the chief returns
comes back. `loom.tf_yarn.pytorch.run_on_yarn` and `.distributed.run_on_yarn` give the pytorch
variables.
"""

import importlib
import os
import sys

from ..errors import JobFailedError, LoomError
from ..job import _conf_pairs
from ..run import _is_user_module, run
from ..task_spec import NodeLabel, TaskSpec
from .experiment import Experiment, ExperimentRunner, KerasExperiment

# tf-yarn's name for a failed run.
RunFailed = JobFailedError

__all__ = ["Experiment", "KerasExperiment", "NodeLabel", "RunFailed", "TaskSpec", "get_safe_experiment_fn",
           "run_on_yarn"]

# Options of tf-yarn's run_on_yarn that Loom has no counterpart for, and why.
_REFUSED = {
    "skein_client": "Loom drives its own `loom` binary, not skein",
    "acls": "Loom sets no YARN application ACLs (the cluster's defaults apply)",
    "eval_monitor_log_thresholds": "Loom does not monitor TensorFlow evaluator metrics; log them from the task",
    "cuda_runtime_hdfs_path": "ship CUDA in the venv or the image (loom.docker.*), or fetch it in pre_script_hook",
    "custom_task_module": "tf-yarn's task modules read the experiment from skein's key-value store; Loom calls "
                          "experiment_fn itself in every task (or use loom.submit(executes=...) for a script)",
}


def _refuse(option, value):
    raise LoomError("run_on_yarn(%s=%r): %s; remove it" % (option, value, _REFUSED[option]), exit_code=2)


def _venv(pyenv_zip_path):
    if isinstance(pyenv_zip_path, dict):
        archives = set(pyenv_zip_path.values())
        if len(archives) != 1:
            raise LoomError("run_on_yarn(pyenv_zip_path=%r): Loom ships one environment per job, for every node "
                            "label; give one archive" % (pyenv_zip_path,), exit_code=2)
        return archives.pop()
    return pyenv_zip_path


def run_on_yarn(experiment_fn, task_specs, *, pyenv_zip_path=None, skein_client=None, files=None, env=None,
                queue=None, acls=None, file_systems=None, eval_monitor_log_thresholds=None, nb_retries=0,
                custom_task_module=None, name=None, pre_script_hook=None, cuda_runtime_hdfs_path=None,
                framework="tensorflow", cluster=None, **run_kwargs):
    """tf-yarn's run_on_yarn: runs experiment_fn() in every task of a Loom job and returns the
    chief's return value. `framework` and `cluster` (default $LOOM_CLUSTER, else "yarn") are
    Loom's; other keyword arguments go to loom.run() (timeout, conf, client_env, ...). Raises
    RunFailed (loom.JobFailedError) when the job fails, LoomError for an option Loom refuses."""
    if not callable(experiment_fn):
        raise TypeError("run_on_yarn(): experiment_fn must be callable, got %r" % (experiment_fn,))
    for option, value in (("skein_client", skein_client), ("acls", acls),
                          ("eval_monitor_log_thresholds", eval_monitor_log_thresholds),
                          ("cuda_runtime_hdfs_path", cuda_runtime_hdfs_path),
                          ("custom_task_module", custom_task_module)):
        if value is not None:
            _refuse(option, value)
    conf = _conf_pairs(run_kwargs.pop("conf", None))
    if file_systems:
        conf = [("loom.application.file-systems", ",".join(file_systems))] + conf
    if run_kwargs.get("pickle_by_value") is None:
        # What run() would pick for experiment_fn itself: the tasks call it through ExperimentRunner.
        module = sys.modules.get(getattr(experiment_fn, "__module__", None) or "")
        run_kwargs["pickle_by_value"] = [module] if module is not None and _is_user_module(module) else []
    return run(ExperimentRunner(experiment_fn), task_specs=task_specs, framework=framework,
               cluster=cluster or os.environ.get("LOOM_CLUSTER") or "yarn", env=env, python_venv=_venv(pyenv_zip_path),
               name=name, queue=queue, files=files, pre_script_hook=pre_script_hook, nb_retries=nb_retries,
               conf=conf, **run_kwargs)


def get_safe_experiment_fn(full_fn_name, *args):
    """tf-yarn's: a function that imports `package.module.fn` in the task and calls fn(*args), for
    an experiment function that cannot be pickled but that the tasks have (in files= or the venv)."""
    module_name, _, fn_name = full_fn_name.rpartition(".")
    if not module_name:
        raise ValueError("get_safe_experiment_fn(%r): expected module.function" % (full_fn_name,))

    def experiment_fn():
        return getattr(importlib.import_module(module_name), fn_name)(*args)

    return experiment_fn


def _with_framework(framework, module, doc):
    """run_on_yarn with another default framework, as `module`'s run_on_yarn (tf-yarn's
    per-framework modules): one implementation for all of them."""

    def framework_run_on_yarn(experiment_fn, task_specs, **kwargs):
        kwargs.setdefault("framework", framework)
        return run_on_yarn(experiment_fn, task_specs, **kwargs)

    # Named as where it is found, so that pickle finds it there.
    framework_run_on_yarn.__name__ = framework_run_on_yarn.__qualname__ = "run_on_yarn"
    framework_run_on_yarn.__module__ = module
    framework_run_on_yarn.__doc__ = doc
    return framework_run_on_yarn
