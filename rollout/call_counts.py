"""What a placement search counts for its guardrails: each call of a ranker (failed,
empty, and the latency bucket of the fetch that made it), as the counter fields the
service adds to Redis and reads back (:mod:`service.placements.guardrails`; the rules
that read the counts: :mod:`rollout.guardrails`).

>>> calls = []
>>> tally(calls, [(0, type("R", (), {"name": "bm25"})(), ["d1"])], ["neural"], 0.012)
>>> sorted(fields(calls, "g:").items())
[('g:bm25:calls', 1), ('g:bm25:lat:2', 1), ('g:neural:calls', 1), ('g:neural:failures', 1)]
>>> ranker_counters(fields(calls, "g:"), "g:neural:").failures
1
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rollout.guardrails import RankerCounters, latency_bucket

#: one ranker call: (ranker name, failed, empty, milliseconds)
Call = tuple[str, bool, bool, float]


def tally(calls: list[Call], answered: Iterable[tuple[Any, Any, Sequence[Any]]],
          failed: Iterable[str], waited_s: float) -> None:
    """Add one fetch's calls to ``calls``: ``answered`` as ``(arm, ranker, results)``,
    ``failed`` the names of the rankers that failed or were skipped."""
    ms = waited_s * 1e3
    for _, ranker, results in answered:
        calls.append((ranker.name, False, not results, ms))
    for name in failed:
        calls.append((name, True, False, 0.0))


def fields(calls: Iterable[Call], prefix: str = "") -> dict[str, int]:
    """The counter increments of ``calls`` (``<prefix><ranker>:calls`` ...)."""
    out: dict[str, int] = {}
    for name, failed, empty, ms in calls:
        base = f"{prefix}{name}:" if prefix else ""
        for f in ("calls", "failures" if failed else "empty" if empty else None,
                  None if failed else f"lat:{latency_bucket(ms)}"):
            if f is not None:
                out[base + f] = out.get(base + f, 0) + 1
    return out


def ranker_counters(counts: dict[str, int], prefix: str = "") -> RankerCounters:
    """One ranker's :class:`RankerCounters` from counter fields (``prefix``: its name)."""
    lat = {int(k[len(prefix) + 4:]): v for k, v in counts.items()
           if k.startswith(prefix + "lat:")}
    hist = [lat.get(i, 0) for i in range(max(lat) + 1)] if lat else []
    calls, failures = counts.get(prefix + "calls", 0), counts.get(prefix + "failures", 0)
    return RankerCounters(calls=calls, failures=min(failures, calls),
                          empty=min(counts.get(prefix + "empty", 0), calls - failures),
                          latency=tuple(hist))
