"""The task side of `loom.run()`: runs in every task (every process of it), shipped in the job's
src dir with a copy of this package, started by the entry script `run()` writes.

It loads the pickled (marker, fn, args, kwargs), calls fn in the environment Loom gave the
task (the framework's variables: RANK, TF_CONFIG, ...), and on the chief (IS_CHIEF=true, Loom's
choice: chief:0, else worker:0; its local rank 0 when the task has several processes) prints
the return value as one line: the marker, then base64 of its cloudpickle. The marker is random
per run, so nothing fn prints can pass for the result. The client reads that line back with
`loom logs JOB --task CHIEF`, which works the same on every backend. An exception in fn
propagates: its traceback goes to stderr and the task fails, so the job fails with it.

With a pre_script_hook (tf-yarn's: bash lines its container script runs before the task), the
hook runs first, in bash, and this process starts again in the environment the hook left, so
that what it exports (LD_LIBRARY_PATH too, which only a new process reads) is fn's.
"""

import base64
import os
import pickle
import shutil
import signal
import subprocess
import sys

PAYLOAD = "_loom_payload.pkl"
ENTRY = "_loom_run.py"
HOOK = "_loom_pre_script_hook.sh"
_HOOK_DONE = "LOOM_PRE_SCRIPT_HOOK_DONE"


def is_result_process(environ=None):
    env = os.environ if environ is None else environ
    return env.get("IS_CHIEF") == "true" and env.get("LOCAL_RANK", "0") in ("", "0")


def _run_hook(hook):
    """Runs the hook; on success does not return: this process starts again in its environment."""
    # The hook's own output goes to stderr: stdout carries the environment back.
    done = subprocess.run(["bash", "-c", 'source "$1" >&2 && exec env -0', "pre_script_hook", hook],
                          stdout=subprocess.PIPE)
    if done.returncode < 0:
        # As a shell reports a child a signal ended: 128+N, not the negative code's low byte.
        signum = -done.returncode
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = "signal %d" % signum
        sys.stderr.write("pre_script_hook killed by %s\n" % name)
        sys.exit(128 + signum)
    if done.returncode != 0:
        sys.stderr.write("pre_script_hook failed with exit code %d\n" % done.returncode)
        sys.exit(done.returncode)
    # Values need not be UTF-8: os.fsdecode keeps their bytes, which execve writes back as they were.
    env = dict(os.fsdecode(entry).split("=", 1) for entry in done.stdout.split(b"\0") if b"=" in entry)
    env[_HOOK_DONE] = "1"
    # As this process was started (a venv's or a pex's interpreter, with its arguments), but by the
    # path of this interpreter: a PATH the hook changed must not pick another python (nor another
    # prefix, which Python derives from argv[0]).
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv)
    argv[0] = sys.executable or shutil.which(argv[0]) or argv[0]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(argv[0], argv, env)


def main(entry_file):
    here = os.path.dirname(os.path.abspath(entry_file))
    hook = os.path.join(here, HOOK)
    if os.path.exists(hook) and os.environ.get(_HOOK_DONE) != "1":
        _run_hook(hook)
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
