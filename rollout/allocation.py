"""Bucket ranges of a placement's experiments, allocated so that a change of shares moves
the fewest users.

A placement's :data:`~rollout.hashing.BUCKETS` buckets are shared by its experiments:
each holds a set of ranges ``[start, end)`` of buckets, the sets are disjoint (a search is
in at most one experiment) and the buckets nobody holds are the control's. Which users an
experiment sees is decided by its ranges, so the ranges are state the service keeps with
the placement, and :func:`allocate` computes the next ranges from the previous ones and
the new shares:

* an experiment whose share is unchanged keeps its ranges exactly;
* a shrinking one keeps the lowest of its buckets (every user still in it was in it);
* a growing one keeps all its buckets and takes free ones, first those just after its own
  ranges (so that its ranges stay few), then the lowest free ones (every user who was in
  it stays in it: 10 % → 20 % keeps 100 % of them);
* an experiment absent from the shares (stopped, removed) releases its buckets.

This is GrowthBook's consistent bucketing (its SDKs' ``getBucketRanges``: ranges that grow
from a fixed start as coverage grows) extended to several experiments of unequal and
changing shares, which a fixed layout of ranges cannot serve without moving users. The
result depends only on its arguments, so two processes that reallocate at once agree.

Pure: no I/O.

Examples
--------
>>> r = allocate({}, {"a": 0.1, "b": 0.3})
>>> r
{'a': [[0, 1000]], 'b': [[1000, 4000]]}
>>> allocate(r, {"a": 0.2, "b": 0.3})
{'a': [[0, 1000], [4000, 5000]], 'b': [[1000, 4000]]}
>>> allocate(r, {"b": 0.1})
{'b': [[1000, 2000]]}
>>> allocate(r, {"a": 0.8, "b": 0.3})
Traceback (most recent call last):
...
ValueError: shares add up to 1.1 (a 0.8, b 0.3): at most 1; lower one or stop an experiment
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise

from rollout.hashing import BUCKETS

#: ``[[start, end), ...]`` per experiment, in buckets, sorted, disjoint (JSON-friendly)
Ranges = dict[str, list[list[int]]]


def share_buckets(share: float) -> int:
    """The number of buckets a share holds (rounded to the nearest 0.01 %)."""
    return round(share * BUCKETS)


def check_ranges(ranges: Mapping[str, Sequence[Sequence[int]]]) -> Ranges:
    """``ranges`` checked (integers, ``0 <= start < end <= BUCKETS``, disjoint across and
    within experiments) and normalised (sorted, adjacent ranges merged), or a
    ``ValueError`` saying which range is wrong."""
    out: Ranges = {}
    taken: list[tuple[int, int, str]] = []
    for name, spans in ranges.items():
        clean = []
        for span in spans:
            if (not isinstance(span, Sequence) or len(span) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in span)):
                raise ValueError(f"range {span!r} of {name!r}: expected [start, end] "
                                 f"(whole buckets)")
            start, end = span
            if not 0 <= start < end <= BUCKETS:
                raise ValueError(f"range {[start, end]} of {name!r}: expected "
                                 f"0 <= start < end <= {BUCKETS}")
            clean.append((start, end))
            taken.append((start, end, name))
        out[name] = _merge(clean)
    taken.sort()
    for (s0, e0, n0), (s1, e1, n1) in pairwise(taken):
        if s1 < e0:
            raise ValueError(f"ranges overlap: {[s0, e0]} of {n0!r} and {[s1, e1]} of "
                             f"{n1!r}; a search can be in one experiment only")
    return out


def allocate(previous: Mapping[str, Sequence[Sequence[int]]],
             shares: Mapping[str, float]) -> Ranges:
    """The ranges of the experiments in ``shares`` (experiment → share in [0, 1]) after
    ``previous`` (what :func:`allocate` returned last, ``{}`` at first), moving the fewest
    users (module docstring). Experiments are served in sorted order, so the result is
    deterministic. A ``ValueError`` when a share is outside [0, 1] or they add up to more
    than 1."""
    for name, share in shares.items():
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            raise ValueError(f"share of {name!r} must be a number from 0 to 1, got {share!r}")
    total = sum(share_buckets(s) for s in shares.values())
    if total > BUCKETS:
        listed = ", ".join(f"{n} {s:g}" for n, s in sorted(shares.items()))
        raise ValueError(f"shares add up to {total / BUCKETS:g} ({listed}): at most 1; "
                         f"lower one or stop an experiment")
    held = check_ranges({n: r for n, r in previous.items() if n in shares})
    out: Ranges = {}
    # shrink first, so that the buckets released can serve a growing experiment
    for name in sorted(shares):
        want = share_buckets(shares[name])
        spans = [tuple(s) for s in held.get(name, [])]
        out[name] = [list(s) for s in _keep_lowest(spans, want)]
    for name in sorted(shares):
        want = share_buckets(shares[name]) - _size(out[name])
        if want > 0:
            out[name] = [list(s) for s in _grow([tuple(s) for s in out[name]], want, out)]
    return {name: spans for name, spans in out.items() if spans}


def _size(spans: Sequence[Sequence[int]]) -> int:
    return sum(e - s for s, e in spans)


def _merge(spans: list[tuple[int, int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if out and out[-1][1] == s:
            out[-1][1] = e
        else:
            out.append([s, e])
    return out


def _keep_lowest(spans: list[tuple[int, int]], n: int) -> list[list[int]]:
    """The lowest ``n`` buckets of ``spans``."""
    kept = []
    for s, e in sorted(spans):
        if n <= 0:
            break
        take = min(n, e - s)
        kept.append((s, s + take))
        n -= take
    return _merge(kept)


def _grow(own: list[tuple[int, int]], n: int, everyone: Ranges) -> list[list[int]]:
    """``own`` plus ``n`` free buckets: those right after its ranges first, then the
    lowest free ones."""
    taken = sorted((s, e) for spans in everyone.values() for s, e in spans)
    free, at = [], 0
    for s, e in taken:
        if s > at:
            free.append((at, s))
        at = max(at, e)
    if at < BUCKETS:
        free.append((at, BUCKETS))
    ends = {e for _, e in own}
    free.sort(key=lambda f: (f[0] not in ends, f[0]))
    added = []
    for s, e in free:
        if n <= 0:
            break
        take = min(n, e - s)
        added.append((s, s + take))
        n -= take
    if n > 0:  # cannot happen once the total is checked; kept as a guard
        raise ValueError("not enough free buckets")
    return _merge([*own, *added])


__all__ = ["Ranges", "allocate", "check_ranges", "share_buckets"]
