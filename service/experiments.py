"""Operator operations: create, inspect and steer experiments.

An experiment's ``algorithm``, ``params`` and ``interleaving`` method are fixed at
creation (changing them would make ``W`` mean something else half-way); rankers can be
added and retired while it runs, and its lifecycle is ``running ⇄ paused → stopped``.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import bandits
from bandits.base import ELIMINATED, RETIRED
from bandits.common import preferences
from service.errors import Conflict, Unprocessable
from service.rankers import RankerClient, RankerFailure, validate_url
from service.snapshot import Snapshot
from service.store import Store, audit_entry
from service.validation import field

IMMUTABLE = ("algorithm", "params", "interleaving", "seed", "rankers")
Z95 = 1.959963984540054
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
#: action -> (allowed source states, target state)
TRANSITIONS = {
    "pause": (("running",), "paused"),
    "resume": (("paused",), "running"),
    "stop": (("running", "paused"), "stopped"),
}


def interleaving_methods() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(all method names, the pairwise ones)."""
    import interleaving

    return tuple(interleaving.METHODS), tuple(interleaving.PAIRWISE_METHODS)


def parse_ranker(body: Any, *, default_timeout_ms: int, where: str = "") -> dict[str, Any]:
    """Validate one ranker ``{"name", "url", "timeout_ms"}``."""
    if not isinstance(body, dict):
        raise Unprocessable(f"{where or 'ranker'} must be an object")
    name = field(body, "name", str, where=where)
    if not NAME_RE.match(name):
        raise Unprocessable(
            f"field {where}name: {name!r} must be 1-64 letters, digits, '_', '.' or '-'")
    try:
        url = validate_url(field(body, "url", str, where=where))
    except ValueError as exc:
        raise Unprocessable(f"field {where}url: {exc}") from None
    timeout = field(body, "timeout_ms", int, required=False, default=default_timeout_ms,
                    where=where)
    if not 1 <= timeout <= 60_000:
        raise Unprocessable(f"field {where}timeout_ms must be between 1 and 60000")
    unknown = set(body) - {"name", "url", "timeout_ms"}
    if unknown:
        raise Unprocessable(f"unknown ranker fields: {', '.join(sorted(unknown))}")
    return {"name": name, "url": url, "timeout_ms": timeout}


Prober = Callable[[list[dict[str, Any]]], None]


def probe_rankers(client: RankerClient, rankers: list[dict[str, Any]], query: str) -> None:
    """Send each ranker a test query; 422 naming every one that does not answer with a
    valid result list (an operator may skip this with ``"probe": false``)."""
    answers = client.fetch_all(rankers, query, 10, experiment="", observe=False)
    bad = [f"{r['name']} ({res.reason}{': ' + res.detail if res.detail else ''})"
           for r, res in zip(rankers, answers, strict=True) if isinstance(res, RankerFailure)]
    if bad:
        raise Unprocessable(f"ranker did not answer the test query {query!r}: "
                            f"{'; '.join(bad)} (pass \"probe\": false to add it anyway)")


def _probe_flag(body: dict[str, Any]) -> bool:
    flag = body.pop("probe", True)
    if not isinstance(flag, bool):
        raise Unprocessable("field 'probe' must be true or false")
    return flag


def create(store: Store, body: dict[str, Any], *, default_timeout_ms: int,
           probe: Prober | None = None) -> str:
    """Validate a ``POST /experiments`` body and create the experiment; with ``probe``,
    every ranker must answer a test query first (unless the body says ``"probe": false``)."""
    body = dict(body)
    do_probe = _probe_flag(body)
    unknown = set(body) - {"name", "rankers", "algorithm", "params", "interleaving", "seed",
                           "true_preferences", "true_best"}
    if unknown:
        raise Unprocessable(f"unknown fields: {', '.join(sorted(unknown))}")
    name = field(body, "name", str)
    if not 1 <= len(name) <= 200:
        raise Unprocessable("field 'name' must have 1 to 200 characters")
    algorithm = field(body, "algorithm", str)
    if algorithm not in bandits.ALGORITHMS:
        raise Unprocessable(
            f"unknown algorithm {algorithm!r}; known: {', '.join(sorted(bandits.ALGORITHMS))}")
    try:
        policy = bandits.get_algorithm(algorithm)
    except (ImportError, AttributeError):
        raise Unprocessable(f"algorithm {algorithm!r} is not available in this build") from None
    params = field(body, "params", dict, required=False, default={})
    method = field(body, "interleaving", str)
    methods, pairwise_methods = interleaving_methods()
    if method not in methods:
        raise Unprocessable(
            f"unknown interleaving method {method!r}; known: {', '.join(methods)}")
    pairwise = method in pairwise_methods
    if policy.multi and pairwise:
        raise Unprocessable(f"{algorithm} compares sets of rankers: choose a multileaving method")
    if not policy.multi and not pairwise:
        raise Unprocessable(f"{algorithm} compares pairs: choose a pairwise interleaving method")
    seed = field(body, "seed", int, required=False)
    if seed is not None and not 0 <= seed < 2**63:
        raise Unprocessable("field 'seed' must be between 0 and 2**63 - 1")
    raw = field(body, "rankers", list)
    if not 2 <= len(raw) <= 1000:
        raise Unprocessable("field 'rankers' must list 2 to 1000 rankers")
    rankers = [parse_ranker(r, default_timeout_ms=default_timeout_ms, where=f"rankers[{n}].")
               for n, r in enumerate(raw)]
    names = [r["name"] for r in rankers]
    if len(set(names)) != len(names):
        raise Unprocessable("ranker names must be unique")
    truth = parse_truth(body, names)
    if do_probe and probe is not None:
        probe(rankers)
    if seed is None:
        seed = secrets.randbits(63)
    try:
        bandit = bandits.make_bandit(algorithm, len(rankers), seed=seed, **params)
    except (TypeError, ValueError, OverflowError) as exc:
        raise Unprocessable(f"invalid params for {algorithm}: {exc}") from None
    exp_id = secrets.token_hex(6)
    now = time.time()
    meta = {"id": exp_id, "name": name, "algorithm": algorithm, "params": params,
            "interleaving": method, "seed": seed, "created_at": now}
    table = [{**r, "arm": a, "status": "active", "added_at": now, "retired_at": None}
             for a, r in enumerate(rankers)]
    store.create_experiment(exp_id, meta=meta, rankers=table, bandit=bandit, truth=truth,
                            audit=audit_entry(now, "created", actor="operator", name=name,
                                              algorithm=algorithm, rankers=names))
    return exp_id


