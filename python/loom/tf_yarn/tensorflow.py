"""tf-yarn's `tf_yarn.tensorflow`: run_on_yarn gives the tasks TF_CONFIG and CLUSTER_SPEC, and
trains the Experiment or KerasExperiment experiment_fn returns (see experiment.py)."""

from . import Experiment, KerasExperiment, TaskSpec, _with_framework

run_on_yarn = _with_framework("tensorflow", __name__, __doc__)

__all__ = ["Experiment", "KerasExperiment", "TaskSpec", "run_on_yarn"]
