#!/usr/bin/env python3
"""Makes chosen Loom tasks fail with a chosen exit code (stdlib only).

    fail_with.py [--task TYPE:INDEX ...] [--code N] [--delay S]
                 [--others-sleep S] [--lines N]

Every task first prints --lines numbered lines to stdout and to stderr
("<type>:<index> stdout line i/N", "<type>:<index> stderr line i/N").
A task named by --task (repeat it, or separate with commas: worker:1,ps:0;
"worker:*" matches every worker; no --task at all matches every task) then
waits --delay seconds, prints to stderr

    <JOB_NAME>:<TASK_INDEX> exiting with code N
    fatal: simulated failure in <JOB_NAME>:<TASK_INDEX>

and exits with --code (default 3). Any other task sleeps --others-sleep
seconds (default 0), prints "<type>:<index> done" and exits 0.
"""
import argparse
import os
import sys

from task_end import fail_or_finish


def matches(patterns, job_name, task_index):
    if not patterns:
        return True
    for pattern in patterns:
        name, _, index = pattern.partition(":")
        if name == job_name and index in ("*", task_index):
            return True
    return False


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--task", action="append", default=[],
                   metavar="TYPE:INDEX", help="task(s) that fail")
    p.add_argument("--code", type=int, default=3)
    p.add_argument("--delay", type=float, default=0.0,
                   help="seconds before a failing task exits")
    p.add_argument("--others-sleep", type=float, default=0.0,
                   help="seconds the other tasks sleep before exiting 0")
    p.add_argument("--lines", type=int, default=3,
                   help="lines printed to stdout and to stderr first")
    args = p.parse_args()
    patterns = [t.strip() for arg in args.task for t in arg.split(",")
                if t.strip()]

    job_name = os.environ.get("JOB_NAME", "unknown")
    task_index = os.environ.get("TASK_INDEX", "0")
    me = f"{job_name}:{task_index}"
    for i in range(1, args.lines + 1):
        print(f"{me} stdout line {i}/{args.lines}", flush=True)
        print(f"{me} stderr line {i}/{args.lines}", file=sys.stderr,
              flush=True)

    return fail_or_finish(me, matches(patterns, job_name, task_index), args,
                          [f"{me} exiting with code {args.code}",
                           f"fatal: simulated failure in {me}"])


if __name__ == "__main__":
    sys.exit(main())
