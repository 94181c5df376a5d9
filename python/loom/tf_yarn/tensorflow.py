"""tf-yarn's `tf_yarn.tensorflow.run_on_yarn`: the tasks get TF_CONFIG and CLUSTER_SPEC."""

from . import run_on_yarn as _run_on_yarn


def run_on_yarn(experiment_fn, task_specs, **kwargs):
    kwargs.setdefault("framework", "tensorflow")
    return _run_on_yarn(experiment_fn, task_specs, **kwargs)
