"""The report of an A/B experiment (``GET /experiments/ID/report`` when its design is
``ab``) and the confirmed pairs of ``GET /agreements``.

The statistics are :mod:`rollout.ab`'s and :mod:`rollout.srm`'s; this module reads the
counters (:meth:`service.ab.store.ABStore.ab_moments`: per arm and metric, the moments
of the users' values) and shapes the answer:

* per treatment against the control and per metric (``ctr``, ``searches``,
  ``abandonment``, and each conversion metric the experiment declares: its users' mean
  count or sum of values, a user without conversions counting as 0): the difference and
  the relative lift with the anytime-valid confidence sequence of Waudby-Smith et al.
  2023 at the experiment's δ (split over the treatments), the decision when the interval
  excludes 0, the users still needed (:func:`rollout.ab.ab_report`); the conversion
  metrics' decisions are stated apart (``conversion_verdicts``), the verdict staying on
  ``ctr``;
* the split checked (:func:`rollout.srm.check`, p < 0.001 with a minimum deviation):
  the users first seen per arm against the arms' shares, which are equal and never change
  (:mod:`rollout.ab.arms`: a ramp or a pause moves the experiment's share, not the
  arms' parts of it), so one period; while it is flagged the verdict says it is not to be
  trusted. The searches per arm are checked too and shown (``srm_searches``), but a
  user's searches are not independent draws, so only the users' check flags the verdict.
"""

from __future__ import annotations

import math
import time
from typing import Any

from rollout import srm
from rollout.ab import Moments, ab_report, agreement_rate, agrees, metric_verdicts
from rollout.ab.arms import equal_shares
from service.ab.store import AB_METRICS
from service.outcomes.declared import Metric, declared
from service.reports import speedup, splits
from service.store import Store
from service.store.snapshot import Snapshot


def conversions_of(meta: dict[str, Any]) -> list[Metric]:
    """The conversion metrics an A/B test declares (its metrics of an action)."""
    return [m for m in declared(meta) if not m.is_click]


def arms_of(store: Store, snap: Snapshot) -> tuple[list[str], dict[str, dict[str, Moments]]]:
    """The arms' names (control first) and metric -> arm -> moments (the conversion
    metrics' too); ``clicked`` -> arm -> the arm's clicked searches (as ``Moments.n``)."""
    names = [r.name for r in sorted(snap.rankers, key=lambda r: r.arm)]
    raw = store.ab.ab_moments(snap.meta["id"])
    measured = (*AB_METRICS, "clicked", *(m.name for m in conversions_of(snap.meta)))
    arms = {m: {names[a]: Moments.from_json(raw.get(a, {}).get(m, {}))
                for a in range(len(names))} for m in measured}
    return names, arms


def split_checks(names: list[str], arms: dict[str, dict[str, Moments]]
                 ) -> tuple[srm.Period, srm.SRMResult]:
    """The users' period (for :func:`rollout.ab.ab_report`) and the searches' check."""
    shares = equal_shares(names)
    users = srm.Period(shares, {n: arms["ctr"][n].n for n in names})
    searches = srm.check([srm.Period(shares, {n: round(arms["searches"][n].total)
                                              for n in names})], unit="searches")
    return users, searches


