"""`loom.run()`: runs a Python function on every task of a Loom job and returns the chief's
return value (tf-yarn's `run_on_yarn`, through the `loom` binary).

What travels: a temporary src dir with the function and its arguments pickled by cloudpickle,
a copy of this package (so a task imports it without installing anything) and an entry script
that calls `loom._task.main`. The job is an ordinary `loom submit` of that dir.
"""

import base64
import contextlib
import os
import pickle
import re
import secrets
import shutil
import signal
import sys
import sysconfig
import tempfile
import threading

from . import _task
from .errors import JobFailedError, LoomError
from .job import TaskSpec, _conf_pairs, submit

_STDERR_TAIL_LINES = 20
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _chief(status):
    """The task whose return value `run()` returns, as Loom picks it (JobSpec::Chief)."""
    ids = {t.get("task") for t in status.tasks}
    for candidate in ("chief:0", "worker:0"):
        if candidate in ids:
            return candidate
    return None


def _is_user_module(module):
    """Whether the tasks may lack `module` (a test file, a script's helper): its functions are
    then pickled by value rather than imported by name."""
    path = getattr(module, "__file__", None)
    if not path or module.__name__ == "__main__" or module.__name__.split(".")[0] == "loom":
        return False
    path = os.path.realpath(path)
    parts = path.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    for key in ("stdlib", "platstdlib"):
        lib = sysconfig.get_paths().get(key)
        if lib and path.startswith(os.path.realpath(lib) + os.sep):
            return False
    return True


def _dump_payload(path, marker, fn, args, kwargs, pickle_by_value):
    import cloudpickle

    modules = list(pickle_by_value or [])
    if pickle_by_value is None:
        mod = sys.modules.get(getattr(fn, "__module__", None) or "")
        if mod is not None and _is_user_module(mod):
            modules.append(mod)
    registered = []
    try:
        for mod in modules:
            cloudpickle.register_pickle_by_value(mod)
            registered.append(mod)
        with open(path, "wb") as f:
            cloudpickle.dump((marker, fn, tuple(args), dict(kwargs)), f)
    finally:
        for mod in registered:
            cloudpickle.unregister_pickle_by_value(mod)


def _file_targets(files):
    """[(target, source)] of tf-yarn's `files` ({target: local source}), checked."""
    out = []
    for target, source in (files or {}).items():
        source = os.fspath(source)
        norm = os.path.normpath(target) if isinstance(target, str) else ""
        if not norm or norm.startswith(("/", "..")) or norm == ".":
            raise ValueError("files[%r]: expected a relative path inside the task's working dir" % (target,))
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", source):
            raise ValueError("files[%r] = %s: not a local path; Loom ships local files and directories with the "
                             "job (read remote ones from the task)" % (target, source))
        if not os.path.exists(source):
            raise ValueError("files[%r] = %s: no such file or directory" % (target, source))
        out.append((norm, source))
    return out


