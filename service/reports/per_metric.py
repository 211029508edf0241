"""The report per metric (``GET /experiments/ID/report``'s ``metrics`` and
``metrics_disagree``), for an experiment that declares metrics (docs/conversions.md).

Each metric's verdict is :mod:`bandits.confidence`'s anytime test on that metric's ``W``
(the click metric's is the experiment's own unless the policy learns from another metric,
``primary``), at **δ/M** for ``M`` declared metrics: by
the union bound over the metrics, the chance that *any* verdict the list states (a
ranker certified best on its metric, or shown worse on it) is wrong, at any time in the
run, is at most δ. Every outcome a metric adds lies in [0, 1] (a ``sum`` metric's is
bounded by its cap: :func:`service.outcomes.declared.bounded`), which is what the test
needs; a ``sum`` metric's verdict is thus about value-weighted wins, the sums of the
plain values being shown beside it. The headline verdict of the report stays the
policy's own, at δ, on the experiment's ``W``: the primary metric's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from bandits.base import RETIRED
from bandits.confidence import DEFAULT_ERROR_RATE, certified_best, shown_worse
from service.outcomes.counts import by_ranker, matrix
from service.outcomes.declared import declared, learns_clicks, primary
from service.store import Store


def _leader(W: np.ndarray, arms: list[int]) -> int | None:
    """The arm with the highest win rate over its comparisons (None: none compared)."""
    best, top = None, -1.0
    for a in arms:
        n = float(W[a, arms].sum() + W[arms, a].sum())
        if n > 0 and (rate := float(W[a, arms].sum()) / n) > top:
            best, top = a, rate
    return best


def entry(name: str, W: np.ndarray, arms: list[int], delta: float,
          names: Mapping[int, str], n: int) -> dict[str, Any]:
    """One metric's verdict at ``delta`` on its ``W`` (``n``: its comparisons)."""
    worse = shown_worse(W, arms, delta) if len(arms) > 1 else {}
    best = certified_best(W, arms, delta, worse)
    champ = best if best is not None else _leader(W, arms)
    pct = f"{100 * delta:.3g}%"
    who = names.get(champ, str(champ)) if champ is not None else None
    if n == 0 or who is None:
        text = f"No {name} comparisons yet."
    elif best is not None:
        text = (f"{who} wins {name}: every other ranker is shown worse on {name} at "
                f"δ = {pct}, after {n:,} comparisons.")
    else:
        text = f"{who} leads {name} after {n:,} comparisons; not certified at δ = {pct}."
    return {"champion": who, "certified": best is not None,
            "shown_worse": {names.get(a, str(a)): names.get(b, str(b))
                            for a, b in worse.items()},
            "error_rate": delta, "verdict": text}


def per_metric(store: Store, exp_id: str, meta: Mapping[str, Any], bandit,
               names: Mapping[int, str], delta: float | None
               ) -> tuple[list[dict[str, Any]], str | None] | None:
    """The metrics' entries and the sentence saying they disagree (None when they do
    not); None without declared metrics."""
    metrics = declared(meta)
    if not metrics:
        return None
    k = bandit.K
    counts = store.outcomes.metric_counts(exp_id)
    arms = [a for a in range(k) if int(bandit.status[a]) != RETIRED]
    share = (delta or DEFAULT_ERROR_RATE) / len(metrics)
    out = []
    own = learns_clicks(meta)  # the click metric's W is the policy's
    for m in metrics:
        c = counts.get(m.name)
        W = bandit.W if m.is_click and own else matrix(c, k)
        n = int(bandit.n_updates) if m.is_click and own else (c.n if c else 0)
        out.append({
            **m.to_json(), "action": m.action, "value": m.value,
            "window_s": m.window_s or None, "cap": m.cap,
            "primary": m.name == primary(meta), "comparisons": n, "W": W.tolist(),
            "values": (by_ranker(c.values, names) if c else {}) if m.value == "sum" else None,
            "events": None if m.is_click else (by_ranker(c.events, names) if c else {}),
            **entry(m.name, W, arms, share, names, n)})
    return out, disagreement(out)


def disagreement(entries: list[dict[str, Any]]) -> str | None:
    """A plain sentence when the metrics name different rankers, else None.

    >>> disagreement([{"name": "clicks", "champion": "r2", "certified": True},
    ...               {"name": "revenue", "champion": "r5", "certified": True}])
    'r2 wins clicks, r5 wins revenue: the metrics disagree.'
    >>> disagreement([{"name": "clicks", "champion": "r2", "certified": True},
    ...               {"name": "cart", "champion": "r2", "certified": False}]) is None
    True
    """
    named = [e for e in entries if e["champion"] is not None]
    if len({e["champion"] for e in named}) < 2:
        return None
    parts = [f"{e['champion']} {'wins' if e['certified'] else 'leads'} {e['name']}"
             for e in named]
    certain = all(e["certified"] for e in named)
    return (", ".join(parts) + ": the metrics disagree"
            + ("." if certain else " so far (not every verdict is certified)."))
