"""Several processes crediting one experiment (or several) at once, as several workers do:
what the credit protocol did in each and where the waiting went.

Each process runs the drain loop (:meth:`service.credit.drains.Crediting.drain`, batches
of 500, up to ``--procs`` drains per experiment) on the same experiments of 12 world
rankers (``bench/credit_profile.py``'s, ``--impressions`` closed impressions from
``bench/scale.py``) on one real Redis, and counts: credit scripts run, impressions they
added, holds of its own batch (``held_own``), another batch's hold met (``hold_other``,
then a wait for its resolution: ``wait_calls``, ``wait_s``, ``wait_fail`` when it
outlasted ``HOLD_WAIT_S``), chunks refused for a changed structure (``sv``), hold
resolutions and their wall time, and WATCH conflicts of those transactions
(``conflicts``: the transaction retries). Figures are summed over the processes.

    .venv/bin/python bench/credit_contention.py [--impressions 15000] [--procs 1,2]

``PROFILE_ROOT=/path/to/checkout`` runs another checkout's code (its ``service/`` and
``bandits/``) with this script, to compare.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(os.environ.get("PROFILE_ROOT", Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from credit_profile import _experiment, _NoQueue  # noqa: E402
from scale import impressions  # noqa: E402

TIMES = ("wait_s", "resolve_s", "script_s")


def worker(url: str, exps: list[str], out_q, start_evt, parallelism: int, idx: int) -> None:
    """One process: drain ``exps`` (every other process in the reverse order) until none
    has a due impression; put its counts on ``out_q``."""
    from service.credit import protocol
    from service.credit.drains import Crediting
    from service.store import Store
    from service.store.client import connect

    store = Store(connect(url))
    c = dict.fromkeys(("scripts", "ok", "held_own", "hold_other", "sv", "resolve_calls",
                       "resolve_none", "wait_calls", "wait_fail", "conflicts"), 0)
    c.update(dict.fromkeys(TIMES, 0.0))
    commit, resolve, wait = store.credits.commit_credit, protocol.resolve_hold, protocol._wait_hold
    conflict = store.credits.count_conflict

    def commit_credit(*a, **kw):
        t0 = time.perf_counter()
        d = commit(*a, **kw)
        c["script_s"] += time.perf_counter() - t0
        c["scripts"] += 1
        c["ok"] += sum(1 for x in d.codes.values() if x == "ok")
        c["held_own"] += d.status == "held"
        c["hold_other"] += d.status == "hold"
        c["sv"] += d.status == "sv"
        return d

    def resolve_hold(*a, **kw):
        t0 = time.perf_counter()
        r = resolve(*a, **kw)
        c["resolve_s"] += time.perf_counter() - t0
        c["resolve_calls"] += 1
        c["resolve_none"] += r is None
        return r

    def wait_hold(*a, **kw):
        t0 = time.perf_counter()
        ok = wait(*a, **kw)
        c["wait_s"] += time.perf_counter() - t0
        c["wait_calls"] += 1
        c["wait_fail"] += not ok
        return ok

    def count_conflict(exp_id):
        c["conflicts"] += 1
        conflict(exp_id)

    store.credits.commit_credit = commit_credit
    store.credits.count_conflict = count_conflict
    protocol.resolve_hold, protocol._wait_hold = resolve_hold, wait_hold
    cr = Crediting(store, _NoQueue(), batch=500, lease_s=600, parallelism=parallelism,
                   cache_size=64)
    start_evt.wait()
    cpu0, t0 = time.process_time(), time.monotonic()
    done = 0
    order = exps if idx % 2 == 0 else exps[::-1]
    while True:
        progress = 0
        for exp_id in order:
            n = cr.drain(exp_id)
            done += n
            progress += n
        if all(store.drains.next_due(e) is None for e in exps):
            break
        if progress == 0:
            time.sleep(0.001)
    c.update(done=done, cpu_s=time.process_time() - cpu0, wall_s=time.monotonic() - t0)
    out_q.put(c)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impressions", type=int, default=15000)
    ap.add_argument("--procs", default="1,2", help="process counts, one run each")
    ap.add_argument("--algorithms", default="mergedts,recommended")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--experiments", type=int, default=1)
    a = ap.parse_args()
    from demo.stack import Stack
    from service.store import Store
    from service.store.client import connect

    with Stack(Path(tempfile.mkdtemp(prefix="rankduel-contention-"))) as stack:
        url = stack.start_redis()
        store = Store(connect(url))
        for rep in range(a.repeat):
            for procs in [int(x) for x in a.procs.split(",")]:
                for alg in a.algorithms.split(","):
                    exps = [_experiment(store, alg, seed=k + 1) for k in range(a.experiments)]
                    impressions(store, exps, a.impressions)
                    q, ev = mp.Queue(), mp.Event()
                    ps = [mp.Process(target=worker, args=(url, exps, q, ev, procs, k))
                          for k in range(procs)]
                    for p in ps:
                        p.start()
                    time.sleep(1.0)
                    t0 = time.monotonic()
                    ev.set()
                    res = [q.get() for _ in ps]
                    wall = time.monotonic() - t0
                    for p in ps:
                        p.join()
                    tot = {k: round(sum(r[k] for r in res), 3) for k in res[0]}
                    print(json.dumps({"experiments": a.experiments, "rep": rep, "procs": procs,
                                      "algorithm": alg, "rate": round(a.impressions / wall),
                                      "cpu_us": round(tot["cpu_s"] / a.impressions * 1e6, 1),
                                      **tot}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
