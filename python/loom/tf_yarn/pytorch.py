"""tf-yarn's `tf_yarn.pytorch.run_on_yarn`: the tasks get PyTorch's variables (MASTER_ADDR,
MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK; loom.<type>.processes is nb_proc_per_worker)."""

from . import TaskSpec, _with_framework

run_on_yarn = _with_framework("pytorch", __name__, __doc__)

__all__ = ["TaskSpec", "run_on_yarn"]
