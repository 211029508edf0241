"""The report per segment: the champion against each ranker within each value of each
declared dimension (:mod:`service.segments.dimensions`), and the **heterogeneity flag**: a value
whose users prefer another ranker to the overall champion with confidence ``1 − δ``.

Pure (numpy): given the per-segment ``W`` matrices and ties, it computes and words.

The interval
------------
For ranker ``r`` against the champion ``c`` within one value, ``n = W_rc + W_cr``
comparisons (a tie counts ½ to each side), ``p = W_rc / n`` is ``r``'s win rate. Its
bounds are **anytime-valid**: the normal-mixture boundary of
:func:`bandits.condorcet_check.edge_radius` (Robbins 1970; Howard et al. 2021),
which holds over the whole run whatever the number of looks and however the policy chose
the pairs, so reading the report every minute does not inflate the error. Each bound is
taken at ``α = δ / m``, **Bonferroni-corrected** over the ``m`` tests the flag makes:
every value of every dimension (``other`` included) × every ranker tested against the
champion. So where no value prefers another ranker, the report raises a flag, ever, with
probability at most ``δ`` (:data:`DELTA`).

A value is flagged when ``lower > ½`` for some ranker: its users prefer that ranker to
the overall champion. The verdict then gets a sentence: "r3 leads overall, but r5 is
preferred on mobile (device)".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bandits.condorcet_check import edge_radius

#: the chance, over the whole run, of any false heterogeneity flag
DELTA = 0.05
#: how the bounds are made (the JSON says it)
INTERVAL = "anytime-valid normal mixture, Bonferroni over values x rankers"


def n_tests(dimensions: Mapping[str, Sequence[str]], rankers: Sequence[int]) -> int:
    """The number of tests the flag makes: values (``other`` included) × rankers.

    >>> n_tests({"device": ["mobile", "desktop", "other"], "market": ["de", "other"]}, [1, 2])
    10
    """
    return max(sum(len(v) for v in dimensions.values()) * len(rankers), 1)


def bounds(w_rc: float, w_cr: float, m: int, delta: float = DELTA
           ) -> tuple[float, float, float]:
    """``(p, lower, upper)`` of ``r`` against ``c`` from their ``W`` entries, each bound
    anytime-valid at ``δ / m``; ``(0.5, 0, 1)`` when never compared.

    >>> [round(x, 3) for x in bounds(80, 20, 14)]
    [0.8, 0.591, 1.0]
    """
    n = w_rc + w_cr
    if n <= 0:
        return 0.5, 0.0, 1.0
    # edge_radius(n, K, δ) is at δ / (K − 1): K = m + 1 gives δ / m
    r = float(edge_radius(np.array([float(n)]), m + 1, delta)[0])
    p = w_rc / n
    return p, max(p - r, 0.0), min(p + r, 1.0)


def per_segment(dimensions: Mapping[str, Sequence[str]],
                matrices: Mapping[str, Mapping[str, np.ndarray]],
                ties: Mapping[str, Mapping[tuple[int, int], int]],
                champion: int, rankers: Sequence[int], names: Mapping[int, str],
                delta: float = DELTA) -> dict[str, Any]:
    """The report's ``segments`` part: per dimension, per value, each ranker of
    ``rankers`` against ``champion`` (wins–losses–ties, ``p`` and its bounds, whether the
    value prefers it: ``preferred``), and the list of flags (``heterogeneous``).

    ``matrices[dim][value]`` is that value's ``W``; ``ties[label][(i, j)]`` (``i < j``)
    its ties, by label ``dim=value``.

    >>> W = np.array([[0.0, 30], [70, 0]])
    >>> out = per_segment({"device": ["mobile", "other"]},
    ...                   {"device": {"mobile": W, "other": W.T}}, {}, 0, [1], {0: "a", 1: "b"})
    >>> [(f["value"], f["ranker"]) for f in out["heterogeneous"]]
    [('mobile', 'b')]
    """
    m = n_tests(dimensions, rankers)
    out: dict[str, Any] = {"delta": delta, "tests": m, "interval": INTERVAL,
                           "champion": names.get(champion), "dimensions": {},
                           "heterogeneous": []}
    for dim, values in dimensions.items():
        rows = []
        for value in values:
            W = matrices[dim][value]
            label_ties = ties.get(f"{dim}={value}", {})
            row: dict[str, Any] = {"value": value, "rankers": []}
            for r in rankers:
                t = int(label_ties.get((min(r, champion), max(r, champion)), 0))
                w_rc, w_cr = float(W[r, champion]), float(W[champion, r])
                p, lower, upper = bounds(w_rc, w_cr, m, delta)
                preferred = lower > 0.5
                row["rankers"].append({
                    "name": names.get(r), "wins": round(max(w_rc - t / 2, 0.0), 4),
                    "losses": round(max(w_cr - t / 2, 0.0), 4), "ties": t,
                    "p": round(p, 4), "lower": round(lower, 4), "upper": round(upper, 4),
                    "preferred": preferred})
                if preferred:
                    out["heterogeneous"].append({
                        "dimension": dim, "value": value, "ranker": names.get(r),
                        "p": round(p, 4), "lower": round(lower, 4)})
            rows.append(row)
        out["dimensions"][dim] = rows
    return out


def sentence(champion: str | None, flags: Sequence[Mapping[str, Any]]) -> str | None:
    """The verdict's sentence for the flags (None: no flag).

    >>> sentence("r3", [{"dimension": "device", "value": "mobile", "ranker": "r5"}])
    'r3 leads overall, but r5 is preferred on mobile (device).'
    >>> sentence("r3", [{"dimension": "device", "value": "mobile", "ranker": "r5"},
    ...                 {"dimension": "market", "value": "de", "ranker": "r1"}])
    'r3 leads overall, but r5 is preferred on mobile (device) and r1 on de (market).'
    """
    if not flags or champion is None:
        return None
    parts = [f"{f['ranker']} is preferred on {f['value']} ({f['dimension']})"
             if n == 0 else f"{f['ranker']} on {f['value']} ({f['dimension']})"
             for n, f in enumerate(flags)]
    return f"{champion} leads overall, but " + " and ".join(
        [", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts) + "."
