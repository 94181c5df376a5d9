#!/usr/bin/env python3
"""Failure-reaction benchmark task: rank --crash-rank sleeps --after seconds, records the wall
clock (ns) of its crash in --stamp, and dies with exit code 3; every other rank sleeps long.
Works under Loom and under torchrun (both set RANK)."""
import argparse
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--crash-rank", type=int, default=1)
parser.add_argument("--after", type=float, default=2.0)
parser.add_argument("--stamp", required=True)
args = parser.parse_args()

if int(os.environ["RANK"]) == args.crash_rank:
    time.sleep(args.after)
    with open(args.stamp, "w") as f:
        f.write(f"{time.time_ns()}\n")
    os._exit(3)
time.sleep(600)
