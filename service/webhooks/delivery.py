"""Delivering an experiment's events to its webhooks (the workers' task,
``rankduel.webhooks_deliver``, calls :func:`run`).

For each enabled webhook that wants the experiment, under that hook's lease for the
experiment (one task at a time per hook and experiment):

1. read the events after the hook's cursor, oldest first;
2. an event of a type the hook does not subscribe to moves the cursor on;
3. any other is POSTed (:func:`post`): signed (:mod:`service.webhooks.signing`), with a
   timeout, redirects not followed, the URL checked against the allow-list again, before
   connecting and against the address connected to;
4. a 2xx moves the cursor past it and resets the hook's failures in a row; anything else
   leaves the cursor where it is (the experiment's later events wait: **in order per
   experiment**), counts one failure of the hook, and backs the hook off
   (``webhook_backoff_s`` doubled at each failure in a row, at most
   ``webhook_backoff_max_s``, with up to 10 % jitter): nothing is sent to it before then,
   for any experiment, so a receiver that is down fails once per backoff however many
   experiments wait for it. An event still failing ``webhook_max_age_s`` after its first
   failure is dropped for that hook (audit ``webhook_event_dropped``); a hook failing
   ``webhook_disable_after`` times in a row is disabled (audit ``webhook_disabled``): at
   the defaults, about 9 hours after its receiver stopped answering.

A task killed mid-delivery leaves the cursor before the event it was sending; the lease
lapses and the next task sends it again with the same ``event_id`` (**at least once**).
Every attempt is logged on the hook (``GET /webhooks/ID/deliveries``) and counted
(``rankduel_webhook_deliveries_total``). The secret signs and goes nowhere else.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import random
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from redis.exceptions import LockError

from service import metrics
from service.config import Config
from service.queue import TaskQueue
from service.rankers.allow_list import RankerPolicy, RankerRefused
from service.store import Store, audit_entry
from service.webhooks import signing
from service.webhooks.payloads import iso

log = logging.getLogger("rankduel.webhooks")

#: events read from the outbox at a time
BATCH = 100
#: events one task delivers per hook before it leaves the rest to the next task
PER_TASK = 1000


@dataclass(frozen=True)
class Settings:
    """What delivery needs of the configuration."""

    timeout_s: float = 5.0
    backoff_s: float = 1.0
    backoff_max_s: float = 3600.0
    max_age_s: float = 86_400.0
    disable_after: int = 20

    @classmethod
    def of(cls, config: Config) -> Settings:
        return cls(config.webhook_timeout_s, config.webhook_backoff_s,
                   config.webhook_backoff_max_s, config.webhook_max_age_s,
                   config.webhook_disable_after)

    @property
    def lease_s(self) -> float:
        """A hook's lease: one attempt (connect and read) with room to spare."""
        return 2 * self.timeout_s + 2


def backoff(attempts: int, base: float, cap: float, jitter: float = 0.0) -> float:
    """Seconds before the next attempt after ``attempts`` failures: ``base``, doubled at
    each failure, at most ``cap``; ``jitter`` (0 to 1) adds up to that share of it.

    >>> [backoff(n, 1.0, 60.0) for n in (1, 2, 3, 7, 8)]
    [1.0, 2.0, 4.0, 60.0, 60.0]
    """
    delay = min(cap, base * 2.0 ** min(attempts - 1, 60))
    return delay * (1 + jitter * random.random())


