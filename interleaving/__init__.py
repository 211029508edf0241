"""Interleaving and multileaving methods, click credit, click models and a simulated world.

The live service and the simulators use this package through three functions:

``interleave(method, rankings, k, rng) -> (shown, record)``
    merge the participants' rankings (lists of document ids) into the shown list of at
    most ``k`` distinct documents, plus a small JSON-serializable ``record`` holding
    everything the credit step needs (teams, or posteriors and ranks); store it with
    the impression.
``credit(record, clicked) -> [(a, b, s), ...]``
    pairwise outcomes between participants (indices into ``rankings``) from the
    clicked 0-based positions of the shown list: ``s`` = 1 ``a`` won, 0 ``b`` won, ½
    a tie (clicks, equal credit); marginalizing methods give the expected outcome in
    [0, 1]. No clicks → ``[]`` (no duel). Pairwise methods give at most ``(0, 1, s)``.
``extend(record, shown, rankings, k, rng) -> (shown, record)``
    the next result page: continue the interleaving that showed ``shown`` to depth
    ``k`` (see :meth:`Interleaver.extend`); keep the generator's state between pages
    with :func:`rng_state` / :func:`rng_from_state`.
``seed_for(user, query, salt="") -> int``
    a stable seed, so a repeated view of the same (user, query) shows the same list.

Methods (``METHODS``): pairwise ``team_draft``, ``probabilistic``, ``balanced``; for any
number of rankers ``team_draft_multileave``, ``probabilistic_multileave``, ``sosm``.
Click models are in :mod:`interleaving.clicks`, the synthetic search world in
:mod:`interleaving.world`, the vectorized preference-matrix estimator in
:mod:`interleaving.estimate`.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(seed_for("user-1", "alpine lake"))
>>> shown, record = interleave("team_draft", [["a", "b", "c"], ["b", "c", "d"]], 3, rng)
>>> len(shown), record["method"]
(3, 'team_draft')
>>> credit(record, [])
[]
>>> again, _ = interleave("team_draft", [["a", "b", "c"], ["b", "c", "d"]], 3,
...                       np.random.default_rng(seed_for("user-1", "alpine lake")))
>>> again == shown
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from interleaving.balanced import Balanced
from interleaving.base import Interleaver, Outcome, rng_from_state, rng_state
from interleaving.probabilistic import Probabilistic, ProbabilisticMultileave
from interleaving.sosm import SOSM
from interleaving.team_draft import TeamDraft, TeamDraftMultileave

_REGISTRY: dict[str, Interleaver] = {
    m.name: m
    for m in (
        TeamDraft(),
        Probabilistic(),
        Balanced(),
        TeamDraftMultileave(),
        ProbabilisticMultileave(),
        SOSM(),
    )
}

#: every method name; the first three compare exactly two rankings
METHODS: tuple[str, ...] = tuple(_REGISTRY)
#: methods that take exactly two rankings
PAIRWISE_METHODS: tuple[str, ...] = tuple(n for n, m in _REGISTRY.items() if m.pairwise)
#: methods that take any number of rankings
MULTILEAVE_METHODS: tuple[str, ...] = tuple(n for n, m in _REGISTRY.items() if not m.pairwise)


def get_method(method: str) -> Interleaver:
    """The method object registered under ``method``."""
    try:
        return _REGISTRY[method]
    except KeyError:
        raise ValueError(
            f"unknown interleaving method {method!r}; choose from {', '.join(METHODS)}"
        ) from None


def interleave(
    method: str, rankings: Sequence[Sequence[str]], k: int, rng: np.random.Generator
) -> tuple[list[str], dict[str, Any]]:
    """Merge ``rankings`` with ``method``; return the shown list and the credit record."""
    return get_method(method).interleave(rankings, k, rng)


def extend(
    record: dict[str, Any], shown: Sequence[str], rankings: Sequence[Sequence[str]], k: int,
    rng: np.random.Generator,
) -> tuple[list[str], dict[str, Any]]:
    """Continue a recorded interleaving to depth ``k`` (the next page); the whole list
    and its record."""
    return get_method(record.get("method", "")).extend(record, shown, rankings, k, rng)


def credit(record: dict[str, Any], clicked: Iterable[int]) -> list[Outcome]:
    """Pairwise outcomes ``(a, b, s)`` from the clicked positions of a recorded impression."""
    return get_method(record.get("method", "")).credit(record, clicked)


def seed_for(user: str, query: str, salt: str = "") -> int:
    """A stable 64-bit seed for the interleaving of ``query`` shown to ``user``.

    BLAKE2b of ``salt``, ``user`` and ``query`` (NUL-separated, UTF-8), first 8 bytes,
    big-endian: the same on every process, machine and Python version (unlike
    ``hash()``, which is salted per process). Seeding the ``numpy`` generator passed to
    :func:`interleave` with it makes a repeated view of the same (user, query) show the
    same list — as long as the participants and their rankings are the same too, so
    put what identifies the comparison (experiment id, the rankers compared) in
    ``salt``.

    Examples
    --------
    >>> seed_for("u1", "q") == seed_for("u1", "q")
    True
    >>> seed_for("u1", "q") != seed_for("u2", "q") != seed_for("u1", "q", salt="exp-2")
    True
    """
    h = hashlib.blake2b(digest_size=8)
    h.update(f"{salt}\0{user}\0{query}".encode())
    return int.from_bytes(h.digest(), "big")


__all__ = [
    "METHODS",
    "MULTILEAVE_METHODS",
    "PAIRWISE_METHODS",
    "SOSM",
    "Balanced",
    "Interleaver",
    "Probabilistic",
    "ProbabilisticMultileave",
    "TeamDraft",
    "TeamDraftMultileave",
    "credit",
    "extend",
    "get_method",
    "interleave",
    "rng_from_state",
    "rng_state",
    "seed_for",
]
