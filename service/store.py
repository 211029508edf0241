"""Experiment state in Redis: reads, one optimistic-transaction helper, and the atomic
writes of the request path. The key layout is documented once, in :mod:`service.keys`.

Every change to an experiment's snapshot goes through :meth:`Store.transact`: WATCH the
keys the change depends on, read them, compute with the pure code (the policy, the
credit step of :mod:`service.credit`), then MULTI/EXEC the writes with ``version`` + 1,
retrying on ``WatchError``. Crediting an impression writes its ``credited`` mark in the
same EXEC, and a transaction that finds the mark does nothing: each impression changes
``W`` at most once, whatever the task retries, duplicate deliveries or worker crashes (a
crash before EXEC writes nothing; the impression stays in its experiment's pending set
and is credited again later).

The store raises storage errors (:class:`~service.snapshot.ExperimentMissing`,
:class:`ImpressionMissing`, :class:`ImpressionClosed`, :class:`Contention`); the API maps
them to HTTP statuses in one place (:mod:`service.app`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import redis

from bandits.base import DuelingBandit
from service import credit as credit_step
from service.keys import (
    EXPERIMENTS,
    audit_key,
    clicks_key,
    counters_key,
    drain_key,
    exp_key,
    health_key,
    imp_key,
    pending_key,
    probe_key,
    shown_key,
    t_key,
)
from service.snapshot import (
    SNAPSHOT_FIELDS,
    ExperimentMissing,
    Snapshot,
    encode_bandit,
    parse_snapshot,
    text,
)

LIFECYCLES = ("running", "paused", "stopped")
AUDIT_MAX = 10_000
#: attempts of one optimistic transaction before giving up (:class:`Contention`)
MAX_ATTEMPTS = 1000

T = TypeVar("T")
R = TypeVar("R")


class ImpressionMissing(LookupError):
    """No impression with this id (unknown or expired)."""


class ImpressionClosed(Exception):
    """The impression no longer accepts clicks."""


class Contention(RuntimeError):
    """An optimistic transaction lost every one of its attempts."""


@dataclass
class CreditInputs:
    """What a credit transaction reads: the snapshot, the impressions (None where
    missing) and the experiment's selection count."""

    snapshot: Snapshot
    ids: list[str]
    impressions: list[credit_step.Impression | None]
    t: int


def audit_entry(ts: float, action: str, *, actor: str, **detail: Any) -> str:
    """One audit-list entry (JSON)."""
    return json.dumps({"ts": ts, "action": action, "actor": actor, **detail})