@dataclass(frozen=True)
class Answer:
    """What one attempt got: the HTTP status (None: no answer) and what went wrong."""

    status: int | None
    error: str | None
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def post(url: str, body: bytes, headers: dict[str, str], *, timeout_s: float,
         policy: RankerPolicy) -> Answer:
    """POST ``body`` to ``url``: the allow-list checked on the URL and on the address
    connected to, ``timeout_s`` on the connection and on each read of the answer's status
    line and headers (its body is not read), no redirect followed (a 3xx is an answer
    that is not a 2xx)."""
    t0 = time.perf_counter()
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        policy.check_url(url)
        kind = (http.client.HTTPSConnection if parts.scheme == "https"
                else http.client.HTTPConnection)
        conn = kind(host, parts.port, timeout=timeout_s)
    except RankerRefused as exc:
        return Answer(None, f"refused by the allow-list: {exc}", time.perf_counter() - t0)
    except ValueError as exc:
        return Answer(None, f"bad URL: {exc}", time.perf_counter() - t0)
    try:
        conn.connect()
        policy.check_connected(host, conn.sock)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request("POST", path, body=body, headers=headers)
        status = conn.getresponse().status  # the body is not read: the status is the answer
        error = None if 200 <= status < 300 else f"HTTP {status}"
        return Answer(status, error, time.perf_counter() - t0)
    except RankerRefused as exc:
        return Answer(None, f"refused by the allow-list: {exc}", time.perf_counter() - t0)
    except (OSError, http.client.HTTPException) as exc:
        return Answer(None, f"{type(exc).__name__}: {exc}"[:300], time.perf_counter() - t0)
    finally:
        conn.close()


def headers_for(secret: str, event_type: str, event_id: str, body: bytes) -> dict[str, str]:
    """The headers of a delivery: the event, its id and the signature."""
    return {"Content-Type": "application/json", "User-Agent": "rankduel-webhooks",
            "X-Rankduel-Event": event_type, "X-Rankduel-Delivery": event_id,
            signing.HEADER: signing.sign(secret, body)}


def run(store: Store, exp_id: str, settings: Settings, policy: RankerPolicy,
        queue: TaskQueue | None = None, sweep_interval_s: float = 5.0) -> int:
    """Deliver what is due of ``exp_id``'s events to every hook (module docstring);
    how many were delivered. When something is due again before the next sweep, a task
    is queued for then (``queue``)."""
    seen = store.webhooks.hooks_mark(exp_id)
    delivered, next_at = 0, None
    for hook_id in store.webhooks.webhook_ids():
        hook = store.webhooks.webhook(hook_id)
        if hook is None or hook["disabled"] or (
                hook.get("experiments") and exp_id not in hook["experiments"]):
            continue
        if hook["retry_at"] > time.time():  # backing off: nothing before then
            n, due = 0, hook["retry_at"]
        else:
            n, due = _deliver_hook(store, exp_id, hook, settings, policy)
        delivered += n
        if due is not None:
            next_at = due if next_at is None else min(next_at, due)
    store.webhooks.settle_hooks_due(exp_id, seen, next_at)
    if queue is not None and next_at is not None:
        wait = next_at - time.time()
        if wait < sweep_interval_s:
            queue.webhooks(exp_id, countdown=max(0.0, wait))
    return delivered


