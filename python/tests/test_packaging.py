"""`pip install ./python` with no network, the wheel and sdist of the in-tree build backend, and
pack_venv(): a venv packed by the API is the Python environment of a real job's tasks."""

import json
import os
import subprocess
import sys
import tarfile
import time
import textwrap
import zipfile

import pytest

import loom
from conftest import PYTHON_DIR

SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A venv (system site-packages: cloudpickle, as Debian ships it) with loom installed by pip
    from this tree, offline (--no-index: no index, nothing downloaded)."""
    root = tmp_path_factory.mktemp("venv")
    path = str(root / "v")
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", path], check=True)
    done = subprocess.run([path + "/bin/pip", "install", "--no-index", "--no-cache-dir", PYTHON_DIR],
                          capture_output=True, text=True, env=dict(os.environ, PIP_NO_INPUT="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    return path


def test_pip_install_works_offline(venv):
    probe = ("import importlib.metadata as m, json, loom; "
             "print(json.dumps([loom.__file__, loom.__version__, m.version('loom'), m.requires('loom')]))")
    # Run from / so that this tree's python/ is not on sys.path: the installed copy answers.
    out = subprocess.run([venv + "/bin/python", "-c", probe], check=True, capture_output=True, text=True,
                         cwd="/").stdout
    path, version, dist_version, requires = json.loads(out)
    assert path.startswith(venv + "/lib/") and "/site-packages/loom/" in path
    assert version == dist_version == loom.__version__
    assert requires == ["cloudpickle>=2.0"]


def test_backend_builds_wheel_and_sdist(tmp_path):
    sys.path.insert(0, os.path.join(PYTHON_DIR, "_build"))
    try:
        import loom_build
    finally:
        sys.path.pop(0)
    wheel = loom_build.build_wheel(str(tmp_path))
    sdist = loom_build.build_sdist(str(tmp_path))
    base = "loom-" + loom.__version__
    assert wheel == base + "-py3-none-any.whl" and sdist == base + ".tar.gz"
    names = zipfile.ZipFile(tmp_path / wheel).namelist()
    top = os.path.join(PYTHON_DIR, "loom")
    package = sorted(os.path.relpath(os.path.join(d, f), top) for d, _, files in os.walk(top)
                     for f in files if f.endswith(".py"))  # with subpackages (loom.tf_yarn)
    assert sorted(n[len("loom/"):] for n in names if n.startswith("loom/")) == package
    assert base + ".dist-info/RECORD" in names and base + ".dist-info/METADATA" in names
    members = tarfile.open(tmp_path / sdist).getnames()
    assert base + "/pyproject.toml" in members and base + "/_build/loom_build.py" in members
    assert base + "/PKG-INFO" in members and base + "/loom/run.py" in members
    # Byte-identical when built again.
    again = tmp_path / "again"
    again.mkdir()
    loom_build.build_wheel(str(again))
    assert (again / wheel).read_bytes() == (tmp_path / wheel).read_bytes()
    time.sleep(1.1)  # gzip headers record the time in seconds: a later second must not show
    loom_build.build_sdist(str(again))
    assert (again / sdist).read_bytes() == (tmp_path / sdist).read_bytes()


def test_pack_venv_round_trip(venv, loom_home, tmp_path):
    """In the venv: pack_venv(), then run() a function that imports a module only the venv has,
    with the archive as --python_venv. The task's interpreter is the unpacked copy, not the venv."""
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([venv + "/bin/python", "-c", purelib], check=True, capture_output=True,
                          text=True).stdout.strip()
    token = "marker-%d" % os.getpid()
    with open(os.path.join(site, "loom_venv_marker.py"), "w") as f:
        f.write("VALUE = %r\n" % token)
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent("""
        import json, os, loom

        def probe():
            import loom_venv_marker, sys
            return [loom_venv_marker.VALUE, sys.prefix, os.getcwd()]

        archive = loom.pack_venv()
        try:
            print(json.dumps(loom.run(probe, python_venv=archive, timeout=120)))
        finally:
            os.unlink(archive)
    """))
    done = subprocess.run([venv + "/bin/python", str(script)], capture_output=True, text=True, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    value, prefix, cwd = json.loads(done.stdout.strip().splitlines()[-1])
    assert value == token
    assert prefix != venv and os.path.basename(prefix) == "venv" and prefix.startswith(loom_home + "/jobs/")
    assert prefix.startswith(cwd)


def test_pack_venv_refuses_outside_a_venv(tmp_path):
    assert sys.prefix == sys.base_prefix, "the tests run under the system python"
    with pytest.raises(loom.LoomError, match="does not run in a virtualenv"):
        loom.pack_venv()
    with pytest.raises(loom.LoomError, match="is not a virtualenv"):
        loom.pack_venv(venv_dir=str(tmp_path))
