"""`pack_venv()`: the current virtualenv as a .tar.gz for `--python_venv` (venv-pack's job).

Loom unpacks the archive in every task as `venv/`, keeping its symlinks, and a relative
`python_binary_path` such as `bin/python` is then inside it. A `python3 -m venv` environment's
bin/python is a symlink to its base interpreter (e.g. /usr/bin/python3), so the tasks' machines
need that same interpreter; the packages are the venv's own. Scripts in bin/ keep their
absolute #! lines: run them as `bin/python -m ...`.
"""

import os
import sys
import tarfile
import tempfile

from .errors import LoomError


def _in_venv():
    return sys.prefix != getattr(sys, "base_prefix", sys.prefix)


def pack_venv(output=None, *, venv_dir=None, compresslevel=6):
    """Packs `venv_dir` (default: the virtualenv this Python runs in, sys.prefix) into a .tar.gz
    and returns its path (default: a new file in the temp dir; the caller removes it).

    Refuses (LoomError) outside a virtualenv, or when venv_dir has no pyvenv.cfg: a conda
    environment is packed with conda-pack, which Loom accepts as is.
    """
    if venv_dir is None:
        if not _in_venv():
            raise LoomError("pack_venv(): %s does not run in a virtualenv (sys.prefix is its base, %s): create "
                            "one (python3 -m venv DIR), install what the tasks need and call pack_venv() from "
                            "DIR/bin/python, or pass venv_dir=DIR" % (sys.executable, sys.prefix))
        venv_dir = sys.prefix
    venv_dir = os.path.abspath(os.fspath(venv_dir))
    if not os.path.isfile(os.path.join(venv_dir, "pyvenv.cfg")):
        raise LoomError("pack_venv(): %s is not a virtualenv (no pyvenv.cfg); for a conda environment use "
                        "conda-pack" % venv_dir)
    if output is None:
        fd, output = tempfile.mkstemp(prefix="loom-venv-", suffix=".tar.gz")
        os.close(fd)
    output = os.path.abspath(os.fspath(output))
    if not output.endswith((".tar.gz", ".tgz")):
        raise ValueError("pack_venv(): output %s must end in .tar.gz or .tgz (what --python_venv accepts)" % output)

    def keep(info):
        name = info.name
        if "/__pycache__" in "/" + name or name.endswith(".pyc"):
            return None  # rebuilt on first import; they only make the archive bigger
        return info

    real_output = os.path.realpath(output)
    with tarfile.open(output, "w:gz", compresslevel=compresslevel) as tar:
        for entry in sorted(os.listdir(venv_dir)):
            full = os.path.join(venv_dir, entry)
            if os.path.realpath(full) == real_output:
                continue
            # Symlinks stay symlinks (bin/python -> the base interpreter, lib64 -> lib).
            tar.add(full, arcname=entry, recursive=True, filter=keep)
    return output
