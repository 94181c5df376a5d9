"""tf-yarn's `tf_yarn.pytorch.run_on_yarn`: the tasks get PyTorch's variables (MASTER_ADDR,
MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK; loom.<type>.processes is nb_proc_per_worker)."""

from . import run_on_yarn as _run_on_yarn


def run_on_yarn(experiment_fn, task_specs, **kwargs):
    kwargs.setdefault("framework", "pytorch")
    return _run_on_yarn(experiment_fn, task_specs, **kwargs)
