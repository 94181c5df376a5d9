"""Fixtures for the loom package's tests: real jobs through the real `loom` binary.

LOOM_BIN names the binary (default: build/src/cli/loom of this repository) and
LOOM_YARN_DOUBLE_BIN the YARN test double as a process (default: build/bench/yarn_double_cluster,
from bench/yarn_double_cluster.cc). Each test gets a private LOOM_HOME and ledger; whatever its
jobs leave running is killed afterwards, found by its LOOM_HOME / LOOM_JOB_ID environment
entries (never by a process name).
"""

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(PYTHON_DIR)
sys.path.insert(0, PYTHON_DIR)  # this tree's `loom`, installed or not


def _binary(var, default):
    path = os.path.abspath(os.environ.get(var) or os.path.join(REPO, default))
    assert os.access(path, os.X_OK), "%s: %s is not built (set %s)" % (var, path, var)
    return path


@pytest.fixture(scope="session")
def loom_bin():
    return _binary("LOOM_BIN", "build/src/cli/loom")


def processes_with_env(entry):
    """Pids of live processes whose environment has `entry` ("KEY=VALUE")."""
    found = []
    needle = entry.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            pass
    return found


def _leftovers(home):
    jobs = os.path.join(home, "jobs")
    entries = ["LOOM_HOME=" + home]
    if os.path.isdir(jobs):
        entries += ["LOOM_JOB_ID=" + job for job in os.listdir(jobs)]
    return sorted({pid for entry in entries for pid in processes_with_env(entry)})


def _kill_leftovers(home):
    """Every test ends its jobs: a process of this home still there a few seconds after the
    test is a leak. It is killed, and the test fails naming it."""
    deadline = time.monotonic() + 10
    left = _leftovers(home)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _leftovers(home)
    names = []
    for pid in left:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                names.append("%d %s" % (pid, f.read().replace(b"\0", b" ").decode(errors="replace")[:120]))
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, FileNotFoundError):
            pass
    return names


@pytest.fixture
def loom_home(loom_bin, monkeypatch):
    """A private LOOM_HOME (and ledger) for this test, in os.environ; cleaned up afterwards."""
    home = tempfile.mkdtemp(prefix="loom_py_")  # short: Loom keeps sockets under it
    monkeypatch.setenv("LOOM_BIN", loom_bin)
    monkeypatch.setenv("LOOM_HOME", home)
    monkeypatch.setenv("LOOM_LEDGER_DIR", os.path.join(home, "ledger"))
    for key in list(os.environ):
        if key.startswith("MLFLOW_"):
            monkeypatch.delenv(key)  # only what a test sets
    if not os.environ.get("USER"):
        monkeypatch.setenv("USER", pwd.getpwuid(os.getuid()).pw_name)
    yield home
    leaked = _kill_leftovers(home)
    shutil.rmtree(home, ignore_errors=True)
    assert not leaked, "processes of this test's jobs were left running: %s" % "; ".join(leaked)


@pytest.fixture(scope="module")
def yarn_double():
    """The YARN test double (RM, NodeManagers, WebHDFS) as a process; yields its HADOOP_CONF_DIR.
    Closing its stdin stops it and every container it runs."""
    binary = _binary("LOOM_YARN_DOUBLE_BIN", "build/bench/yarn_double_cluster")
    root = tempfile.mkdtemp(prefix="loom_py_yarn_")
    # Its log goes to a file: a pipe nobody reads could fill and stall it.
    with open(os.path.join(root, "double.log"), "w") as log:
        proc = subprocess.Popen([binary, root, "--heartbeat-ms", "100"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline()  # "ready" once the conf files are written, EOF if it failed
    if line.strip() != "ready":
        proc.kill()
        with open(os.path.join(root, "double.log")) as log:
            pytest.fail("yarn_double_cluster did not start: %s%s" % (line, log.read()))
    yield os.path.join(root, "conf")
    proc.stdin.close()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(root, ignore_errors=True)
