"""How the test tasks end that fail on demand (fail_with.py, process_fail.py; stdlib only)."""
import sys
import time


def fail_or_finish(me, failing, args, failure_lines):
    """The failing one waits --delay, prints `failure_lines` to stderr and
    returns --code; any other sleeps --others-sleep, prints "<me> done" and
    returns 0."""
    if failing:
        time.sleep(args.delay)
        for line in failure_lines:
            print(line, file=sys.stderr, flush=True)
        return args.code
    time.sleep(args.others_sleep)
    print(f"{me} done", flush=True)
    return 0
