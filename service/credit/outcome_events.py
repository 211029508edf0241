"""Outcome events credited to their metrics (:mod:`service.credit`, the same protocol as
impressions): a drain claims them with the impressions (they are members ``~<digest>`` of
the experiment's pending set, due at once), reads them and their impressions'
attribution entries, runs the pure step (:func:`outcomes`) and commits the batch in one
script (``metric_credit.lua``) that skips an event already marked and writes each
event's ``credited`` mark with its additions to the metrics' ``W``.

What an event yields, per metric it counts for: the interleaving method's credit of a
click on the document's position (``interleaving.credit(record, [position])``: under
team draft, the team that placed the document wins; probabilistic and multileaving as
their click credit does), in arm indices; for a ``sum`` metric each outcome bounded by
the event's value (:func:`service.outcomes.declared.bounded`), and the value added to the
plain sum of each ranker that won every comparison of the event. No guard and no hold:
no policy reads these ``W``. When the policy learns from one of the event's metrics (the
experiment's ``primary``), :mod:`service.credit.primary` applies its outcomes to the
policy first, in a transaction of its own; this script then counts the metrics.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from service.credit.primary import credit_primary
from service.outcomes.declared import Metric, bounded, declared, learns_clicks, primary
from service.store import Store
from service.store.keys import OUTCOME_MEMBER
from service.store.snapshot import ExperimentMissing

log = logging.getLogger("rankduel.worker")


def outcomes(event: Mapping[str, str] | None, entry: Sequence[Any] | None,
             metrics: Mapping[str, Metric]) -> dict[str, Any]:
    """One event's mark: ``status`` (``credited``; ``missing``: the event expired;
    ``expired``: its impression's attribution entry expired; ``no_duel``: the
    impression compared nothing; ``already``), and when credited ``outcomes`` per metric
    ``[[i, j, s], ...]``, ``values`` per metric ``{arm: value}``, with the event's
    ``impression``, ``position``, ``action``, ``value``, ``at``.

    >>> entry = [0.0, [3, 5], {"method": "team_draft", "n": 2, "len": 2, "teams": [1, 0]},
    ...          "", ["a", "b"]]
    >>> ev = {"a": "purchase", "m": "orders,revenue", "i": "e.1", "p": "1", "v": "50.0",
    ...       "at": "9.5"}
    >>> ms = {"orders": Metric("orders", "purchase", "count", 60),
    ...       "revenue": Metric("revenue", "purchase", "sum", 60, 100.0)}
    >>> mark = outcomes(ev, entry, ms)
    >>> mark["outcomes"], mark["values"]
    ({'orders': [[3, 5, 1.0]], 'revenue': [[3, 5, 0.75]]}, {'revenue': {'3': 50.0}})
    """
    if event is None:
        return {"status": "missing"}
    if "credited" in event:
        return {"status": "already"}
    base: dict[str, Any] = {"impression": event.get("i"), "position": int(event["p"]),
                            "action": event.get("a"), "at": float(event.get("at") or 0)}
    value = float(event["v"]) if event.get("v") else None
    base["value"] = value
    if entry is None:
        return {"status": "expired", **base}
    _created, arms, record, _seg, _shown = entry
    if record is None or len(arms) < 2:
        return {"status": "no_duel", **base}
    import interleaving

    raw = [(arms[a], arms[b], float(s)) for a, b, s in
           interleaving.credit(record, [base["position"]])]
    out: dict[str, list[list[float]]] = {}
    values: dict[str, dict[str, float]] = {}
    for name in (x for x in event.get("m", "").split(",") if x):
        m = metrics.get(name)
        if m is None:  # not a metric of the experiment (never, but never blocking)
            continue
        if m.value == "sum" and value is not None:
            out[name] = [[i, j, bounded(s, value, m.cap or 1.0)] for i, j, s in raw]
            values[name] = {str(a): value for a in winners(raw)}
        else:
            out[name] = [[i, j, s] for i, j, s in raw]
    return {"status": "credited", **base, "outcomes": out, "values": values}


def winners(raw: Sequence[tuple[int, int, float]]) -> list[int]:
    """The arms that won every comparison of an event they are in (the team that placed
    the document, for team draft).

    >>> winners([(0, 1, 0.0), (0, 2, 0.5), (1, 2, 1.0)]), winners([(4, 7, 1.0)])
    ([1], [4])
    """
    score: dict[int, bool] = {}
    for i, j, s in raw:
        score[i] = score.get(i, True) and s > 0.5
        score[j] = score.get(j, True) and s < 0.5
    return sorted(a for a, won in score.items() if won)


def spec(mark: Mapping[str, Any], seg: str) -> str:
    """The credit script's argument for one event: ``seg|m,i,j,s;...|m:arm:value;...|``
    (the counters it adds last)."""
    outs = ";".join(f"{m},{int(i)},{int(j)},{float(s)!r}"
                    for m, rows in mark.get("outcomes", {}).items() for i, j, s in rows)
    vals = ";".join(f"{m}:{int(a)}:{float(v)!r}"
                    for m, by_arm in mark.get("values", {}).items() for a, v in by_arm.items())
    counted = "outcome_events," + {"credited": "outcome_credited"}.get(
        mark["status"], "outcome_" + mark["status"])
    return f"{seg}|{outs}|{vals}|{counted}"


def credit_events(store: Store, exp_id: str, members: Sequence[str]) -> dict[str, dict]:
    """Credit the outcome events ``members`` (``~<digest>``) of ``exp_id`` once each;
    per member its mark (``already`` / ``missing`` when nothing was written)."""
    digests = [m[len(OUTCOME_MEMBER):] for m in members]
    events = store.outcomes.read_outcome_events(exp_id, digests)
    meta = store.outcomes.meta(exp_id)
    if meta is None:  # deleted: nothing left to credit
        return {m: {"status": "missing"} for m in members}
    metrics = {m.name: m for m in declared(meta)}
    entries = store.outcomes.read_attributions(exp_id, [e["i"] for e in events
                                                        if e is not None and "credited" not in e])
    learnt = None if learns_clicks(meta) else primary(meta)
    marks: dict[str, dict] = {}
    batch, policy = [], []
    for member, key, event in zip(members, digests, events, strict=True):
        entry = entries.get(event["i"]) if event is not None else None
        mark = outcomes(event, entry, metrics)
        marks[member] = mark
        if mark["status"] in ("missing", "already"):
            batch.append((member, key, json.dumps(mark), "|||"))
            continue
        seg = (entry[3] or "") if entry is not None else ""
        batch.append((member, key, json.dumps(mark), spec(mark, seg)))
        if learnt in mark.get("outcomes", {}) and "pc" not in event:
            policy.append((member, key, mark, [x for x in seg.split(",") if x]))
    if policy:  # the policy learns first; the metrics' script then ends each event
        try:
            credit_primary(store, exp_id, policy, learnt)
        except ExperimentMissing:  # deleted meanwhile: nothing left to credit
            return {m: {"status": "missing"} for m in members}
    codes = store.outcomes.commit_metric_credit(exp_id, batch)
    return {m: (marks[m] if code == "ok" else {"status": code}) for m, code in codes.items()}
