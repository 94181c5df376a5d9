"""Distributed data-parallel training of a small MLP on sklearn's digits set.

Run it with Loom (two workers, see tony.xml next to this file):

    loom submit --src_dir examples/pytorch --executes train_ddp.py \
        --python_binary_path /usr/bin/python3 \
        --conf_file examples/pytorch/tony.xml

Options for the script go in --task_params, e.g. --task_params "--epochs 10".

Loom gives every task MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE, so the
process group is created with init_method="env://" and the gloo backend (CPU).
The data set ships with scikit-learn, so nothing is downloaded; --data
hdfs:///user/$USER/digits.csv reads it from HDFS instead, as a task on a
Kerberized cluster can: with the delegation token Loom passes to every task
(hdfs_data.py; --export-digits writes that CSV).

Rank 0 writes <checkpoint-dir>/checkpoint.pt after every epoch. When Loom
restarts the job (LOOM_RESTART_COUNT > 0) and that file exists, training
resumes from the next epoch. Each task runs in its own working directory, so
point --checkpoint-dir (or LOOM_CHECKPOINT_DIR) at a shared location if the
restarted rank 0 may land elsewhere.

Every rank ends by printing "test accuracy: 0.9xxx", a digest of its final
weights ("[rank R] parameter digest: <sha256 prefix>") and, once all ranks
hold identical weights, "parameters agree across N ranks"; it exits 0, or 1
if the weights differ. On start each rank prints the ranks it was given:
"[rank R] ranks: RANK=.. LOCAL_RANK=.. GROUP_RANK=.. LOCAL_WORLD_SIZE=..
WORLD_SIZE=..".

Several processes per task (torchrun's --nproc_per_node): with
--conf tony.worker.processes=2 the two tasks run two processes each, a world
of 4 ranks (LOCAL_RANK 0/1 within a task, GROUP_RANK the task's rank). --fail-at-epoch/--fail-rank/--fail-code make one rank crash
on purpose on the first attempt, to try out Loom's failure handling and
restarts.

To run it by hand without Loom, start one process per rank (or use torchrun):

    MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2 RANK=0 python3 train_ddp.py &
    MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2 RANK=1 python3 train_ddp.py
"""
import argparse
import hashlib
import os
import sys
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-dir",
                   default=os.environ.get("LOOM_CHECKPOINT_DIR", "."),
                   help="where rank 0 keeps checkpoint.pt "
                        "(default: $LOOM_CHECKPOINT_DIR, else the cwd)")
    p.add_argument("--fail-at-epoch", type=int, default=None,
                   help="simulate a crash at the start of this epoch "
                        "(first attempt only, so a restart can succeed)")
    p.add_argument("--fail-rank", type=int, default=0,
                   help="rank that crashes with --fail-at-epoch")
    p.add_argument("--fail-code", type=int, default=3,
                   help="exit code of the simulated crash")
    p.add_argument("--data", default=None,
                   help="read the digits from this HDFS file (CSV: 64 features, "
                        "then the label) with the job's delegation token, "
                        "instead of scikit-learn's copy")
    p.add_argument("--export-digits", metavar="CSV", default=None,
                   help="write scikit-learn's digits as such a CSV and exit "
                        "(then: hdfs dfs -put CSV /user/$USER/digits.csv)")
    return p.parse_args()


def restart_count():
    for name in ("LOOM_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT"):
        value = os.environ.get(name, "")
        if value.strip():
            return int(value)
    return 0


def read_digits(uri, rank):
    import numpy as np

    import hdfs_data  # next to this script
    raw = hdfs_data.read(uri)
    table = np.loadtxt(raw.decode().splitlines(), delimiter=",")
    print(f"[rank {rank}] read {len(raw)} bytes ({len(table)} samples) from {uri}",
          flush=True)
    return table[:, :64], table[:, 64].astype(int)


def load_data(seed, data=None, rank=0):
    x, y = read_digits(data, rank) if data else load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.2, random_state=seed, stratify=y)
    scaler = StandardScaler().fit(x_train)

    def to_dataset(features, labels):
        return TensorDataset(
            torch.tensor(scaler.transform(features), dtype=torch.float32),
            torch.tensor(labels, dtype=torch.long))

    return to_dataset(x_train, y_train), to_dataset(x_test, y_test)


