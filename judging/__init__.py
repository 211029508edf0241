"""Judging algorithms: find the best items of a pool from human preference judgments.

Pure (numpy only, no I/O): Yan 2022 frames offline evaluation by human
preference judgments as a dueling-bandit problem over the items of a pool. Each algorithm
lives in its own module behind the interface of :mod:`judging.base`;
``make_judge(name, n_items, ...)`` builds one by its registered name.
"""

from __future__ import annotations

import importlib
from typing import Any

from bandits.params import check
from judging.base import Judge, Result

#: registered name -> "module:Class"
ALGORITHMS: dict[str, str] = {
    "prefbest": "judging.prefbest:PrefBest",
    "prefbest_extra": "judging.prefbest:PrefBestExtra",
    "gauntlet": "judging.gauntlet:Gauntlet",
    "gauntlet_ties": "judging.gauntlet:GauntletTies",
    # the algorithm scripts and campaigns should use; today the gauntlet
    "recommended": "judging.gauntlet:Gauntlet",
}


def get_judge(name: str) -> type[Judge]:
    """The judging algorithm registered under ``name``."""
    try:
        module, cls = ALGORITHMS[name].split(":")
    except KeyError:
        known = ", ".join(sorted(ALGORITHMS))
        raise ValueError(f"unknown judging algorithm {name!r}; known: {known}") from None
    return getattr(importlib.import_module(module), cls)


def check_params(name: str, params: dict[str, Any], *, ranges: bool = True) -> dict[str, Any]:
    """Validate ``params`` for the judging algorithm ``name`` against its declaration
    (``PARAMS``, :mod:`bandits.params`); a ``ValueError`` names a bad one.

    Examples
    --------
    >>> check_params("gauntlet", {"alpha": 0.1})
    {'alpha': 0.1}
    >>> check_params("prefbest", {"k": 3})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown parameter 'k' for prefbest; valid: budget, extra_final, m, ...
    """
    return check(name, get_judge(name).PARAMS, params, ranges=ranges)


def make_judge(name: str, n_items: int, *, seed=None, **params) -> Judge:
    """Instantiate the judging algorithm ``name`` over ``n_items`` items."""
    return get_judge(name)(n_items, seed=seed, **params)


def judge_from_state(state: dict) -> Judge:
    """Rebuild whichever judge ``state`` (from ``state_dict()``) belongs to."""
    return get_judge(state["algorithm"]).from_state(state)


__all__ = [
    "ALGORITHMS", "Judge", "Result", "check_params", "get_judge", "judge_from_state", "make_judge",
]