def parse_truth(body: dict[str, Any], names: list[str]) -> dict[str, Any] | None:
    """The optional ground truth of a simulated experiment (the demo sends it), used only
    by the ``rankduel_experiment_true_regret`` metric.

    ``true_preferences`` is the K×K preference matrix over ``rankers`` in their order
    (validated like ``rankduel simulate --matrix``); ``true_best`` names the ranker regret
    is measured against (default: the Condorcet winner, else the Copeland regret of seed
    000 eq. 10, as in the simulator).
    """
    from bandits.matrices import validate_matrix

    raw = body.get("true_preferences")
    best = field(body, "true_best", str, required=False)
    if raw is None:
        if best is not None:
            raise Unprocessable("field 'true_best' needs 'true_preferences'")
        return None
    try:
        P = validate_matrix(raw)
    except ValueError as exc:
        raise Unprocessable(f"field 'true_preferences': {exc}") from None
    if P.shape[0] != len(names):
        raise Unprocessable(f"field 'true_preferences' must be {len(names)}×{len(names)} "
                            f"(one row per ranker), got {P.shape[0]}×{P.shape[1]}")
    if best is not None and best not in names:
        raise Unprocessable(f"field 'true_best': no ranker named {best!r}")
    return {"preferences": P.tolist(), "best": None if best is None else names.index(best)}


def patch(store: Store, exp_id: str, body: dict[str, Any]) -> None:
    """Only the name can change; the definition of the experiment cannot (409)."""
    fixed = sorted(set(body) & set(IMMUTABLE))
    if fixed:
        raise Conflict(f"{', '.join(fixed)} cannot change after an experiment is created"
                       " (add or retire rankers with /experiments/ID/rankers)")
    unknown = set(body) - {"name"}
    if unknown:
        raise Unprocessable(f"unknown fields: {', '.join(sorted(unknown))}")
    name = field(body, "name", str)
    if not 1 <= len(name) <= 200:
        raise Unprocessable("field 'name' must have 1 to 200 characters")

    def write(snap: Snapshot, pipe) -> None:
        store.write_fields(pipe, exp_id, meta=json.dumps({**snap.meta, "name": name}))
        store.add_audit(exp_id, audit_entry(time.time(), "renamed", actor="operator", **{
            "from": snap.meta["name"], "to": name}), pipe=pipe)

    store.update_experiment(exp_id, write)


def add_ranker(store: Store, exp_id: str, body: dict[str, Any], *, default_timeout_ms: int,
               probe: Prober | None = None, actor: str = "operator") -> dict[str, Any]:
    """Add a ranker mid-run: a new arm with zero counts (the policy places it). With
    ``probe``, it must answer a test query first (unless ``"probe": false``)."""
    body = dict(body)
    do_probe = _probe_flag(body)
    ranker = parse_ranker(body, default_timeout_ms=default_timeout_ms)

    def check(snap: Snapshot) -> None:
        if snap.lifecycle == "stopped":
            raise Conflict(f"experiment {exp_id!r} is stopped")
        if any(r["name"] == ranker["name"] for r in snap.rankers):
            raise Conflict(f"experiment {exp_id!r} already has a ranker {ranker['name']!r}")

    check(store.snapshot(exp_id))  # refuse before probing; checked again in the transaction
    if do_probe and probe is not None:
        probe([ranker])

    def write(snap: Snapshot, pipe) -> dict[str, Any]:
        check(snap)
        bandit = snap.bandit
        arm = bandit.add_arm()
        now = time.time()
        entry = {**ranker, "arm": arm, "status": "active", "added_at": now, "retired_at": None}
        store.write_state(pipe, exp_id, bandit, rankers=[*snap.rankers, entry])
        store.add_audit(exp_id, audit_entry(now, "ranker_added", actor=actor,
                                            ranker=ranker["name"], arm=arm), pipe=pipe)
        return entry

    return store.update_experiment(exp_id, write)


