"""Dueling-bandit policies (pure numpy/scipy, no I/O).

Each policy lives in its own module behind the interface of :mod:`bandits.base`;
``get_algorithm(name)`` imports it by its registered name.
"""

from __future__ import annotations

import importlib

from bandits.base import ACTIVE, ELIMINATED, RETIRED, DuelingBandit

#: registered name -> "module:Class"
ALGORITHMS: dict[str, str] = {
    "mergedts": "bandits.merge_dts:MergeDTS",
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


def make_bandit(name: str, n_arms: int, *, seed=None, **params) -> DuelingBandit:
    """Instantiate the policy ``name`` with ``n_arms`` arms."""
    return get_algorithm(name)(n_arms, seed=seed, **params)


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
    "get_algorithm",
    "make_bandit",
]
