"""MPI without ssh: estimates pi with mpi4py across every rank of a Loom MPI job.

Each rank integrates 4/(1+x^2) over its share of [0, 1]; an allreduce sums the shares, so every
rank ends with the same estimate, and rank 0 prints it. Run it with Open MPI's mpirun on the
local backend (or --cluster yarn):

    loom submit --src_dir examples/mpi --executes allreduce.py \\
        --python_binary_path /usr/bin/python3 --conf_file examples/mpi/loom.xml

Loom runs `mpirun -np 6 ... python3 allreduce.py` in the launcher task; Open MPI starts its
daemon in each worker task through Loom (no ssh), and each daemon starts 2 ranks.
"""
import math
import os
import socket
import sys

from mpi4py import MPI

STEPS = 3_000_000


def say(line):
    # One write per line: mpirun forwards each write of each rank as it comes, and print's text
    # and newline are two.
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    width = 1.0 / STEPS
    share = sum(4.0 / (1.0 + ((i + 0.5) * width) ** 2) for i in range(rank, STEPS, size)) * width
    pi = comm.allreduce(share, op=MPI.SUM)
    say(f"rank {rank}/{size} in {os.environ.get('LOOM_TASK_ID', '?')} on {socket.gethostname()}: share {share:.6f}")
    if rank == 0:
        say(f"pi ~ {pi:.12f} (error {abs(pi - math.pi):.1e}) from {size} ranks")


if __name__ == "__main__":
    main()
