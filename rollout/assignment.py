"""Which experiment of a placement a search is in: a user's sticky bucket, or a random
one without a user, looked up in the placement's ranges (:mod:`rollout.allocation`).

``None`` means control: the control ranker's list, unchanged, no impression.

Pure: no I/O (the random draw comes from the generator the caller passes).

Examples
--------
>>> ranges = {"a": [[0, 1000]], "b": [[1000, 4000]]}
>>> experiment_of(999, ranges), experiment_of(1000, ranges), experiment_of(4000, ranges)
('a', 'b', None)
>>> assign(ranges, "web", "user-1") == assign(ranges, "web", "user-1")
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from rollout.hashing import BUCKETS, bucket


class Draws(Protocol):
    """A source of uniform draws in [0, 1): ``random.Random`` or a numpy ``Generator``."""

    def random(self) -> float: ...


def experiment_of(b: int, ranges: Mapping[str, Sequence[Sequence[int]]]) -> str | None:
    """The experiment whose ranges hold bucket ``b``, or ``None`` (control)."""
    for name, spans in ranges.items():
        for start, end in spans:
            if start <= b < end:
                return name
    return None


def assign(ranges: Mapping[str, Sequence[Sequence[int]]], salt: str,
           user: str | None = None, rng: Draws | None = None) -> str | None:
    """The experiment of a search on the placement salted ``salt``, or ``None`` for
    control. With a ``user`` (or session) id, its sticky bucket (:func:`rollout.hashing.
    bucket`): the same answer for as long as the ranges hold it; without one (``None`` or
    ``""``), a bucket drawn from ``rng``, per search."""
    if user:
        b = bucket(user, salt)
    else:
        if rng is None:
            raise ValueError("a search without a user id needs a random generator")
        b = min(int(rng.random() * BUCKETS), BUCKETS - 1)
    return experiment_of(b, ranges)


__all__ = ["Draws", "assign", "experiment_of"]