def build(store: Store, exp_id: str, *, now: float | None = None) -> dict[str, Any]:
    """The A/B report of ``exp_id`` (module docstring)."""
    now = time.time() if now is None else now
    snap = store.experiments.snapshot(exp_id)
    meta = snap.meta
    names, arms = arms_of(store, snap)
    control = names[0]
    users, searches = split_checks(names, arms)
    delta = float(meta.get("error_rate") or 0.05)
    conversions = conversions_of(meta)
    measured = (*AB_METRICS, *(m.name for m in conversions))
    out = ab_report({m: arms[m] for m in measured}, control, delta, [users])
    verdicts = out["verdict"] if len(names) > 2 else {names[1]: out["verdict"]}
    searched = sum(round(arms["searches"][n].total) for n in names)
    kept = keep_decisions(store, exp_id, out["metrics"]["ctr"], users.counts, now,
                          searches=searched)
    for t, v in verdicts.items():
        if t in kept and not v["decided"]:  # decided at an earlier look: kept
            v.update(decided=True, direction=kept[t]["direction"],
                     statement=stands(t, "ctr", kept[t], control))
    split = splits.section(store, meta)  # the experiment's share of its placement
    for v in verdicts.values():
        v["statement"] = splits.untrusted(v["statement"], split)
        v["trusted"] = v["trusted"] and not split["flagged"]
    shares = equal_shares(names)
    total_users = sum(arms["ctr"][n].n for n in names)
    table = []
    for n in names:
        m = arms["ctr"][n]
        table.append({
            "name": n, "role": "control" if n == control else "treatment",
            "assigned_share": round(shares[n], 6),
            "observed_share": round(m.n / total_users, 6) if total_users else None,
            "users": m.n, "searches": round(arms["searches"][n].total),
            "clicked_searches": arms["clicked"][n].n,
            "ctr": None if not m.n else round(m.mean, 6)})
        if conversions:  # each conversion metric's mean per user (zeros included)
            table[-1]["conversions"] = {
                c.name: None if not arms[c.name][n].n else arms[c.name][n].mean
                for c in conversions}
    report = {
        "id": exp_id, "name": meta["name"], "design": "ab", "lifecycle": snap.lifecycle,
        "placement": meta.get("placement"), "control": control,
        "treatments": names[1:], "error_rate": delta, "primary": "ctr",
        "method": "asymptotic confidence sequence (Waudby-Smith et al. 2023) on per-user "
                  "values; SRM: Dirichlet-multinomial sequential test (Lindon & Malek 2022) "
                  "at p < 0.001",
        "arms": table, "metrics": out["metrics"], "srm": out["srm"],
        "srm_searches": searches.to_json(), "split": split, "verdicts": verdicts,
        "decisions": kept,
        "verdict": "; ".join(v["statement"] for v in verdicts.values()),
        "decided": all(v["decided"] for v in verdicts.values()),
        "trusted": all(v["trusted"] for v in verdicts.values()),
        "confirms": meta.get("confirms"), "generated_at": now}
    if meta.get("confirms"):  # a confirmation: what interleaving saved, when decided
        report.update(pair_speedup(store, exp_id) or {})
    if conversions:  # only with metrics declared: today's report otherwise
        report["conversions"] = [c.to_json() for c in conversions]
        report["conversion_verdicts"] = found = metric_verdicts(
            out, [c.name for c in conversions], control)
        for name, by_treatment in found.items():  # each metric's first decisions kept too
            kept_m = keep_decisions(store, exp_id, out["metrics"][name], users.counts, now,
                                    metric=name, searches=searched)
            for t, v in by_treatment.items():
                if t in kept_m and not v["decided"]:
                    v.update(decided=True, direction=kept_m[t]["direction"],
                             statement=stands(t, name, kept_m[t], control))
    return report


def stands(t: str, metric: str, d: dict[str, Any], control: str) -> str:
    """A decision kept from an earlier look, in words (:func:`keep_decisions`).

    >>> stands("new", "revenue", {"direction": 1, "users": 4200, "lift": 0.2,
    ...                           "lift_interval": [0.05, 0.35]}, "prod").split(";")[0]
    'new: higher revenue than prod, decided at 4,200 users (+20.00 %, interval +5.00 % to +35.00 %)'
    """
    lo, hi = (100.0 * x if x is not None else math.nan for x in d["lift_interval"])
    lift = 100.0 * d["lift"] if d["lift"] is not None else math.nan
    return (f"{t}: {'higher' if d['direction'] > 0 else 'lower'} {metric} than {control}, "
            f"decided at {d['users']:,} users ({lift:+.2f} %, interval {lo:+.2f} % to "
            f"{hi:+.2f} %); a confidence sequence's intervals hold together, so the "
            f"decision stands")


def keep_decisions(store: Store, exp_id: str, comparisons: dict[str, Any],
                   users: Any, now: float, *, metric: str = "ctr",
                   searches: int | None = None) -> dict[str, dict[str, Any]]:
    """Keep each treatment's first decision on ``metric`` (the primary, ``ctr``, or a
    conversion metric), and return that metric's decisions kept, by treatment. The
    intervals of a confidence sequence all hold at once (with probability 1 − δ), so
    their running intersection does too: once an interval has excluded 0, the decision
    stands, whatever a later look's interval says. The primary's are kept under the
    treatment's name (``GET /agreements`` reads them), a conversion metric's under
    ``<metric>:<treatment>`` (neither name has a colon). Each decision keeps the users
    and the ``searches`` of every arm at that look: what the A/B test needed to decide
    (:mod:`service.reports.speedup`)."""
    prefix = "" if metric == "ctr" else f"{metric}:"

    def mine() -> dict[str, dict[str, Any]]:
        return {k[len(prefix):]: v for k, v in store.ab.ab_decisions(exp_id).items()
                if k.startswith(prefix) and ":" not in k[len(prefix):]}

    kept = mine()
    for t, c in comparisons.items():
        if c["decided"] and t not in kept:
            d = {k: c[k] for k in ("direction", "difference", "interval", "lift",
                                   "lift_interval")}
            d.update(users=int(sum(users.values())), decided_at=now)
            if searches is not None:
                d["searches"] = int(searches)
            if store.ab.keep_decision(exp_id, prefix + t, d):
                kept[t] = d
            else:
                kept = mine()
    return kept