def _deliver_hook(store: Store, exp_id: str, hook: dict[str, Any], s: Settings,
                  policy: RankerPolicy) -> tuple[int, float | None]:
    """Deliver ``exp_id``'s pending events to one hook, in order; (delivered, when it is
    due again or None)."""
    hid = hook["id"]
    state = store.webhooks.hook_states(exp_id)
    retry_at = float(state.get(f"n:{hid}") or 0)
    if retry_at > time.time():
        return 0, retry_at
    lease = store.webhooks.hook_lease(exp_id, hid, s.lease_s)
    if lease is None:  # another task delivers to it now
        return 0, time.time() + s.lease_s
    delivered = 0
    try:
        state = store.webhooks.hook_states(exp_id)  # as the last holder left it
        cursor = state.get(f"c:{hid}") or hook["since"]
        attempts = int(state.get(f"a:{hid}") or 0)
        first = float(state[f"f:{hid}"]) if state.get(f"f:{hid}") else None
        secret = store.webhooks.webhook_secret(hid) or ""
        sent = 0
        while sent < PER_TASK:
            rows = store.webhooks.outbox(exp_id, cursor, BATCH)
            if not rows:
                return delivered, None
            for sid, fields in rows:
                if fields.get("type") not in hook["events"]:
                    store.webhooks.hook_done(exp_id, hid, sid)
                    cursor = sid
                    continue
                lease.extend(s.lease_s, replace_ttl=True)
                sent += 1
                answer = _attempt(store, hook, secret, exp_id, fields, attempts + 1, s, policy)
                if answer.ok:
                    store.webhooks.hook_done(exp_id, hid, sid)
                    store.webhooks.webhook_succeeded(hid)
                    cursor, attempts, first = sid, 0, None
                    delivered += 1
                    continue
                now = time.time()
                attempts, first = attempts + 1, first if first is not None else now
                fails = store.webhooks.webhook_failed(hid)
                next_at = now + backoff(fails, s.backoff_s, s.backoff_max_s, 0.1)
                store.webhooks.webhook_retry_at(hid, next_at)
                if fails >= s.disable_after:
                    _disable(store, hook, exp_id, fails, answer)
                    store.webhooks.hook_retry(exp_id, hid, attempts=attempts, first=first,
                                              next_at=now)
                    return delivered, None
                if now - first >= s.max_age_s:
                    _drop(store, hook, exp_id, fields, attempts, first)
                    store.webhooks.hook_done(exp_id, hid, sid)
                    cursor, attempts, first = sid, 0, None
                    return delivered, next_at
                store.webhooks.hook_retry(
                    exp_id, hid, attempts=attempts, first=first, next_at=next_at)
                return delivered, next_at
        return delivered, time.time()  # more than one task's share: due again now
    except LockError:  # the lease lapsed (a stalled attempt): the next task goes on
        return delivered, time.time()
    finally:
        with contextlib.suppress(LockError):
            lease.release()


def _attempt(store: Store, hook: dict[str, Any], secret: str, exp_id: str,
             fields: dict[str, str], attempt: int, s: Settings,
             policy: RankerPolicy) -> Answer:
    """One POST of one event, logged on the hook and counted."""
    body = fields["payload"].encode()
    answer = post(hook["url"], body, headers_for(secret, fields["type"], fields["id"], body),
                  timeout_s=s.timeout_s, policy=policy)
    result = ("delivered" if answer.ok else
              "refused" if (answer.error or "").startswith("refused") else "failed")
    metrics.WEBHOOK_DELIVERIES.labels(result, str(answer.status or "none")).inc()
    store.webhooks.add_delivery(hook["id"], {
        "event_id": fields["id"], "event": fields["type"], "experiment": exp_id,
        "attempt": attempt, "status": answer.status, "result": result,
        "error": answer.error, "ts": iso(time.time()),
        "duration_ms": round(1000 * answer.duration_s, 1)})
    if not answer.ok:
        log.info("webhook %s: event %s (%s) of experiment %s, attempt %d: %s", hook["id"],
                 fields["id"], fields["type"], exp_id, attempt, answer.error)
    return answer


def _drop(store: Store, hook: dict[str, Any], exp_id: str, fields: dict[str, str],
          attempts: int, first: float) -> None:
    store.experiments.add_audit(exp_id, audit_entry(
        time.time(), "webhook_event_dropped", actor="service", webhook=hook["id"],
        event_id=fields["id"], event=fields["type"], attempts=attempts,
        first_failure=iso(first)))
    metrics.WEBHOOK_DELIVERIES.labels("dropped", "none").inc()
    log.warning("webhook %s: event %s of experiment %s dropped after %d attempts since %s",
                hook["id"], fields["id"], exp_id, attempts, iso(first))


def _disable(store: Store, hook: dict[str, Any], exp_id: str, fails: int,
             answer: Answer) -> None:
    reason = (f"{fails} failed deliveries in a row; the last: "
              f"{answer.error or answer.status}")
    if store.webhooks.disable_webhook(hook["id"], reason, time.time()):
        store.experiments.add_audit(exp_id, audit_entry(time.time(), "webhook_disabled",
                                                        actor="service", webhook=hook["id"],
                                                        reason=reason))
        log.warning("webhook %s disabled: %s", hook["id"], reason)
