"""A PEP 517 / PEP 660 build backend for the `loom` package, standard library only.

pip builds a pyproject.toml project in an isolated environment and installs the backend's
`requires` there first; setuptools would have to come from an index. This backend needs nothing
(`requires = []`), so `pip install ./python` (and `--no-index`) works on a machine with no
network. It writes the wheel and the sdist itself with zipfile and tarfile: the package is pure
Python, one directory (`loom/`).

Metadata comes from pyproject.toml's [project] table (name, version, description,
requires-python, dependencies); nothing else in it is read.
"""

import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = "loom"
# A fixed timestamp keeps the archives byte-identical from one build to the next.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_TAR_TIME = 315532800


def _project():
    """The [project] table of pyproject.toml."""
    with open(os.path.join(_ROOT, "pyproject.toml"), "rb") as f:
        raw = f.read()
    try:
        import tomllib  # Python 3.11
    except ImportError:  # older Pythons: the few flat keys this file uses
        return _parse_flat_project(raw.decode("utf-8"))
    return tomllib.loads(raw.decode("utf-8"))["project"]


def _parse_flat_project(text):
    project, in_project = {}, False
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("["):
            in_project = line == "[project]"
            continue
        m = re.match(r'^([A-Za-z-]+)\s*=\s*(.+)$', line)
        if not in_project or not m:
            continue
        key, value = m.group(1), m.group(2).strip()
        if value.startswith("["):
            project[key] = re.findall(r'"([^"]*)"', value)
        else:
            project[key] = value.strip('"')
    return project


def _names():
    p = _project()
    name = re.sub(r"[-_.]+", "_", p["name"]).lower()
    return p, name, "%s-%s" % (name, p["version"])


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", "Name: %s" % p["name"], "Version: %s" % p["version"]]
    if p.get("description"):
        lines.append("Summary: %s" % p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: %s" % p["requires-python"])
    for dep in p.get("dependencies", []):
        lines.append("Requires-Dist: %s" % dep)
    return "\n".join(lines) + "\n"


def _package_files():
    """(path on disk, path in the archive) of every file of the package, sorted."""
    out = []
    top = os.path.join(_ROOT, _PACKAGE)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, fn)
            out.append((full, os.path.relpath(full, _ROOT).replace(os.sep, "/")))
    return out


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "sha256=" + digest


def _write_wheel(wheel_directory, contents):
    """Writes a py3-none-any wheel holding `contents` ([(archive path, bytes)]) plus dist-info."""
    _, name, base = _names()
    dist_info = base + ".dist-info"
    files = list(contents)
    files.append((dist_info + "/METADATA", _metadata().encode()))
    files.append((dist_info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: loom_build\nRoot-Is-Purelib: true\n"
                  b"Tag: py3-none-any\n"))
    files.append((dist_info + "/top_level.txt", (_PACKAGE + "\n").encode()))
    record = ["%s,%s,%d" % (path, _record_hash(data), len(data)) for path, data in files]
    record.append(dist_info + "/RECORD,,")
    files.append((dist_info + "/RECORD", ("\n".join(record) + "\n").encode()))
    filename = base + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files:
            info = zipfile.ZipInfo(path, date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return filename


def _write_metadata_dir(metadata_directory):
    _, _, base = _names()
    dist_info = os.path.join(metadata_directory, base + ".dist-info")
    os.makedirs(dist_info, exist_ok=True)
    with open(os.path.join(dist_info, "METADATA"), "w") as f:
        f.write(_metadata())
    return base + ".dist-info"


# ---- PEP 517 ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_metadata_dir(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    contents = []
    for full, arc in _package_files():
        with open(full, "rb") as f:
            contents.append((arc, f.read()))
    return _write_wheel(wheel_directory, contents)


def build_sdist(sdist_directory, config_settings=None):
    _, _, base = _names()
    filename = base + ".tar.gz"
    members = [(os.path.join(_ROOT, "pyproject.toml"), "pyproject.toml"),
               (os.path.abspath(__file__), "_build/loom_build.py")] + _package_files()
    tests = os.path.join(_ROOT, "tests")
    if os.path.isdir(tests):
        for fn in sorted(os.listdir(tests)):
            if fn.endswith(".py"):
                members.append((os.path.join(tests, fn), "tests/" + fn))
    # gzip's header holds a time too: 0, so that a rebuild gives the same bytes.
    with open(os.path.join(sdist_directory, filename), "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(arcname, data):
            info = tarfile.TarInfo(base + "/" + arcname)
            info.size, info.mtime, info.mode = len(data), _TAR_TIME, 0o644
            tar.addfile(info, io.BytesIO(data))
        for full, arc in members:
            with open(full, "rb") as f:
                add(arc, f.read())
        add("PKG-INFO", _metadata().encode())
    return filename


# ---- PEP 660 (pip install -e): a .pth file pointing at this directory ----

def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _write_metadata_dir(metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [("_loom_editable.pth", (_ROOT + "\n").encode())])
