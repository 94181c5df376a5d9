#!/usr/bin/env python3
"""Calls Open MPI's rsh agent of a Loom MPI launcher directly, as mpirun would (stdlib only).

Run as the launcher's own command (loom.launcher.command, so no mpirun). For each HOST=COMMAND
argument it runs `$OMPI_MCA_plm_rsh_agent HOST COMMAND` and prints

    HOST: exit N stderr='...'
"""
import os
import shlex
import subprocess
import sys


def main():
    agent = shlex.split(os.environ["OMPI_MCA_plm_rsh_agent"])
    with open(os.environ["OMPI_MCA_orte_default_hostfile"]) as f:
        print("hostfile:", " | ".join(line.strip() for line in f), flush=True)
    for arg in sys.argv[1:]:
        host, _, command = arg.partition("=")
        p = subprocess.run(agent + [host, command], capture_output=True, text=True)
        print(f"{host}: exit {p.returncode} stderr={p.stderr.strip()!r}", flush=True)


if __name__ == "__main__":
    main()
