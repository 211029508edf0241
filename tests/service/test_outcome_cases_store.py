"""How outcomes enter W in Redis, against the one table of cases shared with the rule
(``bandits/outcome_cases.json``; the pure side: tests/unit/test_outcome_cases.py): the
credit script (``service/store/credit.lua``, through :meth:`Store.commit_credit` as the
credit protocol calls it) writes ``W``, ``n``, the ties and the per-segment counts; the
hold's transaction (:meth:`Store.write_marks`) writes the ties and the per-segment counts
(its ``W`` is the policy's own update, checked in the unit test). Read back through the
store, on a real Redis."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

import numpy as np
import pytest

import bandits
from service.store import Entry, Store
from service.store.keys import new_impression_id
from service.store.records import Ranker

CASES = json.loads((Path(__file__).resolve().parents[2] / "bandits"
                    / "outcome_cases.json").read_text())["cases"]
IDS = [c["name"] for c in CASES]


def pairs(d: dict) -> dict[tuple[int, int], float]:
    """The table's ``{"i:j": x}`` as ``{(i, j): x}``."""
    return {tuple(int(x) for x in key.split(":")): v for key, v in d.items()}


def experiment(store: Store, case: dict) -> tuple[str, list[str]]:
    """An experiment of the case's ``k`` arms and its impressions, saved with their
    segment labels (idle for 10 minutes: no sweep credits them meanwhile)."""
    exp_id, now = secrets.token_hex(6), time.time()
    k = case["k"]
    meta = {"id": exp_id, "name": "outcomes", "algorithm": "uniform", "params": {},
            "interleaving": "team_draft", "seed": 1, "created_at": now}
    rankers = [Ranker(name=f"r{a}", url=f"http://127.0.0.1:1/{a}", timeout_ms=300, arm=a,
                      added_at=now) for a in range(k)]
    store.experiments.create_experiment(
        exp_id, meta=meta, rankers=rankers, bandit=bandits.make_bandit("uniform", k, seed=1),
        truth=None, audit="{}")
    ids = []
    for imp in case["impressions"]:
        imp_id = new_impression_id(exp_id)
        store.impressions.save_impression(
            imp_id, exp_id=exp_id, t=0, arms=list(range(k)), shown=["d"], record={}, duel=True,
            forfeits=[], token_expires=2**31, ttl_s=3600, inactivity_s=600,
            counters={"impressions": 1}, segments=imp["seg"] or None)
        ids.append(imp_id)
    return exp_id, ids


def mark(imp: dict) -> dict:
    """The credit step's result for an impression with these outcomes."""
    if not imp["outcomes"]:
        return {"status": "no_clicks", "t": 0}
    return {"status": "credited", "outcomes": imp["outcomes"], "t": 0}


def check_segments(store: Store, exp_id: str, case: dict) -> None:
    got = store.credits.segment_counts(exp_id)
    assert set(got) == set(case["segments"])
    for label, want in case["segments"].items():
        c = got[label]
        assert (c.W, c.ties, c.n) == (pairs(want["W"]), pairs(want["ties"]), want["n"]), label


@pytest.mark.parametrize("batch", ["one batch", "one impression a batch"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_credit_script_adds_as_the_table_says(rd, case, batch):
    store = Store(rd)
    exp_id, ids = experiment(store, case)
    entries = [Entry(imp_id, json.dumps(mark(imp)), 0, ("credited",),
                     tuple((i, j, s, 0) for i, j, s in imp["outcomes"]))
               for imp_id, imp in zip(ids, case["impressions"], strict=True)]
    for part in ([entries] if batch == "one batch" else [[e] for e in entries]):
        sv = store.experiments.snapshot(exp_id).sv
        done = store.credits.commit_credit(exp_id, sv=sv, guard="", entries=part, gone={})
        assert done.status == "ok" and set(done.codes.values()) == {"ok"}, done
    snap = store.experiments.snapshot(exp_id, full=True)
    k = case["k"]
    W = np.frombuffer(snap.w_bytes, dtype="<f8").reshape(k, k)
    assert W.tolist() == case["W"]  # exactly: the shares are dyadic
    assert snap.n_updates == case["n"]
    assert store.credits.ties(exp_id) == pairs(case["ties"])
    check_segments(store, exp_id, case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_holds_writes_add_as_the_table_says(rd, case):
    store = Store(rd)
    exp_id, ids = experiment(store, case)
    results = {imp_id: mark(imp) for imp_id, imp in zip(ids, case["impressions"], strict=True)}
    segments = {imp_id: tuple(imp["seg"])
                for imp_id, imp in zip(ids, case["impressions"], strict=True)}
    with rd.pipeline() as pipe:
        pipe.multi()
        store.credits.write_marks(pipe, exp_id, results, {}, ids, state_written=True,
                                  segments=segments)
        pipe.execute()
    assert store.credits.ties(exp_id) == pairs(case["ties"])
    check_segments(store, exp_id, case)
