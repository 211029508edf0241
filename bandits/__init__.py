"""Dueling-bandit policies (pure numpy/scipy, no I/O).

Each policy lives in its own module behind the interface of :mod:`bandits.base`;
``get_algorithm(name)`` imports it by its registered name. Shared pieces:
:mod:`bandits.common` (empirical preferences, UCB helpers), :mod:`bandits.matrices`
(preference matrices, winners, regret), and for MergeDTS (:mod:`bandits.merge_dts`) and
MergeRUCB (:mod:`bandits.merge_rucb`) their framework :mod:`bandits.merge_base`, the
batch partition rules :mod:`bandits.merge_partition` and MergeDTS's sampling kernels
:mod:`bandits.merge_sampling`.
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
from typing import Any

from bandits.base import ACTIVE, ELIMINATED, RETIRED, DuelingBandit

#: registered name -> "module:Class"
ALGORITHMS: dict[str, str] = {
    "mergedts": "bandits.merge_dts:MergeDTS",
    "mergeguard": "bandits.merge_guard:MergeGuard",
    "mergemed": "bandits.merge_med:MergeMED",
    "recommended": "bandits.merge_med:MergeMED",
    "mergerucb": "bandits.merge_rucb:MergeRUCB",
    "rucb": "bandits.rucb:RUCB",
    "rcs": "bandits.rcs:RCS",
    "ccb": "bandits.ccb:CCB",
    "dts": "bandits.dts:DTS",
    "self_sparring": "bandits.self_sparring:SelfSparring",
    "rmed1": "bandits.rmed:RMED1",
    "mdb": "bandits.mdb:MDB",
    "uniform": "bandits.uniform:Uniform",
}


def get_algorithm(name: str) -> type[DuelingBandit]:
    """The policy class registered under ``name``."""
    try:
        module, cls = ALGORITHMS[name].split(":")
    except KeyError:
        known = ", ".join(sorted(ALGORITHMS))
        raise ValueError(f"unknown algorithm {name!r}; known: {known}") from None
    return getattr(importlib.import_module(module), cls)


def check_params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Validate ``params`` for the policy ``name`` before it is built.

    Every parameter must be one the policy's constructor takes, and a finite real number
    (an integral one where the constructor says ``int``); a ``ValueError`` names the
    offending parameter and lists the valid ones. Ranges are the constructor's business.

    Examples
    --------
    >>> check_params("rucb", {"alpha": 0.6})
    {'alpha': 0.6}
    >>> check_params("rucb", {"alfa": 0.6})
    Traceback (most recent call last):
    ...
    ValueError: unknown parameter 'alfa' for rucb; valid: alpha
    >>> check_params("rucb", {"alpha": float("nan")})
    Traceback (most recent call last):
    ...
    ValueError: parameter 'alpha' of rucb must be a finite number, got nan
    """
    cls = get_algorithm(name)
    spec = {
        p.name: p
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name not in ("self", "n_arms", "seed") and p.kind == p.KEYWORD_ONLY
    }
    out = {}
    for key, value in params.items():
        if key not in spec:
            valid = ", ".join(sorted(spec)) or "(none)"
            raise ValueError(f"unknown parameter {key!r} for {name}; valid: {valid}")
        kind = str(spec[key].annotation).split(" ")[0]
        if kind == "str":
            if not isinstance(value, str):
                raise ValueError(f"parameter {key!r} of {name} must be a string, got {value!r}")
            out[key] = value
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"parameter {key!r} of {name} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"parameter {key!r} of {name} must be a finite number, got {value}")
        if kind == "int":
            if value != int(value):
                raise ValueError(f"parameter {key!r} of {name} must be an integer, got {value}")
            value = int(value)
        out[key] = value
    return out


def make_bandit(name: str, n_arms: int, *, seed=None, **params) -> DuelingBandit:
    """Instantiate the policy ``name`` with ``n_arms`` arms; ``params`` are checked by
    :func:`check_params` (a ``ValueError`` names a bad one)."""
    return get_algorithm(name)(n_arms, seed=seed, **check_params(name, params))


def bandit_from_state(state: dict) -> DuelingBandit:
    """Rebuild whichever policy ``state`` (from ``state_dict()``) belongs to."""
    return get_algorithm(state["algorithm"]).from_state(state)


__all__ = [
    "ACTIVE",
    "ALGORITHMS",
    "ELIMINATED",
    "RETIRED",
    "DuelingBandit",
    "bandit_from_state",
    "check_params",
    "get_algorithm",
    "make_bandit",
]
