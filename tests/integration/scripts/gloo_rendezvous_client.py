#!/usr/bin/env python3
"""What a Horovod gloo context does at init, without Horovod (not packaged here).

Written from Horovod's sources, not copied from them:
  horovod/common/gloo/gloo_context.cc  GlooContext::Initialize: reads HOROVOD_RANK, _SIZE,
      _LOCAL_RANK, _LOCAL_SIZE, _CROSS_RANK, _CROSS_SIZE, HOROVOD_HOSTNAME,
      HOROVOD_GLOO_RENDEZVOUS_ADDR/_PORT, HOROVOD_GLOO_TIMEOUT_SECONDS (default 30), then
      rendezvous three communicators in this order, each in its own scope of the store:
        "global"                         rank         of size
        "local_" + HOROVOD_HOSTNAME       local rank   of local size
        "cross_" + HOROVOD_LOCAL_RANK     cross rank   of cross size
      Rendezvous(): connectFullMesh(store), a gloo barrier over the new mesh, store.Finalize().
  gloo/transport/tcp/context.cc  createAndConnectAllPairs: PUT key "<rank>" (this rank's
      record: host name, listening address, pair ids), then for every other rank i:
      store.wait({"<i>"}) and store.get("<i>"), and connect to it.
  horovod/common/gloo/http_store.cc  HTTPStore over http://ADDR:PORT/<scope>/<key>:
      set = PUT, get = GET (404: not there), wait = GET every 10 ms until every key is
      there or the timeout passes, Finalize = DELETE "<rank>"; every call is tried up
      to 3 times, 500 ms apart, when it fails or answers neither 200 nor 404.

So, in each scope this process PUTs its record, polls and reads every peer's, connects to
every peer's listening socket (a real TCP mesh: each rank sends its rank to every peer and
accepts one connection from each, which is also the barrier: a peer that reached us has read
our key), and then DELETEs its key. It then checks that what it read is consistent:
  * every peer's record is there, with the rank it was stored under and the same size, and
    it is from this attempt of the job (LOOM_RESTART_COUNT): a gang restart must never
    read the keys of the processes before it;
  * the local scope holds exactly the processes whose HOROVOD_HOSTNAME is ours, with local
    ranks in global-rank order; the cross scope exactly those with our local rank, with
    cross ranks in global-rank order; the sizes agree with those counts.
It prints one line per process:
  GLOO_RENDEZVOUS {"rank": 0, "size": 4, ..., "global": [0, 1, 2, 3], ...}
and "gloo rendezvous check failed: <what>" lines to stderr, exit code 1, on any problem.
Only the standard library is used.

--fail-rank R --fail-attempt A: the process of rank R, in attempt A, exits with code 1 right
after its PUT in the global scope: its key stays behind, as a crashed process's would.
"""
import argparse
import json
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

INT_VARS = ("HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE",
            "HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE", "HOROVOD_GLOO_RENDEZVOUS_PORT")
STR_VARS = ("HOROVOD_HOSTNAME", "HOROVOD_GLOO_RENDEZVOUS_ADDR", "HOROVOD_CONTROLLER",
            "HOROVOD_CPU_OPERATIONS")

# http_store.h: MAX_RETRY_TIMES, RETRY_WAITING_TIME_MILLSEC; HTTPStore::wait's poll period.
MAX_TRIES = 3
RETRY_WAIT_S = 0.5
POLL_S = 0.01


class Failed(Exception):
    pass


class HttpStore:
    """horovod/common/gloo/http_store.cc, one scope."""

    def __init__(self, addr, port, scope, timeout):
        self.prefix = f"http://{addr}:{port}/{scope}/"
        self.timeout = timeout
        self.calls = []  # (method, key, status), in order

    def _perform(self, method, key, body=None):
        last = ""
        for _ in range(MAX_TRIES):
            request = urllib.request.Request(self.prefix + key, data=body, method=method)
            try:
                with urllib.request.urlopen(request, timeout=10) as reply:
                    data = reply.read()
                    self.calls.append((method, key, reply.status))
                    return reply.status, data
            except urllib.error.HTTPError as e:
                if e.code == 404:
                    self.calls.append((method, key, 404))
                    return 404, b""
                last = f"HTTP {e.code}"
            except OSError as e:
                last = f"{type(e).__name__}: {e}"
            time.sleep(RETRY_WAIT_S)
        raise Failed(f"{method} {self.prefix}{key} failed {MAX_TRIES} times: {last}")

    def set(self, key, value):
        self._perform("PUT", key, value)

    def get(self, key):
        status, data = self._perform("GET", key)
        return data if status == 200 else None

    def wait(self, keys):
        deadline = time.monotonic() + self.timeout
        while not all(self.get(k) is not None for k in keys):
            if time.monotonic() > deadline:
                raise Failed(f"wait timeout after {self.timeout:g} seconds for key(s) "
                             f"{keys} at {self.prefix}")
            time.sleep(POLL_S)

    def finalize(self, rank):
        self._perform("DELETE", str(rank))


