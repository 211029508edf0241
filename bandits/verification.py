"""Verification after convergence and the non-Condorcet guard, shared by the policies that
keep checking their champion once one arm is left (the Merge policies' guard,
:mod:`bandits.non_condorcet_guard` and :mod:`bandits.champion_verification`, and
:mod:`bandits.sparring_certifier`).

Verification: the champion ``c`` keeps comparing an eliminated arm ``e`` while it has not
refuted ``e`` at ``verify_scale`` times the elimination threshold, that is while
``n · D(p̂_ec) ≤ 2 · verify_scale · α · log(t + t_offset + C)`` with ``D`` the policy's
divergence. Solved for ``t`` this is the step from which ``e`` is *due*
(:func:`due_steps`); the bound grows like log t, the anytime schedule of RUCB (Zoghi et
al. 2014, Algorithm 1) applied to the champion's row. A pair settled with confidence is
never due again: one arm beats the other by the anytime Hoeffding radius
(:func:`bandits.condorcet_check.radius`), and when ``e`` is that arm, by the guard's edge
test too (:func:`bandits.condorcet_check.edge_radius`; beyond the first few dozen
comparisons of a pair the first implies the second), so the guard holds every edge
against the champion that stopped a verification.

The guard (:func:`guard_check`) flags the data when no arm can be the Condorcet winner:
every arm beaten with confidence by some arm (:func:`bandits.condorcet_check.check`), or
every active arm so beaten, the champion included
(:func:`bandits.condorcet_check.beats_champion`).

Pure functions of ``W``, the arms' status and the policy's parameters; what a policy does
on a flag (restore its champion, switch to Copeland) stays with the policy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from bandits import condorcet_check
from bandits.base import ELIMINATED, RETIRED


def hoeffding_divergence(p: np.ndarray) -> np.ndarray:
    """``2(½ − p)²``: the Hoeffding form of the elimination test (MergeDTS's line 10)."""
    return 2.0 * (0.5 - p) ** 2


def due_steps(W: np.ndarray, status: np.ndarray, arms: np.ndarray, champion: int, *,
              alpha: float, verify_scale: float, c: float, t_offset: float, delta: float,
              divergence: Callable[[np.ndarray], np.ndarray] = hoeffding_divergence,
              ) -> np.ndarray:
    """For each of ``arms``, the first step at which it is due for a comparison with
    ``champion`` (0: now; ``inf``: never — not eliminated, the champion itself, or the
    pair settled at confidence ``delta``): ``exp(n · D(p̂) / (2 · verify_scale · α)) − C −
    t_offset`` while the champion leads the pair.

    Arm 1, eliminated, has won 10 of 40 against the champion 0 (``n · D = 40 · 2 · ¼² =
    5``): it is due again from ``t = exp(5 / 0.5) = 22,026``; the champion never is.

    >>> W = np.array([[0., 30.], [10., 0.]])
    >>> status = np.array([0, ELIMINATED])
    >>> due = due_steps(W, status, np.arange(2), 0, alpha=0.5, verify_scale=0.5, c=0.0,
    ...                 t_offset=0.0, delta=0.01)
    >>> [round(float(x), 1) for x in due]
    [inf, 22026.5]
    """
    w = W[arms, champion]
    n = w + W[champion, arms]
    safe = np.maximum(n, 1.0)
    gap = 0.5 - w / safe
    a = 2.0 * verify_scale * alpha
    with np.errstate(over="ignore"):
        ev = n * divergence(np.minimum(w / safe, 0.5))
        due = np.where((n > 0) & (gap > 0), np.exp(np.minimum(ev / a, 700.0)) - c - t_offset,
                       0.0)
    k = int(np.count_nonzero(status != RETIRED))
    r = condorcet_check.radius(n, k * (k - 1) // 2, delta)
    r_edge = condorcet_check.edge_radius(n, W.shape[0], delta)
    # c beats e with confidence, or e beats c with confidence and the guard holds that
    # edge too (it flags on it): a pair never stops short of the guard's evidence
    settled = ((gap - r > 0) | ((-gap - r > 0) & (-gap - r_edge > 0))) & (n > 0)
    due[settled | (status[arms] != ELIMINATED) | (arms == champion)] = math.inf
    return np.maximum(due, 0.0)


def guard_check(W: np.ndarray, status: np.ndarray, active: np.ndarray, *, n_updates: int,
                check_every: int, delta: float, max_active: int,
                champion: Callable[[], int]) -> tuple[bool, dict[str, Any] | None]:
    """One check of the non-Condorcet guard: ``(full, evidence)``.

    ``full`` says whether the O(K²) cycle test ran on the current counts (above 136
    arms it runs every (K/136)² checks, so a check costs about the same per step at any
    K). ``evidence`` is None, or ``{"cycle", "champion", "beat_champion"}`` when the data
    have no Condorcet winner (the cycle test) or none among the ``active`` arms (each of
    them, at most ``max_active``, beaten with confidence; ``champion()`` names the one
    whose beaters are reported)."""
    arms = np.flatnonzero(status != RETIRED)
    if arms.size < 2:
        return True, None
    every = max(1, (arms.size // 136) ** 2)
    full = (n_updates // check_every) % every == 0
    # the usual case, in plain floats: an arm that no arm can beat (of the active ones,
    # when they are tested) means no flag, the answer of the numpy tests below
    if arms.size <= condorcet_check.SCALAR_ARMS:
        field = arms.tolist()
        tested = active.tolist() if 0 < active.size <= max_active else field
        if any(condorcet_check.surely_unbeaten(W, a, [b for b in field if b != a], delta)
               for a in tested):
            return full, None
    res = (condorcet_check.check(W, arms, delta) if full
           else {"flagged": False, "cycle": []})
    over: list[int] = []
    champ = -1
    if not res["flagged"] and 0 < active.size <= max_active:
        beaten = [condorcet_check.beats_champion(W, int(a), arms[arms != a].tolist(), delta)
                  for a in active]
        if all(beaten):
            champ = champion()
            over = beaten[int(np.flatnonzero(active == champ)[0])]
    if res["flagged"] or over:
        return full, {"cycle": res["cycle"], "champion": int(champ), "beat_champion": over}
    return full, None
