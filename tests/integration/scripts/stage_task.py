"""A task of a two-stage job (stages_tensorboard_test): the prepare task makes a file the
training tasks need, and every task records when it ran, in a directory shared with the test.

  stage_task.py prepare DIR [--wait-for FILE] [--code N]   waits for FILE (if given), writes
                                                           DIR/prepared, exits N (default 0)
  stage_task.py train DIR [--wait-for FILE]                fails unless DIR/prepared exists
"""
import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("role", choices=["prepare", "train"])
p.add_argument("dir")
p.add_argument("--wait-for", default="")
p.add_argument("--code", type=int, default=0)
a = p.parse_args()

task = os.environ["JOB_NAME"] + "-" + os.environ["TASK_INDEX"]
with open(os.path.join(a.dir, "started-" + task), "w") as f:
    f.write(repr(time.time()))
while a.wait_for and not os.path.exists(a.wait_for):
    time.sleep(0.05)
prepared = os.path.join(a.dir, "prepared")
if a.role == "prepare":
    if a.code:
        print("prepare failed on purpose", file=sys.stderr)
        sys.exit(a.code)
    with open(prepared + ".tmp", "w") as f:
        f.write("rows=42\n")
    os.rename(prepared + ".tmp", prepared)
    with open(os.path.join(a.dir, "ended-" + task), "w") as f:
        f.write(repr(time.time()))
    print("prepared", prepared)
    sys.exit(0)
if not os.path.exists(prepared):
    print("no prepared data at", prepared, file=sys.stderr)
    sys.exit(1)
print("found", open(prepared).read().strip(), "rank", os.environ.get("RANK"), "of", os.environ.get("WORLD_SIZE"))
