"""The task side of `loom.run()`: runs in every task (every process of it), shipped in the job's
src dir with a copy of this package, started by the entry script `run()` writes.

It loads the pickled (marker, fn, args, kwargs), calls fn in the environment Loom gave the
task (the framework's variables: RANK, TF_CONFIG, ...), and on the chief (IS_CHIEF=true, Loom's
choice: chief:0, else worker:0; its local rank 0 when the task has several processes) prints
the return value as one line: the marker, then base64 of its cloudpickle. The marker is random
per run, so nothing fn prints can pass for the result. The client reads that line back with
`loom logs JOB --task CHIEF`, which works the same on every backend. An exception in fn
propagates: its traceback goes to stderr and the task fails, so the job fails with it.
"""

import base64
import os
import pickle
import sys

PAYLOAD = "_loom_payload.pkl"
ENTRY = "_loom_run.py"


def is_result_process(environ=None):
    env = os.environ if environ is None else environ
    return env.get("IS_CHIEF") == "true" and env.get("LOCAL_RANK", "0") in ("", "0")


def main(entry_file):
    here = os.path.dirname(os.path.abspath(entry_file))
    import cloudpickle  # the payload was written by it; its loads is pickle's own

    with open(os.path.join(here, PAYLOAD), "rb") as f:
        marker, fn, args, kwargs = pickle.load(f)
    result = fn(*args, **kwargs)
    if is_result_process():
        line = marker + base64.b64encode(cloudpickle.dumps(result)).decode("ascii")
        sys.stdout.flush()
        # A line of its own even after output of fn's without a final newline.
        sys.stdout.write("\n" + line + "\n")
        sys.stdout.flush()
    return 0
