#!/usr/bin/env python3
"""Checks the environment Loom gives a PyTorch task.

Reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK,
LOCAL_WORLD_SIZE, INIT_METHOD, WORLD, JOB_NAME and TASK_INDEX, prints

  TORCHENV {"RANK": 1, "WORLD_SIZE": 4, ..., "JOB_NAME": "worker", ...}

(numbers as JSON integers, missing variables as null) and checks:
  * all of them are set; the numeric ones are integers;
  * 0 <= RANK < WORLD_SIZE, 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE,
    0 < MASTER_PORT < 65536, TASK_INDEX >= 0;
  * INIT_METHOD == "tcp://MASTER_ADDR:MASTER_PORT" and WORLD == WORLD_SIZE.
Exits 0 if all hold, else prints "torch env check failed: <what>" lines to
stderr and exits 1. Without --rendezvous only the standard library is used.

With --rendezvous the task also joins a gloo process group through env://
(--timeout seconds, default 60), gathers every task's (RANK, JOB_NAME,
TASK_INDEX) and checks that the ranks are exactly 0..WORLD_SIZE-1, printing
  ranks unique: [0, 1, 2, 3]
and that they follow Loom's order (chief first, then worker, then the other
types by name, by index within a type), printing
  rank order: chief:0 worker:0 worker:1 ps:0
--no-order-check skips the second check.
"""
import argparse
import json
import os
import sys

INT_VARS = ("RANK", "WORLD_SIZE", "MASTER_PORT", "LOCAL_RANK",
            "LOCAL_WORLD_SIZE", "WORLD", "TASK_INDEX")
ALL_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK",
            "LOCAL_WORLD_SIZE", "INIT_METHOD", "WORLD", "JOB_NAME",
            "TASK_INDEX")


def read_env():
    values, problems = {}, []
    for name in ALL_VARS:
        raw = os.environ.get(name)
        if raw is None or raw == "":
            problems.append(f"{name} is not set")
            values[name] = None
        elif name in INT_VARS:
            try:
                values[name] = int(raw)
            except ValueError:
                problems.append(f"{name} is not an integer: {raw!r}")
                values[name] = raw
        else:
            values[name] = raw
    return values, problems


def check_env(v):
    problems = []
    if not 0 <= v["RANK"] < v["WORLD_SIZE"]:
        problems.append(f"RANK {v['RANK']} not in 0..WORLD_SIZE-1 "
                        f"(WORLD_SIZE {v['WORLD_SIZE']})")
    if not 0 <= v["LOCAL_RANK"] < v["LOCAL_WORLD_SIZE"]:
        problems.append(f"LOCAL_RANK {v['LOCAL_RANK']} not in "
                        f"0..LOCAL_WORLD_SIZE-1 ({v['LOCAL_WORLD_SIZE']})")
    if not 0 < v["MASTER_PORT"] < 65536:
        problems.append(f"MASTER_PORT {v['MASTER_PORT']} out of range")
    if v["TASK_INDEX"] < 0:
        problems.append(f"TASK_INDEX {v['TASK_INDEX']} is negative")
    init_method = f"tcp://{v['MASTER_ADDR']}:{v['MASTER_PORT']}"
    if v["INIT_METHOD"] != init_method:
        problems.append(f"INIT_METHOD {v['INIT_METHOD']!r} != "
                        f"{init_method!r}")
    if v["WORLD"] != v["WORLD_SIZE"]:
        problems.append(f"WORLD {v['WORLD']} != WORLD_SIZE "
                        f"{v['WORLD_SIZE']}")
    return problems


def type_order(task_type):
    return {"chief": (0, ""), "worker": (1, "")}.get(task_type,
                                                     (2, task_type))


def rendezvous(v, timeout, order_check):
    """Returns a list of problems; leaves the process group up (see main)."""
    import datetime

    import torch
    import torch.distributed as dist

    dist.init_process_group(backend="gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=timeout))
    mine = (v["RANK"], v["JOB_NAME"], v["TASK_INDEX"])
    everyone = [None] * v["WORLD_SIZE"]
    dist.all_gather_object(everyone, mine)
    ranks = [torch.tensor([0]) for _ in range(v["WORLD_SIZE"])]
    dist.all_gather(ranks, torch.tensor([v["RANK"]]))
    dist.barrier()

    problems = []
    gathered = [int(r.item()) for r in ranks]
    if sorted(gathered) != list(range(v["WORLD_SIZE"])):
        problems.append(f"gathered ranks {gathered} are not "
                        f"0..{v['WORLD_SIZE'] - 1}")
    else:
        print(f"ranks unique: {gathered}", flush=True)
    by_rank = sorted(everyone)
    tasks = [f"{t}:{i}" for _, t, i in by_rank]
    if len(set(tasks)) != len(tasks):
        problems.append(f"two ranks claim the same task: {by_rank}")
    if order_check:
        wanted = sorted(by_rank, key=lambda e: (type_order(e[1]), e[2]))
        if [(t, i) for _, t, i in wanted] != [(t, i) for _, t, i in by_rank]:
            problems.append(f"rank order {' '.join(tasks)} is not chief, "
                            f"worker, then other types by name")
        else:
            print(f"rank order: {' '.join(tasks)}", flush=True)
    return problems


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--rendezvous", action="store_true")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--no-order-check", action="store_true")
    args = parser.parse_args()

    values, problems = read_env()
    print("TORCHENV " + json.dumps(values), flush=True)
    if not problems:
        problems = check_env(values)
    if not problems and args.rendezvous:
        try:
            problems = rendezvous(values, args.timeout,
                                  not args.no_order_check)
        except Exception as e:  # timeouts, refused connections, ...
            problems = [f"rendezvous failed: {type(e).__name__}: {e}"]
    for problem in problems:
        print(f"torch env check failed: {problem}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: tearing a gloo process group down at interpreter exit can
    # deadlock in PyTorch 1.13 (a gloo thread waits for the GIL).
    os._exit(1 if problems else 0)


if __name__ == "__main__":
    main()
