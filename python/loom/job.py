"""`submit()` and the `Job` handle: `loom submit`, `loom status --json`, `loom logs`, `loom kill`.

A submitted job is followed by a `loom submit` process of its own (the binary has no detached
mode): it runs in its own session, so the job outlives this Python process and a Ctrl-C here
does not reach it (use `Job.kill()`, or `loom.run()`, which kills its job when interrupted).
`Job.wait()` waits for that follower when this process started it, and polls
`loom status --json` otherwise.

Not thread-safe: share a `Job` between threads only with a lock of your own.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Mapping

from .errors import LoomError
from .task_spec import TaskSpec

_SUBMITTED = re.compile(r"^Job (\S+) submitted", re.MULTILINE)
_JOB_DIR = re.compile(r"^\s*job dir: (.+)$", re.MULTILINE)


def find_binary(client_env=None):
    """The `loom` binary: $LOOM_BIN (of `client_env`, else of this process), else `loom` on PATH."""
    env = _environment(client_env)
    path = env.get("LOOM_BIN")
    if path:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise LoomError("LOOM_BIN=%s is not an executable file" % path)
        return path
    found = shutil.which("loom", path=env.get("PATH"))
    if not found:
        raise LoomError("cannot find the loom binary: set LOOM_BIN to its path (e.g. build/src/cli/loom) "
                        "or put loom on PATH")
    return found


def _environment(client_env):
    env = dict(os.environ)
    for key, value in (client_env or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


def _message(stderr):
    """The binary's stderr as an exception message: without its `loom: ` prefixes."""
    lines = [line[len("loom: "):] if line.startswith("loom: ") else line for line in stderr.strip().splitlines()]
    return "\n".join(lines)


def _call(args, client_env=None):
    """Runs `loom ARGS`; returns the CompletedProcess. Exit 2 (bad usage) raises LoomError."""
    argv = [find_binary(client_env)] + list(args)
    done = subprocess.run(argv, env=_environment(client_env), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True)
    if done.returncode == 2:
        raise LoomError(_message(done.stderr) or "loom %s: exit 2" % args[0], exit_code=2, argv=argv)
    return done


class JobStatus(dict):
    """`loom status --json` of a job, as a dict, with shortcuts for its common fields."""

    @property
    def state(self):
        """QUEUED, SUBMITTED, RUNNING, SUCCEEDED, FAILED or KILLED (as `loom status` says)."""
        return self.get("state", "")

    @property
    def final(self):
        return bool(self.get("final", False))

    @property
    def diagnostics(self):
        return self.get("diagnostics", "")

    @property
    def tasks(self):
        """One dict per task: "task" ("worker:0"), "state", "exit_code", "diagnostics", ..."""
        return self.get("tasks", [])

    def task(self, task_id):
        for t in self.tasks:
            if t.get("task") == task_id:
                return t
        return None


