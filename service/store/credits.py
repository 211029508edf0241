"""Credit in Redis: the plain storage operations of :mod:`service.credit.protocol` — read a
batch of impressions, commit a batch (the credit script), read a hold, write its
resolution. Nothing here decides anything: the protocol is :mod:`service.credit.protocol`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from bandits.base import DuelingBandit
from service.credit import step as credit_step
from service.store.base import StoreBase, audit_entry
from service.store.keys import (
    clicks_key,
    counters_key,
    exp_key,
    imp_key,
    pending_key,
    tie_field,
    ties_key,
    w_key,
)
from service.store.records import Impression
from service.store.snapshot import (
    Snapshot,
    encode_structure,
    text,
)


@dataclass
class Committed:
    """What the credit script did with a batch.

    ``status``: ``ok`` (every impression handled), ``held`` (stopped at ``held``, which
    now holds the experiment; the impressions before it are handled), ``hold`` (another
    impression holds the experiment: nothing done), ``sv`` (the structure changed since
    the batch was computed: nothing done), ``missing`` (no such experiment).
    ``codes``: per handled impression ``ok``, ``already``, ``missing`` or ``changed``
    (a click arrived since it was read: left pending).
    """

    status: str
    codes: dict[str, str] = field(default_factory=dict)
    held: str | None = None


def _impression(imp_id: str, row: bytes) -> Impression | None:
    """An impression from its row of :data:`_READ_LUA`."""
    if not row:
        return None
    try:
        record, arms, forfeits, duel, created, credited, clicks, dwell, reports = (
            json.loads(row))
        forfeits = [tuple(f) for f in forfeits]
        dwell = {int(p): int(ms) for p, ms in dwell}
    except (ValueError, TypeError):
        # a record this code cannot read: the credit step reports it as an error
        return Impression(id=imp_id, arms=[], duel=True, record=None)
    return Impression(
        id=imp_id,
        arms=arms,
        duel=duel == 1,
        record=record,
        clicks=sorted(int(x) for x in clicks),
        forfeits=forfeits,
        created=float(created),
        credited=credited == 1,
        dwell_ms=dwell,
        reports=int(reports),
    )


class CreditStore(StoreBase):
    """The credit script and the hold's reads and writes."""

    SCRIPTS: ClassVar[dict[str, str]] = {"_read_script": "read", "_credit_script": "credit"}

    def read_impressions(self, exp_id: str, imp_ids: Sequence[str]
                         ) -> list[Impression | None]:
        """Every impression of ``imp_ids`` with its clicks, in one script call that
        returns one JSON array per impression (None where unknown or expired)."""
        if not imp_ids:
            return []
        keys = []
        for i in imp_ids:
            keys += [imp_key(exp_id, i), clicks_key(exp_id, i)]
        rows = self._read_script(keys=keys)
        return [_impression(i, row) for i, row in zip(imp_ids, rows, strict=True)]

    def commit_credit(self, exp_id: str, *, sv: int, guard: credit_step.Guard | None,
                      ids: Sequence[str],
                      impressions: Sequence[Impression | None],
                      result: credit_step.Credit) -> Committed:
        """Run the credit script for what :func:`service.credit.step.apply` (``update=False``)
        decided about ``impressions`` (named ``ids``), computed at structure version ``sv``
        (see the module docstring)."""
        keys = [exp_key(exp_id), w_key(exp_id), counters_key(exp_id), pending_key(exp_id),
                ties_key(exp_id)]
        args: list[Any] = [sv, "" if guard is None else guard.arg()]
        sent, gone = [], {}
        for imp_id, imp in zip(ids, impressions, strict=True):
            res = result.results[imp_id]
            if imp is None or res["status"] in ("missing", "already"):
                gone[imp_id] = res["status"]
                continue
            sent.append(imp_id)
            keys += [imp_key(exp_id, imp_id), clicks_key(exp_id, imp_id)]
            outcomes = ";".join(
                f"{int(i)},{int(j)},{float(s)!r},{0 if guard is None else guard.watches(i, j)}"
                for i, j, s in res.get("outcomes", ()))
            counted = ",".join(result.counted.get(imp_id, ()))
            args += [imp_id, json.dumps(res), f"{imp.reports}|{counted}|{outcomes}"]
        if gone:  # nothing to credit: off the pending set (idempotent, outside the script)
            self.r.zrem(pending_key(exp_id), *gone)
        if not sent:
            return Committed("ok", gone)
        out = self._credit_script(keys=keys, args=args)
        status = text(out[0])
        if status in ("sv", "hold", "missing"):
            return Committed(status, {}, text(out[1]) if len(out) > 1 else None)
        codes = {i: text(c) for i, c in zip(sent, out[2:], strict=False)}
        codes.update(gone)
        return Committed(status, codes, text(out[1]) or None)

    def ties(self, exp_id: str) -> dict[tuple[int, int], int]:
        """Outcomes of exactly ½ per pair of arms ``(i, j)``, ``i < j`` (pairs with none
        are absent)."""
        out = {}
        for field_, n in self.r.hgetall(ties_key(exp_id)).items():
            i, j = text(field_).split(":")
            out[int(i), int(j)] = int(n)
        return out

    def hold(self, exp_id: str) -> str | None:
        """The impression that holds ``exp_id`` (None: no hold)."""
        return text(self.r.hget(exp_key(exp_id), "hold")) or None

    def read_hold(self, pipe, exp_id: str, held: str, ids: Sequence[str]
                  ) -> tuple[Snapshot, list[Impression | None]]:
        """WATCH on ``pipe`` what resolving the hold ``held`` depends on (the experiment,
        ``W``, the impressions ``ids`` and their clicks), then read the full snapshot and,
        while ``held`` still holds, the impressions (else none)."""
        watch = [exp_key(exp_id), w_key(exp_id)]
        for i in ids:
            watch += [imp_key(exp_id, i), clicks_key(exp_id, i)]
        pipe.watch(*watch)
        snap = self.snapshot(exp_id, full=True)
        imps = self.read_impressions(exp_id, ids) if snap.hold == held else []
        return snap, imps

    def write_resolution(self, pipe, exp_id: str, bandit: DuelingBandit,
                         result: credit_step.Credit, ids: Sequence[str], *,
                         structure_before: str) -> bool:
        """Queue on ``pipe`` (in MULTI, after :meth:`read_hold`) what deciding a hold
        wrote: the policy's state if it changed (its structure, ``sv`` + 1, only if that
        differs from ``structure_before``), the audit events, each impression's mark and
        counters; the impressions leave the pending set and the hold is cleared. Returns
        whether the structure moved (``sv`` + 1)."""
        moved = False
        if result.changed:
            moved = encode_structure(bandit)["state"] != structure_before
            self.write_state(pipe, exp_id, bandit, structure=moved)
            self.add_audit(exp_id, *(audit_entry(self.clock(), **e) for e in result.audit),
                           pipe=pipe)
        else:
            pipe.hincrby(exp_key(exp_id), "version", 1)
        counts: dict[str, int] = {}
        ties: dict[str, int] = {}
        for i in ids:
            res = result.results[i]
            if res["status"] in ("missing", "already"):
                continue
            pipe.hset(imp_key(exp_id, i), mapping={"closed": 1, "credited": json.dumps(res)})
            for name in result.counted.get(i, []):
                counts[name] = counts.get(name, 0) + 1
            for pair in (tie_field(a, b) for a, b, s in res.get("outcomes", ())
                         if s == 0.5 and a != b):
                ties[pair] = ties.get(pair, 0) + 1
        for name, n in counts.items():
            pipe.hincrby(counters_key(exp_id), name, n)
        for pair, n in ties.items():
            pipe.hincrby(ties_key(exp_id), pair, n)
        pipe.zrem(pending_key(exp_id), *ids)
        pipe.hdel(exp_key(exp_id), "hold")
        return moved

    def count_conflict(self, exp_id: str) -> None:
        self.r.hincrby(counters_key(exp_id), "credit_conflicts", 1)
