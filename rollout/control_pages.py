"""The control's pages: counted per time bucket, settled, and compared over the
experiment's own period (the ``abandonment`` guardrail, :mod:`rollout.guardrails`).

A control answer has no impression, so nothing is stored per page when it is served:
each control page is counted in its **bucket**, the one whose end is the first multiple
of :func:`bucket_s` seconds after it was served (field ``p:<end>``), and the first click
reported on it adds to the bucket's clicked pages (``c:<end>``). A page's clicks are
accepted until ``inactivity_s`` after its bucket's end (the rule an impression has: no
click after ``inactivity_s``; rounded up to the bucket), so a bucket is **settled**, its
counts final, once ``end + inactivity_s + SETTLE_GRACE_S`` is past; the grace covers the
API processes' in-memory counts (written at most every second) and click reports in
flight.

Settled buckets are *folded*: taken off the placement's counters and added to each
running experiment whose period they overlap (a bucket ending after the experiment's
counts last started: its start, or its resume). So the control's pages an experiment is
compared with are those served while the experiment itself was counting, the same
window as its own pages, and the placement keeps at most the unsettled buckets
(``(inactivity_s + SETTLE_GRACE_S) / bucket_s + 1`` of them). A bucket folded while no
experiment runs is dropped.

Pure: no I/O.

Examples
--------
>>> bucket_s(1800.0), bucket_s(1.5)
(60, 1)
>>> bucket_end(1_790_000_001.2, 60)
1790000040
>>> settled(1_790_000_040, now=1_790_001_844.0, inactivity_s=1800.0)
True
>>> take = settled_fields({"p:100": 7, "c:100": 3, "p:160": 9, "calls": 40},
...                       now=1905.0, inactivity_s=1800.0)
>>> take
{100: (7, 3)}
>>> page_counters(pages=7, clicked=3)
PageCounters(settled=7, abandoned=4)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from rollout.guardrails import PageCounters

#: the longest bucket (seconds); a shorter ``inactivity_s`` makes them shorter
MAX_BUCKET_S = 60
#: seconds past a bucket's click window before it is settled: the API processes write
#: their control counts at most every second, and a click report may be in flight
SETTLE_GRACE_S = 3.0
#: field prefixes: pages served, pages clicked (``<prefix><bucket end>``)
PAGES, CLICKED = "p:", "c:"


def bucket_s(inactivity_s: float) -> int:
    """The width of the buckets: ``inactivity_s`` in whole seconds, between 1 and
    :data:`MAX_BUCKET_S` seconds (a page's click window is at most one bucket longer than
    an impression's, and a bucket settles at most one bucket later)."""
    return int(min(MAX_BUCKET_S, max(1, inactivity_s)))


def bucket_end(now: float, width: int) -> int:
    """The end (unix seconds) of the bucket of a page served at ``now``."""
    return (int(now) // width + 1) * width


def click_deadline(end: int, inactivity_s: float) -> float:
    """The last moment a click of a page of the bucket ending at ``end`` is counted."""
    return end + inactivity_s


def settled(end: int, *, now: float, inactivity_s: float) -> bool:
    """Whether the bucket ending at ``end`` has its final counts (module docstring)."""
    return now > click_deadline(end, inactivity_s) + SETTLE_GRACE_S


def _bucket_of(field: str) -> tuple[str, int] | None:
    for prefix in (PAGES, CLICKED):
        if field.startswith(prefix) and field[len(prefix):].isdigit():
            return prefix, int(field[len(prefix):])
    return None


def buckets(counts: Mapping[str, int]) -> dict[int, tuple[int, int]]:
    """The buckets among a placement's control counters (other fields ignored): bucket
    end -> (pages, clicked pages)."""
    out: dict[int, tuple[int, int]] = {}
    for f, n in counts.items():
        kind = _bucket_of(f)
        if kind is None:
            continue
        pages, clicked = out.get(kind[1], (0, 0))
        out[kind[1]] = (pages + n, clicked) if kind[0] == PAGES else (pages, clicked + n)
    return out


def settled_fields(counts: Mapping[str, int], *, now: float,
                   inactivity_s: float) -> dict[int, tuple[int, int]]:
    """The settled ones of :func:`buckets`."""
    return {end: v for end, v in buckets(counts).items()
            if settled(end, now=now, inactivity_s=inactivity_s)}


def fields_of(ends: Iterable[int]) -> list[str]:
    """The counter fields of the buckets ending at ``ends``."""
    return [f"{prefix}{end}" for end in ends for prefix in (PAGES, CLICKED)]


def in_window(buckets: Mapping[int, tuple[int, int]], since: float | None
              ) -> tuple[int, int]:
    """(pages, clicked) of the buckets that overlap an experiment's period since
    ``since`` (a bucket ending after it; ``None``: all of them)."""
    lo = -math.inf if since is None else since
    pages = sum(p for end, (p, _) in buckets.items() if end > lo)
    clicked = sum(c for end, (_, c) in buckets.items() if end > lo)
    return pages, clicked


def page_counters(pages: int, clicked: int) -> PageCounters:
    """Pages and clicked pages as :class:`PageCounters`: a page without a click is
    abandoned. Clicked pages can outnumber the pages counted (a process that died
    before writing its pages, whose clicks still came): never below zero."""
    pages = max(0, pages)
    return PageCounters(settled=pages, abandoned=max(0, pages - max(0, clicked)))


__all__ = ["CLICKED", "MAX_BUCKET_S", "PAGES", "SETTLE_GRACE_S", "bucket_end", "bucket_s",
           "buckets", "click_deadline", "fields_of", "in_window", "page_counters", "settled",
           "settled_fields"]
