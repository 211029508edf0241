"""Operator operations: create, inspect and steer experiments.

An experiment's ``algorithm``, ``params`` and ``interleaving`` method are fixed at
creation (changing them would make ``W`` mean something else half-way); rankers can be
added and retired while it runs, and its lifecycle is ``running ⇄ paused → stopped``.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

import numpy as np

import bandits
from bandits.base import ELIMINATED, RETIRED
from bandits.common import preferences, wilson_interval
from service.designs.registry import design_of
from service.errors import Conflict, Unprocessable
from service.experiments import error_rates
from service.outcomes.counts import metric_state
from service.outcomes.declared import declare as declare_metrics
from service.rankers import template as ranker_template
from service.rankers.allow_list import RankerPolicy
from service.rankers.client import RankerClient
from service.rankers.parsing import validate_url
from service.rankers.probe import probe_all
from service.schemas import NewExperiment, NewRanker, RankerIn
from service.segments.counts import segment_state
from service.store import Contention, Store, audit_entry
from service.store.records import Ranker
from service.store.snapshot import ExperimentMissing, Snapshot
from service.transaction import update_experiment
from service.webhooks import outbox

IMMUTABLE = ("algorithm", "params", "interleaving", "seed", "rankers")
#: action -> (allowed source states, target state)
TRANSITIONS = {
    "pause": (("running",), "paused"),
    "resume": (("paused",), "running"),
    "stop": (("running", "paused"), "stopped"),
}


def ranker_entry(ranker: RankerIn, *, default_timeout_ms: int, where: str = "",
                 policy: RankerPolicy | None = None) -> Ranker:
    """A validated ranker, not yet given an arm: its name, URL and timeout, plus its
    ``request`` template and ``response`` mapping when it has them (checked here:
    placeholders, header secrets set in this process, paths; :mod:`service.
    ranker_template`); with ``policy``, its URL must be one the allow-list allows
    (:mod:`service.rankers.allow_list`)."""
    try:
        url = validate_url(ranker.url)
        if policy is not None:
            policy.check_url(url)
    except ValueError as exc:
        raise Unprocessable(f"field {where}url: {exc}") from None
    timeout = default_timeout_ms if ranker.timeout_ms is None else ranker.timeout_ms
    problems = []
    request = response = None
    if ranker.request is not None:
        request = ranker.request.model_dump(exclude_none=True)
        problems += [f"field {where}request.{f}: {m}"
                     for f, m in ranker_template.check_request(request)]
    if ranker.response is not None:
        response = ranker.response.model_dump(exclude_none=True)
        problems += [f"field {where}response.{f}: {m}"
                     for f, m in ranker_template.check_response(response)]
    if problems:
        raise Unprocessable("; ".join(problems), errors=problems)
    return Ranker(name=ranker.name, url=url, timeout_ms=timeout, request=request,
                  response=response)


#: a probe of rankers before they are added; its keyword ``allow_empty`` names those that
#: may answer no results (:mod:`service.rankers.probe`)
Prober = Callable[..., None]


def probe_rankers(client: RankerClient, rankers: list[Ranker], query: str, *,
                  allow_empty: Collection[str] = ()) -> None:
    """Send each ranker a test query; 422 naming every one that does not answer with a
    non-empty valid result list (an empty one passes for the rankers in ``allow_empty``),
    with why (:func:`service.rankers.probe.probe_one`). An operator may skip this with
    ``"probe": false``."""
    bad = [f"{r.name} ({why})" for r, why in probe_all(client, rankers, query,
                                                       allow_empty=allow_empty)]
    if bad:
        raise Unprocessable(f"ranker did not answer the test query {query!r}: "
                            f"{'; '.join(bad)} (pass \"probe\": false to add it anyway)")


def create(store: Store, spec: NewExperiment, *, default_timeout_ms: int,
           probe: Prober | None = None, policy: RankerPolicy | None = None) -> str:
    """Create the experiment a validated ``POST /experiments`` body describes; 422 for
    what its schema cannot say (see :mod:`service.schemas`). With ``probe``, every ranker
    must answer a test query first (unless the body says ``"probe": false``)."""
    body = spec.root
    algorithm = body.algorithm  # a registered one: service.schemas imports every policy
    params = body.params_dict()
    rankers, problems = [], []
    for n, r in enumerate(body.rankers):  # every ranker's problems at once
        try:
            rankers.append(ranker_entry(r, default_timeout_ms=default_timeout_ms,
                                        where=f"rankers[{n}].", policy=policy))
        except Unprocessable as exc:
            problems += exc.errors or [exc.message]
    if problems:
        raise Unprocessable("; ".join(problems),
                            errors=problems if len(problems) > 1 else None)
    names = [r.name for r in rankers]
    if len(set(names)) != len(names):
        raise Unprocessable("ranker names must be unique")
    truth = parse_truth(body.true_preferences, body.true_best, names)
    metrics, found = declare_metrics(
        [m.model_dump(exclude_none=True) for m in body.metrics or ()], body.primary)
    if found:  # what the schema cannot say, each naming its field
        raise Unprocessable("; ".join(found), errors=found if len(found) > 1 else None)
    error_rate = error_rates.resolve(algorithm, params,
                                     getattr(body, "error_rate", error_rates.DEFAULT),
                                     "error_rate" in body.model_fields_set)
    seed = secrets.randbits(63) if body.seed is None else body.seed
    try:
        bandit = bandits.make_bandit(algorithm, len(rankers), seed=seed, **params)
    except (TypeError, ValueError, OverflowError) as exc:
        raise Unprocessable(f"invalid params for {algorithm}: {exc}") from None
    if body.probe and probe is not None:
        probe(rankers, allow_empty={r.name for r in body.rankers if r.allow_empty})
    exp_id = secrets.token_hex(6)
    now = time.time()
    meta = {"id": exp_id, "name": body.name, "algorithm": algorithm, "params": params,
            "interleaving": body.interleaving, "seed": seed, "created_at": now,
            "dwell_unsatisfied_s": body.dwell_unsatisfied_s, "placement": body.placement,
            "error_rate": error_rate,
            "guardrails": body.guardrails.model_dump(exclude_none=True)
            if body.guardrails is not None else None}
    if body.segments:
        meta["segments"] = body.segments
    if metrics:  # absent without metrics: the meta of today's experiments, unchanged
        meta["metrics"], meta["primary"] = metrics, body.primary or "click"

    table = [replace(r, arm=a, status="active", added_at=now, retired_at=None)
             for a, r in enumerate(rankers)]
    audit = audit_entry(now, "created", actor="operator", name=body.name, algorithm=algorithm,
                        rankers=names)
    store.experiments.create_experiment(exp_id, meta=meta, rankers=table, bandit=bandit,
                                        truth=truth, audit=audit)
    return exp_id


def _health(h: dict[str, Any]) -> dict[str, Any]:
    """A ranker's health as the state shows it (its window of answers left out)."""
    return {"failures": h.get("failures", 0), "quarantined_until": h.get("quarantined_until"),
            "degraded": h.get("degraded"), "degraded_until": h.get("degraded_until")}


