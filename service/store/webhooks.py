"""Webhooks in Redis: the hooks, each experiment's outbox of events and each hook's
delivery state over it, the due index, the delivery log. Keys in
:mod:`service.store.keys`; the rules (what is recorded, when, how it is delivered) are
:mod:`service.webhooks`'. Storage only stores: plain values in, plain values out.

* a hook is one hash, ``rd:{wh-<h>}`` (its definition as JSON, its secret, its failures
  in a row and its backoff, whether it is disabled), listed in ``rd:webhooks``; its
  delivery attempts
  are a capped list beside it;
* an experiment's events are a stream, ``rd:{e}:outbox`` (hash-tagged with the
  experiment), appended with the audit entry of their cause by one script
  (``outbox.lua``), or queued in the caller's MULTI (:meth:`WebhookStore.queue_event`);
  the stream id is the delivery cursor;
* each hook's cursor over an experiment's events, its attempts at the next one and when
  it is next due are fields of ``rd:{e}:hooks``, written by the one task holding the
  hook's lease for that experiment (``rd:{e}:hooks:lease:<h>``);
* ``rd:webhooks:due`` scores each experiment by when a delivery may be due: marked
  after an event is appended (so that a deliverer that read the outbox before the append
  sees the mark move and keeps the experiment), lowered to a hook's next attempt, and
  removed only when unchanged since the deliverer read it.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import redis

from service.store.base import AUDIT_MAX, StorePart
from service.store.keys import (
    WEBHOOKS,
    WEBHOOKS_DUE,
    WEBHOOKS_FULL,
    audit_key,
    exp_key,
    hook_lease_key,
    hooks_state_key,
    outbox_key,
    webhook_deliveries_key,
    webhook_key,
)
from service.store.snapshot import text

#: events an experiment's outbox keeps (about; older ones are trimmed on append)
OUTBOX_MAXLEN = 10_000
#: delivery attempts a hook's log keeps
DELIVERIES_KEPT = 1000


def _fields(raw: dict[Any, Any]) -> dict[str, str]:
    return {text(k): text(v) for k, v in raw.items()}


class WebhookStore(StorePart):
    """Webhooks, outboxes and their delivery state."""

    SCRIPTS: ClassVar[dict[str, str]] = {"_outbox_script": "outbox"}

    # ------------------------------------------------------------------ the hooks
    def create_webhook(self, hook_id: str, definition: dict[str, Any], secret: str) -> None:
        self.r.hset(webhook_key(hook_id), mapping={
            "def": json.dumps(definition), "secret": secret, "fails": 0, "disabled": 0})
        self.r.zadd(WEBHOOKS, {hook_id: definition["created_at"]})

    def webhook_ids(self) -> list[str]:
        return [text(x) for x in self.r.zrange(WEBHOOKS, 0, -1)]

    def webhook(self, hook_id: str) -> dict[str, Any] | None:
        """A hook's definition and state, without its secret; None when unknown."""
        raw = self.r.hmget(webhook_key(hook_id), ["def", "fails", "disabled",
                                                  "disabled_reason", "disabled_at",
                                                  "retry_at"])
        if raw[0] is None:
            return None
        out = json.loads(raw[0])
        out.update(id=hook_id, fails=int(raw[1] or 0), disabled=raw[2] == b"1",
                   disabled_reason=text(raw[3]),
                   disabled_at=float(raw[4]) if raw[4] else None,
                   retry_at=float(raw[5]) if raw[5] else 0.0)
        return out

    def webhook_secret(self, hook_id: str) -> str | None:
        """The secret that signs a hook's deliveries (for the signature only)."""
        return text(self.r.hget(webhook_key(hook_id), "secret"))

    def delete_webhook(self, hook_id: str) -> bool:
        self.r.zrem(WEBHOOKS, hook_id)
        return bool(self.r.delete(webhook_key(hook_id), webhook_deliveries_key(hook_id)))

    def webhook_failed(self, hook_id: str) -> int:
        """Count one more failure in a row; the count."""
        return int(self.r.hincrby(webhook_key(hook_id), "fails", 1))

    def webhook_retry_at(self, hook_id: str, at: float) -> None:
        """Nothing is sent to the hook before ``at`` (its backoff)."""
        self.r.hset(webhook_key(hook_id), "retry_at", repr(at))

    def webhook_succeeded(self, hook_id: str) -> None:
        self.r.hset(webhook_key(hook_id), mapping={"fails": 0, "retry_at": 0})

    def disable_webhook(self, hook_id: str, reason: str, ts: float) -> bool:
        """Disable a hook (True) unless it is disabled already, or gone (False)."""
        key = webhook_key(hook_id)
        with self.r.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(key)
                if pipe.hget(key, "disabled") != b"0":
                    return False
                pipe.multi()
                pipe.hset(key, mapping={"disabled": 1, "disabled_reason": reason,
                                        "disabled_at": ts})
                pipe.execute()
            except redis.WatchError:
                return False
        return True

    def add_delivery(self, hook_id: str, entry: dict[str, Any]) -> None:
        """Log one delivery attempt (newest first, the last :data:`DELIVERIES_KEPT`)."""
        key = webhook_deliveries_key(hook_id)
        pipe = self.r.pipeline(transaction=True)
        pipe.lpush(key, json.dumps(entry))
        pipe.ltrim(key, 0, DELIVERIES_KEPT - 1)
        pipe.execute()

    def deliveries(self, hook_id: str, count: int = DELIVERIES_KEPT) -> list[dict[str, Any]]:
        return [json.loads(x) for x in
                self.r.lrange(webhook_deliveries_key(hook_id), 0, count - 1)]

    # ------------------------------------------------------------------ the outbox
    def record_event(self, exp_id: str, event_id: str, kind: str, payload: str, *,
                     audit: str = "", once: tuple[str, str] | None = None) -> str | None:
        """Append an event (and ``audit``, an audit entry, in the same script) to the
        experiment's outbox; with ``once`` (a field of the hooks state and a value), only
        if the field does not hold that value already. The stream id, or None when
        nothing was appended (no such experiment, or told already)."""
        field, value = once or ("", "")
        out = self._outbox_script(
            keys=[exp_key(exp_id), audit_key(exp_id), outbox_key(exp_id),
                  hooks_state_key(exp_id)],
            args=[AUDIT_MAX, OUTBOX_MAXLEN, audit, event_id, kind, payload, field, value])
        return text(out) if out else None

    def queue_event(self, pipe, exp_id: str, event_id: str, kind: str, payload: str) -> None:
        """Queue the append of an event in ``pipe``, a transaction on the experiment (the
        event commits with its cause, or neither does)."""
        pipe.xadd(outbox_key(exp_id), {"id": event_id, "type": kind, "payload": payload},
                  maxlen=OUTBOX_MAXLEN, approximate=True)

    def outbox(self, exp_id: str, after: str, count: int) -> list[tuple[str, dict[str, str]]]:
        """Up to ``count`` events after stream id ``after`` (``0``: from the start), in
        order: ``(stream id, {id, type, payload})``."""
        start = "-" if after == "0" else f"({after}"
        return [(text(i), _fields(f)) for i, f in
                self.r.xrange(outbox_key(exp_id), min=start, max="+", count=int(count))]

    def outbox_last(self, exp_id: str) -> str | None:
        """The stream id of the experiment's newest event (None: none)."""
        rows = self.r.xrevrange(outbox_key(exp_id), count=1)
        return text(rows[0][0]) if rows else None

    # ------------------------------------------------------------------ delivery state
    def hook_states(self, exp_id: str) -> dict[str, str]:
        """The experiment's hooks state hash (fields ``c:<h>``, ``a:<h>``, ...)."""
        return _fields(self.r.hgetall(hooks_state_key(exp_id)))

    def hook_done(self, exp_id: str, hook_id: str, cursor: str) -> None:
        """Webhook ``hook_id`` is done with the events up to ``cursor`` (delivered,
        skipped or dropped): its cursor moves, its retry state is cleared."""
        key = hooks_state_key(exp_id)
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(key, f"c:{hook_id}", cursor)
        pipe.hdel(key, f"a:{hook_id}", f"f:{hook_id}", f"n:{hook_id}")
        pipe.execute()

    def hook_retry(self, exp_id: str, hook_id: str, *, attempts: int, first: float,
                   next_at: float) -> None:
        """Webhook ``hook_id`` failed its next event ``attempts`` times, the first at
        ``first``; it is tried again at ``next_at``."""
        self.r.hset(hooks_state_key(exp_id), mapping={
            f"a:{hook_id}": attempts, f"f:{hook_id}": repr(first),
            f"n:{hook_id}": repr(next_at)})

    def hook_lease(self, exp_id: str, hook_id: str, seconds: float):
        """The lease of delivering ``exp_id``'s events to ``hook_id`` (a redis-py
        ``Lock``: ``extend``, ``release``), or None when another task holds it."""
        lock = self.r.lock(hook_lease_key(exp_id, hook_id), timeout=seconds,
                           blocking=False)
        return lock if lock.acquire() else None

    # ------------------------------------------------------------------ the due index
    def mark_hooks_due(self, exp_id: str, at: float) -> None:
        """The experiment may have a delivery due at ``at`` (kept if due earlier)."""
        self.r.zadd(WEBHOOKS_DUE, {exp_id: at}, lt=True)

    def push_hooks_due(self, exp_id: str, at: float) -> None:
        """A delivery task was queued: the experiment is not due again before ``at``
        (unless an event marks it earlier), and is if that task never runs."""
        self.r.zadd(WEBHOOKS_DUE, {exp_id: at}, xx=True, gt=True)

    def hooks_due(self, now: float, limit: int = 1000) -> list[tuple[str, float]]:
        """Experiments with a delivery due by ``now``, with their mark."""
        return [(text(m), float(s)) for m, s in self.r.zrangebyscore(
            WEBHOOKS_DUE, "-inf", now, start=0, num=limit, withscores=True)]

    def hooks_mark(self, exp_id: str) -> float | None:
        score = self.r.zscore(WEBHOOKS_DUE, exp_id)
        return None if score is None else float(score)

    def settle_hooks_due(self, exp_id: str, seen: float | None, next_at: float | None) -> None:
        """After a delivery pass that read the mark ``seen``: the experiment's next due
        time is ``next_at`` (None: nothing pending), unless it was marked since."""
        with self.r.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(WEBHOOKS_DUE)
                score = pipe.zscore(WEBHOOKS_DUE, exp_id)
                if score is not None and (seen is None or float(score) != seen):
                    return  # marked by a new event meanwhile: it stays due
                pipe.multi()
                if next_at is None:
                    pipe.zrem(WEBHOOKS_DUE, exp_id)
                else:
                    pipe.zadd(WEBHOOKS_DUE, {exp_id: next_at})
                pipe.execute()
            except redis.WatchError:
                return

    def take_hooks_full(self, every_s: float) -> bool:
        """Whether this sweep checks every experiment's outbox: True once per
        ``every_s`` across all workers (a key with that TTL)."""
        return bool(self.r.set(WEBHOOKS_FULL, 1, nx=True, px=max(1, int(every_s * 1000))))

    def outbox_heads(self, exp_ids: list[str]) -> dict[str, tuple[str | None, dict[str, str]]]:
        """Each experiment's newest event id (None: none) and its hooks state, in one
        pipelined round trip."""
        pipe = self.r.pipeline(transaction=False)
        for exp_id in exp_ids:
            pipe.xrevrange(outbox_key(exp_id), count=1)
            pipe.hgetall(hooks_state_key(exp_id))
        raw = pipe.execute()
        return {e: (text(raw[2 * i][0][0]) if raw[2 * i] else None, _fields(raw[2 * i + 1]))
                for i, e in enumerate(exp_ids)}

    def server_time(self) -> float:
        """Redis's clock (the outbox's stream ids are its milliseconds); on a cluster the
        earliest of its nodes' (a hook then starts no later than any outbox's clock)."""
        out = self.r.time()
        stamps = list(out.values()) if isinstance(out, dict) else [out]
        return min(int(s) + int(us) / 1e6 for s, us in stamps)

    def experiment_name(self, exp_id: str) -> str | None:
        """An experiment's name (for the words of its events); None when it is gone."""
        raw = self.r.hget(exp_key(exp_id), "meta")
        return json.loads(raw).get("name") if raw else None
