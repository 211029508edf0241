"""The metrics collector renders its text itself (service/experiments/collector.py, for speed at
hundreds of experiments): it must be exactly what prometheus-client's ``generate_latest``
writes for the same samples, escaping included."""

from __future__ import annotations

import time

import numpy as np
import pytest

#: every test here starts a server, a command or an interpreter itself (tests/conftest.py)
pytestmark = pytest.mark.starts_process


def test_exposition_equals_generate_latest(tmp_path):
    from prometheus_client import CollectorRegistry, generate_latest

    import bandits
    from demo.stack import Stack
    from service.experiments.collector import StateCollector
    from service.store import Store
    from service.store.client import connect
    from service.store.keys import new_impression_id, shown_key, w_key

    with Stack(tmp_path) as stack:
        url = stack.start_redis()
        store = Store(connect(url))
        for n, (name, algo, k) in enumerate([('odd "name" \\ with\nnewline', "mergedts", 6),
                                             ("plain", "rucb", 3),
                                             ("guarded", "recommended", 5)]):
            b = bandits.make_bandit(algo, k, seed=n)
            if algo == "recommended":
                b.flagged, b.flagged_at = True, 0  # as the guard leaves it once raised
            exp_id = f"e{n}"
            meta = {"id": exp_id, "name": name, "algorithm": algo, "params": {},
                    "interleaving": "team_draft", "seed": n, "created_at": time.time()}
            from service.store.records import Ranker

            rankers = [Ranker(name=f'r"{a}', url="http://x", timeout_ms=1, arm=a)
                       for a in range(k)]
            truth = {"preferences": np.full((k, k), 0.5).tolist(), "best": 0}
            store.experiments.create_experiment(exp_id, meta=meta, rankers=rankers, bandit=b,
                                                truth=truth, audit="{}")
            W = np.arange(k * k, dtype=float).reshape(k, k)
            np.fill_diagonal(W, 0)
            store.r.set(w_key(exp_id), np.ascontiguousarray(W, "<f8").tobytes())
            store.r.hset(shown_key(exp_id), mapping={"n:0": 3, "share:0": 1.5})
            store.impressions.save_impression(
                new_impression_id(exp_id), exp_id=exp_id, t=0, arms=[0, 1], shown=["d"],
                record=None, duel=False, forfeits=[], token_expires=2**31, ttl_s=60,
                inactivity_s=60, counters={"impressions": 1})
        collector = StateCollector(store, broker=store.r)
        registry = CollectorRegistry(auto_describe=True)
        registry.register(collector)
        expected = generate_latest(registry)
        got = collector.exposition()
        assert got == expected
        assert b'rankduel_experiment_info{' in got and b'\\"name\\"' in got
        assert b'rankduel_non_condorcet_flagged{experiment="e2"} 1.0' in got
        assert b'rankduel_non_condorcet_flagged{experiment="e0"}' not in got