def own_address():
    # gloo's tcp device, without HOROVOD_GLOO_IFACE: the address this host's name resolves to.
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def connect_full_mesh(store, scope, rank, size, me, timeout, crash=False):
    """One gloo context's rendezvous in `scope`; returns the peers' records by rank."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("0.0.0.0", 0))
    listener.listen(max(size, 1))
    record = dict(me, scope=scope, rank_in_scope=rank, size_in_scope=size,
                  address=f"{own_address()}:{listener.getsockname()[1]}")
    store.set(str(rank), json.dumps(record).encode())
    if crash:
        print(f"rank {rank} crashing after its PUT in {scope}", file=sys.stderr, flush=True)
        os._exit(1)

    peers = {}
    for i in range(size):
        if i == rank:
            continue
        store.wait([str(i)])
        data = store.get(str(i))
        if data is None:
            raise Failed(f"{scope}: key {i} vanished between wait and get")
        peers[i] = json.loads(data)

    problems = []
    for i, p in peers.items():
        if p.get("scope") != scope or p.get("rank_in_scope") != i or p.get("size_in_scope") != size:
            problems.append(f"{scope}: key {i} holds {p.get('scope')} rank {p.get('rank_in_scope')} "
                            f"of {p.get('size_in_scope')}, expected rank {i} of {size}")
        if p.get("attempt") != me["attempt"]:
            problems.append(f"{scope}: key {i} was put by attempt {p.get('attempt')}, this is attempt "
                            f"{me['attempt']} (a stale key of a restarted gang)")
    if problems:
        raise Failed("; ".join(problems))

    # The mesh: every rank tells every peer its rank; one connection in from each peer.
    heard, errors = set(), []

    def accept_all():
        listener.settimeout(timeout)
        try:
            for _ in range(size - 1):
                conn, _ = listener.accept()
                with conn:
                    conn.settimeout(timeout)
                    line = conn.makefile().readline().split()
                    if len(line) != 2 or line[0] != scope:
                        errors.append(f"{scope}: a peer said {line!r}")
                    else:
                        heard.add(int(line[1]))
        except OSError as e:
            errors.append(f"{scope}: waiting for peers: {e}")

    acceptor = threading.Thread(target=accept_all)
    acceptor.start()
    for i, p in sorted(peers.items()):
        host, port = p["address"].rsplit(":", 1)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection((host, int(port)), timeout=timeout) as s:
                    s.sendall(f"{scope} {rank}\n".encode())
                break
            except OSError as e:
                if time.monotonic() > deadline:
                    raise Failed(f"{scope}: cannot reach rank {i} at {p['address']}: {e}")
                time.sleep(POLL_S)
    acceptor.join()
    listener.close()
    if errors:
        raise Failed("; ".join(errors))
    if heard != set(peers):
        raise Failed(f"{scope}: heard from ranks {sorted(heard)}, expected {sorted(peers)}")
    # gloo's barrier is done: everyone has read our key, so Finalize may drop it.
    store.finalize(rank)
    return peers


def read_env():
    values, problems = {}, []
    for name in INT_VARS + STR_VARS:
        raw = os.environ.get(name)
        if raw is None or raw == "":
            problems.append(f"{name} is not set")
        elif name in INT_VARS:
            try:
                values[name] = int(raw)
            except ValueError:
                problems.append(f"{name} is not an integer: {raw!r}")
        else:
            values[name] = raw
    return values, problems


def check(v, everyone, local, cross):
    """`everyone`: global rank -> record; `local`/`cross`: rank in scope -> record."""
    problems = []
    rank, size = v["HOROVOD_RANK"], v["HOROVOD_SIZE"]
    if sorted(everyone) != list(range(size)):
        problems.append(f"global ranks {sorted(everyone)} are not 0..{size - 1}")
    # Each scope holds, in its own rank order, the ranks that share one value with this one.
    scopes = [  # name, members, what they share (record key, variable), size variable, the ranks in words
        ("local", local, "hostname", "HOROVOD_HOSTNAME", "HOROVOD_LOCAL_SIZE",
         f"on host {v['HOROVOD_HOSTNAME']}", "on the host"),
        ("cross", cross, "local_rank", "HOROVOD_LOCAL_RANK", "HOROVOD_CROSS_SIZE",
         f"with local rank {v['HOROVOD_LOCAL_RANK']}", f"with local rank {v['HOROVOD_LOCAL_RANK']}"),
    ]
    for name, scope, key, shared, size_var, where, where_counted in scopes:
        sharing = sorted(r for r, p in everyone.items() if p[key] == v[shared])
        members = [scope[i]["rank"] for i in sorted(scope)]
        if members != sharing:
            problems.append(f"{name} scope holds ranks {members} in {name}-rank order, but the ranks "
                            f"{where} are {sharing}")
        if v[size_var] != len(sharing):
            problems.append(f"{size_var} {v[size_var]} but {len(sharing)} ranks {where_counted}")
    for r, p in everyone.items():
        if p["size"] != size:
            problems.append(f"rank {r} has HOROVOD_SIZE {p['size']}, this one {size}")
    if everyone.get(rank, {}).get("pid") != os.getpid():
        problems.append(f"global key {rank} is not this process's")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--fail-rank", type=int, default=-1)
    parser.add_argument("--fail-attempt", type=int, default=0)
    args = parser.parse_args()
    v, problems = read_env()
    result = {"pid": os.getpid(), "attempt": int(os.environ.get("LOOM_RESTART_COUNT", "0"))}
    if not problems:
        timeout = float(os.environ.get("HOROVOD_GLOO_TIMEOUT_SECONDS", "30"))
        me = {"rank": v["HOROVOD_RANK"], "size": v["HOROVOD_SIZE"], "hostname": v["HOROVOD_HOSTNAME"],
              "local_rank": v["HOROVOD_LOCAL_RANK"], "cross_rank": v["HOROVOD_CROSS_RANK"],
              "pid": os.getpid(), "attempt": int(os.environ.get("LOOM_RESTART_COUNT", "0"))}
        crash = me["rank"] == args.fail_rank and me["attempt"] == args.fail_attempt
        addr, port = v["HOROVOD_GLOO_RENDEZVOUS_ADDR"], v["HOROVOD_GLOO_RENDEZVOUS_PORT"]
        comms = [("global", v["HOROVOD_RANK"], v["HOROVOD_SIZE"]),
                 ("local_" + v["HOROVOD_HOSTNAME"], v["HOROVOD_LOCAL_RANK"], v["HOROVOD_LOCAL_SIZE"]),
                 ("cross_" + str(v["HOROVOD_LOCAL_RANK"]), v["HOROVOD_CROSS_RANK"], v["HOROVOD_CROSS_SIZE"])]
        seen, calls = {}, 0
        try:
            for scope, rank, size in comms:
                if not 0 <= rank < size:
                    raise Failed(f"{scope}: rank {rank} not in 0..{size - 1}")
                store = HttpStore(addr, port, scope, timeout)
                peers = connect_full_mesh(store, scope, rank, size, me, timeout, crash and scope == "global")
                peers[rank] = me
                seen[scope] = peers
                calls += len(store.calls)
            everyone = {p["rank"]: p for p in seen["global"].values()}
            problems = check(v, everyone, seen[comms[1][0]], seen[comms[2][0]])
            result["global"] = sorted(everyone)
            result["local"] = [p["rank"] for _, p in sorted(seen[comms[1][0]].items())]
            result["cross"] = [p["rank"] for _, p in sorted(seen[comms[2][0]].items())]
            result["http_calls"] = calls
        except Failed as e:
            problems = [str(e)]
    result.update({k.replace("HOROVOD_", "").lower(): val for k, val in v.items()})
    result["ok"] = not problems
    print("GLOO_RENDEZVOUS " + json.dumps(result), flush=True)
    for problem in problems:
        print(f"gloo rendezvous check failed: {problem}", file=sys.stderr, flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