def parse_truth(preferences: list[list[float]] | None, best: str | None,
                names: list[str]) -> dict[str, Any] | None:
    """The optional ground truth of a simulated experiment (the demo sends it), used only
    by the ``rankduel_experiment_true_regret`` metric.

    ``preferences`` is the K×K preference matrix over the rankers in their order
    (validated like ``rankduel simulate --matrix``); ``best`` names the ranker regret is
    measured against (default: the Condorcet winner, else the Copeland regret of Li et al. 2020
    eq. 10, as in the simulator).
    """
    from bandits.matrices import validate_matrix

    if preferences is None:
        if best is not None:
            raise Unprocessable("field 'true_best' needs 'true_preferences'")
        return None
    try:
        P = validate_matrix(preferences)
    except ValueError as exc:
        raise Unprocessable(f"field 'true_preferences': {exc}") from None
    if P.shape[0] != len(names):
        raise Unprocessable(f"field 'true_preferences' must be {len(names)}×{len(names)} "
                            f"(one row per ranker), got {P.shape[0]}×{P.shape[1]}")
    if best is not None and best not in names:
        raise Unprocessable(f"field 'true_best': no ranker named {best!r}")
    return {"preferences": P.tolist(), "best": None if best is None else names.index(best)}


def how_to_change(exp_id: str, name: str = "NAME") -> str:
    """What a 409 says to do instead of changing a ranker in place."""
    return (f"a ranker's definition cannot change inside an experiment (its comparisons "
            f"would mix two systems): add a new version with POST /experiments/{exp_id}/"
            f"rankers/{name}/versions and the fields to change (it becomes {name}@v2, "
            f"the previous version is retired unless \"retire_previous\": false)")


def refuse_definition_change(body: dict[str, Any]) -> None:
    """An experiment's definition cannot change after creation (409)."""
    fixed = sorted(set(body) & set(IMMUTABLE))
    if fixed:
        raise Conflict(f"{', '.join(fixed)} cannot change after an experiment is created "
                       "(add or retire rankers with /experiments/ID/rankers); "
                       + how_to_change("ID"))


