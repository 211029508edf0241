"""Operator operations: create, inspect and steer experiments.

An experiment's ``algorithm``, ``params`` and ``interleaving`` method are fixed at
creation (changing them would make ``W`` mean something else half-way); rankers can be
added and retired while it runs, and its lifecycle is ``running ⇄ paused → stopped``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import bandits
from bandits.base import ELIMINATED, RETIRED
from service.errors import Conflict, Unprocessable
from service.rankers import validate_url
from service.schemas import NewExperiment, RankerIn
from service.store import Snapshot, Store

IMMUTABLE = ("algorithm", "params", "interleaving", "seed", "rankers")
Z95 = 1.959963984540054


def ranker_entry(ranker: RankerIn, *, default_timeout_ms: int,
                 where: str = "") -> dict[str, Any]:
    """A validated ranker as stored: ``{"name", "url", "timeout_ms"}``."""
    try:
        url = validate_url(ranker.url)
    except ValueError as exc:
        raise Unprocessable(f"field {where}url: {exc}") from None
    timeout = default_timeout_ms if ranker.timeout_ms is None else ranker.timeout_ms
    return {"name": ranker.name, "url": url, "timeout_ms": timeout}


def create(store: Store, spec: NewExperiment, *, default_timeout_ms: int) -> str:
    """Create the experiment a validated ``POST /experiments`` body describes; 422 for
    what its schema cannot say (see :mod:`service.schemas`)."""
    body = spec.root
    algorithm = body.algorithm
    try:
        bandits.get_algorithm(algorithm)
    except (ImportError, AttributeError):
        raise Unprocessable(f"algorithm {algorithm!r} is not available in this build") from None
    params = body.params_dict()
    try:
        bandits.check_params(algorithm, params)
    except ValueError as exc:
        raise Unprocessable(f"invalid params for {algorithm}: {exc}") from None
    rankers = [ranker_entry(r, default_timeout_ms=default_timeout_ms, where=f"rankers[{n}].")
               for n, r in enumerate(body.rankers)]
    names = [r["name"] for r in rankers]
    if len(set(names)) != len(names):
        raise Unprocessable("ranker names must be unique")
    truth = parse_truth(body.true_preferences, body.true_best, names)
    try:
        return store.create_experiment(name=body.name, algorithm=algorithm, params=params,
                                       interleaving=body.interleaving, rankers=rankers,
                                       seed=body.seed, truth=truth)
    except ValueError as exc:  # the policy's constructor refused a parameter value
        raise Unprocessable(f"invalid params for {algorithm}: {exc}") from None


def parse_truth(preferences: list[list[float]] | None, best: str | None,
                names: list[str]) -> dict[str, Any] | None:
    """The optional ground truth of a simulated experiment (the demo sends it), used only
    by the ``rankduel_experiment_true_regret`` metric.

    ``preferences`` is the K×K preference matrix over the rankers in their order
    (validated like ``rankduel simulate --matrix``); ``best`` names the ranker regret is
    measured against (default: the Condorcet winner, else the Copeland regret of seed 000
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


def refuse_definition_change(body: dict[str, Any]) -> None:
    """An experiment's definition cannot change after creation (409)."""
    fixed = sorted(set(body) & set(IMMUTABLE))
    if fixed:
        raise Conflict(f"{', '.join(fixed)} cannot change after an experiment is created"
                       " (add or retire rankers with /experiments/ID/rankers)")


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
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n > 0, W / np.maximum(n, 1e-12), 0.5)
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
            "wins": float(W[a].sum()),
            "losses": float(W[:, a].sum()),
            "comparisons": float(n[a].sum()),
        })
    structure = bandit.structure()
    out = summary(store, snap)
    out.update({
        "params": bandit.params(),
        "seed": snap.meta["seed"],
        "created_at": snap.meta["created_at"],
        "version": snap.version,
        "t": snap.selections,
        "selections": snap.selections,
        "counters": snap.counters,
        "rankers": rankers,
        "arms": [names[a] for a in range(bandit.K)],
        "stage": structure.get("stage"),
        "batches": _names_of(structure["batches"], names) if "batches" in structure else None,
        "W": W.tolist(),
        "preferences": {
            "p": _round(p), "lower": _round(lo), "upper": _round(hi),
            "interval": "wilson", "confidence": 0.95,
        },
    })
    return out