class Job:
    """A Loom job: its id (or YARN application id, or job directory) and the environment the
    `loom` binary runs in for it (`client_env`: LOOM_HOME, HADOOP_CONF_DIR, ... over os.environ).
    Any job can be opened by id: `Job("job_20261122_1a2b")`.
    """

    def __init__(self, job_id, client_env=None, *, job_dir=None, _follower=None):
        self.id = job_id
        self.job_dir = job_dir
        self.client_env = dict(client_env or {})
        self._follower = _follower

    def __repr__(self):
        return "Job(%r)" % self.id

    def status(self):
        """The job now, from its backend (`loom status --json`): a JobStatus."""
        done = _call(["status", "--json", self.id], self.client_env)
        try:
            return JobStatus(json.loads(done.stdout))
        except ValueError:
            raise LoomError("loom status %s: %s" % (self.id, _message(done.stderr) or "no JSON in its output"),
                            exit_code=done.returncode) from None

    def logs(self, task=None, stderr=False, file=None):
        """A task's stdout ("worker:0"; "am" for the AM's log), its stderr with stderr=True, or
        another file of it (file="executor.log"); every task when task is None."""
        args = ["logs", self.id]
        if task is not None:
            args += ["--task", task]
        if stderr:
            args.append("--stderr")
        if file is not None:
            args += ["--file", file]
        done = _call(args, self.client_env)
        if done.returncode != 0:
            raise LoomError(_message(done.stderr), exit_code=done.returncode)
        return done.stdout

    def wait(self, timeout=None):
        """Blocks until the job ends; returns its final JobStatus (whatever the state: check
        `.state`). Raises TimeoutError after `timeout` seconds, leaving the job running."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._follower is not None and self._follower.poll() is None:
            try:
                self._follower.wait(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise TimeoutError("job %s still running after %ss" % (self.id, timeout)) from None
        # The follower has ended (or there is none): the backend has the last word.
        delay = 0.05
        while True:
            status = self.status()
            if status.final:
                return status
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError("job %s still running after %ss" % (self.id, timeout))
            pause = delay if deadline is None else min(delay, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)
            delay = min(delay * 2, 1.0)

    def kill(self):
        """Stops the job (`loom kill`, which confirms it); returns its final JobStatus."""
        done = _call(["kill", self.id], self.client_env)
        if done.returncode != 0:
            raise LoomError(_message(done.stderr) or "loom kill %s: exit %d" % (self.id, done.returncode),
                            exit_code=done.returncode)
        if self._follower is not None:
            try:
                self._follower.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass  # it notices the end by itself; the status below is the backend's
        return self.status()


def _conf_pairs(conf):
    if conf is None:
        return []
    items = conf.items() if isinstance(conf, Mapping) else conf
    out = []
    for item in items:
        if isinstance(item, str):
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError("conf entry %r: expected KEY=VALUE" % item)
        else:
            key, value = item
        if isinstance(value, bool):
            value = "true" if value else "false"
        out.append((str(key), str(value)))
    return out


def _env_args(flag, env):
    out = []
    for key, value in _conf_pairs(env):
        out += [flag, "%s=%s" % (key, value)]
    return out


def submit_argv(executes=None, *, src_dir=None, task_params=None, python_venv=None, python_binary_path=None,
                task_specs=None, framework=None, cluster="local", shell_env=None, container_env=None, conf=None,
                conf_file=None, name=None, queue=None, sidecar_tensorboard_log_dir=None):
    """The `loom submit` arguments for `submit()`'s parameters (without the binary)."""
    args = ["submit", "--quiet", "--cluster", cluster]
    for flag, value in (("--executes", executes), ("--src_dir", src_dir), ("--python_venv", python_venv),
                        ("--python_binary_path", python_binary_path), ("--conf_file", conf_file),
                        ("--sidecar_tensorboard_log_dir", sidecar_tensorboard_log_dir)):
        if value is not None:
            args += [flag, os.fspath(value)]
    if task_params is not None:
        params = task_params if isinstance(task_params, str) else shlex.join(str(p) for p in task_params)
        args += ["--task_params", params]
    args += _env_args("--shell_env", shell_env)
    args += _env_args("--container_env", container_env)
    pairs = []
    for task_type, spec in (task_specs or {}).items():
        if not isinstance(spec, TaskSpec):
            raise TypeError("task_specs[%r]: expected a loom.TaskSpec, got %r" % (task_type, spec))
        pairs += spec.conf(task_type)
    if framework is not None:
        pairs.append(("loom.application.framework", framework))
    if name is not None:
        pairs.append(("loom.application.name", name))
    if queue is not None:
        pairs.append(("loom.yarn.queue", queue))
    pairs += _conf_pairs(conf)  # last: an explicit conf entry wins
    for key, value in pairs:
        args += ["--conf", "%s=%s" % (key, value)]
    return args


