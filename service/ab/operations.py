"""A/B experiments on a placement: creation (``POST /experiments`` with ``"design":
"ab"``) and the confirmation of an interleaving verdict (``POST /experiments/ID/confirm``).

An A/B experiment is stored like any experiment, so that everything a placement does to
one applies unchanged (its share and ramp, sticky buckets, guardrails, the one pause,
deletion): its rankers are the placement's control (arm 0, copied at creation) and the
treatments; its meta says ``"design": "ab"`` and names its ``control``, and holds the
conversion metrics it declares (``metrics``, measured per user: docs/ab-tests.md). The policy kept
with it (``uniform``) is never asked: its searches are served by
:mod:`service.ab.search`, one arm's list whole, and measured per user
(:mod:`service.ab.store`); its report is :mod:`service.ab.report`.

**Confirming** a certified interleaving experiment creates the A/B test of its winner
against the placement's control and links the two (``confirms`` in the A/B's meta,
``confirmed_by`` in the interleaving's); the pair is kept in ``rd:agreements`` and listed,
with both verdicts, by ``GET /agreements`` (:mod:`service.ab.report`).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import replace
from typing import Any

import bandits
from rollout.ab.conversions import RESERVED, name_problems
from service.designs.registry import design_of
from service.errors import Conflict, NotFound, Unprocessable
from service.experiments import operations as experiments
from service.outcomes.declared import CLICK
from service.outcomes.declared import declare as declare_metrics
from service.placements import operations as placements
from service.placements import traffic as placement_traffic
from service.reports import speedup
from service.reports.build import build as build_report
from service.runtime import Runtime
from service.store import audit_entry
from service.store.records import Ranker
from service.transaction import update_experiment

#: the policy stored with an A/B experiment (never asked: see the module docstring)
HOLDER_POLICY = "uniform"


def control_of(rt: Runtime, name: str) -> Ranker:
    """Placement ``name``'s control ranker (404 for no such placement)."""
    data = rt.store.placements.placement(name)
    if data is None:
        raise NotFound(f"no placement {name!r} (create it with POST /placements)")
    return Ranker.from_json(data["def"]["control"])


