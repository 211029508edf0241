"""Drains in Redis: the pending set and its claims, drain leases, the sweep's index of
experiments with due impressions (``rd:due``) and its full-sweep token."""

from __future__ import annotations

import secrets
from typing import ClassVar

from service.store.base import DUE_MARK_EVERY_S, StorePart
from service.store.keys import (
    DUE,
    SWEEP_FULL,
    drains_key,
    follow_key,
    pending_key,
    t_key,
)
from service.store.snapshot import (
    text,
)


class DrainStore(StorePart):
    """What remains to credit, who credits it, and where the sweep looks."""

    SCRIPTS: ClassVar[dict[str, str]] = {
        "_claim_script": "claim", "_take_drain_script": "take_drain"}

    def mark_due(self, exp_id: str, due: float) -> None:
        """Tell the sweep's index that ``exp_id`` has an impression due at ``due``.

        Written at most once per :data:`DUE_MARK_EVERY_S` per experiment by one process
        unless ``due`` is earlier than the last mark (a mark covers every impression due
        after it); ``LT`` keeps the index's score the earliest.
        """
        now = self.clock()
        at, marked = self.base.due_marks.get(exp_id, (-DUE_MARK_EVERY_S, due))
        if now - at < DUE_MARK_EVERY_S and marked <= due:
            return
        self.r.zadd(DUE, {exp_id: due}, lt=True)
        self.base.due_marks[exp_id] = (now, due)
        if len(self.base.due_marks) > 10_000:  # experiments come and go: a bounded memory
            self.base.due_marks.clear()

    def due(self, exp_id: str, limit: int) -> list[str]:
        """Impressions of ``exp_id`` whose credit is due (closed, idle too long, or
        claimed by a drain whose lease ran out)."""
        ids = self.r.zrangebyscore(pending_key(exp_id), "-inf", self.clock(), start=0,
                                   num=limit)
        return [text(i) for i in ids]

    def claim(self, exp_id: str, limit: int, lease_s: float) -> tuple[int, list[str]]:
        """Claim up to ``limit`` due impressions for ``lease_s`` (no other drain sees them
        until then); returns the experiment's selection count ``t`` and their ids."""
        now = self.clock()
        t, ids = self._claim_script(keys=[pending_key(exp_id), t_key(exp_id)],
                                    args=[now, now + lease_s, int(limit)])
        return int(t or 0), [text(i) for i in ids]

    def selections(self, exp_id: str) -> int:
        """The experiment's selection count ``t``."""
        return int(self.r.get(t_key(exp_id)) or 0)

    def pending_count(self, exp_id: str) -> int:
        """Impressions of ``exp_id`` not yet credited (open, closed or idle)."""
        return int(self.r.zcard(pending_key(exp_id)))

    def take_drain(self, exp_id: str, ttl_s: float, *, limit: int = 1,
                   token: str | None = None) -> str | None:
        """Take a drain lease for ``ttl_s`` if fewer than ``limit`` drains hold one (expired
        leases do not count), or renew ``token`` if it still holds a live lease; the
        lease's token, or None."""
        token = token or secrets.token_hex(8)
        now = self.clock()
        ok = self._take_drain_script(keys=[drains_key(exp_id)],
                                     args=[now, token, now + max(1.0, ttl_s), int(limit)])
        return token if ok else None

    def refresh_drain(self, exp_id: str, token: str, ttl_s: float) -> None:
        """Extend (or take again) the lease ``token``."""
        self.r.zadd(drains_key(exp_id), {token: self.clock() + max(1.0, ttl_s)})

    def extend_claims(self, exp_id: str, ids: list[str], lease_s: float) -> None:
        """Keep the claims on ``ids`` for ``lease_s`` more: those still pending, and only
        moved later (a click that pushed an idle impression's due time further wins)."""
        until = self.clock() + lease_s
        self.r.zadd(pending_key(exp_id), dict.fromkeys(ids, until), xx=True, gt=True)

    def release_drain(self, exp_id: str, token: str) -> None:
        self.r.zrem(drains_key(exp_id), token)

    def drains(self, exp_id: str) -> int:
        """Drain leases held now (queued or running drains)."""
        return int(self.r.zcount(drains_key(exp_id), self.clock(), "+inf"))

    def experiments_with_due(self, *, full: bool = False) -> list[str]:
        """Experiments that have at least one impression due and no drain lease held: the
        sweep's scan, one pipelined round trip per shard.

        Reads only the experiments the index ``rd:due`` lists as due by now, and puts
        each back at its earliest pending impression (or drops it when none is
        pending); ``full`` reads every experiment instead and rebuilds the index — the
        sweep does that now and then (and at its first run), which also repairs what a
        crash between an impression's write and its mark left out.
        """
        now = self.clock()
        ids = self.base.list_ids() if full else [
            text(e) for e in self.r.zrangebyscore(DUE, "-inf", now)]
        if not ids:
            return []
        pipe = self.r.pipeline(transaction=False)
        for e in ids:
            pipe.zrange(pending_key(e), 0, 0, withscores=True)
            pipe.zcount(drains_key(e), now, "+inf")
        out = pipe.execute()
        due, index, gone = [], {}, []
        for n, e in enumerate(ids):
            first, draining = out[2 * n], out[2 * n + 1]
            if not first:
                gone.append(e)
                continue
            score = float(first[0][1])
            index[e] = score
            if score <= now and not draining:
                due.append(e)
        if index:
            # a due experiment stays due in the index until its drain has credited it; a
            # drain holding the lease pushes its impressions forward, so it reappears then
            self.r.zadd(DUE, index)
        if gone:
            self.r.zrem(DUE, *gone)
        return due

    def next_due(self, exp_id: str) -> float | None:
        """When the earliest pending impression of ``exp_id`` is due (None: none)."""
        first = self.r.zrange(pending_key(exp_id), 0, 0, withscores=True)
        return float(first[0][1]) if first else None

    def take_follow(self, exp_id: str, ttl_s: float) -> bool:
        """Take the right to schedule ``exp_id``'s next drain (one at a time, ``ttl_s``)."""
        return bool(self.r.set(follow_key(exp_id), 1, nx=True,
                               px=max(1, int(ttl_s * 1000))))

    def take_full_sweep(self, every_s: float) -> bool:
        """Whether this sweep should read every experiment: True once per ``every_s``
        across all workers (a key with that TTL)."""
        return bool(self.r.set(SWEEP_FULL, 1, nx=True, px=max(1, int(every_s * 1000))))
