"""Python API for Loom: submit jobs and run a Python function on every task of a distributed job.

Everything goes through the `loom` binary (found by $LOOM_BIN, else `loom` on PATH); this
package builds its command lines and reads its answers (`loom status --json`, `loom logs`). It
never reimplements what the binary does, so a job submitted here is the same job, on the same
backends (`local`, `yarn`), as one submitted from a shell.

    import loom

    def train(lr):
        import os, torch.distributed as dist
        dist.init_process_group("gloo")          # MASTER_ADDR, RANK, ... come from Loom
        ...
        return {"rank": dist.get_rank(), "loss": 0.1}

    result = loom.run(train, args=(0.01,), framework="pytorch",
                      task_specs={"worker": loom.TaskSpec(instances=2, memory="2g")})

    job = loom.submit(src_dir="examples/pytorch", executes="train_ddp.py",
                      python_binary_path="/usr/bin/python3", task_specs={"worker": loom.TaskSpec(instances=2)})
    job.wait(); print(job.status().state, job.logs(task="worker:0"))

tf-yarn programs: `import loom.tf_yarn as tf_yarn` (run_on_yarn, TaskSpec, NodeLabel; see
loom/tf_yarn/__init__.py).

Errors: `LoomError` when the binary refuses (bad configuration: exit 2, its message kept),
`JobFailedError` when `run()`'s job fails (the failing task's last stderr lines in the message).
"""

from .errors import JobFailedError, LoomError
from .job import Job, JobStatus, TaskSpec, find_binary, submit
from .run import run
from .task_spec import NodeLabel
from .venv import pack_venv

__version__ = "0.1.0"

__all__ = ["Job", "JobFailedError", "JobStatus", "LoomError", "NodeLabel", "TaskSpec", "find_binary", "pack_venv",
           "run", "submit", "__version__"]
