"""Horovod (PyTorch, gloo) data-parallel training of a small MLP on sklearn's digits set.

NOT RUNNABLE IN LOOM'S OWN TEST ENVIRONMENT: Horovod is not packaged there. Loom's
tests prove the same contract with tests/integration/scripts/gloo_rendezvous_client.py,
which performs a Horovod gloo context's rendezvous calls. To run this, the tasks'
Python needs Horovod built with gloo and PyTorch, e.g.

    HOROVOD_WITH_GLOO=1 HOROVOD_WITH_PYTORCH=1 pip install 'horovod[pytorch]'

(a --python_venv archive holding it works on YARN). Then, two tasks of two processes
(see tony.xml next to this file):

    loom submit --src_dir examples/horovod --executes train_horovod.py \
        --python_binary_path python3 \
        --conf_file examples/horovod/tony.xml

No horovodrun, no ssh, no MPI: Loom's AM serves the gloo rendezvous store and gives
each process horovodrun's variables (HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT,
HOROVOD_CONTROLLER=gloo, HOROVOD_RANK, ...), so hvd.init() finds its peers.

Every rank prints "[rank R] horovod: rank=.. size=.. local_rank=.. local_size=..
cross_rank=.. cross_size=.." at start, rank 0 the loss of each epoch and then
"test accuracy: 0.9xxx", and every rank "parameters agree across N ranks" once all
hold the same weights (exit 1 if they do not). The data set ships with scikit-learn,
so nothing is downloaded.
"""
import argparse
import sys

import horovod.torch as hvd
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--lr", type=float, default=1e-3, help="per rank; scaled by the world size")
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    return p.parse_args()


def data():
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
    scaler = StandardScaler().fit(x_train)
    as_set = lambda xs, ys: TensorDataset(torch.tensor(scaler.transform(xs), dtype=torch.float32),
                                          torch.tensor(ys, dtype=torch.long))
    return as_set(x_train, y_train), as_set(x_test, y_test)


def main():
    args = parse_args()
    hvd.init()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # several ranks share a task's vcores
    if torch.cuda.is_available():
        # LOCAL_RANK counts the processes of this task, which see only the task's GPUs.
        torch.cuda.set_device(hvd.local_rank())
    print(f"[rank {hvd.rank()}] horovod: rank={hvd.rank()} size={hvd.size()} local_rank={hvd.local_rank()} "
          f"local_size={hvd.local_size()} cross_rank={hvd.cross_rank()} cross_size={hvd.cross_size()}",
          flush=True)

    train, test = data()
    sampler = DistributedSampler(train, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr * hvd.size())
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    # Every rank starts from rank 0's weights and optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        total, batches = 0.0, 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()  # gradients are averaged across the ranks here
            total, batches = total + loss.item(), batches + 1
        mean = hvd.allreduce(torch.tensor(total / max(batches, 1)), name="epoch_loss").item()
        if hvd.rank() == 0:
            print(f"epoch {epoch + 1}/{args.epochs}: loss {mean:.4f}", flush=True)

    model.eval()
    with torch.no_grad():
        x, y = test.tensors
        accuracy = (model(x).argmax(dim=1) == y).float().mean()
    accuracy = hvd.allreduce(accuracy, name="accuracy").item()
    if hvd.rank() == 0:
        print(f"test accuracy: {accuracy:.4f}", flush=True)

    # The same weights everywhere: each rank's checksum, gathered on all of them.
    checksum = torch.tensor([sum(p.double().sum().item() for p in model.parameters())])
    everyone = hvd.allgather(checksum, name="checksum")
    if torch.allclose(everyone, everyone[0].expand_as(everyone)):
        print(f"[rank {hvd.rank()}] parameters agree across {hvd.size()} ranks", flush=True)
        return 0
    print(f"[rank {hvd.rank()}] parameters differ between ranks: {everyone.tolist()}", file=sys.stderr, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
