"""Credit in Redis: the plain storage operations of the credit protocol
(:mod:`service.credit`): read a batch of impressions, commit a batch (the credit script,
``credit.lua``, with the guard's check in ``guard.lua``), watch a hold, write its marks.

Only plain values come in (ids, JSON marks, outcomes with the guard's code for each, the
guard's argument): nothing here calls a policy or decides anything, and nothing here uses
another part of the store. What an outcome adds to the counts is the one rule of
:mod:`bandits.outcomes`, which the script follows in Lua."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from bandits import outcomes as rule
from service.store.base import StorePart
from service.store.keys import (
    clicks_key,
    counters_key,
    events_key,
    exp_key,
    imp_key,
    metrics_key,
    pending_key,
    segments_key,
    tie_field,
    ties_key,
    w_key,
)
from service.store.records import Impression
from service.store.snapshot import (
    text,
)


@dataclass(frozen=True)
class Entry:
    """One impression as the credit script takes it: its id, its ``credited`` mark (JSON),
    the number of click reports it was read with (a click since: left pending), the
    counters it adds, and its outcomes ``(i, j, s, watched)``, ``watched`` being the
    guard's code for the pair (:meth:`service.credit.guard.Guard.watches`; 0: not
    watched)."""

    imp_id: str
    mark: str
    reports: int
    counted: Sequence[str] = ()
    outcomes: Sequence[tuple[int, int, float, int]] = ()

    def arg(self) -> str:
        """The script's argument for the impression: ``reports|counters|outcomes``."""
        outcomes = ";".join(f"{int(i)},{int(j)},{float(s)!r},{int(w)}"
                            for i, j, s, w in self.outcomes)
        return f"{self.reports}|{','.join(self.counted)}|{outcomes}"


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


@dataclass
class SegmentCounts:
    """What one segment value (a label, ``device=mobile``) has counted: ``W`` per pair
    of arms ``(i, j)`` (absent: 0), ties per pair ``(i, j)``, ``i < j``, and its
    comparisons ``n``."""

    W: dict[tuple[int, int], float] = field(default_factory=dict)
    ties: dict[tuple[int, int], int] = field(default_factory=dict)
    n: int = 0


def _queue_segments(pipe, exp_id: str, labels: Sequence[str],
                    outcomes: Sequence[Sequence[float]]) -> None:
    """Queue on ``pipe`` the per-segment additions of one impression's ``outcomes``
    (``[i, j, s]``, at least one) by the rule of :mod:`bandits.outcomes`, the fields
    ``credit.lua``'s ``add_segments`` writes (``bandits/outcome_cases.json`` checks both)."""
    key = segments_key(exp_id)
    adds, tied = rule.writes(outcomes), rule.ties(outcomes)
    for label in labels:
        pipe.hincrby(key, f"n:{label}", 1)
        for i, j, x in adds:
            pipe.hincrbyfloat(key, f"w:{label}:{i}:{j}", x)
        for pair in tied:
            pipe.hincrby(key, f"t:{label}:{tie_field(*pair)}", 1)


def _impression(imp_id: str, row: bytes) -> Impression | None:
    """An impression from its row of :data:`_READ_LUA`."""
    if not row:
        return None
    try:
        record, arms, forfeits, duel, created, credited, clicks, dwell, reports, *seg = (
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
        segments=parse_labels(seg[0] if seg else None),
    )


