#!/usr/bin/env python3
"""Allocates memory until told to stop, to test that Loom enforces a task's memory limit.

Usage: eat_memory.py --mib 600 [--hold-seconds 60]
Touches every page so the memory is resident, prints progress, then holds it.
"""
import argparse
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--mib", type=int, default=600)
parser.add_argument("--hold-seconds", type=float, default=60)
args = parser.parse_args()

chunks = []
for i in range(args.mib // 16):
    chunk = bytearray(16 << 20)
    for j in range(0, len(chunk), 4096):
        chunk[j] = 1
    chunks.append(chunk)
    if i % 8 == 0:
        print(f"holding {(i + 1) * 16} MiB", flush=True)
print(f"holding {args.mib} MiB", flush=True)
time.sleep(args.hold_seconds)
sys.exit(0)
