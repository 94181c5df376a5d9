#!/usr/bin/env python3
"""One process of a Loom task fails; the others wait (stdlib only).

    process_fail.py --task TYPE:INDEX --process I [--code N] [--delay S]
                    [--others-sleep S]

Every process prints "<task>/<LOCAL_RANK> started pid <pid>" to stdout. On
the first attempt (LOOM_RESTART_COUNT 0) the process LOCAL_RANK I of task
TYPE:INDEX waits --delay seconds, prints "<task>/<I> failing with code N" to
stderr and exits N (default 3); every other process sleeps --others-sleep
seconds (default 120, i.e. until stopped), prints "<task>/<rank> done" and
exits 0. On a restart every process prints "<task>/<rank> attempt K ok" and
exits 0 at once.
"""
import argparse
import os
import sys

from task_end import fail_or_finish


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--task", required=True)
    p.add_argument("--process", type=int, required=True)
    p.add_argument("--code", type=int, default=3)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--others-sleep", type=float, default=120.0)
    args = p.parse_args()

    task = os.environ.get("LOOM_TASK_ID", "?")
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    attempt = int(os.environ.get("LOOM_RESTART_COUNT", "0") or 0)
    me = f"{task}/{rank}"
    print(f"{me} started pid {os.getpid()}", flush=True)
    if attempt > 0:
        print(f"{me} attempt {attempt} ok", flush=True)
        return 0
    return fail_or_finish(me, task == args.task and rank == args.process, args,
                          [f"{me} failing with code {args.code}"])


if __name__ == "__main__":
    sys.exit(main())