class Store:
    """Experiments, impressions and their transactions on one Redis.

    Parameters
    ----------
    client
        A ``redis.Redis`` with ``decode_responses=False`` (``W`` is binary).
    clock
        Seconds since the epoch; injectable for tests.
    """

    def __init__(self, client: redis.Redis, *, clock: Callable[[], float] = time.time) -> None:
        self.r = client
        self.clock = clock
        self._click_script = client.register_script(_CLICK_LUA)
        self._end_script = client.register_script(_END_LUA)
        self._select_script = client.register_script(_SELECT_LUA)
        self._fail_script = client.register_script(_FAIL_LUA)

    # ------------------------------------------------------------------ reads
    def snapshot(self, exp_id: str, *, full: bool = False) -> Snapshot:
        """The experiment's snapshot; with ``full``, also its counters, selection count
        and ranker health, read in the same MULTI so that they agree with ``W`` (a credit
        commits the new ``W`` and its counters together)."""
        if not full:
            return parse_snapshot(exp_id, self.r.hmget(exp_key(exp_id), SNAPSHOT_FIELDS))
        pipe = self.r.pipeline(transaction=True)
        pipe.hmget(exp_key(exp_id), SNAPSHOT_FIELDS)
        pipe.hgetall(counters_key(exp_id))
        pipe.get(t_key(exp_id))
        pipe.hgetall(health_key(exp_id))
        values, counters, t, health = pipe.execute()
        snap = parse_snapshot(exp_id, values)
        snap.counters = {text(k): int(v) for k, v in counters.items()}
        snap.selections = int(t or 0)
        snap.health = parse_health(health)
        return snap

    def scrape(self, exp_id: str) -> tuple[Snapshot, dict[int, tuple[int, float]], Any]:
        """What the metrics collector exports of one experiment, read in one MULTI: the
        full snapshot, ``{arm: (impressions that showed it, its share of them)}`` and
        the optional ``truth`` given at creation (None without one)."""
        pipe = self.r.pipeline(transaction=True)
        pipe.hmget(exp_key(exp_id), (*SNAPSHOT_FIELDS, "truth"))
        pipe.hgetall(counters_key(exp_id))
        pipe.get(t_key(exp_id))
        pipe.hgetall(shown_key(exp_id))
        pipe.hgetall(health_key(exp_id))
        values, counters, t, shown, health = pipe.execute()
        snap = parse_snapshot(exp_id, values[:-1])
        snap.counters = {text(k): int(v) for k, v in counters.items()}
        snap.selections = int(t or 0)
        snap.health = parse_health(health)
        per_arm: dict[int, list[float]] = {}
        for key, value in shown.items():
            kind, _, arm = text(key).partition(":")
            slot = per_arm.setdefault(int(arm), [0, 0.0])
            slot[0 if kind == "n" else 1] = float(value)
        arms = {a: (int(n), share) for a, (n, share) in per_arm.items()}
        truth = json.loads(values[-1]) if values[-1] else None
        return snap, arms, truth

    def exists(self, exp_id: str) -> bool:
        return bool(self.r.exists(exp_key(exp_id)))

    def list_ids(self) -> list[str]:
        return [text(x) for x in self.r.zrange(EXPERIMENTS, 0, -1)]

    def counters(self, exp_id: str) -> dict[str, int]:
        raw = self.r.hgetall(counters_key(exp_id))
        return {text(k): int(v) for k, v in raw.items()}

    def audit(self, exp_id: str, start: int = 0, stop: int = -1) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.r.lrange(audit_key(exp_id), start, stop)]

    def next_t(self, exp_id: str) -> tuple[int, int, dict[int, dict[str, Any]]]:
        """INCR the selection counter; return ``(t, version, ranker health)``. One round
        trip. Raises :class:`ExperimentMissing` (and creates nothing) for an unknown id."""
        out = self._select_script(keys=[exp_key(exp_id), t_key(exp_id), health_key(exp_id)])
        if out is None:
            raise ExperimentMissing(f"no experiment {exp_id!r}")
        return int(out[0]), int(out[1]), parse_health(_pairs(out[2]))

    # ------------------------------------------------------------------ writes
    def create_experiment(self, exp_id: str, *, meta: dict[str, Any],
                          rankers: list[dict[str, Any]], bandit: DuelingBandit,
                          truth: dict[str, Any] | None, audit: str) -> None:
        """Store a new experiment (validated and built by the caller)."""
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(exp_key(exp_id), mapping={
            "meta": json.dumps(meta),
            "lifecycle": "running",
            "rankers": json.dumps(rankers),
            "version": 1,
            **encode_bandit(bandit),
            **({"truth": json.dumps(truth)} if truth else {}),
        })
        pipe.zadd(EXPERIMENTS, {exp_id: meta["created_at"]})
        pipe.rpush(audit_key(exp_id), audit)
        pipe.execute()

    def transact(self, watch: Sequence[str], read: Callable[[], T],
                 write: Callable[[T, redis.client.Pipeline], R], *,
                 on_conflict: Callable[[], None] | None = None) -> R:
        """One optimistic transaction: WATCH ``watch``, ``read()`` (any reads, e.g. one
        pipelined round trip), then ``write(data, pipe)`` queues the writes on ``pipe``
        (already in MULTI) and returns the result; EXEC. Retried from the WATCH, after
        ``on_conflict()``, when a watched key changed meanwhile. An exception from
        ``read``/``write`` aborts with nothing written."""
        with self.r.pipeline(transaction=True) as pipe:
            for _attempt in range(MAX_ATTEMPTS):
                try:
                    pipe.watch(*watch)
                    data = read()
                    pipe.multi()
                    result = write(data, pipe)
                    pipe.execute()
                    return result
                except redis.WatchError:
                    if on_conflict is not None:
                        on_conflict()
                    continue
        raise Contention(f"gave up after {MAX_ATTEMPTS} conflicting attempts on {watch[0]}")

    def update_experiment(self, exp_id: str,
                          write: Callable[[Snapshot, redis.client.Pipeline], R]) -> R:
        """:meth:`transact` on the experiment's snapshot alone."""
        return self.transact([exp_key(exp_id)], lambda: self.snapshot(exp_id), write)

    def write_state(self, pipe: redis.client.Pipeline, exp_id: str, bandit: DuelingBandit,
                    *, rankers: list[dict] | None = None, **fields: Any) -> None:
        """Queue the policy's new state (and optionally the rankers or other snapshot
        fields) with ``version`` + 1."""
        mapping: dict[str, Any] = dict(encode_bandit(bandit), **fields)
        if rankers is not None:
            mapping["rankers"] = json.dumps(rankers)
        pipe.hset(exp_key(exp_id), mapping=mapping)
        pipe.hincrby(exp_key(exp_id), "version", 1)

    def write_fields(self, pipe: redis.client.Pipeline, exp_id: str, **fields: Any) -> None:
        """Queue snapshot fields other than the policy state, with ``version`` + 1."""
        pipe.hset(exp_key(exp_id), mapping=fields)
        pipe.hincrby(exp_key(exp_id), "version", 1)

    def add_audit(self, exp_id: str, *entries: str,
                  pipe: redis.client.Pipeline | None = None) -> None:
        """Append audit entries (from :func:`audit_entry`), keeping the last AUDIT_MAX."""
        if not entries:
            return
        p = pipe if pipe is not None else self.r.pipeline(transaction=False)
        p.rpush(audit_key(exp_id), *entries)
        p.ltrim(audit_key(exp_id), -AUDIT_MAX, -1)
        if pipe is None:
            p.execute()

    # ------------------------------------------------------------------ impressions
    def save_impression(
        self,
        imp_id: str,
        *,
        exp_id: str,
        t: int,
        arms: list[int],
        shown: list[str],
        record: Any,
        duel: bool,
        forfeits: list[tuple[int, int]],
        token_expires: int,
        ttl_s: int,
        inactivity_s: float,
        counters: dict[str, int],
    ) -> None:
        """Store an impression (with TTL) and schedule its credit for when it goes idle."""
        now = self.clock()
        pipe = self.r.pipeline(transaction=False)
        pipe.hset(imp_key(imp_id), mapping={
            "exp": exp_id,
            "t": t,
            "arms": json.dumps(arms),
            "shown": json.dumps(shown),
            "record": json.dumps(record),
            "duel": int(duel),
            "forfeits": json.dumps(forfeits),
            "created": now,
            "expires": token_expires,
            "closed": 0,
        })
        pipe.expire(imp_key(imp_id), ttl_s)
        pipe.zadd(pending_key(exp_id), {imp_id: now + inactivity_s})
        for name, n in counters.items():
            pipe.hincrby(counters_key(exp_id), name, n)
        for arm in arms:  # exposure, for regret and traffic share (service.collector)
            pipe.hincrby(shown_key(exp_id), f"n:{arm}", 1)
            pipe.hincrbyfloat(shown_key(exp_id), f"share:{arm}", 1.0 / len(arms))
        pipe.execute()

    def impression(self, imp_id: str) -> dict[str, Any] | None:
        """The impression's fields, or None when unknown or expired."""
        raw = self.r.hgetall(imp_key(imp_id))
        if not raw:
            return None
        d = {text(k): text(v) for k, v in raw.items()}
        d["shown"] = json.loads(d["shown"])
        d["arms"] = json.loads(d["arms"])
        d["record"] = json.loads(d["record"])
        d["closed"] = d.get("closed") == "1"
        d["duel"] = d.get("duel") == "1"
        d["expires"] = int(d["expires"])
        return d

    def clicked_positions(self, imp_id: str) -> list[int]:
        return sorted(int(x) for x in self.r.smembers(clicks_key(imp_id)))

    def add_clicks(self, imp_id: str, exp_id: str, positions: list[int], *,
                   inactivity_s: float, ttl_s: int) -> int:
        """Record clicked positions (a set: repeats count once) unless the impression is
        closed; push back its inactivity deadline. Returns how many positions were new.
        Atomic (Lua), so a click can never slip in after the impression was credited."""
        now = self.clock()
        out = self._click_script(
            keys=[imp_key(imp_id), clicks_key(imp_id), pending_key(exp_id)],
            args=[now + inactivity_s, imp_id, ttl_s, *positions],
        )
        if out == -1:
            raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
        if out == -2:
            raise ImpressionClosed(f"impression {imp_id!r} is closed; clicks are no longer "
                                   "accepted")
        return int(out)

    def end_impression(self, imp_id: str, exp_id: str, *, drain_ttl_s: float) -> tuple[bool, bool]:
        """Close the impression to new clicks and make it due now.

        Returns ``(closed now, drain needed)``: the second is True when this call took the
        experiment's drain flag, i.e. the caller must queue a drain task (no drain is
        queued or running for the experiment).
        """
        out = self._end_script(
            keys=[imp_key(imp_id), pending_key(exp_id), drain_key(exp_id)],
            args=[self.clock(), imp_id, max(1, int(drain_ttl_s))])
        if out == -1:
            raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
        return out >= 1, out == 2

    # ------------------------------------------------------------------ ranker health
    def ranker_failed(self, exp_id: str, arm: int, *, threshold: int,
                      quarantine_s: float) -> tuple[int, bool]:
        """Count a failure of ``arm``; returns ``(consecutive failures, quarantined now)``:
        the second is True when this failure opened (or, after a failed probe, re-opened)
        its quarantine for ``quarantine_s``."""
        n, opened = self._fail_script(keys=[health_key(exp_id)],
                                      args=[int(arm), self.clock(), threshold, quarantine_s])
        return int(n), bool(opened)

    def ranker_recovered(self, exp_id: str, arm: int) -> bool:
        """Forget the failures of ``arm``; True if it was quarantined."""
        pipe = self.r.pipeline(transaction=True)
        pipe.hexists(health_key(exp_id), f"q:{int(arm)}")
        pipe.hdel(health_key(exp_id), f"f:{int(arm)}", f"q:{int(arm)}")
        was_quarantined, _ = pipe.execute()
        return bool(was_quarantined)

    def take_probe(self, exp_id: str, arm: int, ttl_s: float) -> bool:
        """Take the right to call a quarantined ranker once (one request per ``ttl_s``)."""
        return bool(self.r.set(probe_key(exp_id, arm), 1, nx=True,
                               px=max(1, int(ttl_s * 1000))))

    # ------------------------------------------------------------------ crediting
    def due(self, exp_id: str, limit: int) -> list[str]:
        """Impressions of ``exp_id`` whose credit is due (closed, or idle too long)."""
        ids = self.r.zrangebyscore(pending_key(exp_id), "-inf", self.clock(), start=0,
                                   num=limit)
        return [text(i) for i in ids]

    def pending_count(self, exp_id: str) -> int:
        """Impressions of ``exp_id`` not yet credited (open, closed or idle)."""
        return int(self.r.zcard(pending_key(exp_id)))

    def take_drain(self, exp_id: str, ttl_s: float) -> bool:
        """Take the experiment's drain flag (SET NX with TTL); True if we got it."""
        return bool(self.r.set(drain_key(exp_id), 1, nx=True, ex=max(1, int(ttl_s))))

    def refresh_drain(self, exp_id: str, ttl_s: float) -> None:
        self.r.expire(drain_key(exp_id), max(1, int(ttl_s)))

    def release_drain(self, exp_id: str) -> None:
        self.r.delete(drain_key(exp_id))

    def experiments_with_due(self) -> list[str]:
        """Experiments that have at least one impression due (the sweep's scan)."""
        now = self.clock()
        ids = self.list_ids()
        pipe = self.r.pipeline(transaction=False)
        for e in ids:
            pipe.zrangebyscore(pending_key(e), "-inf", now, start=0, num=1)
        return [e for e, due in zip(ids, pipe.execute(), strict=True) if due]

    def experiment_of(self, imp_id: str) -> str | None:
        return text(self.r.hget(imp_key(imp_id), "exp"))

    def credit_watch(self, exp_id: str, imp_ids: Sequence[str]) -> list[str]:
        """The keys a credit transaction over ``imp_ids`` depends on."""
        keys = [exp_key(exp_id)]
        for i in imp_ids:
            keys += [imp_key(i), clicks_key(i)]
        return keys

    def read_credit(self, exp_id: str, imp_ids: Sequence[str]) -> CreditInputs:
        """Read the snapshot, the selection count and every impression with its clicks in
        one round trip."""
        reader = self.r.pipeline(transaction=False)
        reader.hmget(exp_key(exp_id), SNAPSHOT_FIELDS)
        reader.get(t_key(exp_id))
        for i in imp_ids:
            reader.hgetall(imp_key(i))
            reader.smembers(clicks_key(i))
        values = reader.execute()
        snap = parse_snapshot(exp_id, values[0])
        rest = values[2:]
        impressions = [_impression(i, exp_id, rest[2 * n], rest[2 * n + 1])
                       for n, i in enumerate(imp_ids)]
        return CreditInputs(snap, list(imp_ids), impressions, int(values[1] or 0))

    def write_credit(self, pipe: redis.client.Pipeline, inputs: CreditInputs,
                     result: credit_step.Credit) -> None:
        """Queue what :func:`service.credit.apply` decided for ``inputs``: the new policy
        state, each impression's ``credited`` mark, its removal from the pending set,
        counters and audit events."""
        exp_id = inputs.snapshot.exp_id
        if result.changed:
            self.write_state(pipe, exp_id, inputs.snapshot.bandit)
            now = self.clock()
            self.add_audit(exp_id, *(audit_entry(now, **e) for e in result.audit), pipe=pipe)
        for i, res in result.results.items():
            if res["status"] not in ("missing", "already"):
                pipe.hset(imp_key(i), mapping={"closed": 1, "credited": json.dumps(res)})
        pipe.zrem(pending_key(exp_id), *inputs.ids)
        for name, n in result.counters.items():
            pipe.hincrby(counters_key(exp_id), name, n)

    def count_conflict(self, exp_id: str) -> None:
        self.r.hincrby(counters_key(exp_id), "credit_conflicts", 1)


