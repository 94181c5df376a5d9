#!/usr/bin/env python3
"""Checks the environment Loom gives a TensorFlow task (stdlib only).

Reads TF_CONFIG, CLUSTER_SPEC, JOB_NAME, TASK_INDEX, TASK_NUM and IS_CHIEF and
checks the contract:
  * TF_CONFIG and CLUSTER_SPEC are JSON; TF_CONFIG has "cluster" and "task";
  * task.type == JOB_NAME and task.index == int(TASK_INDEX);
  * the TF_CONFIG cluster never lists "tensorboard", and lists "evaluator"
    exactly when this task is the evaluator; every other type of CLUSTER_SPEC
    is there, with the same addresses in the same order;
  * the task's own address cluster[type][index] exists and looks like
    host:port (for a tensorboard task: CLUSTER_SPEC[type][index]); no
    address appears twice in CLUSTER_SPEC;
  * IS_CHIEF is "true" exactly on chief:0, or on worker:0 when there is no
    chief type, and "false" everywhere else;
  * 1 <= TASK_NUM <= the number of addresses in CLUSTER_SPEC.

On success prints one line to stdout and exits 0:
  CONTRACT {"type": ..., "index": ..., "tf_config": {...},
            "cluster_spec": {...}, "is_chief": ..., "task_num": ...}
On failure prints "contract check failed: <what>" lines to stderr, exits 1.

Options:
  --expect-types chief:1,worker:2,ps:1,evaluator:1
      CLUSTER_SPEC must hold exactly these types with these counts.
  --expect-task-num N
      TASK_NUM must be N.
  --hold S
      stay S seconds after printing (untracked tasks are stopped when the
      tracked ones end: this gives them time to print).
"""
import argparse
import json
import os
import sys


def parse_expect_types(text):
    expected = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, count = item.partition(":")
        if not name or not count.isdigit():
            raise argparse.ArgumentTypeError(
                f"bad --expect-types item {item!r}, want TYPE:COUNT")
        expected[name] = int(count)
    return expected


def load_json(name, problems):
    raw = os.environ.get(name)
    if raw is None:
        problems.append(f"{name} is not set")
        return None
    try:
        return json.loads(raw)
    except ValueError as e:
        problems.append(f"{name} is not JSON ({e}): {raw!r}")
        return None


def parse_int(name, problems):
    raw = os.environ.get(name)
    try:
        return int(raw)
    except (TypeError, ValueError):
        problems.append(f"{name} is not an integer: {raw!r}")
        return None


def valid_address(address):
    host, sep, port = str(address).rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) < 65536)


def check(args):
    problems = []
    tf_config = load_json("TF_CONFIG", problems)
    spec = load_json("CLUSTER_SPEC", problems)
    job_name = os.environ.get("JOB_NAME")
    if not job_name:
        problems.append("JOB_NAME is not set")
    task_index = parse_int("TASK_INDEX", problems)
    task_num = parse_int("TASK_NUM", problems)
    is_chief = os.environ.get("IS_CHIEF")
    if problems:
        return problems, None

    if not isinstance(spec, dict) or not all(
            isinstance(v, list) for v in spec.values()):
        problems.append(f"CLUSTER_SPEC is not {{type: [address, ...]}}: {spec}")
        return problems, None
    if not isinstance(tf_config, dict) or not isinstance(
            tf_config.get("cluster"), dict) or not isinstance(
            tf_config.get("task"), dict):
        problems.append(f"TF_CONFIG lacks cluster/task objects: {tf_config}")
        return problems, None
    cluster, task = tf_config["cluster"], tf_config["task"]

    if task.get("type") != job_name:
        problems.append(f"task.type {task.get('type')!r} != JOB_NAME "
                        f"{job_name!r}")
    if task.get("index") != task_index:
        problems.append(f"task.index {task.get('index')!r} != TASK_INDEX "
                        f"{task_index}")

    if "tensorboard" in cluster:
        problems.append("TF_CONFIG cluster lists tensorboard")
    if ("evaluator" in cluster) != (job_name == "evaluator"):
        problems.append(f"TF_CONFIG cluster {'lists' if 'evaluator' in cluster else 'lacks'} "
                        f"evaluator, but this task is {job_name}")
    special = {"tensorboard", "evaluator"}  # checked just above
    if set(cluster) - special != set(spec) - special:
        problems.append(f"TF_CONFIG cluster types {sorted(cluster)} do not "
                        f"match CLUSTER_SPEC types {sorted(spec)}")
    for task_type, addresses in cluster.items():
        if addresses != spec.get(task_type):
            problems.append(f"cluster[{task_type!r}] {addresses} != "
                            f"CLUSTER_SPEC[{task_type!r}] "
                            f"{spec.get(task_type)}")

    # A tensorboard task is not in TF_CONFIG's cluster: look in CLUSTER_SPEC.
    where = spec if job_name == "tensorboard" else cluster
    own = where.get(job_name, [])
    if not 0 <= task_index < len(own):
        problems.append(f"own address [{job_name!r}][{task_index}] missing "
                        f"(in {where})")
    elif not valid_address(own[task_index]):
        problems.append(f"own address {own[task_index]!r} is not host:port")

    everything = [a for addresses in spec.values() for a in addresses]
    bad = [a for a in everything if not valid_address(a)]
    if bad:
        problems.append(f"CLUSTER_SPEC addresses not host:port: {bad}")
    dupes = sorted({a for a in everything if everything.count(a) > 1})
    if dupes:
        problems.append(f"CLUSTER_SPEC addresses used twice: {dupes}")

    should_be_chief = (job_name == "chief" and task_index == 0) or (
        "chief" not in spec and job_name == "worker" and task_index == 0)
    if is_chief != ("true" if should_be_chief else "false"):
        problems.append(f"IS_CHIEF is {is_chief!r} on {job_name}:{task_index}"
                        f", expected {str(should_be_chief).lower()!r}")

    if not 1 <= task_num <= len(everything):
        problems.append(f"TASK_NUM {task_num} not in 1..{len(everything)}")
    if args.expect_task_num is not None and task_num != args.expect_task_num:
        problems.append(f"TASK_NUM {task_num} != {args.expect_task_num}")
    if args.expect_types is not None:
        counts = {t: len(a) for t, a in spec.items()}
        if counts != args.expect_types:
            problems.append(f"CLUSTER_SPEC has {counts}, expected "
                            f"{args.expect_types}")

    summary = {"type": job_name, "index": task_index, "tf_config": tf_config,
               "cluster_spec": spec, "is_chief": is_chief,
               "task_num": task_num}
    return problems, summary


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--expect-types", type=parse_expect_types,
                        metavar="TYPE:N,...")
    parser.add_argument("--expect-task-num", type=int, metavar="N")
    parser.add_argument("--hold", type=float, default=0.0, metavar="S",
                        help="stay S seconds after printing, so that untracked "
                        "tasks (ps) print theirs before the job ends")
    args = parser.parse_args()
    problems, summary = check(args)
    if problems:
        for problem in problems:
            print(f"contract check failed: {problem}", file=sys.stderr)
        sys.stderr.flush()
        return 1
    print("CONTRACT " + json.dumps(summary, sort_keys=True), flush=True)
    if args.hold > 0:
        import time
        time.sleep(args.hold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