def accuracy(model, dataset):
    model.eval()
    x, y = dataset.tensors
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).float().mean().item()


def save_checkpoint(path, model, optimizer, epoch):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "epoch": epoch}, tmp)
    os.replace(tmp, path)


def hard_exit(code):
    """Flush and leave without running the interpreter's teardown.

    Freeing a DDP model destroys its gloo process group, which joins gloo's
    worker threads while holding the GIL; if one of them is still releasing a
    Python-owned tensor it needs the GIL too, and the process hangs forever
    (seen with PyTorch 1.13). So never free it: exit straight away.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def parameter_digest(model):
    """The first 16 hex digits of the SHA-256 of every parameter's bytes."""
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    return hashlib.sha256(flat.numpy().tobytes()).hexdigest()[:16]


def parameters_agree(model, rank, world_size):
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    high, low = flat.clone(), flat.clone()
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    spread = (high - low).abs().max().item()
    print(f"[rank {rank}] max parameter spread across {world_size} ranks: "
          f"{spread:.3g}", flush=True)
    return spread <= 1e-6


def main():
    args = parse_args()
    if args.export_digits:
        x, y = load_digits(return_X_y=True)
        with open(args.export_digits, "w") as f:
            for features, label in zip(x, y):
                f.write(",".join(f"{v:g}" for v in features) + f",{label}\n")
        print(f"wrote {len(y)} samples to {args.export_digits}")
        return
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    dist.init_process_group(backend="gloo", init_method="env://")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    print(f"[rank {rank}] joined group of {world_size} "
          f"(MASTER={os.environ.get('MASTER_ADDR')}:"
          f"{os.environ.get('MASTER_PORT')})", flush=True)
    given = " ".join(f"{name}={os.environ.get(name, '')}" for name in
                     ("RANK", "LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE",
                      "WORLD_SIZE"))
    print(f"[rank {rank}] ranks: {given}", flush=True)

    train_set, test_set = load_data(args.seed, args.data, rank)
    sampler = DistributedSampler(train_set, num_replicas=world_size,
                                 rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(),
                              nn.Linear(128, 64), nn.ReLU(),
                              nn.Linear(64, 10)))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    os.makedirs(args.checkpoint_dir, exist_ok=True)
    ckpt_path = os.path.join(args.checkpoint_dir, "checkpoint.pt")
    # Rank 0 reads the checkpoint and sends it to everybody: tasks have
    # private working directories, and the optimizer state must match too.
    state = None
    if rank == 0 and restart_count() > 0 and os.path.exists(ckpt_path):
        state = torch.load(ckpt_path, map_location="cpu")
    box = [state]
    dist.broadcast_object_list(box, src=0)
    state, start_epoch = box[0], 0
    if state is not None:
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch = state["epoch"] + 1
        print(f"[rank {rank}] resumed from epoch {state['epoch']}", flush=True)

    for epoch in range(start_epoch, args.epochs):
        if (args.fail_at_epoch == epoch and args.fail_rank == rank
                and restart_count() == 0):
            print(f"[rank {rank}] simulated failure at epoch {epoch}, "
                  f"exit code {args.fail_code}", file=sys.stderr, flush=True)
            hard_exit(args.fail_code)
        model.train()
        sampler.set_epoch(epoch)
        total, count = 0.0, 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
            count += len(y)
        print(f"[rank {rank}] epoch {epoch} loss {total / count:.4f}",
              flush=True)
        if rank == 0:
            save_checkpoint(ckpt_path, model.module, optimizer, epoch)

    acc = accuracy(model.module, test_set)
    print(f"test accuracy: {acc:.4f}", flush=True)
    print(f"[rank {rank}] parameter digest: {parameter_digest(model.module)}",
          flush=True)
    agree = parameters_agree(model.module, rank, world_size)
    if agree:
        print(f"parameters agree across {world_size} ranks", flush=True)
    else:
        print(f"[rank {rank}] parameters DISAGREE across ranks",
              file=sys.stderr, flush=True)
    dist.barrier()
    dist.destroy_process_group()
    hard_exit(0 if agree else 1)  # `model` must stay alive: see hard_exit


if __name__ == "__main__":
    try:
        main()
    except Exception:  # e.g. a peer died and gloo raised "Connection closed"
        traceback.print_exc()
        hard_exit(1)