def _pairs(flat: list[Any]) -> dict[Any, Any]:
    """A Lua HGETALL reply (flat list) as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def parse_health(raw: dict[Any, Any]) -> dict[int, dict[str, Any]]:
    """``{arm: {"failures": n, "quarantined_until": ts | None}}`` from the health hash."""
    out: dict[int, dict[str, Any]] = {}
    for key, value in raw.items():
        kind, _, arm = text(key).partition(":")
        slot = out.setdefault(int(arm), {"failures": 0, "quarantined_until": None})
        if kind == "f":
            slot["failures"] = int(value)
        else:
            slot["quarantined_until"] = float(value)
    return out


def _impression(imp_id: str, exp_id: str, raw: dict[bytes, bytes],
                clicks: set[bytes]) -> credit_step.Impression | None:
    imp = {text(k): v for k, v in raw.items()}
    if not imp or text(imp.get("exp")) != exp_id:
        return None
    try:
        record = json.loads(imp["record"])
        arms = json.loads(imp["arms"])
        forfeits = [tuple(f) for f in json.loads(imp.get("forfeits") or b"[]")]
    except (ValueError, KeyError):
        record, arms, forfeits = None, [], []  # the credit step reports it as an error
    return credit_step.Impression(
        id=imp_id,
        arms=arms,
        duel=text(imp.get("duel")) == "1",
        record=record,
        clicks=sorted(int(x) for x in clicks),
        forfeits=forfeits,
        created=float(imp.get("created") or 0.0),
        credited=bool(imp.get("credited")),
    )


# KEYS: imp, clicks, pending; ARGV: due, imp_id, ttl, positions...
_CLICK_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'closed') == '1' then return -2 end
local added = 0
for i = 4, #ARGV do added = added + redis.call('SADD', KEYS[2], ARGV[i]) end
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], 'XX', ARGV[1], ARGV[2])
return added
"""

