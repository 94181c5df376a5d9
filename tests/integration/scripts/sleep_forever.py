#!/usr/bin/env python3
"""Starts and never ends: for tests of killing and cleanup (stdlib only).

    sleep_forever.py [--spawn-child] [--child-setsid] [--ignore-sigterm]
                     [--pid-file PATH]

Prints "started <JOB_NAME>:<TASK_INDEX> pid=<pid>" (flushed) and sleeps
until killed. --spawn-child forks a grandchild of the launcher that sleeps
too and prints "child of <JOB_NAME>:<TASK_INDEX> pid=<pid> ppid=<ppid>";
with --child-setsid that grandchild moves to a session (and process group)
of its own, as daemons do. --ignore-sigterm makes both ignore SIGTERM, so
only SIGKILL ends them (prints "ignoring SIGTERM" when one arrives).
--pid-file appends each pid, one per line, to PATH.
"""
import argparse
import os
import signal
import sys
import time


def note_pid(path):
    if path:
        with open(path, "a") as f:
            f.write(f"{os.getpid()}\n")


def sleep_forever():
    while True:
        time.sleep(3600)


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--spawn-child", action="store_true")
    p.add_argument("--child-setsid", action="store_true")
    p.add_argument("--ignore-sigterm", action="store_true")
    p.add_argument("--pid-file")
    args = p.parse_args()
    me = (f"{os.environ.get('JOB_NAME', 'unknown')}:"
          f"{os.environ.get('TASK_INDEX', '0')}")

    if args.ignore_sigterm:
        def ignore(signum, frame):
            print(f"{me} pid={os.getpid()} ignoring SIGTERM", flush=True)
        signal.signal(signal.SIGTERM, ignore)  # inherited by the fork

    note_pid(args.pid_file)
    print(f"started {me} pid={os.getpid()}", flush=True)
    if args.spawn_child and os.fork() == 0:
        if args.child_setsid:
            os.setsid()
        note_pid(args.pid_file)
        print(f"child of {me} pid={os.getpid()} ppid={os.getppid()}",
              flush=True)
    sleep_forever()


if __name__ == "__main__":
    sys.exit(main())
