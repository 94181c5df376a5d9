"""tf-yarn's `tf_yarn.distributed.run_on_yarn`, for a function that sets up its own process
group: the same as `loom.tf_yarn.pytorch.run_on_yarn` (MASTER_ADDR, MASTER_PORT, RANK,
WORLD_SIZE, LOCAL_RANK)."""

from . import TaskSpec
from .pytorch import run_on_yarn

__all__ = ["TaskSpec", "run_on_yarn"]
