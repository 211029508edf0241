"""What each store method sends to its Lua script reads back through the script's
declaration (:mod:`service.store.scripts`): every script is called once at least, on a
real Redis, and each call's KEYS and ARGV decode to the names declared, each key the one
:mod:`service.store.keys` builds for that name. The request path's scripts, whose lists
are built by hand for the calls a search costs, are held to their declaration here."""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from service.designs.registry import design_named
from service.store import Entry, Store, StorePart
from service.store import keys as k
from service.store.base import PARTS
from service.store.outcomes import OutcomeCall
from service.store.retention import seen_keys
from service.store.scripts import SCRIPTS, Call, MetricSpec
from service.store.splits import DEFAULT_RETENTION_S
from tests.service.test_outcome_cases_store import experiment


class Recorded:
    """A registered script that logs each call (name, keys, args) and runs it."""

    def __init__(self, script: Any, name: str, log: list) -> None:
        self.script, self.name, self.log, self.sha = script, name, log, script.sha

    def __call__(self, keys=(), args=(), client=None):
        self.log.append((self.name, list(keys), list(args)))
        return self.script(keys=keys, args=args)


@pytest.fixture
def spied(rd) -> tuple[Store, list]:
    """A store whose every part logs each script call (both ways a part runs a script:
    the script object, and the request path's runner ``call``)."""
    store, log = Store(rd), []
    run = store.call
    for name in {*PARTS, "ab"}:  # a design's part (store.ab), made now to be spied on too
        getattr(store, name)

    def call(script, keys=(), args=()):
        log.append((script.name, list(keys), list(args)))
        return run(script.script, keys=keys, args=args)

    for part in (v for v in vars(store).values() if isinstance(v, StorePart)):
        for cls in type(part).__mro__:
            for attr, name in vars(cls).get("SCRIPTS", {}).items():
                setattr(part, attr, Recorded(getattr(part, attr), name, log))
        part.call = call
    return store, log


def expected_keys(exp_id: str, imp_id: str, user: str) -> dict[str, str]:
    """The key each declared name stands for in these calls."""
    return {"exp": k.exp_key(exp_id), "pending": k.pending_key(exp_id),
            "counters": k.counters_key(exp_id), "shown": k.shown_key(exp_id),
            "events": k.events_key(exp_id), "t": k.t_key(exp_id),
            "health": k.health_key(exp_id), "drains": k.drains_key(exp_id),
            "audit": k.audit_key(exp_id), "outbox": k.outbox_key(exp_id),
            "hooks": k.hooks_state_key(exp_id), "metrics": k.metrics_key(exp_id),
            "W": k.w_key(exp_id), "ties": k.ties_key(exp_id),
            "segments": k.segments_key(exp_id), "imp": k.imp_key(exp_id, imp_id),
            "clicks": k.clicks_key(exp_id, imp_id),
            "attribution": k.attribution_key(exp_id, imp_id),
            "touches": k.touches_key(exp_id, user), "users": k.ab_users_key(exp_id),
            "moments": k.ab_moments_key(exp_id)}


