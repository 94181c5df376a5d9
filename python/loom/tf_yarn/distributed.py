"""tf-yarn's `tf_yarn.distributed.run_on_yarn`, for a function that sets up its own process
group: the tasks get PyTorch's variables (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK)."""

from . import run_on_yarn as _run_on_yarn


def run_on_yarn(experiment_fn, task_specs, **kwargs):
    kwargs.setdefault("framework", "pytorch")
    return _run_on_yarn(experiment_fn, task_specs, **kwargs)