def retire_ranker(store: Store, exp_id: str, name: str,
                  actor: str = "operator") -> dict[str, Any]:
    """Retire a ranker for good: never chosen again, its counts stay in ``W``."""

    def write(snap: Snapshot, pipe) -> dict[str, Any]:
        entry = dict(snap.ranker(name))
        if entry["status"] == "retired":
            raise Conflict(f"ranker {name!r} is already retired")
        bandit = snap.bandit
        if bandit.active_arms() == [entry["arm"]]:
            raise Conflict(f"cannot retire {name!r}: it is the last active ranker")
        bandit.retire_arm(entry["arm"])
        now = time.time()
        entry.update(status="retired", retired_at=now)
        table = [entry if r["name"] == name else r for r in snap.rankers]
        store.write_state(pipe, exp_id, bandit, rankers=table)
        store.add_audit(exp_id, audit_entry(now, "ranker_retired", actor=actor, ranker=name,
                                            arm=entry["arm"]), pipe=pipe)
        return entry

    return store.update_experiment(exp_id, write)


def set_lifecycle(store: Store, exp_id: str, action: str, actor: str = "operator") -> str:
    """``pause`` / ``resume`` / ``stop``; 409 for a transition the lifecycle forbids."""
    sources, target = TRANSITIONS[action]

    def write(snap: Snapshot, pipe) -> str:
        if snap.lifecycle not in sources:
            raise Conflict(f"cannot {action} experiment {exp_id!r}: it is {snap.lifecycle}")
        store.write_fields(pipe, exp_id, lifecycle=target)
        store.add_audit(exp_id, audit_entry(time.time(), action, actor=actor, **{
            "from": snap.lifecycle, "to": target}), pipe=pipe)
        return target

    return store.update_experiment(exp_id, write)


def wilson(wins: np.ndarray, n: np.ndarray, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of ``wins / n`` elementwise; ``[0, 1]`` where ``n == 0``.

    Examples
    --------
    >>> lo, hi = wilson(np.array([8.0]), np.array([10.0]))
    >>> round(float(lo[0]), 3), round(float(hi[0]), 3)
    (0.49, 0.943)
    """
    n_safe = np.maximum(n, 1e-12)
    p = wins / n_safe
    denom = 1 + z * z / n_safe
    centre = (p + z * z / (2 * n_safe)) / denom
    half = z * np.sqrt(p * (1 - p) / n_safe + z * z / (4 * n_safe * n_safe)) / denom
    lo = np.where(n > 0, np.clip(centre - half, 0, 1), 0.0)
    hi = np.where(n > 0, np.clip(centre + half, 0, 1), 1.0)
    return lo, hi


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
    names = {r["arm"]: r["name"] for r in snap.rankers}
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


def describe(store: Store, snap: Snapshot) -> dict[str, Any]:
    """The full state of an experiment (``GET /experiments/ID``)."""
    if snap.counters is None:
        snap = store.snapshot(snap.exp_id, full=True)
    bandit = snap.bandit
    W = bandit.W
    names = {r["arm"]: r["name"] for r in snap.rankers}
    n = W + W.T
    p = preferences(W)
    lo, hi = wilson(W, n)
    rankers = []
    for r in snap.rankers:
        a = r["arm"]
        code = int(bandit.status[a])
        status = "retired" if code == RETIRED else "eliminated" if code == ELIMINATED else "active"
        elim = bandit.eliminated.get(a)
        rankers.append({
            **r,
            "status": status,
            "eliminated": None if elim is None else {
                "step": elim["step"], "by": names.get(elim["by"], elim["by"])},
            "health": (snap.health or {}).get(a, {"failures": 0, "quarantined_until": None}),
            "wins": float(W[a].sum()),
            "losses": float(W[:, a].sum()),
            "comparisons": float(n[a].sum()),
        })
    state = _json_state(snap)
    out = summary(store, snap)
    out.update({
        "params": bandit.params(),
        "t": snap.selections,
        "seed": snap.meta["seed"],
        "created_at": snap.meta["created_at"],
        "version": snap.version,
        "selections": snap.selections,
        "counters": snap.counters,
        "rankers": rankers,
        "arms": [names[a] for a in range(bandit.K)],
        "stage": state.get("stage"),
        "batches": _names_of(state["batches"], names) if "batches" in state else None,
        "W": W.tolist(),
        "preferences": {
            "p": _round(p), "lower": _round(lo), "upper": _round(hi),
            "interval": "wilson", "confidence": 0.95,
        },
    })
    return out


def _json_state(snap: Snapshot) -> dict[str, Any]:
    state = json.loads(snap.state_json)
    return {k: v for k, v in state.items() if not (isinstance(v, float) and math.isnan(v))}