def pair_speedup(store: Store, ab_id: str) -> dict[str, Any] | None:
    """The speed-up of the confirmed pair whose A/B test is ``ab_id`` from its kept first
    decision (:mod:`service.reports.speedup`); None when no such pair is recorded."""
    pair = store.ab.agreements().get(ab_id)
    if pair is None:
        return None
    d = store.ab.ab_decisions(ab_id).get(pair["winner"])
    agree = None if d is None else agrees(
        1.0 if pair.get("preference") is None else pair["preference"],
        {"decided": True, "direction": d["direction"]})
    return speedup.for_pair(pair, d, agree)


def users_flag(store: Store, snap: Snapshot) -> str | None:
    """What is flagged of an A/B test's own split now, in words: its arms' users against
    their equal shares (None: not flagged). Its share of its placement is checked as every
    experiment's (:func:`service.reports.splits.flagged`)."""
    users, _ = split_checks(*arms_of(store, snap))
    result = srm.check([users])
    return result.message if result.flagged else None


def agreements(store: Store) -> dict[str, Any]:
    """Every confirmed pair with both verdicts and whether they agree, the searches each
    design needed and their ratio (:mod:`service.reports.speedup`), the running
    agreement rate (:func:`rollout.ab.agreement_rate`) and the median ratio. A pair's
    A/B verdict is read live; its first decision is kept with the pair (a decision is
    kept)."""
    pairs = []
    for ab_id, pair in sorted(store.ab.agreements().items(),
                              key=lambda kv: kv[1].get("confirmed_at", 0.0)):
        decision = pair.get("decision")
        if decision is None:
            try:
                rep = build(store, ab_id)
            except Exception:
                rep = None
            comp = (rep or {}).get("metrics", {}).get("ctr", {}).get(pair["winner"])
            first = (rep or {}).get("decisions", {}).get(pair["winner"]) or {}
            state = {"decided": bool(comp and comp["decided"]),
                     "ab_verdict": rep["verdict"] if rep else "the A/B test was deleted",
                     "trusted": bool(rep and rep["trusted"]),
                     **{k: (comp or {}).get(k) for k in ("lift", "lift_interval",
                                                         "difference", "interval",
                                                         "direction")},
                     # the sample at the look that first decided (speed-up)
                     "users": first.get("users"), "searches": first.get("searches")}
            if state["decided"]:
                decision = {**state, "decided_at": time.time()}
                store.ab.put_agreement(ab_id, {**pair, "decision": decision})
        else:
            state = decision
        preference = pair.get("preference")
        # interleaving certified the winner best: without a duel with the control
        # (preference null) its claim is still "the winner beats the control"
        agree = (agrees(1.0 if preference is None else preference,
                        {"decided": state["decided"], "direction": state["direction"] or 0})
                 if state["decided"] else None)
        pairs.append({
            "interleaving": pair["interleaving"], "ab": ab_id, "placement": pair["placement"],
            "winner": pair["winner"], "control": pair["control"], "preference": preference,
            "interleaving_verdict": pair["interleaving_verdict"],
            "ab_verdict": state["ab_verdict"], "decided": state["decided"],
            "lift": state["lift"], "lift_interval": state["lift_interval"],
            "difference": state["difference"], "interval": state["interval"],
            "agree": agree, "trusted": state["trusted"],
            **speedup.for_pair(pair, state if state["decided"] else None, agree)})
    return {"pairs": pairs, "rate": agreement_rate([p["agree"] for p in pairs]),
            "speedup": speedup.median(p["speedup"] for p in pairs)}


__all__ = ["agreements", "arms_of", "build", "pair_speedup", "split_checks", "users_flag"]
