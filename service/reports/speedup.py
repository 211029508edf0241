"""What interleaving saved on the team's own traffic: for a confirmed pair (an
interleaving verdict and the A/B test of its winner, :mod:`service.ab.operations`), the
searches (and users) each design needed to decide, and their ratio.

* **Interleaving**: the searches up to the one whose credit certified its champion (that
  impression's selection count) and the comparisons credited then, recorded in the
  transaction that certified it
  (:meth:`service.store.experiments.ExperimentStore.write_certification`, called by
  :func:`service.credit.protocol.commit_and_tell`); for a verdict certified before that
  record existed, the counts when it was confirmed (``basis``: ``"confirmation"``, an
  upper bound on what it needed, so the ratio is a lower bound). Its users are not
  counted (an interleaving experiment counts searches; each of a user's searches is one
  comparison): ``null``.
* **A/B**: the users and searches of both arms at the look where its confidence sequence
  first decided (:func:`service.ab.report.keep_decisions`).

The ratio is the A/B test's searches over interleaving's, stated only when the A/B test
has decided in the direction interleaving said (a pair that disagrees saved nothing).
Both decide at the δ each was given: the confirmation's δ is the interleaving
experiment's unless the operator gave another (``same_error_rate`` says which). The
median over the pairs with a ratio is :func:`median` (``GET /agreements``' ``speedup``,
the metric ``rankduel_interleaving_speedup_median``, the operator page).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any


def interleaving_sample(certification: Mapping[str, Any] | None, *, comparisons: int,
                        selections: int, error_rate: float | None) -> dict[str, Any]:
    """What interleaving needed: from the certification record when there is one, else
    the counts at confirmation (``comparisons``, ``selections``: its searches so far).

    >>> got = interleaving_sample(None, comparisons=900, selections=1200, error_rate=0.05)
    >>> got["searches"], got["comparisons"], got["users"], got["basis"]
    (1200, 900, None, 'confirmation')
    """
    if certification:
        return {"searches": int(certification["searches"]),
                "comparisons": int(certification["comparisons"]), "users": None,
                "error_rate": certification.get("error_rate", error_rate),
                "basis": "certification"}
    return {"searches": max(int(selections), int(comparisons)),
            "comparisons": int(comparisons), "users": None, "error_rate": error_rate,
            "basis": "confirmation"}


def ratio(ab_searches: int | None, inter_searches: int | None) -> float | None:
    """The A/B test's searches over interleaving's (None when either is unknown).

    >>> ratio(38400, 1120), ratio(None, 10), ratio(5, 0)
    (34.3, None, None)
    """
    if not ab_searches or not inter_searches:
        return None
    return round(ab_searches / inter_searches, 1)


def times(x: float) -> str:
    """A ratio as a reader says it: ``34×``, ``2.5×``.

    >>> times(34.29), times(2.46), times(130.0)
    ('34×', '2.5×', '130×')
    """
    return f"{x:,.0f}×" if x >= 10 else f"{x:.1f}×"


def statement(inter: Mapping[str, Any], ab: Mapping[str, Any] | None,
              speedup: float | None) -> str:
    """The sentence the reports state.

    >>> statement({"searches": 1120, "basis": "certification"},
    ...           {"searches": 38400, "users": 9100}, 34.3)
    'interleaving decided in 1,120 searches; its A/B confirmation needed 38,400 (9,100 users): 34×'
    >>> statement({"searches": 1120, "basis": "certification"}, None, None)
    'interleaving decided in 1,120 searches; its A/B confirmation has not decided yet'
    """
    head = f"interleaving decided in {inter['searches']:,} searches"
    if inter.get("basis") == "confirmation":
        head = f"interleaving had decided by {inter['searches']:,} searches (when confirmed)"
    if ab is None:
        return f"{head}; its A/B confirmation has not decided yet"
    if not ab.get("searches"):
        return f"{head}; its A/B confirmation decided, at a look whose sample was not kept"
    users = f" ({ab['users']:,} users)" if ab.get("users") else ""
    tail = f": {times(speedup)}" if speedup is not None else ", in the other direction"
    return f"{head}; its A/B confirmation needed {ab['searches']:,}{users}{tail}"


def for_pair(pair: Mapping[str, Any], decision: Mapping[str, Any] | None,
             agree: bool | None) -> dict[str, Any]:
    """``sample_sizes``, ``speedup`` and ``speedup_statement`` of one confirmed pair
    (``decision``: the A/B test's first decision on the winner, with its ``users`` and
    ``searches``; None: not decided)."""
    inter = pair.get("interleaving_sample")
    if inter is None:  # a pair confirmed before the samples were kept
        return {"sample_sizes": None, "speedup": None, "speedup_statement": None}
    ab = None
    if decision is not None:
        ab = {"searches": decision.get("searches"), "users": decision.get("users"),
              "error_rate": pair.get("ab_error_rate")}
    speedup = ratio(ab["searches"], inter["searches"]) if ab and agree else None
    return {"sample_sizes": {"interleaving": dict(inter), "ab": ab,
                             "same_error_rate": (pair.get("ab_error_rate")
                                                 == inter.get("error_rate"))},
            "speedup": speedup, "speedup_statement": statement(inter, ab, speedup)}


def median(speedups: Iterable[float | None]) -> dict[str, Any]:
    """The median ratio over the pairs that have one, and how many there are.

    >>> median([34.3, None, 12.0, 80.1])
    {'median': 34.3, 'pairs': 3}
    """
    got = [x for x in speedups if x is not None]
    return {"median": round(statistics.median(got), 1) if got else None, "pairs": len(got)}


__all__ = ["for_pair", "interleaving_sample", "median", "ratio", "statement", "times"]
