#!/usr/bin/env python3
"""An MPI program for Loom's MPI tests (mpi4py; run by mpirun in the launcher task).

    mpi_allreduce.py [--crash-rank R] [--code N] [--sleep S]

Each rank sums rank+1 over every rank (allreduce) and prints

    rank R of S in TASK (pid P): allreduce=X workdir=DIR

where TASK is the Loom task that hosts it (LOOM_TASK_ID) and DIR its working directory. With
--crash-rank, rank R exits with --code (default 7) right after MPI is up, as a crashing rank
would, and the others wait in the allreduce for it. With --sleep, every rank then sleeps S
seconds (a job to stop from outside).
"""
import argparse
import os
import sys
import time

from mpi4py import MPI


def say(line, stream=sys.stdout):
    stream.write(line + "\n")
    stream.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crash-rank", type=int, default=-1)
    parser.add_argument("--code", type=int, default=7)
    parser.add_argument("--sleep", type=float, default=0)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if rank == args.crash_rank:
        say(f"rank {rank}: crashing with exit code {args.code}", sys.stderr)
        os._exit(args.code)
    total = comm.allreduce(rank + 1)
    task = os.environ.get("LOOM_TASK_ID", "?")
    # One write per line: mpirun forwards each write of each rank as it comes, so a line
    # written in pieces (print's text, then its newline) could be split by another rank's.
    say(f"rank {rank} of {size} in {task} (pid {os.getpid()}): allreduce={total} workdir={os.getcwd()}")
    if args.sleep:
        time.sleep(args.sleep)


if __name__ == "__main__":
    main()
