"""Dueling-bandit policies (pure numpy/scipy, no I/O).

Each policy lives in its own module behind the interface of :mod:`bandits.base`;
``get_algorithm(name)`` imports it by its registered name, and each declares its
parameters once on its class (``PARAMS``, :mod:`bandits.params`), which
:func:`check_params` reads. Shared pieces:
:mod:`bandits.common` (empirical preferences, UCB helpers), :mod:`bandits.matrices`
(preference matrices, winners, regret), :mod:`bandits.volatility` (which outcomes may
change a policy's structure), and for the Merge family (MergeDTS
:mod:`bandits.merge_dts`, MergeRUCB :mod:`bandits.merge_rucb`, MergeGuard
:mod:`bandits.merge_guard`, MergeMED :mod:`bandits.merge_med`) their framework
:mod:`bandits.merge_base` with its batch structure :mod:`bandits.merge_structure`, which
each composes with the components it declares (:mod:`bandits.merge_components`: pair
rule, elimination test; the guard :mod:`bandits.non_condorcet_guard` with the champion's
verification :mod:`bandits.champion_verification`), the batch partition rules
:mod:`bandits.merge_partition` and MergeDTS's sampling kernels
:mod:`bandits.merge_sampling`. The offline simulator is :mod:`bandits.simulator`, with
its loops :mod:`bandits.simulation_loops` and :mod:`bandits.live_loop`. Each module of
the package holds one concept, none over 450 lines (tests/unit/test_bandits_modules.py).
"""

from __future__ import annotations

import importlib
from typing import Any

from bandits.base import ACTIVE, ELIMINATED, RETIRED, DuelingBandit
from bandits.params import Param, check

#: registered name -> "module:Class"
ALGORITHMS: dict[str, str] = {
    "mergedts": "bandits.merge_dts:MergeDTS",
    "mergeguard": "bandits.merge_guard:MergeGuard",
    "mergemed": "bandits.merge_med:MergeMED",
    "recommended": "bandits.sparring_certifier:SparringCertifier",
    "sparring_certifier": "bandits.sparring_certifier:SparringCertifier",
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


#: classes already looked up, by their ``ALGORITHMS`` entry (a worker decodes a policy
#: at every hold)
_CLASSES: dict[str, type[DuelingBandit]] = {}


def get_algorithm(name: str) -> type[DuelingBandit]:
    """The policy class registered under ``name``."""
    spec = ALGORITHMS.get(name)
    if spec is None:
        known = ", ".join(sorted(ALGORITHMS))
        raise ValueError(f"unknown algorithm {name!r}; known: {known}")
    found = _CLASSES.get(spec)
    if found is None:
        module, cls = spec.split(":")
        found = _CLASSES[spec] = getattr(importlib.import_module(module), cls)
    return found


def check_params(name: str, params: dict[str, Any], *, ranges: bool = True) -> dict[str, Any]:
    """Validate ``params`` for the policy ``name`` before it is built.

    Reads the policy's declaration (``PARAMS``, :mod:`bandits.params`): every parameter
    must be declared, of its type (a finite real number, an integral one for an ``int``;
    a string; a boolean) and, with ``ranges``, within its bounds or choices. A
    ``ValueError`` names the offending parameter; an unknown one is listed with the
    valid ones.

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
    >>> check_params("rucb", {"alpha": -1})
    Traceback (most recent call last):
    ...
    ValueError: parameter 'alpha' of rucb must be greater than 0, got -1
    """
    return check(name, get_algorithm(name).PARAMS, params, ranges=ranges)


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
    "Param",
    "bandit_from_state",
    "check_params",
    "get_algorithm",
    "make_bandit",
]
