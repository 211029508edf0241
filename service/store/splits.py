"""Every split of a placement counted, for the SRM check (:mod:`rollout.srm`): per
**period** (the placement's version: every change of shares is a new one, ramps and
pauses included) the shares in force, and per arm (an experiment's id, or ``control``)
the searches served and the users **first seen** there (the users of
:class:`rollout.srm.Period`). Keys in :mod:`service.store.keys` (``rd:{pl-<p>}:split...``:
the placement's hash tag, one slot).

A user is counted once, exactly: the set of the placement's users (a short keyed hash
each, about 70 bytes a user) says whether a user is new, and the script that adds them
counts them (``split_count.lua``), so two processes that see one user at once count
them once. Exact counts matter here: an estimate (a HyperLogLog's 0.81 %) would be a
deviation of its own, which a large experiment's test would flag.

The period's shares are written by the transaction that changes them
(:func:`service.placements.operations.change`), in its MULTI, so a period's shares are
exactly those of the ranges the request path reads with that version. Storage only
stores: plain reads and writes given plain values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from service.store.base import StorePart
from service.store.keys import (
    split_periods_key,
    split_searches_key,
    split_seen_key,
    split_users_key,
)
from service.store.snapshot import text


class SplitStore(StorePart):
    """Periods, searches and users per arm of each placement."""

    SCRIPTS: ClassVar[dict[str, str]] = {"_split_count_script": "split_count"}

    def record_period(self, pipe, name: str, version: int, shares: Mapping[str, float]) -> None:
        """Queue the shares in force from placement version ``version`` on."""
        pipe.hset(split_periods_key(name), str(int(version)), json.dumps(dict(shares)))

    def count_split(self, name: str, searches: Mapping[tuple[int, str], int],
                    users: Mapping[tuple[int, str], Iterable[str]]) -> int:
        """Add searches per (period, arm), and each user not seen before to the (period,
        arm) given: one script. Returns the users new."""
        args = [json.dumps({f"{int(v)}|{arm}": int(n) for (v, arm), n in searches.items()})]
        args += [f"{int(v)}|{arm}|{u}" for (v, arm), who in users.items() for u in who]
        return int(self._split_count_script(
            keys=[split_seen_key(name), split_users_key(name), split_searches_key(name)],
            args=args))

    def split_counts(self, name: str) -> list[dict[str, Any]]:
        """Per period, oldest first: ``version``, ``shares`` (those of the latest period
        recorded at or before it), ``searches`` and ``users`` (first seen) per arm."""
        periods = {int(text(k)): json.loads(v)
                   for k, v in self.r.hgetall(split_periods_key(name)).items()}
        counts: dict[int, dict[str, dict[str, int]]] = {}
        for what, key in (("searches", split_searches_key(name)),
                          ("users", split_users_key(name))):
            for k, v in self.r.hgetall(key).items():
                version, _, arm = text(k).partition("|")
                counts.setdefault(int(version), {"searches": {}, "users": {}})[what][arm] = int(v)
        out = []
        known = sorted(periods)
        for version in sorted(counts):
            recorded = [p for p in known if p <= version]
            if recorded:
                out.append({"version": version, "shares": periods[recorded[-1]],
                            **counts[version]})
        return out


__all__ = ["SplitStore"]
