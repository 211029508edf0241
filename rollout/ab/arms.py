"""Which arm of an A/B experiment a user sees: a sticky hash of the user and the
experiment's own salt over the arms, in equal shares.

The placement's bucket (:func:`rollout.hashing.bucket` with the placement's salt) says
*whether* a search is in the experiment; this second hash, salted with the experiment
(``ab:<experiment id>``), says *which arm*: independent of the first, so every arm gets
the same mix of the placement's buckets, and fixed for the life of the experiment, so a
ramp or a pause of the experiment's share never moves a user from one arm to another
(each arm keeps ``1/K`` of whatever share the experiment holds: the split the SRM check
tests against does not change with the ramp). Arm 0 is the control.

Pure: no I/O.

Examples
--------
>>> arm_of("user-1", "ab:3fa2", 2) == arm_of("user-1", "ab:3fa2", 2)
True
>>> counts = [0, 0, 0]
>>> for i in range(30_000):
...     counts[arm_of(f"u{i}", "ab:x", 3)] += 1
>>> all(abs(c / 30_000 - 1 / 3) < 0.01 for c in counts)
True
>>> equal_shares(["prod", "new"])
{'prod': 0.5, 'new': 0.5}
"""

from __future__ import annotations

from collections.abc import Sequence

from rollout.hashing import BUCKETS, bucket


def salt_of(exp_id: str) -> str:
    """The salt of an experiment's arms."""
    return f"ab:{exp_id}"


def arm_of(user: str, salt: str, arms: int) -> int:
    """The arm (``0 … arms − 1``) of ``user``: its bucket under ``salt`` in ``arms`` equal
    ranges."""
    if arms < 1:
        raise ValueError("an A/B experiment has at least one arm")
    return bucket(user, salt) * arms // BUCKETS


def equal_shares(names: Sequence[str]) -> dict[str, float]:
    """The shares the arms are assigned: equal."""
    return {n: 1.0 / len(names) for n in names}


__all__ = ["arm_of", "equal_shares", "salt_of"]
