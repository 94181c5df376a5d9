#!/usr/bin/env python3
"""Waits until a file exists, then exits 0 (stdlib only): a task that stays RUNNING until the
test lets it finish.

    wait_for_file.py PATH [--timeout S]    (default 60; exits 4 when it passes)
"""
import argparse
import os
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("path")
    p.add_argument("--timeout", type=float, default=60)
    a = p.parse_args()
    deadline = time.monotonic() + a.timeout
    while not os.path.exists(a.path):
        if time.monotonic() > deadline:
            print("timed out waiting for " + a.path, file=sys.stderr)
            return 4
        time.sleep(0.1)
    print("found " + a.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
