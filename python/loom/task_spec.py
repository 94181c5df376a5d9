"""`TaskSpec`: what each task of one type gets (`loom.<type>.*`), in Loom's words and in
tf-yarn's (`tf_yarn.TaskSpec`: memory as skein writes it, `nb_proc_per_worker`, `NodeLabel`).
"""

import enum
import math
import re
from dataclasses import dataclass
from typing import Optional, Union

_TYPE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_MEMORY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([a-z]*)$")
# Bytes per unit, as skein reads memory (and Loom's own "2g", "512m"): k/m/g/t and KiB/MiB/GiB/TiB
# are binary, KB/MB/GB/TB decimal; a bare number is MiB.
_UNITS = {"": 2 ** 20, "b": 1}
for _i, _letter in enumerate("kmgt", start=1):
    _UNITS[_letter] = _UNITS[_letter + "i"] = _UNITS[_letter + "ib"] = 2 ** (10 * _i)
    _UNITS[_letter + "b"] = 10 ** (3 * _i)


class NodeLabel(enum.Enum):
    """tf-yarn's node labels: CPU (no label, any node) and GPU (nodes labelled "gpu")."""

    CPU = ""
    GPU = "gpu"


def memory_mib(value, what="memory"):
    """MiB for a memory size: an int (MiB), or a string such as "2 GiB", "512 MiB", "2g", "1.5 GB"
    (skein's and tf-yarn's forms, and Loom's), rounded up to a whole MiB. ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError("%s=%r: expected an int (MiB) or a string such as '2 GiB'" % (what, value))
    if isinstance(value, int):
        mib = value
    else:
        m = _MEMORY.match(value.replace(" ", "").lower())
        if not m or m.group(2) not in _UNITS:
            raise ValueError("%s=%r: expected a size such as '2 GiB', '512 MiB', '2g' or '1.5 GB' (KiB/MiB/GiB/TiB "
                             "and k/m/g/t are binary, KB/MB/GB/TB decimal), or an int of MiB" % (what, value))
        mib = math.ceil(float(m.group(1)) * _UNITS[m.group(2)] / 2 ** 20)
    if mib < 0:
        raise ValueError("%s=%r: expected a size >= 0" % (what, value))
    return mib


@dataclass(frozen=True, init=False)
class TaskSpec:
    """What each task of one type gets: `loom.<type>.instances|memory|vcores|gpus|node-label|processes`.

    The first four can be given in tf-yarn's order, TaskSpec(memory, vcores, instances, label);
    the rest by name.
    memory: an int (MiB) or a string, "2 GiB", "512 MiB", "2g" (skein's and tf-yarn's forms);
    kept as MiB. None leaves Loom's default (or the conf file's).
    label: a node label, or tf-yarn's NodeLabel (CPU: none).
    processes: `loom.<type>.processes`, processes per task (torchrun's --nproc_per_node);
    nb_proc_per_worker is tf-yarn's name for it.
    tb_model_dir (tf-yarn, type "tensorboard" only): the dir the sidecar TensorBoard serves
    (loom.application.tensorboard-log-dir). tf-yarn's tb_termination_timeout_seconds and
    tb_extra_args have no Loom counterpart and are refused.
    """

    memory: Optional[int]
    vcores: Optional[int]
    instances: int
    label: Optional[str]
    gpus: Optional[int]
    processes: Optional[int]
    tb_model_dir: Optional[str]

    def __init__(self, memory=None, vcores=None, instances=1, label=None, *, gpus=None, processes=None,
                 nb_proc_per_worker=None, tb_model_dir=None, tb_termination_timeout_seconds=None,
                 tb_extra_args=None):
        if nb_proc_per_worker is not None:
            if processes is not None and processes != nb_proc_per_worker:
                raise ValueError("TaskSpec(processes=%r, nb_proc_per_worker=%r): the same setting twice (tf-yarn's "
                                 "name and Loom's); give one" % (processes, nb_proc_per_worker))
            processes = nb_proc_per_worker
        # tf-yarn's own default (-1) asks for nothing.
        if tb_termination_timeout_seconds not in (None, -1):
            raise ValueError("TaskSpec(tb_termination_timeout_seconds=%r) is tf-yarn's: Loom stops a sidecar "
                             "TensorBoard when the tracked tasks finish; remove it" % (tb_termination_timeout_seconds,))
        if tb_extra_args is not None:
            raise ValueError("TaskSpec(tb_extra_args=%r) is tf-yarn's: Loom runs its sidecar TensorBoard with "
                             "loom.tensorboard.command; set that (conf=) instead" % (tb_extra_args,))
        values = {"memory": None if memory is None else memory_mib(memory, "TaskSpec(memory)"), "vcores": vcores,
                  "instances": instances, "label": (label.value if isinstance(label, NodeLabel) else label) or None,
                  "gpus": gpus, "processes": processes, "tb_model_dir": tb_model_dir}
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @property
    def nb_proc_per_worker(self):
        """tf-yarn's name for `processes`."""
        return self.processes

    def conf(self, task_type):
        """[(key, value)] for `--conf`, for the type `task_type`."""
        if not isinstance(task_type, str) or not _TYPE_NAME.match(task_type):
            raise ValueError("task type %r: expected letters, digits, '_' or '-' (e.g. 'worker')" % (task_type,))
        out = []
        for attr, key in (("instances", "instances"), ("memory", "memory"), ("vcores", "vcores"),
                          ("gpus", "gpus"), ("label", "node-label"), ("processes", "processes")):
            value = getattr(self, attr)
            if value is None:
                continue
            if isinstance(value, bool) or (attr != "label" and not isinstance(value, int)):
                raise TypeError("TaskSpec(%s=%r) for %s: expected an int" % (attr, value, task_type))
            out.append(("loom.%s.%s" % (task_type, key), str(value)))
        if self.tb_model_dir is not None:
            if task_type != "tensorboard":
                raise ValueError("TaskSpec(tb_model_dir=...) for %s: only the 'tensorboard' type serves a model dir"
                                 % task_type)
            out.append(("loom.application.tensorboard-log-dir", str(self.tb_model_dir)))
        return out