# KEYS: imp, pending, drain flag; ARGV: now, imp_id, flag ttl
# returns -1 unknown, 0 already closed, 1 closed, 2 closed and the drain flag taken
_END_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'closed') == '1' then return 0 end
redis.call('HSET', KEYS[1], 'closed', '1')
redis.call('ZADD', KEYS[2], 'XX', ARGV[1], ARGV[2])
if redis.call('SET', KEYS[3], '1', 'NX', 'EX', ARGV[3]) then return 2 end
return 1
"""

# KEYS: exp, t, health -> {t, version, health as a flat list}
_SELECT_LUA = """
local v = redis.call('HGET', KEYS[1], 'version')
if not v then return nil end
return {redis.call('INCR', KEYS[2]), tonumber(v), redis.call('HGETALL', KEYS[3])}
"""

# KEYS: health; ARGV: arm, now, threshold, quarantine seconds -> {failures, opened}
_FAIL_LUA = """
local n = redis.call('HINCRBY', KEYS[1], 'f:' .. ARGV[1], 1)
local q = tonumber(redis.call('HGET', KEYS[1], 'q:' .. ARGV[1]) or '0')
local now = tonumber(ARGV[2])
if n >= tonumber(ARGV[3]) and q <= now then
  redis.call('HSET', KEYS[1], 'q:' .. ARGV[1], tostring(now + tonumber(ARGV[4])))
  return {n, 1}
end
return {n, 0}
"""
