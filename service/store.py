"""Experiment state in Redis, and the transactions that change it.

Key layout (``rd:`` prefix; ``{e}`` an experiment id, ``{i}`` an impression id)::

    rd:experiments          ZSET  experiment ids by creation time
    rd:exp:{e}              HASH  meta (JSON: name, algorithm, params, interleaving, seed),
                                  lifecycle, rankers (JSON list by arm index),
                                  W (float64 bytes, row-major), state (the rest of the
                                  bandit's state_dict, JSON), version
    rd:exp:{e}:t            STR   selection counter, INCR'd by every /search
    rd:exp:{e}:counters     HASH  impressions, duels, decisive, ties, no_clicks, ...
    rd:exp:{e}:audit        LIST  operator actions, eliminations and stage changes (JSON)
    rd:exp:{e}:shown        HASH  per arm: n:{arm} impressions that showed it, share:{arm}
                                  the same weighted 1/(rankers in the impression)
    rd:imp:{i}              HASH  exp, arms, record, shown, duel, closed, credited, ... (TTL)
    rd:imp:{i}:clicks       SET   clicked positions (0-based)                          (TTL)
    rd:exp:{e}:pending      ZSET  impressions not yet credited, by the time they are due
    rd:exp:{e}:draining     STR   flag (with TTL): a drain task is queued or running

Only the transactions below write ``rd:exp:{e}``; each is an optimistic transaction: WATCH
the keys it reads, compute with the pure bandit code, then MULTI/EXEC the new snapshot with
``version`` + 1 and its side effects, retrying on ``WatchError``. Crediting an impression
additionally marks it ``credited`` inside the same EXEC, and a transaction that finds the
mark does nothing. Hence each impression changes ``W`` at most once, and the eliminations
and stage merges computed by the bandit's ``update`` are written exactly once, whatever
the task retries, duplicate deliveries or worker crashes (a crash before EXEC writes
nothing; the impression stays in its experiment's pending set and is credited again
later). Impressions are credited in batches, one transaction per batch, so the snapshot
is decoded and written once per batch rather than once per impression.

The request path (:mod:`service.controller`) only reads the snapshot and INCRs ``t``.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import redis

import bandits
from bandits.base import ACTIVE, ELIMINATED, RETIRED, STATUS_NAMES, DuelingBandit
from service.errors import Conflict, NotFound, Unprocessable

log = logging.getLogger(__name__)

PREFIX = "rd:"
EXPERIMENTS = PREFIX + "experiments"
LIFECYCLES = ("running", "paused", "stopped")
#: action -> (allowed source states, target state)
TRANSITIONS = {
    "pause": (("running",), "paused"),
    "resume": (("paused",), "running"),
    "stop": (("running", "paused"), "stopped"),
}
AUDIT_MAX = 10_000
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


def exp_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}"


def t_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:t"


def counters_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:counters"


def shown_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:shown"


def pending_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:pending"


def drain_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:draining"


def audit_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:audit"


def imp_key(imp_id: str) -> str:
    return f"{PREFIX}imp:{imp_id}"


def clicks_key(imp_id: str) -> str:
    return f"{PREFIX}imp:{imp_id}:clicks"


# ---------------------------------------------------------------------- snapshot codec
def encode_bandit(bandit: DuelingBandit) -> dict[str, bytes | str]:
    """The bandit's ``state_dict`` as two hash fields: ``W`` as raw float64 bytes (compact,
    exact, and a ``frombuffer`` away from an array) and the rest as JSON."""
    state = bandit.state_dict()
    state.pop("W")
    return {"W": np.ascontiguousarray(bandit.W, dtype="<f8").tobytes(), "state": json.dumps(state)}


def decode_bandit(w_bytes: bytes, state_json: bytes | str) -> DuelingBandit:
    """Inverse of :func:`encode_bandit`."""
    state = json.loads(state_json)
    K = int(state["K"])
    state["W"] = np.frombuffer(w_bytes, dtype="<f8").reshape(K, K).copy()
    return bandits.bandit_from_state(state)


def _s(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


@dataclass
class Snapshot:
    """One consistent read of an experiment's hash."""

    exp_id: str
    meta: dict[str, Any]
    lifecycle: str
    rankers: list[dict[str, Any]]
    version: int
    w_bytes: bytes
    state_json: str
    #: counters and selection count, when read with the snapshot (``full=True``)
    counters: dict[str, int] | None = None
    selections: int | None = None
    _bandit: DuelingBandit | None = field(default=None, repr=False)

    @property
    def bandit(self) -> DuelingBandit:
        if self._bandit is None:
            self._bandit = decode_bandit(self.w_bytes, self.state_json)
        return self._bandit

    def ranker(self, name: str) -> dict[str, Any]:
        for r in self.rankers:
            if r["name"] == name:
                return r
        raise NotFound(f"experiment {self.exp_id!r} has no ranker {name!r}")