def _await_submitted(follower, out_r):
    """`loom submit`'s output up to its job dir line, or all of it if it exits before."""
    out = ""
    delay = 0.005
    while True:
        out += out_r.read()
        if _SUBMITTED.search(out) and _JOB_DIR.search(out):
            return out
        if follower.poll() is not None:
            return out + out_r.read()
        # Nothing to wait on but the file: the binary prints these lines within milliseconds.
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _interrupt_at_parent_death(parent):
    """For run(), whose job must not outlive it even when it is SIGKILLed: the follower gets
    SIGINT when this process dies, and kills the job as `loom submit` does on Ctrl-C."""
    def arm():
        import ctypes
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGINT)
        if os.getppid() != parent:  # died before the line above: nobody would tell us
            os.kill(os.getpid(), signal.SIGINT)
    return arm


def submit(executes=None, *, src_dir=None, task_params=None, python_venv=None, python_binary_path=None,
           task_specs=None, framework=None, cluster="local", shell_env=None, container_env=None, conf=None,
           conf_file=None, name=None, queue=None, sidecar_tensorboard_log_dir=None, client_env=None,
           _ends_with_caller=False):
    """Submits a job, as `loom submit` does with the same options; returns its Job once the
    backend has it (the job then runs on, followed by a `loom submit` process of its own).

    executes, src_dir, task_params (str, or a list joined with shell quoting), python_venv,
    python_binary_path, conf_file, sidecar_tensorboard_log_dir: the flags of the same name.
    shell_env / container_env: {KEY: VALUE} (--shell_env, --container_env).
    conf: {key: value} or ["key=value"] (--conf; wins over the parameters below).
    task_specs: {type: TaskSpec} (loom.<type>.*). framework: loom.application.framework
    (tensorflow, pytorch, mxnet, horovod, ...). name: loom.application.name. queue: loom.yarn.queue.
    cluster: "local" or "yarn" (--cluster). client_env: environment of the `loom` binary over
    os.environ (LOOM_HOME, HADOOP_CONF_DIR, MLFLOW_*...; None removes a variable).

    Raises LoomError when the binary refuses the job (exit 2: its message, nothing started) or
    cannot start it (exit 1).
    """
    args = submit_argv(executes, src_dir=src_dir, task_params=task_params, python_venv=python_venv,
                       python_binary_path=python_binary_path, task_specs=task_specs, framework=framework,
                       cluster=cluster, shell_env=shell_env, container_env=container_env, conf=conf,
                       conf_file=conf_file, name=name, queue=queue,
                       sidecar_tensorboard_log_dir=sidecar_tensorboard_log_dir)
    argv = [find_binary(client_env)] + args
    # The follower writes to files unlinked once its first lines are read: nothing is left
    # behind, and it never blocks on (or dies of) a pipe that this process stops reading.
    with tempfile.NamedTemporaryFile(prefix="loom-submit-", suffix=".out") as out_w, \
            tempfile.NamedTemporaryFile(prefix="loom-submit-", suffix=".err") as err_w, \
            open(out_w.name, "r") as out_r, open(err_w.name, "r") as err_r:
        follower = subprocess.Popen(argv, env=_environment(client_env), stdin=subprocess.DEVNULL, stdout=out_w,
                                    stderr=err_w, start_new_session=True,
                                    preexec_fn=_interrupt_at_parent_death(os.getpid()) if _ends_with_caller else None)
        try:
            out = _await_submitted(follower, out_r)
        except BaseException:
            # Interrupted before the job's id was known: nobody could stop the job but its
            # follower, which kills it on SIGINT as `loom submit` does on Ctrl-C.
            follower.send_signal(signal.SIGINT)
            try:
                follower.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            raise
        m = _SUBMITTED.search(out)
        if m is None:
            code = follower.wait()
            err = _message(err_r.read())
            raise LoomError(err or "loom submit: exit %d" % code, exit_code=code, argv=argv)
        job_dir = _JOB_DIR.search(out)
    return Job(m.group(1), client_env, job_dir=job_dir.group(1).strip() if job_dir else None, _follower=follower)
