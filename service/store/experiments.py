"""Experiments in Redis: the snapshot read (the experiment's hash and ``W`` in one MULTI),
the metrics scrape, creation, the operators' optimistic transactions, the policy's state
writes, the audit list, and deletion (with what a deleted experiment left behind)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, TypeVar

import redis

from bandits.base import DuelingBandit
from service.store import trail
from service.store.base import AUDIT_MAX, StorePart
from service.store.base import pairs as _pairs
from service.store.keys import (
    DUE,
    EXPERIMENTS,
    audit_key,
    clicks_key,
    counters_key,
    exp_key,
    experiment_keys,
    experiment_pattern,
    health_key,
    imp_key,
    pending_key,
    shown_key,
    t_key,
    w_key,
)
from service.store.ranker_health import parse_health
from service.store.records import Ranker
from service.store.scripts import SCRIPTS
from service.store.snapshot import (
    SNAPSHOT_FIELDS,
    ExperimentMissing,
    Snapshot,
    encode_rankers,
    encode_structure,
    encode_w,
    parse_snapshot,
    text,
)

T = TypeVar("T")
R = TypeVar("R")



def _trail(pipe, exp_id: str, audit: str) -> None:
    """Queue the trail entry of an operator's audit entry (one that names who took it:
    ``who``, :func:`~service.store.base.audit_entry`) on ``pipe``."""
    if trail.current() is None:
        return
    detail = json.loads(audit)
    if "who" not in detail:
        return
    for k in ("ts", "actor", "who"):
        detail.pop(k, None)
    target = {"experiment": exp_id}
    if detail.get("placement"):
        target["placement"] = detail["placement"]
    trail.queue(pipe, exp_key(exp_id), detail.pop("action"), target, detail)


class ExperimentStore(StorePart):
    """An experiment's hash, ``W``, counters and audit (see :mod:`service.store.keys`)."""

    SCRIPTS: ClassVar[dict[str, str]] = {"_select_script": "select", "_audit_script": "audit"}

    def _queue_snapshot(self, pipe, exp_id: str, *, full: bool, extra: Sequence[str] = ()):
        pipe.hmget(exp_key(exp_id), (*SNAPSHOT_FIELDS, *extra))
        pipe.get(w_key(exp_id))
        if full:
            pipe.hgetall(counters_key(exp_id))
            pipe.get(t_key(exp_id))
            pipe.hgetall(health_key(exp_id))

    @staticmethod
    def _parse(exp_id: str, values: list[Any], *, full: bool, extra: int = 0) -> Snapshot:
        fields = values[0]
        snap = parse_snapshot(exp_id, fields[:len(fields) - extra], values[1])
        if full:
            counters, t, health = values[2:5]
            snap.counters = {text(k): int(v) for k, v in counters.items()}
            snap.selections = int(t or 0)
            snap.health = parse_health(health)
        return snap

    def snapshot(self, exp_id: str, *, full: bool = False) -> Snapshot:
        """The experiment's snapshot, read in one MULTI; with ``full``, also its counters,
        selection count and ranker health, so that they agree with ``W`` (a credit
        commits ``W`` and its counters together)."""
        pipe = self.r.pipeline(transaction=True)
        self._queue_snapshot(pipe, exp_id, full=full)
        return self._parse(exp_id, pipe.execute(), full=full)

    def scrape(self, ids: Sequence[str]) -> Iterable[tuple[str, Any]]:
        """What the metrics collector exports of experiments ``ids``, read in one pipeline
        (one round trip per shard): per id ``(id, (snapshot, shown, truth, pending))`` —
        the full snapshot, ``{arm: (impressions that showed it, its share of them)}``,
        the optional ``truth`` given at creation and the pending count — or
        ``(id, exception)`` for an experiment that could not be read."""
        pipe = self.r.pipeline(transaction=False)
        for e in ids:
            self._queue_snapshot(pipe, e, full=True, extra=("truth",))
            pipe.hgetall(shown_key(e))
            pipe.zcard(pending_key(e))
        values = pipe.execute(raise_on_error=False)
        per = 7
        for n, e in enumerate(ids):
            chunk = values[n * per:(n + 1) * per]
            try:
                for v in chunk:
                    if isinstance(v, Exception):
                        raise v
                snap = self._parse(e, chunk[:5], full=True, extra=1)
                truth_raw = chunk[0][-1]
                per_arm: dict[int, list[float]] = {}
                for key, value in chunk[5].items():
                    kind, _, arm = text(key).partition(":")
                    slot = per_arm.setdefault(int(arm), [0, 0.0])
                    slot[0 if kind == "n" else 1] = float(value)
                arms = {a: (int(c), share) for a, (c, share) in per_arm.items()}
                truth = json.loads(truth_raw) if truth_raw else None
                yield e, (snap, arms, truth, int(chunk[6]))
            except Exception as exc:  # one unreadable experiment must not hide the others
                yield e, exc

    def exists(self, exp_id: str) -> bool:
        return bool(self.r.exists(exp_key(exp_id)))

    def counters(self, exp_id: str) -> dict[str, int]:
        raw = self.r.hgetall(counters_key(exp_id))
        return {text(k): int(v) for k, v in raw.items()}

    def audit(self, exp_id: str, start: int = 0, stop: int = -1) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.r.lrange(audit_key(exp_id), start, stop)]

    def next_t(self, exp_id: str) -> tuple[int, int, dict[int, dict[str, Any]]]:
        """INCR the selection counter; return ``(t, version, ranker health)``. One round
        trip. Raises :class:`ExperimentMissing` (and creates nothing) for an unknown id."""
        out = self.call(self._select_script,
                        keys=[exp_key(exp_id), t_key(exp_id), health_key(exp_id)])
        if out is None:
            raise ExperimentMissing(f"no experiment {exp_id!r}")
        return int(out[0]), int(out[1]), parse_health(_pairs(out[2]))

    def create_experiment(self, exp_id: str, *, meta: dict[str, Any],
                          rankers: Sequence[Ranker], bandit: DuelingBandit,
                          truth: dict[str, Any] | None, audit: str) -> None:
        """Store a new experiment (validated and built by the caller). The experiment
        list is written after the experiment's own keys (another shard on a cluster)."""
        pipe = self.r.pipeline(transaction=True)
        pipe.set(w_key(exp_id), encode_w(bandit))
        pipe.hset(exp_key(exp_id), mapping={
            "meta": json.dumps(meta),
            "lifecycle": "running",
            "rankers": encode_rankers(rankers),
            "version": 1,
            "sv": 1,
            "n": bandit.n_updates,
            **encode_structure(bandit),
            **({"truth": json.dumps(truth)} if truth else {}),
        })
        pipe.rpush(audit_key(exp_id), audit)
        _trail(pipe, exp_id, audit)
        pipe.execute()
        self.r.zadd(EXPERIMENTS, {exp_id: meta["created_at"]})

    def write_state(self, pipe, exp_id: str, bandit: DuelingBandit, *,
                    rankers: Sequence[Ranker] | None = None, structure: bool = True,
                    encoded: dict[str, Any] | None = None, **fields: Any) -> None:
        """Queue the policy's new state — ``W``, ``n`` and (``structure``) its structure
        with ``sv`` + 1 — and optionally the rankers or other snapshot fields, with
        ``version`` + 1. Only inside a transaction that WATCHes ``W`` (credits add to
        it). ``encoded``: :func:`encode_structure` of ``bandit`` if the caller has it."""
        mapping: dict[str, Any] = dict(n=bandit.n_updates, **fields)
        if structure:
            mapping.update(encode_structure(bandit) if encoded is None else encoded)
        if rankers is not None:
            mapping["rankers"] = encode_rankers(rankers)
        pipe.set(w_key(exp_id), encode_w(bandit))
        pipe.hset(exp_key(exp_id), mapping=mapping)
        if structure:
            pipe.hincrby(exp_key(exp_id), "sv", 1)
        pipe.hincrby(exp_key(exp_id), "version", 1)

    def write_fields(self, pipe, exp_id: str, **fields: Any) -> None:
        """Queue snapshot fields other than the policy state, with ``version`` + 1."""
        pipe.hset(exp_key(exp_id), mapping=fields)
        pipe.hincrby(exp_key(exp_id), "version", 1)

    def write_certification(self, pipe, exp_id: str, record: dict[str, Any]) -> None:
        """Queue the record of where the experiment's champion was certified (its
        comparisons and searches then), kept in its hash (field ``certified``)."""
        pipe.hset(exp_key(exp_id), "certified", json.dumps(record))

    def certification(self, exp_id: str) -> dict[str, Any] | None:
        """What :meth:`write_certification` kept (None: never certified live)."""
        raw = self.r.hget(exp_key(exp_id), "certified")
        return json.loads(raw) if raw else None

    def add_audit(self, exp_id: str, *entries: str, pipe=None) -> None:
        """Append audit entries (from :func:`audit_entry`), keeping the last AUDIT_MAX.

        Into ``pipe`` (a transaction that WATCHes the experiment), or else by a script
        that appends only while the experiment exists: a request that was running when
        its experiment was deleted must not leave an audit list behind."""
        if not entries:
            return
        if pipe is None:
            if trail.current() is None:
                self._audit_script(*SCRIPTS["audit"].build(
                    {"exp": exp_key(exp_id), "audit": audit_key(exp_id)},
                    {"max_entries": AUDIT_MAX}, [({}, {"entry": e}) for e in entries]))
                return
            # an operator's change: its trail entry in the same transaction, while the
            # experiment exists (as the script checks; no script inside a transaction:
            # a cluster node would not know it)
            with self.r.pipeline(transaction=True) as tx:
                while True:
                    try:
                        tx.watch(exp_key(exp_id))
                        if not tx.exists(exp_key(exp_id)):
                            return
                        tx.multi()
                        tx.rpush(audit_key(exp_id), *entries)
                        tx.ltrim(audit_key(exp_id), -AUDIT_MAX, -1)
                        for entry in entries:
                            _trail(tx, exp_id, entry)
                        tx.execute()
                        return
                    except redis.WatchError:  # the experiment changed meanwhile: again
                        continue
        pipe.rpush(audit_key(exp_id), *entries)
        pipe.ltrim(audit_key(exp_id), -AUDIT_MAX, -1)
        for entry in entries:
            _trail(pipe, exp_id, entry)

    def delete_experiment(self, exp_id: str) -> int:
        """Remove experiment ``exp_id`` and every key it owns; returns the keys deleted.

        Off the experiment list and the sweep's index first (nothing new starts on it),
        then every key with its hash tag, found by SCAN (impressions included, credited
        or not); a drain still running finds the experiment missing and stops.
        Raises :class:`ExperimentMissing` for an unknown id.
        """
        if not self.exists(exp_id):
            raise ExperimentMissing(f"no experiment {exp_id!r}")
        self.r.zrem(EXPERIMENTS, exp_id)
        self.r.zrem(DUE, exp_id)
        self.base.due_marks.pop(exp_id, None)
        with self.r.pipeline(transaction=True) as tx:  # with its trail entry
            tx.delete(exp_key(exp_id))
            trail.queue(tx, exp_key(exp_id), "deleted", {"experiment": exp_id})
            deleted = int(tx.execute()[0])  # the experiment is gone from here on
        batch: list[str] = []
        for key in self.r.scan_iter(match=experiment_pattern(exp_id), count=1000):
            batch.append(key)
            if len(batch) >= 500:
                deleted += self._unlink(batch)
                batch = []
        if batch:
            deleted += self._unlink(batch)
        return deleted

    def purge_orphan(self, exp_id: str) -> int | None:
        """Delete what is left of a deleted experiment, if ``exp_id`` is one: None when the
        experiment exists, else the keys deleted (0 when nothing was left).

        The leftovers of a request that was running during ``DELETE`` (its keys written
        after the SCAN passed them), or of a drain lease: the fixed keys of
        :func:`~service.store.keys.experiment_keys` and the impressions its pending set names,
        without a SCAN; the experiment leaves the sweep's index. Impressions not pending
        carry a TTL and expire on their own. Called by a drain (:mod:`service.credit.protocol`), so
        that a deleted experiment's leftovers are credited by no one and swept no more.
        """
        if self.exists(exp_id):
            return None
        keys: list[str] = list(experiment_keys(exp_id))
        for imp_id in self.r.zrange(pending_key(exp_id), 0, -1):
            keys += [imp_key(exp_id, text(imp_id)), clicks_key(exp_id, text(imp_id))]
        self.r.zrem(DUE, exp_id)
        self.base.due_marks.pop(exp_id, None)
        return self._unlink(keys)

    def _unlink(self, keys: list[Any]) -> int:
        # one key per command: a cluster pipeline's rule, and a Redis without UNLINK's
        # batching still answers one small reply each
        pipe = self.r.pipeline(transaction=False)
        for k in keys:
            pipe.unlink(k)
        return sum(int(x) for x in pipe.execute())
