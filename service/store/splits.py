"""Every split of a placement counted, for the SRM check (:mod:`rollout.srm`): per
**period** (the placement's version: every change of shares is a new one, ramps and
pauses included) the shares in force, and per arm (an experiment's id, or ``control``)
the searches served and the users **first seen** there (the users of
:class:`rollout.srm.Period`). Keys in :mod:`service.store.keys` (``rd:{pl-<p>}:split...``:
the placement's hash tag, one slot).

A user is counted once, exactly, within the retention: the sets of the placement's users
of this generation and the one before (a short keyed hash each, about 70 bytes a user;
:mod:`service.store.retention`) say whether a user is new, and the script that adds them
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
    split_users_key,
)
from service.store.retention import seen_keys
from service.store.scripts import SCRIPTS
from service.store.snapshot import text

#: the retention when none is given (RANKDUEL_RETENTION_S's default: 30 days)
DEFAULT_RETENTION_S = 30 * 86_400


class SplitStore(StorePart):
    """Periods, searches and users per arm of each placement."""

    SCRIPTS: ClassVar[dict[str, str]] = {"_split_count_script": "split_count"}

    def record_period(self, pipe, name: str, version: int, shares: Mapping[str, float]) -> None:
        """Queue the shares in force from placement version ``version`` on."""
        pipe.hset(split_periods_key(name), str(int(version)), json.dumps(dict(shares)))

    def count_split(self, name: str, searches: Mapping[tuple[int, str], int],
                    users: Mapping[tuple[int, str], Iterable[str]],
                    retention_s: float = DEFAULT_RETENTION_S) -> int:
        """Add searches per (period, arm), and each user not seen within the retention
        (:func:`service.store.retention.seen_keys`) to the (period, arm) given: one
        script. Returns the users new."""
        seen, before, legacy, ttl = seen_keys(name, self.clock(), retention_s)
        return int(self._split_count_script(*SCRIPTS["split_count"].build(
            {"seen": seen, "seen_before": before, "legacy": legacy,
             "users": split_users_key(name), "searches": split_searches_key(name)},
            {"searches": {f"{int(v)}|{arm}": int(n) for (v, arm), n in searches.items()},
             "ttl": ttl},
            [({}, {"user": f"{int(v)}|{arm}|{u}"}) for (v, arm), who in users.items()
             for u in who])))

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