def declare(metrics: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """An A/B test's ``metrics`` as stored in its meta (the click metric, which is its
    ``ctr``, first when not declared; empty: none), or 422 naming each field that is
    wrong (:func:`service.outcomes.declared.declare`, and no metric of an action named like
    the A/B test's own, :func:`rollout.ab.conversions.name_problems`)."""
    if not metrics:
        return []
    if not any(m.get("name") == CLICK and m.get("action") is None for m in metrics):
        metrics = [{"name": CLICK}, *metrics]
    stored, found = declare_metrics(metrics, None)
    found += name_problems(metrics)
    if found:
        raise Unprocessable("; ".join(found), errors=found if len(found) > 1 else None)
    return stored


def create(rt: Runtime, *, name: str, placement: str, treatments: list[Ranker],
           traffic: Any, guardrails: dict[str, Any] | None, delta: float,
           probe: experiments.Prober | None = None, allow_empty: set[str] | None = None,
           confirms: str | None = None, metrics: list[dict[str, Any]] | None = None) -> str:
    """Create an A/B experiment of ``treatments`` against ``placement``'s control and put
    it on the placement at ``traffic`` (JSON); its id. 422 for a treatment named like
    the control or two treatments of one name, or for ``metrics`` that are wrong
    (:func:`declare`), 409 when the placement has no room."""
    stored = declare(metrics)
    control = control_of(rt, placement)
    names = [control.name, *(t.name for t in treatments)]
    if len(set(names)) != len(names):
        raise Unprocessable(f"ranker names must be unique, and none may be the control's "
                            f"({control.name!r}, the control arm)")
    placements.check_join(rt.store, placement, "new", traffic)
    if probe is not None:
        probe(treatments, allow_empty=allow_empty or set())
    exp_id = secrets.token_hex(6)
    now = time.time()
    seed = secrets.randbits(63)
    rankers = [replace(r, arm=a, status="active", added_at=now, retired_at=None)
               for a, r in enumerate([control, *treatments])]
    bandit = bandits.make_bandit(HOLDER_POLICY, len(rankers), seed=seed)
    meta = {"id": exp_id, "name": name, "algorithm": HOLDER_POLICY, "params": {},
            "interleaving": "team_draft", "seed": seed, "created_at": now,
            "dwell_unsatisfied_s": None, "placement": placement, "error_rate": delta,
            "guardrails": guardrails, "design": "ab", "control": control.name}
    if confirms:
        meta["confirms"] = confirms
    if stored:  # conversion metrics, per user (service.ab.store); the verdict stays on ctr
        meta["metrics"], meta["primary"] = stored, CLICK
    rt.store.experiments.create_experiment(
        exp_id, meta=meta, rankers=rankers, bandit=bandit, truth=None,
        audit=audit_entry(now, "created", actor="operator", name=name, design="ab", rankers=names))
    placement_traffic.join_or_delete(rt, exp_id, placement, traffic)
    return exp_id


def create_from_body(rt: Runtime, body: Any, probe: experiments.Prober | None) -> str:
    """:func:`create` from a parsed :class:`service.ab.schemas.NewABExperiment`."""
    traffic = placement_traffic.traffic_of(body)
    treatments, problems = [], []
    for n, r in enumerate(body.rankers):
        try:
            treatments.append(experiments.ranker_entry(
                r, default_timeout_ms=rt.config.ranker_timeout_ms, where=f"rankers[{n}].",
                policy=rt.rankers.policy))
        except Unprocessable as exc:
            problems += exc.errors or [exc.message]
    if problems:
        raise Unprocessable("; ".join(problems), errors=problems if len(problems) > 1 else None)
    return create(rt, name=body.name, placement=body.placement, treatments=treatments,
                  traffic=traffic, delta=body.error_rate,
                  guardrails=(body.guardrails.model_dump(exclude_none=True)
                              if body.guardrails is not None else None),
                  probe=probe if body.probe else None,
                  allow_empty={r.name for r in body.rankers if r.allow_empty},
                  metrics=[m.model_dump(exclude_none=True) for m in body.metrics or ()])


def _same_ranker(a: Ranker, b: Ranker) -> bool:
    return a.name == b.name or (a.url == b.url and a.request == b.request
                                and a.response == b.response)


def confirm(rt: Runtime, exp_id: str, body: Any) -> str:
    """The A/B test of ``exp_id``'s certified winner against its placement's control
    (module docstring); its id. 409 when ``exp_id`` is an A/B test, is on no placement,
    is not certified, was confirmed already, or its winner is the control."""
    snap = rt.store.experiments.snapshot(exp_id)
    meta = snap.meta
    if not design_of(meta).confirmable:
        raise Conflict(f"experiment {exp_id!r} is an A/B test: only an interleaving "
                       f"verdict is confirmed")
    name = meta.get("placement")
    if not name:
        raise Conflict(f"experiment {exp_id!r} is on no placement: an A/B test needs the "
                       f"placement's users and its control")
    if meta.get("confirmed_by"):
        raise Conflict(f"experiment {exp_id!r} is confirmed already, by "
                       f"{meta['confirmed_by']!r}")
    report = build_report(rt.store, exp_id, record=False)
    if not report["certified"]:
        raise Conflict(f"experiment {exp_id!r} is not certified: only a certified verdict "
                       f"is confirmed ({report['verdict']})")
    winner = next(r for r in snap.rankers if r.name == report["champion"])
    control = control_of(rt, name)
    if _same_ranker(winner, control):
        raise Conflict(f"the winner of experiment {exp_id!r} is the control ranker "
                       f"{control.name!r}: there is nothing to confirm")
    preference = None  # the winner's share of its duels with the control, if they met
    arm_of = {r.name: r.arm for r in snap.rankers}
    c_arm = next((r.arm for r in snap.rankers if _same_ranker(r, control)), None)
    if c_arm is not None:
        prefs = report["preferences"]
        w = arm_of[winner.name]
        met = report["comparisons_by_pair"][w][c_arm]
        preference = float(prefs[w][c_arm]) if met else None
    entry = next((e for e in (rt.store.placements.placement(name) or {}).get("experiments", [])
                  if e["experiment"] == exp_id), None)
    traffic = (placement_traffic.as_json(body.traffic) if body.traffic is not None
               else entry["traffic"] if entry is not None else None)
    if traffic is None:
        raise Unprocessable("field 'traffic': the interleaving experiment holds no share "
                            "on its placement any more: give the A/B test's")
    treatment = Ranker(name=winner.name, url=winner.url, timeout_ms=winner.timeout_ms,
                       request=winner.request, response=winner.response)
    ab_delta = body.error_rate or meta.get("error_rate") or 0.05
    sample = speedup.interleaving_sample(
        rt.store.experiments.certification(exp_id), comparisons=int(report["comparisons"]),
        selections=int(rt.store.drains.selections(exp_id)),
        error_rate=report.get("error_rate") or meta.get("error_rate"))
    ab_id = create(rt, name=body.name or f"confirm {meta['name']}"[:100], placement=name,
                   treatments=[treatment], traffic=traffic,
                   guardrails=(body.guardrails.model_dump(exclude_none=True)
                               if body.guardrails is not None else meta.get("guardrails")),
                   delta=ab_delta, confirms=exp_id,
                   # its conversion metrics too, measured per user (but a name the A/B
                   # test measures itself, rollout.ab.conversions.RESERVED)
                   metrics=[m for m in meta.get("metrics") or ()
                            if m.get("name") not in RESERVED])

    def link(s, pipe) -> None:
        rt.store.experiments.write_fields(
            pipe, exp_id, meta=json.dumps({**s.meta, "confirmed_by": ab_id}))
        rt.store.experiments.add_audit(
            exp_id, audit_entry(time.time(), "confirmed_by", actor="operator", experiment=ab_id),
            pipe=pipe)

    update_experiment(rt.store, exp_id, link)
    rt.store.ab.put_agreement(ab_id, {
        "interleaving": exp_id, "ab": ab_id, "placement": name, "winner": winner.name,
        "control": control.name, "preference": preference,
        "interleaving_verdict": report["verdict"], "confirmed_at": time.time(),
        "decision": None, "interleaving_sample": sample, "ab_error_rate": ab_delta})
    return ab_id


__all__ = ["HOLDER_POLICY", "confirm", "control_of", "create", "create_from_body"]
