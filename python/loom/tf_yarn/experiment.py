"""tf-yarn's experiments on Loom: `Experiment` and `KerasExperiment`, and what a task does when
experiment_fn returns one (`run_experiment`, called in every task by `run_on_yarn`).

As tf-yarn's tasks do:
- `Experiment(estimator, train_spec, eval_spec)`: every task runs
  `tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)`; TF_CONFIG gives each its
  role (chief, worker, ps, evaluator). The chief's result comes back (TF's (eval_result,
  export_results), or None).
- `KerasExperiment(model, model_dir, train_params, input_data_fn, target_data_fn,
  validation_data_fn)`: each chief and worker task runs `model.fit(**train_params)`, with x from
  input_data_fn() and y from target_data_fn() when given, and without `ModelCheckpoint` callbacks
  but on the chief (tf-yarn's Horovod task). The chief's `History.history` comes back.
What tf-yarn does not run either, or runs with machinery Loom lacks, fails the task with a
message naming it: a KerasExperiment on an evaluator (tf-yarn's polls model_dir's checkpoints
through its own metrics), on a ps or any other type, and tf-yarn's PytorchExperiment.
Anything else experiment_fn returns is its result, as before: it did the training itself.
"""

import json
import os
from typing import Any, Callable, NamedTuple, Optional

from .. import _task


class Experiment(NamedTuple):
    """tf-yarn's Experiment: a tf.estimator.Estimator with its TrainSpec and EvalSpec."""

    estimator: Any
    train_spec: Any
    eval_spec: Any

    @property
    def config(self):
        return self.estimator.config


class KerasExperiment(NamedTuple):
    """tf-yarn's KerasExperiment: a compiled Keras model and the arguments of its fit()."""

    model: Any
    model_dir: str
    train_params: dict
    input_data_fn: Optional[Callable]
    target_data_fn: Optional[Callable]
    validation_data_fn: Callable


_KINDS = ("Experiment", "KerasExperiment", "PytorchExperiment")
# The types that train a KerasExperiment in tf-yarn (its Horovod task), with Loom's "master".
_KERAS_TRAINERS = ("chief", "master", "worker")


def _kind(result):
    """The name of the tf-yarn experiment `result` is, from _KINDS (ours, or tf_yarn's own classes
    for a program that still imports them), else None."""
    if isinstance(result, (Experiment, KerasExperiment)):
        return type(result).__name__
    cls = type(result)
    if isinstance(result, tuple) and cls.__name__ in _KINDS and cls.__module__.split(".")[0] == "tf_yarn":
        return cls.__name__
    return None


def _task_type():
    if os.environ.get("JOB_NAME"):
        return os.environ["JOB_NAME"]
    try:
        return json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {}).get("type")
    except ValueError:
        return None


def _import_tensorflow(kind):
    try:
        import tensorflow
    except ImportError as e:
        # Name what is missing and where it goes, rather than a bare ModuleNotFoundError.
        raise ImportError("experiment_fn returned a tf-yarn %s, which the task runs with TensorFlow, but `import "
                          "tensorflow` failed in this task (%s): ship TensorFlow in the task's Python environment "
                          "(pyenv_zip_path, python_venv)" % (kind, e)) from e
    return tensorflow


def _fit(tf, experiment, task_type):
    if task_type not in _KERAS_TRAINERS:
        why = ("tf-yarn's Keras evaluator polls model_dir's checkpoints through its own metrics; evaluate in "
               "train_params (validation_data) instead" if task_type == "evaluator" else
               "tf-yarn runs a KerasExperiment without parameter servers" if task_type == "ps" else
               "only chief and worker tasks train it")
        raise ValueError("KerasExperiment in a task of type %r: Loom does not run it there (%s); remove that type"
                         % (task_type, why))
    params = dict(experiment.train_params or {})
    if not _task.is_result_process():
        # Only the chief writes checkpoints: every task writing model_dir would race.
        params["callbacks"] = [c for c in params.get("callbacks") or []
                               if not isinstance(c, tf.keras.callbacks.ModelCheckpoint)]
    if experiment.input_data_fn is not None:
        params["x"] = experiment.input_data_fn()
    if experiment.target_data_fn is not None:
        params["y"] = experiment.target_data_fn()
    history = experiment.model.fit(**params)
    # The History, not the model it holds: that may not pickle, and is large.
    return getattr(history, "history", None)


class ExperimentRunner:
    """experiment_fn as every task calls it: run_experiment(experiment_fn). Named after it, for
    loom.run()'s messages."""

    def __init__(self, experiment_fn):
        self.experiment_fn = experiment_fn
        self.__name__ = getattr(experiment_fn, "__name__", "experiment_fn")

    def __call__(self):
        return run_experiment(self.experiment_fn)


def run_experiment(experiment_fn):
    """Calls experiment_fn() in this task and runs the tf-yarn experiment it returns (see above);
    returns what the chief sends back. Raises ImportError without TensorFlow, ValueError for a
    shape Loom does not run."""
    experiment = experiment_fn()
    kind = _kind(experiment)
    if kind is None:
        return experiment
    if kind == "PytorchExperiment":
        raise ValueError("experiment_fn returned a tf-yarn PytorchExperiment: Loom does not run tf-yarn's PyTorch "
                         "worker (DataLoader, DistributedDataParallel); have experiment_fn train itself with the "
                         "pytorch variables (loom.tf_yarn.pytorch.run_on_yarn) and return its result")
    tf = _import_tensorflow(kind)
    if kind == "Experiment":
        return tf.estimator.train_and_evaluate(experiment.estimator, experiment.train_spec, experiment.eval_spec)
    return _fit(tf, experiment, _task_type())