def rename(store: Store, exp_id: str, name: str) -> None:
    """Give the experiment a new name (audited)."""

    def write(snap: Snapshot, pipe) -> None:
        store.experiments.write_fields(pipe, exp_id, meta=json.dumps({**snap.meta, "name": name}))
        store.experiments.add_audit(exp_id, audit_entry(
            time.time(), "renamed", actor="operator", **{"from": snap.meta["name"], "to": name}),
            pipe=pipe)

    update_experiment(store, exp_id, write)


def add_ranker(store: Store, exp_id: str, spec: NewRanker, *, default_timeout_ms: int,
               probe: Prober | None = None, actor: str = "operator",
               policy: RankerPolicy | None = None) -> Ranker:
    """Add a ranker mid-run: a new arm with zero counts (the policy places it). With
    ``probe``, it must answer a test query first (unless ``"probe": false``)."""
    ranker = ranker_entry(spec, default_timeout_ms=default_timeout_ms, policy=policy)

    def check(snap: Snapshot) -> None:
        if snap.lifecycle == "stopped":
            raise Conflict(f"experiment {exp_id!r} is stopped")
        if fixed := design_of(snap.meta).fixed_arms:  # an A/B test's: users would move
            raise Conflict(f"experiment {exp_id!r} {fixed}")
        if any(r.name == ranker.name for r in snap.rankers):
            raise Conflict(f"experiment {exp_id!r} already has a ranker {ranker.name!r}; "
                           + how_to_change(exp_id, ranker.name))

    check(store.experiments.snapshot(exp_id))  # refuse before probing; again in the transaction
    if spec.probe and probe is not None:
        probe([ranker], allow_empty={ranker.name} if spec.allow_empty else ())

    def write(snap: Snapshot, pipe) -> Ranker:
        check(snap)
        bandit = snap.bandit
        arm = bandit.add_arm()
        now = time.time()
        entry = replace(ranker, arm=arm, status="active", added_at=now, retired_at=None)
        store.experiments.write_state(pipe, exp_id, bandit, rankers=[*snap.rankers, entry])
        store.experiments.add_audit(exp_id, audit_entry(now, "ranker_added", actor=actor,
                                                        ranker=ranker.name, arm=arm), pipe=pipe)
        return entry

    return update_experiment(store, exp_id, write)


def retire_ranker(store: Store, exp_id: str, name: str,
                  actor: str = "operator", **detail: Any) -> Ranker:
    """Retire a ranker for good: never chosen again, its counts stay in ``W``.
    ``detail``: more fields of the audit entry (why the service retired it)."""

    def write(snap: Snapshot, pipe) -> Ranker:
        entry = snap.ranker(name)
        if entry.status == "retired":
            raise Conflict(f"ranker {name!r} is already retired")
        bandit = snap.bandit
        if bandit.active_arms() == [entry.arm]:
            raise Conflict(f"cannot retire {name!r}: it is the last active ranker")
        bandit.retire_arm(entry.arm)
        now = time.time()
        entry = replace(entry, status="retired", retired_at=now)
        table = [entry if r.name == name else r for r in snap.rankers]
        store.experiments.write_state(pipe, exp_id, bandit, rankers=table)
        store.experiments.add_audit(exp_id, audit_entry(
            now, "ranker_retired", actor=actor, ranker=name, arm=entry.arm, **detail), pipe=pipe)
        return entry

    return update_experiment(store, exp_id, write)


def retire_if_failing(store: Store, exp_id: str, arm: int, name: str, *,
                      after: int) -> bool:
    """Retire ranker ``name`` (arm ``arm``) once it has been quarantined ``after`` times
    in a row: its first quarantine, then one per failed probe. Called when a quarantine
    opens; True if this call retired it.

    Retirement, not elimination: a ranker that does not answer was never beaten in a
    comparison, so naming a winner over it would be wrong; it is taken out of play with
    its counts kept, and the audit entry (``ranker_retired``, ``actor`` ``service``) says
    why. A ranker that is the last active one, or retired meanwhile, is left as it is.
    """
    n = store.ranker_health.quarantines(exp_id, arm)
    if n < after:
        return False
    try:
        retire_ranker(store, exp_id, name, actor="service", reason="keeps failing",
                      quarantines=n)
    except (Conflict, ExperimentMissing, Contention):
        # already retired, the last active ranker, deleted, or the state too contended:
        # the search goes on; the next failed probe tries again
        return False
    return True


