"""Every split of a placement counted, for the SRM check (:mod:`rollout.srm`): per
**period** (the placement's version: every change of shares is a new one, ramps and
pauses included) the shares in force, and per arm (an experiment's id, or ``control``)
the searches served and the distinct users seen (a HyperLogLog: about 12 kB per arm and
period, a standard error of 0.81 %, no user id kept). Keys in :mod:`service.store.keys`
(``rd:{pl-<p>}:split...``: the placement's hash tag).

The period's shares are written by the transaction that changes them
(:func:`service.placements.operations.change`), in its MULTI, so a period's shares are
exactly those of the ranges the request path reads with that version. Storage only
stores: plain reads and writes given plain values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from service.store.base import StoreBase
from service.store.keys import split_periods_key, split_searches_key, split_users_key
from service.store.snapshot import text


class SplitStore(StoreBase):
    """Periods, searches and users per arm of each placement."""

    def record_period(self, pipe, name: str, version: int, shares: Mapping[str, float]) -> None:
        """Queue the shares in force from placement version ``version`` on."""
        pipe.hset(split_periods_key(name), str(int(version)), json.dumps(dict(shares)))

    def count_split(self, name: str, searches: Mapping[tuple[int, str], int],
                    users: Mapping[tuple[int, str], Iterable[str]]) -> None:
        """Add searches and users per (period, arm), one round trip."""
        pipe = self.r.pipeline(transaction=False)
        for (version, arm), n in searches.items():
            pipe.hincrby(split_searches_key(name), f"{int(version)}|{arm}", int(n))
        for (version, arm), who in users.items():
            who = list(who)
            if who:
                pipe.pfadd(split_users_key(name, version, arm), *who)
        pipe.execute()

    def split_counts(self, name: str) -> list[dict[str, Any]]:
        """Per period, oldest first: ``version``, ``shares`` (those of the latest period
        recorded at or before it), ``searches`` and ``users`` per arm."""
        periods = {int(text(k)): json.loads(v)
                   for k, v in self.r.hgetall(split_periods_key(name)).items()}
        searches: dict[int, dict[str, int]] = {}
        for k, v in self.r.hgetall(split_searches_key(name)).items():
            version, _, arm = text(k).partition("|")
            searches.setdefault(int(version), {})[arm] = int(v)
        out = []
        known = sorted(periods)
        pipe = self.r.pipeline(transaction=False)
        order = []
        for version in sorted(searches):
            recorded = [p for p in known if p <= version]
            if not recorded:
                continue
            shares = periods[recorded[-1]]
            arms = sorted(set(shares) | set(searches[version]))
            for arm in arms:
                pipe.pfcount(split_users_key(name, version, arm))
            order.append((version, shares, arms))
        counts = pipe.execute() if order else []
        i = 0
        for version, shares, arms in order:
            users = {}
            for arm in arms:
                users[arm] = int(counts[i])
                i += 1
            out.append({"version": version, "shares": shares,
                        "searches": searches[version], "users": users})
        return out


__all__ = ["SplitStore"]