class CreditStore(StorePart):
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

    def commit_credit(self, exp_id: str, *, sv: int, guard: str,
                      entries: Sequence[Entry], gone: Mapping[str, str],
                      target: str = "") -> Committed:
        """Run the credit script on ``entries`` (in order), computed at structure version
        ``sv``; ``guard`` is the guard's argument (``""``: none; see ``credit.lua``).
        ``target`` ``"click"`` adds the outcomes to the click metric's counts (in the
        metrics hash, as a metric's) instead of the policy's ``W``.
        ``gone`` (id -> ``missing`` or ``already``) leave the pending set without the
        script (idempotent) and are reported as they are."""
        if gone:
            self.r.zrem(pending_key(exp_id), *gone)
        if not entries:
            return Committed("ok", dict(gone))
        if target == "click":  # the click metric's counts, in the metrics hash
            w = ties = segments = metrics_key(exp_id)
        else:
            w, ties, segments = w_key(exp_id), ties_key(exp_id), segments_key(exp_id)
        keys = [exp_key(exp_id), w, counters_key(exp_id), pending_key(exp_id), ties, segments,
                events_key(exp_id)]
        args: list[Any] = [sv, guard, target]
        for e in entries:
            keys += [imp_key(exp_id, e.imp_id), clicks_key(exp_id, e.imp_id)]
            args += [e.imp_id, e.mark, e.arg()]
        out = self._credit_script(keys=keys, args=args)
        status = text(out[0])
        if status in ("sv", "hold", "missing"):
            return Committed(status, {}, text(out[1]) if len(out) > 1 else None)
        codes = {e.imp_id: text(c) for e, c in zip(entries, out[2:], strict=False)}
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

    def watch_hold(self, pipe, exp_id: str, ids: Sequence[str]) -> None:
        """WATCH on ``pipe`` what deciding a hold depends on: the experiment, ``W``, the
        impressions ``ids`` and their clicks."""
        watch = [exp_key(exp_id), w_key(exp_id)]
        for i in ids:
            watch += [imp_key(exp_id, i), clicks_key(exp_id, i)]
        pipe.watch(*watch)

    def write_marks(self, pipe, exp_id: str, results: Mapping[str, dict[str, Any]],
                    counted: Mapping[str, Sequence[str]], ids: Sequence[str], *,
                    state_written: bool,
                    segments: Mapping[str, Sequence[str]] | None = None) -> None:
        """Queue on ``pipe`` (in MULTI, after :meth:`watch_hold`) each impression's mark
        (``results``, but those ``missing`` or ``already``), its counters (``counted``)
        and ties; the impressions leave the pending set and the hold is cleared. Without
        ``state_written`` (the policy's state not written in this transaction) the
        snapshot's ``version`` moves by one here. ``segments`` (id -> its labels) adds
        each impression's outcomes to the per-segment counts as the credit script does;
        each impression's outcome event goes to the event log, as the script's."""
        if not state_written:
            pipe.hincrby(exp_key(exp_id), "version", 1)
        counts: dict[str, int] = {}
        ties: dict[str, int] = {}
        for i in ids:
            res = results[i]
            if res["status"] in ("missing", "already"):
                continue
            mark = json.dumps(res)
            pipe.hset(imp_key(exp_id, i), mapping={"closed": 1, "credited": mark})
            pipe.xadd(events_key(exp_id), {"type": "outcome", "id": i, "mark": mark,
                                           "seg": ",".join((segments or {}).get(i, ()))})
            for name in counted.get(i, []):
                counts[name] = counts.get(name, 0) + 1
            for pair in (tie_field(*p) for p in rule.ties(res.get("outcomes", ()))):
                ties[pair] = ties.get(pair, 0) + 1
            if segments and segments.get(i) and res.get("outcomes"):
                _queue_segments(pipe, exp_id, segments[i], res["outcomes"])
        for name, n in counts.items():
            pipe.hincrby(counters_key(exp_id), name, n)
        for pair, n in ties.items():
            pipe.hincrby(ties_key(exp_id), pair, n)
        pipe.zrem(pending_key(exp_id), *ids)
        pipe.hdel(exp_key(exp_id), "hold")

    def segment_counts(self, exp_id: str) -> dict[str, SegmentCounts]:
        """The per-segment counts of ``exp_id`` by label (``device=mobile``); a label
        that has seen no comparison is absent."""
        out: dict[str, SegmentCounts] = {}
        for field_, value in self.r.hgetall(segments_key(exp_id)).items():
            kind, label, *pair = text(field_).split(":")
            c = out.setdefault(label, SegmentCounts())
            if kind == "n":
                c.n = int(value)
            elif kind == "w":
                c.W[int(pair[0]), int(pair[1])] = float(value)
            elif kind == "t":
                c.ties[int(pair[0]), int(pair[1])] = int(value)
        return out

    def count_conflict(self, exp_id: str) -> None:
        self.r.hincrby(counters_key(exp_id), "credit_conflicts", 1)


def parse_labels(stored: str | None) -> tuple[str, ...]:
    """An impression's stored ``seg`` field as its labels (``dimension=value``, comma
    separated, as :mod:`service.segments.dimensions` makes them).

    >>> parse_labels("device=mobile,market=de"), parse_labels(None)
    (('device=mobile', 'market=de'), ())
    """
    return tuple(x for x in (stored or "").split(",") if x)