def set_lifecycle(store: Store, exp_id: str, action: str, actor: str = "operator") -> str:
    """``pause`` / ``resume`` / ``stop``; 409 for a transition the lifecycle forbids."""
    sources, target = TRANSITIONS[action]

    def write(snap: Snapshot, pipe) -> str:
        if snap.lifecycle not in sources:
            raise Conflict(f"cannot {action} experiment {exp_id!r}: it is {snap.lifecycle}")
        store.experiments.write_fields(pipe, exp_id, lifecycle=target)
        store.experiments.add_audit(exp_id, audit_entry(time.time(), action, actor=actor, **{
            "from": snap.lifecycle, "to": target}), pipe=pipe)
        if target == "paused":  # with its cause; the caller marks it due (outbox.mark_due)
            outbox.queue(store, pipe, exp_id, "experiment_paused", {
                "actor": actor, "from": snap.lifecycle}, name=snap.meta.get("name"))
        return target

    return update_experiment(store, exp_id, write)


#: the Wilson interval, under the name this module has always given it
wilson = wilson_interval


def _names_of(value: Any, names: dict[int, str]) -> Any:
    """Arm indices in a (nested) list replaced by ranker names."""
    if isinstance(value, list):
        return [_names_of(v, names) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return names.get(value, value)
    return value


def _round(a: np.ndarray, nd: int = 4) -> list:
    return np.round(a, nd).tolist()


def summary(store: Store, snap: Snapshot) -> dict[str, Any]:
    """The short description listed by ``GET /experiments``."""
    bandit = snap.bandit
    names = snap.names
    return {
        "id": snap.exp_id,
        "name": snap.meta["name"],
        "algorithm": snap.meta["algorithm"],
        "interleaving": snap.meta["interleaving"],
        "lifecycle": snap.lifecycle,
        "champion": names.get(bandit.best_arm()),
        "comparisons": int(bandit.n_updates),
        "rankers": len(snap.rankers),
        "active_rankers": len(bandit.active_arms()),
    }


def _non_condorcet(structure: dict[str, Any], names: dict[int, str]) -> dict[str, Any] | None:
    """The guard of MergeGuard's structure with ranker names, else None."""
    g = structure.get("non_condorcet")
    if g is None:
        return None
    ev = g.get("evidence") or {}
    return {
        "flagged": bool(g["flagged"]),
        "flagged_at": g.get("flagged_at"),
        "delta": float(g["delta"]),
        "mode": structure.get("mode", "merge"),
        "cycle": [names.get(a, str(a)) for a in ev.get("cycle", [])],
        "beat_champion": [names.get(a, str(a)) for a in ev.get("beat_champion", [])],
    }


def describe(store: Store, snap: Snapshot) -> dict[str, Any]:
    """The full state of an experiment (``GET /experiments/ID``)."""
    if snap.counters is None:
        snap = store.experiments.snapshot(snap.exp_id, full=True)
    bandit = snap.bandit
    W = bandit.W
    names = snap.names
    n = W + W.T
    p = preferences(W)
    lo, hi = wilson(W, n)
    rankers = []
    for r in snap.rankers:
        a = r.arm
        code = int(bandit.status[a])
        status = "retired" if code == RETIRED else "eliminated" if code == ELIMINATED else "active"
        elim = bandit.eliminated.get(a)
        rankers.append({
            **r.to_json(),
            "version": r.version, "version_of": r.version_of,
            "status": status,
            "eliminated": None if elim is None else {
                "step": elim["step"], "by": names.get(elim["by"], elim["by"])},
            "health": _health((snap.health or {}).get(a, {})),
            "wins": float(W[a].sum()),
            "losses": float(W[:, a].sum()),
            "comparisons": float(n[a].sum()),
        })
    structure = bandit.structure()
    out = summary(store, snap)
    out.update({
        "params": bandit.params(),
        "t": snap.selections,
        "seed": snap.meta["seed"],
        "created_at": snap.meta["created_at"],
        "dwell_unsatisfied_s": snap.meta.get("dwell_unsatisfied_s"),
        **segment_state(store, snap, bandit.K),
        # only with declared metrics: today's state otherwise
        **metric_state(store, snap.exp_id, snap.meta, bandit.K, names),
        "version": snap.version,
        "selections": snap.selections,
        "counters": snap.counters,
        "rankers": rankers,
        "arms": [names[a] for a in range(bandit.K)],
        "stage": structure.get("stage"),
        "batches": _names_of(structure["batches"], names) if "batches" in structure else None,
        "non_condorcet": _non_condorcet(structure, names),
        "W": W.tolist(),
        "preferences": {
            "p": _round(p), "lower": _round(lo), "upper": _round(hi),
            "interval": "wilson", "confidence": 0.95,
        },
    })
    return out