SNAPSHOT_FIELDS = ("meta", "lifecycle", "rankers", "version", "W", "state")


def parse_snapshot(exp_id: str, values: list[Any]) -> Snapshot:
    meta, lifecycle, rankers, version, w_bytes, state_json = values
    if meta is None:
        raise NotFound(f"no experiment {exp_id!r}")
    return Snapshot(
        exp_id=exp_id,
        meta=json.loads(meta),
        lifecycle=_s(lifecycle),
        rankers=json.loads(rankers),
        version=int(version),
        w_bytes=w_bytes,
        state_json=_s(state_json),
    )


# ---------------------------------------------------------------------- the store
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

    # ------------------------------------------------------------------ reads
    def snapshot(self, exp_id: str, *, full: bool = False) -> Snapshot:
        """The experiment's snapshot; with ``full``, also its counters and selection
        count, read in the same MULTI so that they agree with ``W`` (a credit commits
        the new ``W`` and its counters together)."""
        if not full:
            return parse_snapshot(exp_id, self.r.hmget(exp_key(exp_id), SNAPSHOT_FIELDS))
        pipe = self.r.pipeline(transaction=True)
        pipe.hmget(exp_key(exp_id), SNAPSHOT_FIELDS)
        pipe.hgetall(counters_key(exp_id))
        pipe.get(t_key(exp_id))
        values, counters, t = pipe.execute()
        snap = parse_snapshot(exp_id, values)
        snap.counters = {_s(k): int(v) for k, v in counters.items()}
        snap.selections = int(t or 0)
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
        values, counters, t, shown = pipe.execute()
        snap = parse_snapshot(exp_id, values[:-1])
        snap.counters = {_s(k): int(v) for k, v in counters.items()}
        snap.selections = int(t or 0)
        per_arm: dict[int, list[float]] = {}
        for key, value in shown.items():
            kind, _, arm = _s(key).partition(":")
            slot = per_arm.setdefault(int(arm), [0, 0.0])
            slot[0 if kind == "n" else 1] = float(value)
        arms = {a: (int(n), share) for a, (n, share) in per_arm.items()}
        truth = json.loads(values[-1]) if values[-1] else None
        return snap, arms, truth

    def exists(self, exp_id: str) -> bool:
        return bool(self.r.exists(exp_key(exp_id)))

    def list_ids(self) -> list[str]:
        return [_s(x) for x in self.r.zrange(EXPERIMENTS, 0, -1)]

    def counters(self, exp_id: str) -> dict[str, int]:
        raw = self.r.hgetall(counters_key(exp_id))
        return {_s(k): int(v) for k, v in raw.items()}

    def audit(self, exp_id: str, start: int = 0, stop: int = -1) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.r.lrange(audit_key(exp_id), start, stop)]

    def next_t(self, exp_id: str) -> tuple[int, int]:
        """INCR the selection counter; return ``(t, version)``. One round trip.

        Raises :class:`NotFound` (and creates nothing) for an unknown experiment.
        """
        out = self._select_script(keys=[exp_key(exp_id), t_key(exp_id)])
        if out is None:
            raise NotFound(f"no experiment {exp_id!r}")
        return int(out[0]), int(out[1])

    # ------------------------------------------------------------------ create
    def create_experiment(
        self,
        *,
        name: str,
        algorithm: str,
        params: dict[str, Any],
        interleaving: str,
        rankers: list[dict[str, Any]],
        seed: int | None = None,
        actor: str = "operator",
        truth: dict[str, Any] | None = None,
    ) -> str:
        """Create an experiment (inputs already validated by the caller); return its id.

        ``truth`` (optional, simulations and the demo): ``{"preferences": K×K list,
        "best": arm or None}``, kept in its own hash field (off the request path) for the
        true-regret metric."""
        if seed is None:
            seed = secrets.randbits(63)
        try:
            bandit = bandits.make_bandit(algorithm, len(rankers), seed=seed, **params)
        except (TypeError, ValueError) as exc:
            raise Unprocessable(f"invalid params for {algorithm}: {exc}") from None
        exp_id = secrets.token_hex(6)
        now = self.clock()
        meta = {
            "id": exp_id,
            "name": name,
            "algorithm": algorithm,
            "params": params,
            "interleaving": interleaving,
            "seed": seed,
            "created_at": now,
        }
        table = [
            {**r, "arm": a, "status": "active", "added_at": now, "retired_at": None}
            for a, r in enumerate(rankers)
        ]
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(
            exp_key(exp_id),
            mapping={
                "meta": json.dumps(meta),
                "lifecycle": "running",
                "rankers": json.dumps(table),
                "version": 1,
                **encode_bandit(bandit),
                **({"truth": json.dumps(truth)} if truth else {}),
            },
        )
        pipe.zadd(EXPERIMENTS, {exp_id: now})
        pipe.rpush(audit_key(exp_id), _audit(
            now, "created", actor=actor, name=name, algorithm=algorithm,
            rankers=[r["name"] for r in rankers]))
        pipe.execute()
        return exp_id

    # ------------------------------------------------------------------ transactions
    def _transact(self, exp_id: str, fn: Callable[[redis.client.Pipeline, Snapshot], Any],
                  extra_watch: Iterable[str] = ()) -> Any:
        """Run ``fn(pipe, snapshot)`` under WATCH of the experiment (and ``extra_watch``),
        retrying on conflict. ``fn`` reads in immediate mode, calls ``pipe.multi()`` and
        queues its writes; its return value is returned after a successful EXEC."""
        key = exp_key(exp_id)
        with self.r.pipeline(transaction=True) as pipe:
            for _attempt in range(1000):
                try:
                    pipe.watch(key, *extra_watch)
                    snap = parse_snapshot(exp_id, pipe.hmget(key, SNAPSHOT_FIELDS))
                    result = fn(pipe, snap)
                    if pipe.explicit_transaction:
                        pipe.execute()
                    else:
                        pipe.unwatch()
                    return result
                except redis.WatchError:
                    continue
            raise RuntimeError(f"experiment {exp_id}: too much contention")

    def add_ranker(self, exp_id: str, ranker: dict[str, Any], actor: str = "operator") -> dict:
        """Add a ranker mid-run: a new arm with zero counts (the bandit places it)."""

        def fn(pipe, snap: Snapshot) -> dict:
            if snap.lifecycle == "stopped":
                raise Conflict(f"experiment {exp_id!r} is stopped")
            if any(r["name"] == ranker["name"] for r in snap.rankers):
                raise Conflict(f"experiment {exp_id!r} already has a ranker {ranker['name']!r}")
            bandit = snap.bandit
            arm = bandit.add_arm()
            now = self.clock()
            entry = {**ranker, "arm": arm, "status": "active", "added_at": now, "retired_at": None}
            pipe.multi()
            self._write_state(pipe, exp_id, bandit, rankers=[*snap.rankers, entry])
            pipe.rpush(audit_key(exp_id), _audit(now, "ranker_added", actor=actor,
                                                  ranker=ranker["name"], arm=arm))
            return entry

        return self._transact(exp_id, fn)

    def retire_ranker(self, exp_id: str, name: str, actor: str = "operator") -> dict:
        """Retire a ranker for good: never chosen again, its counts stay in ``W``."""

        def fn(pipe, snap: Snapshot) -> dict:
            entry = dict(snap.ranker(name))
            if entry["status"] == "retired":
                raise Conflict(f"ranker {name!r} is already retired")
            bandit = snap.bandit
            if bandit.active_arms() == [entry["arm"]]:
                raise Conflict(f"cannot retire {name!r}: it is the last active ranker")
            bandit.retire_arm(entry["arm"])
            now = self.clock()
            entry.update(status="retired", retired_at=now)
            table = [entry if r["name"] == name else r for r in snap.rankers]
            pipe.multi()
            self._write_state(pipe, exp_id, bandit, rankers=table)
            pipe.rpush(audit_key(exp_id), _audit(now, "ranker_retired", actor=actor,
                                                  ranker=name, arm=entry["arm"]))
            return entry

        return self._transact(exp_id, fn)

    def set_lifecycle(self, exp_id: str, action: str, actor: str = "operator") -> str:
        """``pause`` / ``resume`` / ``stop``; 409 for a transition the lifecycle forbids."""
        sources, target = TRANSITIONS[action]

        def fn(pipe, snap: Snapshot) -> str:
            if snap.lifecycle not in sources:
                raise Conflict(f"cannot {action} experiment {exp_id!r}: it is {snap.lifecycle}")
            pipe.multi()
            pipe.hset(exp_key(exp_id), "lifecycle", target)
            pipe.hincrby(exp_key(exp_id), "version", 1)
            pipe.rpush(audit_key(exp_id), _audit(self.clock(), action, actor=actor,
                                                  **{"from": snap.lifecycle, "to": target}))
            return target

        return self._transact(exp_id, fn)

    def rename(self, exp_id: str, name: str, actor: str = "operator") -> None:
        def fn(pipe, snap: Snapshot) -> None:
            meta = {**snap.meta, "name": name}
            pipe.multi()
            pipe.hset(exp_key(exp_id), "meta", json.dumps(meta))
            pipe.rpush(audit_key(exp_id), _audit(self.clock(), "renamed", actor=actor,
                                                  **{"from": snap.meta["name"], "to": name}))

        self._transact(exp_id, fn)

    def _write_state(self, pipe, exp_id: str, bandit: DuelingBandit,
                     rankers: list[dict] | None = None) -> None:
        mapping: dict[str, Any] = dict(encode_bandit(bandit))
        if rankers is not None:
            mapping["rankers"] = json.dumps(rankers)
        pipe.hset(exp_key(exp_id), mapping=mapping)
        pipe.hincrby(exp_key(exp_id), "version", 1)
        pipe.ltrim(audit_key(exp_id), -AUDIT_MAX, -1)

    # ------------------------------------------------------------------ impressions
    def save_impression(
        self,
        imp_id: str,
        *,
        exp_id: str,
        arms: list[int],
        shown: list[str],
        record: Any,
        duel: bool,
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
            "arms": json.dumps(arms),
            "shown": json.dumps(shown),
            "record": json.dumps(record),
            "duel": int(duel),
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
        d = {_s(k): _s(v) for k, v in raw.items()}
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
            raise NotFound(f"no impression {imp_id!r} (unknown or expired)")
        if out == -2:
            raise Conflict(f"impression {imp_id!r} is closed; clicks are no longer accepted")
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
            raise NotFound(f"no impression {imp_id!r} (unknown or expired)")
        return out >= 1, out == 2

    # ------------------------------------------------------------------ crediting
    def due(self, exp_id: str, limit: int) -> list[str]:
        """Impressions of ``exp_id`` whose credit is due (closed, or idle too long)."""
        ids = self.r.zrangebyscore(pending_key(exp_id), "-inf", self.clock(), start=0,
                                   num=limit)
        return [_s(i) for i in ids]

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

    def credit_impression(self, imp_id: str, credit_fn: CreditFn, *,
                          delay_s: float = 0.0) -> dict[str, Any]:
        """Credit one impression (see :meth:`credit_batch`); its summary."""
        exp = self.r.hget(imp_key(imp_id), "exp")
        if exp is None:
            return {"status": "missing"}
        return self.credit_batch(_s(exp), [imp_id], credit_fn, delay_s=delay_s)[imp_id]

    def credit_batch(self, exp_id: str, imp_ids: list[str], credit_fn: CreditFn, *,
                     delay_s: float = 0.0) -> dict[str, dict[str, Any]]:
        """Close impressions of ``exp_id`` and apply their outcomes to ``W``, exactly once.

        ``credit_fn(record, clicked_positions)`` returns pairwise outcomes over an
        impression's participants (``interleaving.credit``). One optimistic transaction
        for the whole batch: WATCH the experiment and every impression and click set,
        read them all (one round trip on a second connection), decode the bandit once,
        apply the outcomes in order, then MULTI: the new snapshot, ``version`` + 1, each
        impression's ``credited`` mark, its removal from the pending set, counters and
        audit entries; EXEC. A conflict retries the whole batch.

        Returns per impression a summary ``{"status": ...}``: ``credited`` (W changed),
        ``no_clicks``, ``no_duel``, ``stale`` (its rankers were retired meanwhile),
        ``already`` (credited before) or ``missing`` (unknown or expired).
        """
        ekey, pkey = exp_key(exp_id), pending_key(exp_id)
        watch = [ekey]
        for i in imp_ids:
            watch += [imp_key(i), clicks_key(i)]
        with self.r.pipeline(transaction=True) as pipe:
            for _attempt in range(1000):
                try:
                    pipe.watch(*watch)
                    reader = self.r.pipeline(transaction=False)
                    reader.hmget(ekey, SNAPSHOT_FIELDS)
                    for i in imp_ids:
                        reader.hgetall(imp_key(i))
                        reader.smembers(clicks_key(i))
                    values = reader.execute()
                    plan = self._plan_credit(exp_id, imp_ids, values, credit_fn)
                    if delay_s:  # fault-injection knob (tests): a slow transaction
                        time.sleep(delay_s * len(imp_ids))
                    pipe.multi()
                    if plan.bandit is not None:
                        self._write_state(pipe, exp_id, plan.bandit)
                        if plan.audit:
                            pipe.rpush(audit_key(exp_id), *plan.audit)
                    for i, result in plan.results.items():
                        if result["status"] not in ("missing", "already"):
                            pipe.hset(imp_key(i), mapping={
                                "closed": 1, "credited": json.dumps(result)})
                    pipe.zrem(pkey, *imp_ids)
                    for name, n in plan.counters.items():
                        pipe.hincrby(counters_key(exp_id), name, n)
                    pipe.execute()
                    return plan.results
                except redis.WatchError:  # another writer got there first: redo the batch
                    self.r.hincrby(counters_key(exp_id), "credit_conflicts", 1)
                    continue
            raise RuntimeError(f"experiment {exp_id}: too much contention crediting")

    def _plan_credit(self, exp_id: str, imp_ids: list[str], values: list[Any],
                     credit_fn: CreditFn) -> _Plan:
        """Compute (not write) the effect of a batch of impressions."""
        snap_values, rest = values[0], values[1:]
        plan = _Plan()
        snap: Snapshot | None = None
        bandit: DuelingBandit | None = None
        names: dict[int, str] = {}
        for n, imp_id in enumerate(imp_ids):
            raw, clicks = rest[2 * n], rest[2 * n + 1]
            imp = {_s(k): v for k, v in raw.items()}
            if not imp or _s(imp.get("exp")) != exp_id:
                plan.results[imp_id] = {"status": "missing"}
                continue
            if imp.get("credited"):
                plan.results[imp_id] = {"status": "already"}
                continue
            status, outcomes = "no_duel", None
            if _s(imp.get("duel")) == "1":
                try:
                    record = json.loads(imp["record"])
                    outcomes = credit_fn(record, sorted(int(x) for x in clicks))
                except (ValueError, TypeError, KeyError) as exc:
                    # a record this code cannot credit must not block the batch for
                    # ever: close it as an error (counted, logged), credit the rest
                    log.error("impression %s cannot be credited: %s", imp_id, exc)
                    plan.results[imp_id] = {"status": "error", "error": str(exc)[:200]}
                    plan.count("credited")
                    plan.count("credit_errors")
                    continue
                status = "credited" if outcomes else "no_clicks"
            result: dict[str, Any] = {"status": status,
                                      "created": float(imp.get("created") or 0.0)}
            if status == "credited":
                if bandit is None:
                    snap = parse_snapshot(exp_id, snap_values)
                    bandit = snap.bandit
                    names = {r["arm"]: r["name"] for r in snap.rankers}
                arms = json.loads(imp["arms"])
                pairs = [(arms[a], arms[b], float(s)) for a, b, s in outcomes]
                live = [(i, j, s) for i, j, s in pairs
                        if bandit.status[i] != RETIRED and bandit.status[j] != RETIRED]
                if not live:
                    result["status"] = "stale"
                else:
                    plan.audit += _apply(bandit, live, names, self.clock())
                    result["outcomes"] = [[i, j, s] for i, j, s in live]
                    plan.changed = True
                    if any(s == 0.5 for _, _, s in live):
                        plan.count("ties")
            plan.count("credited")
            plan.count({"credited": "decisive", "no_duel": "credited_no_duel"}.get(
                result["status"], result["status"]))
            plan.results[imp_id] = result
        if plan.changed:
            plan.bandit = bandit
        return plan


CreditFn = Callable[[Any, list[int]], list[tuple[int, int, float]]]


@dataclass
class _Plan:
    """What a credit transaction will write."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    audit: list[str] = field(default_factory=list)
    changed: bool = False
    bandit: DuelingBandit | None = None

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n


def _apply(bandit: DuelingBandit, live: list[tuple[int, int, float]], names: dict[int, str],
           now: float) -> list[str]:
    """Apply one impression's outcomes; return audit entries for what it changed
    (eliminations, stage or batch-count changes), computed by the pure policy."""
    before_status = bandit.status.copy()
    before_stage = _stage_of(bandit)
    if bandit.multi:
        bandit.update_many(live)
    else:
        i, j, s = live[0]  # a pairwise method yields one outcome per impression
        bandit.update(i, j, s)
    audit = []
    for arm in np.flatnonzero((before_status == ACTIVE) & (bandit.status == ELIMINATED)):
        info = bandit.eliminated.get(int(arm), {})
        audit.append(_audit(now, "eliminated", actor="bandit", ranker=names.get(int(arm)),
                            by=names.get(info.get("by")), step=info.get("step")))
    after_stage = _stage_of(bandit)
    if after_stage != before_stage:
        audit.append(_audit(now, "stage_changed", actor="bandit",
                            **{"from": before_stage, "to": after_stage}))
    return audit


def _stage_of(bandit: DuelingBandit) -> Any:
    """The policy's stage and number of batches when it has them (MergeDTS/MergeRUCB)."""
    stage = getattr(bandit, "stage", None)
    batches = getattr(bandit, "batches", None)
    if stage is None and batches is None:
        return None
    return {"stage": _plain(stage), "batches": len(batches) if batches is not None else None}


def _plain(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def _audit(ts: float, action: str, *, actor: str, **detail: Any) -> str:
    return json.dumps({"ts": ts, "action": action, "actor": actor, **detail})


def status_name(code: int) -> str:
    return STATUS_NAMES[int(code)]


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

# KEYS: exp, t
_SELECT_LUA = """
local v = redis.call('HGET', KEYS[1], 'version')
if not v then return nil end
return {redis.call('INCR', KEYS[2]), tonumber(v)}
"""