def _stage(fn, args, kwargs, src_dir, pickle_by_value, marker, files=None, pre_script_hook=None):
    targets = _file_targets(files)
    staging = tempfile.mkdtemp(prefix="loom-run-")
    try:
        ours = ("loom", _task.PAYLOAD, _task.ENTRY, _task.HOOK)
        if src_dir is not None:
            for name in ours:
                if os.path.lexists(os.path.join(src_dir, name)):
                    raise ValueError("src_dir %s has %s, which loom.run() ships itself; rename it"
                                     % (src_dir, name))
            shutil.copytree(src_dir, staging, symlinks=True, dirs_exist_ok=True)
        # tf-yarn's `files`: each at its target in the task's working dir, importable from there.
        for target, source in targets:
            dest = os.path.join(staging, target)
            if target.split(os.sep)[0] in ours or os.path.lexists(dest):
                raise ValueError("files[%r]: %s is already in the job's files (the src dir, or loom.run()'s own)"
                                 % (target, target))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if os.path.isdir(source):
                shutil.copytree(source, dest, symlinks=True)
            else:
                shutil.copy2(source, dest)
        if pre_script_hook:
            with open(os.path.join(staging, _task.HOOK), "w") as f:
                f.write(pre_script_hook + "\n")
        shutil.copytree(_PACKAGE_DIR, os.path.join(staging, "loom"),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        _dump_payload(os.path.join(staging, _task.PAYLOAD), marker, fn, args, kwargs, pickle_by_value)
        with open(os.path.join(staging, _task.ENTRY), "w") as f:
            f.write("# Written by loom.run(): calls the shipped function in this task.\n"
                    "import sys\n"
                    "from loom import _task\n"
                    "sys.exit(_task.main(__file__))\n")
        return staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _failure(job, status):
    """The JobFailedError for a job that ended FAILED or KILLED."""
    m = re.search(r"task (\S+) failed", status.diagnostics)
    task = m.group(1) if m else next((t.get("task") for t in status.tasks if t.get("state") == "FAILED"), None)
    tail = []
    if task is not None:
        try:
            tail = job.logs(task=task, stderr=True).rstrip("\n").splitlines()[-_STDERR_TAIL_LINES:]
        except LoomError:
            pass
        if not tail:  # the logs are gone: the AM kept the last lines
            info = status.task(task) or {}
            tail = [line.strip() for line in info.get("diagnostics", "").splitlines()[1:]]
    headline = status.diagnostics.splitlines()[0] if status.diagnostics else "no diagnostics"
    headline = re.sub(r";\s*last stderr lines:?\s*$", "", headline)
    if tail:
        message = "job %s %s: %s\n%s stderr (last %d lines):\n%s" % (
            job.id, status.state, headline, task, len(tail), "\n".join("    " + line for line in tail))
    else:
        message = "job %s %s: %s" % (job.id, status.state, status.diagnostics or "no diagnostics")
    return JobFailedError(message, job=job, status=status, task=task, stderr_tail=tail)


def run(fn, args=(), kwargs=None, *, task_specs=None, framework=None, cluster="local", env=None,
        python_venv=None, python_binary_path=None, src_dir=None, conf=None, conf_file=None, name=None,
        queue=None, container_env=None, timeout=None, client_env=None, pickle_by_value=None, files=None,
        pre_script_hook=None, nb_retries=None):
    """Runs `fn(*args, **kwargs)` in every task of a new job and returns the chief's return value
    (chief:0, else worker:0, as Loom picks it; None when the job has neither).

    task_specs: {type: TaskSpec}, default {"worker": TaskSpec(instances=1)}. framework: the
    environment each task gets (loom.application.framework: "tensorflow" (Loom's default),
    "pytorch", "mxnet", "horovod", ...). cluster: "local" or "yarn". env: {KEY: VALUE} for every
    task (--shell_env); MLFLOW_* variables of the submitting environment reach every task anyway.
    python_venv: an archive for --python_venv (see pack_venv()); python_binary_path defaults to
    this interpreter (sys.executable) without one, to bin/python inside a .zip/.tar.gz one.
    src_dir: a directory whose files every task also gets (importable: it is the script's dir).
    conf, conf_file, name, queue, container_env, client_env: as for submit().
    timeout: seconds; the job is killed and TimeoutError raised when it runs longer.
    files: {target: local file or dir} (tf-yarn's), each copied to `target` in every task's
    working dir, where fn's process starts, so modules among them are importable.
    pre_script_hook: bash lines run in every task (every process of it) before fn, in the
    environment they leave (exports, PATH, LD_LIBRARY_PATH apply to fn's process); failing, the
    task fails. nb_retries: how often the whole job is started again after a failure
    (loom.am.retry-count; each try's LOOM_RESTART_COUNT says which).
    pickle_by_value: modules whose functions and classes are pickled by value; default: fn's own
    module when it is not installed (a script or test file the tasks may not have).

    Raises JobFailedError when the job fails (the failing task and its last stderr lines in the
    message), LoomError when the binary refuses the job. Interrupted (Ctrl-C) or timed out, the
    job is killed before the exception propagates.
    """
    if not callable(fn):
        raise TypeError("run(): fn must be callable, got %r" % (fn,))
    if task_specs is None:
        task_specs = {"worker": TaskSpec(instances=1)}
    if nb_retries is not None:
        if isinstance(nb_retries, bool) or not isinstance(nb_retries, int) or nb_retries < 0:
            raise ValueError("nb_retries=%r: expected an int >= 0" % (nb_retries,))
        conf = [("loom.am.retry-count", str(nb_retries))] + _conf_pairs(conf) if nb_retries else conf
    if python_binary_path is None:
        if python_venv is None:
            python_binary_path = sys.executable
        elif not os.fspath(python_venv).lower().endswith(".pex"):
            python_binary_path = "bin/python"
    marker = "LOOM_RUN_RESULT_%s:" % secrets.token_hex(8)
    staging = _stage(fn, args, kwargs or {}, src_dir, pickle_by_value, marker, files, pre_script_hook)
    job = None
    ended = False
    try:
        job = submit(_task.ENTRY, src_dir=staging, python_venv=python_venv, python_binary_path=python_binary_path,
                     task_specs=task_specs, framework=framework, cluster=cluster, shell_env=env,
                     container_env=container_env, conf=conf, conf_file=conf_file, name=name, queue=queue,
                     client_env=client_env, _ends_with_caller=True)
        try:
            with _sigterm_raises():
                status = job.wait(timeout=timeout)
        except BaseException as e:
            # Ctrl-C, a timeout: the job must not outlive the call that owns it.
            try:
                job.kill()
            except Exception:
                pass
            if isinstance(e, TimeoutError):
                raise TimeoutError("job %s ran longer than timeout=%ss: killed" % (job.id, timeout)) from None
            raise
        ended = True
        if status.state != "SUCCEEDED":
            raise _failure(job, status)
        chief = _chief(status)
        if chief is None:
            return None
        out = job.logs(task=chief)
        lines = [line for line in out.splitlines() if line.startswith(marker)]
        if not lines:
            raise LoomError("job %s SUCCEEDED but %s printed no return value: did %s exit (sys.exit, os._exit) "
                            "instead of returning?" % (job.id, chief, getattr(fn, "__name__", "fn")))
        return pickle.loads(base64.b64decode(lines[-1][len(marker):]))
    finally:
        # A job still running (the kill failed) may yet copy the src dir into a task.
        if job is None or ended or _ended(job):
            shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _sigterm_raises():
    """SIGTERM (a scheduler's timeout, a notebook kernel's restart) ends the process as it
    would, exit 143, but through the code that kills the job first."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; the follower's death signal still holds
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _ended(job):
    try:
        return job.status().final
    except Exception:
        return False
