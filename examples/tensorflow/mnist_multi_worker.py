"""Multi-worker Keras training with tf.distribute.MultiWorkerMirroredStrategy.

Despite the file name it trains on scikit-learn's 8x8 digits (a small
MNIST-like set that ships with scikit-learn), so no task needs to download
anything. Requirements on every node: tensorflow >= 2.4 and scikit-learn.

Run it with Loom (one chief and two workers, see tony.xml next to this file):

    loom submit --src_dir examples/tensorflow --executes mnist_multi_worker.py \
        --python_binary_path /usr/bin/python3 \
        --conf_file examples/tensorflow/tony.xml

Options for the script go in --task_params, e.g. --task_params "--epochs 5".

Loom sets TF_CONFIG for every task ({"cluster": {...}, "task": {"type": ...,
"index": ...}}), which is all MultiWorkerMirroredStrategy needs to find its
peers. Without TF_CONFIG the script trains alone, which is handy for a quick
local try: python3 mnist_multi_worker.py --epochs 3

Only the chief writes the final model to --model-dir; the other workers save
into a scratch directory (every worker must take part in saving, because
saving runs collective operations). Training state is backed up to
--backup-dir after every epoch, so a job that Loom restarts carries on from
the last finished epoch instead of starting over.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32,
                   help="per replica; the global batch is this times the "
                        "number of replicas in the cluster")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model-dir", default="model",
                   help="where the chief saves the trained model "
                        "(as digits.keras)")
    p.add_argument("--backup-dir",
                   default=os.environ.get("LOOM_CHECKPOINT_DIR", "backup"),
                   help="BackupAndRestore directory; should be shared by "
                        "all tasks for restarts to resume")
    return p.parse_args()


def task_info():
    """(type, index, is_chief) from TF_CONFIG; a lone worker is the chief."""
    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = tf_config.get("task", {})
    task_type, index = task.get("type", "worker"), int(task.get("index", 0))
    has_chief = "chief" in tf_config.get("cluster", {})
    is_chief = task_type == "chief" or (
        task_type == "worker" and index == 0 and not has_chief)
    return task_type, index, is_chief


def load_data(seed):
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)  # pixel values are 0..16
    return train_test_split(x, y.astype(np.int64), test_size=0.2,
                            random_state=seed, stratify=y)


def make_dataset(x, y, global_batch, seed):
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.shuffle(len(x), seed=seed).repeat().batch(global_batch)
    # The data is in memory on every worker: shard by element, not by file.
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.DATA)
    return ds.with_options(options)


def backup_callback(backup_dir):
    callbacks = tf.keras.callbacks
    if hasattr(callbacks, "BackupAndRestore"):  # TensorFlow >= 2.8
        return callbacks.BackupAndRestore(backup_dir)
    return callbacks.experimental.BackupAndRestore(backup_dir)


def build_model(lr):
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(64,)),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate=lr),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"])
    return model


def main():
    args = parse_args()
    # The strategy must exist before any other TensorFlow operation runs.
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    task_type, index, is_chief = task_info()
    replicas = strategy.num_replicas_in_sync
    print(f"{task_type}:{index} chief={is_chief} replicas={replicas}",
          flush=True)

    tf.random.set_seed(args.seed)
    x_train, x_test, y_train, y_test = load_data(args.seed)
    global_batch = args.batch_size * replicas
    train_ds = make_dataset(x_train, y_train, global_batch, args.seed)

    with strategy.scope():
        model = build_model(args.lr)

    # A fixed number of steps per epoch over a repeated dataset keeps every
    # worker in step, whatever its shard size.
    model.fit(train_ds, epochs=args.epochs,
              steps_per_epoch=max(1, len(x_train) // global_batch),
              callbacks=[backup_callback(args.backup_dir)],
              verbose=2 if is_chief else 0)

    # Every worker holds the same weights now; score the test set locally
    # (no collectives, so uneven shards cannot make anybody wait).
    logits = model(x_test, training=False)
    accuracy = float(np.mean(np.argmax(logits, axis=1) == y_test))
    print(f"test accuracy: {accuracy:.4f}", flush=True)

    # Everyone saves (it is a collective), but only the chief keeps its copy.
    save_dir = args.model_dir if is_chief else tempfile.mkdtemp(
        prefix=f"{task_type}{index}-")
    os.makedirs(save_dir, exist_ok=True)
    model.save(os.path.join(save_dir, "digits.keras"))
    if is_chief:
        print(f"model saved to {os.path.abspath(save_dir)}", flush=True)
    else:
        shutil.rmtree(save_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