def test_every_scripts_call_reads_back_through_its_declaration(spied):
    store, log = spied
    case = {"k": 3, "impressions": [{"outcomes": [], "seg": ["device=pc"]}]}
    exp_id, _ = experiment(store, case)
    log.clear()  # the case's own impression
    user = "u" + secrets.token_hex(4)
    imp = k.new_impression_id(exp_id)
    store.impressions.save_impression(imp, exp_id=exp_id, t=1, arms=[0, 1], shown=["a", "b"],
                          record={"teams": [0, 1]}, duel=True, forfeits=[],
                          token_expires=2**31, ttl_s=600, inactivity_s=300,
                          counters={"impressions": 1}, segments=["device=pc"],
                          user_hash=user, events_maxlen=1000, attribution_ttl_s=900)
    store.impressions.add_clicks(imp, exp_id, [0, 1], inactivity_s=300, ttl_s=600,
                                 dwell_ms={0: 1500})
    assert store.impressions.extend_impression(
        imp, exp_id, expect=["a", "b"], shown=["a", "b", "c"], record={"teams": [0, 1, 0]},
        urls=[None] * 3, inactivity_s=300, attribution_ttl_s=900, arms=[0, 1],
        seg="device=pc", user_hash=user)
    store.experiments.next_t(exp_id)
    store.impressions.end_impression(imp, exp_id, drain_ttl_s=30)
    store.drains.claim(exp_id, 10, 30)
    store.drains.take_drain(exp_id, 30)
    store.credits.read_impressions(exp_id, [imp])
    store.experiments.add_audit(exp_id, json.dumps({"action": "x"}))
    store.ranker_health.ranker_failed(exp_id, 1, threshold=3, quarantine_s=60)
    store.ranker_health.ranker_answers(exp_id, {0: "o", 1: "e"}, window=20, least=5, share=0.5,
                         reprobe_s=60)
    store.webhooks.record_event(exp_id, "ev1", "test", "{}", audit=json.dumps({"a": 1}),
                       once=("ramp", "1"))
    mark = json.dumps({"status": "credited", "outcomes": [[0, 1, 1.0]]})
    store.credits.commit_credit(exp_id, sv=store.experiments.snapshot(exp_id).sv, guard=None,
                                gone={}, entries=[Entry(imp, mark, 1, ("credited",),
                                                        ((0, 1, 1.0, 0),))])
    call = OutcomeCall(exp_id=exp_id, digest="d1", doc="a",
                       windows=(("orders", 3600, "count"),), value="", action="purchase",
                       ttl_s=600, user_hash=user)
    store.outcomes.record_outcomes([design_named("interleaving").outcome_call(store, call,
                                                                              "~d1")])
    store.outcomes.commit_metric_credit(exp_id, [("~d1", "d1", "{}", MetricSpec(
        ("device=pc",), {"orders": [[0, 1, 1.0]]}, {}, ("outcome_events",)))])
    ab_imp = k.new_impression_id(exp_id)
    store.ab.save_ab_search(ab_imp, exp_id=exp_id, t=2, arm=1, user=user, shown=["a"],
                         urls=[None], token_expires=2**31, ttl_s=600,
                         counters={"impressions": 1}, conversions=["orders"],
                         attribution_ttl_s=900)
    store.ab.ab_click(exp_id, ab_imp)
    store.outcomes.record_outcomes([design_named("ab").outcome_call(store, OutcomeCall(
        exp_id=exp_id, digest="d2", doc="a", windows=(("orders", 3600, "count"),), value="",
        action="purchase", ttl_s=600, user_hash=user), "~d2")])
    place = f"split-{secrets.token_hex(3)}"
    store.splits.count_split(place, {(1, "e1"): 2}, {(1, "e1"): {"x", "y"}})

    assert {name for name, _, _ in log} == set(SCRIPTS)
    for name, keys, args in log:
        got: Call = SCRIPTS[name].read(keys, args)  # a count that does not fit raises
        named = {**got.keys, **{n: v for item, _ in got.each for n, v in item.items()}}
        this_imp = ab_imp if name.startswith("ab_") else imp
        want = expected_keys(exp_id, this_imp, user)
        checked = {n: v for n, v in named.items() if n in want and name != "split_count"}
        assert checked == {n: want[n] for n in checked}, name
        if name == "save":
            assert got.args["imp_id"] == imp and got.args["attribution_ttl"] == 900
            assert got.args["counters"] == {"impressions": 1} and got.args["arms"] == ["0", "1"]
            assert got.args["event"]["user"] == user and got.args["events_maxlen"] == 1000
        if name == "click":
            assert got.args["dwell"] == {0: 1500} and [a for _, a in got.each] == [
                {"position": 0}, {"position": 1}]
        if name == "credit":
            assert got.each[0][1]["spec"].outcomes == ((0, 1, 1.0, 0),)
        if name == "ab_search":
            assert got.args["user"] == user and got.args["arm"] == 1
            assert got.args["entry"]["u"] == user
        if name in ("outcome", "ab_outcome"):
            assert got.keys["source"] == k.touches_key(exp_id, user)
            assert got.args["form"] == "u" and got.args["action"] == "purchase"
            # each script's form of the metrics: the A/B script's with their kinds
            assert got.args["windows"] == ("orders:3600" if name == "outcome"
                                           else "orders:3600:count")
        if name == "split_count":
            # the retention's generations (service.store.retention): this one's users, the
            # last one's, and the set of the layout before generations
            seen, before, legacy, ttl = seen_keys(place, store.clock(), DEFAULT_RETENTION_S)
            assert got.keys == {"seen": seen, "seen_before": before, "legacy": legacy,
                                "users": k.split_users_key(place),
                                "searches": k.split_searches_key(place)}
            assert legacy == k.split_seen_key(place) and 0 <= got.args["ttl"] - ttl <= 60
