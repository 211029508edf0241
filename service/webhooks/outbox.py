"""Recording an event where it happens: into the experiment's outbox (a Redis stream
hash-tagged with the experiment, :mod:`service.store.webhooks`), with its cause.

* :func:`record`: the event and the audit entry of its cause in one script (a guardrail's
  trip, a degraded ranker), or, with ``once``, an event told once whoever detects it (a
  ramp step);
* :func:`queue`: the event queued in the caller's transaction (MULTI), so that it commits
  with its cause or not at all (a pause, a hold's decision that eliminates or
  certifies); the caller calls :func:`mark_due` after the transaction.

Then the experiment is marked due for the workers' sweep and, when the caller has a task
queue, a delivery task is sent at once (:meth:`service.queue.TaskQueue.webhooks`): the
sweep delivers within ``sweep_interval_s`` anyway. Storage never calls up here: the code
that causes an event calls these functions.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from service.queue import TaskQueue
from service.store import Store
from service.webhooks import payloads

log = logging.getLogger("rankduel.webhooks")


def record(store: Store, exp_id: str, kind: str, data: dict[str, Any], *,
           name: str | None = None, audit: str = "", once: tuple[str, str] | None = None,
           queue: TaskQueue | None = None) -> dict[str, Any] | None:
    """Append the event ``kind`` of experiment ``exp_id`` (with ``audit``, the audit
    entry of its cause, in the same script); the payload, or None when nothing was
    appended (the experiment is gone, or ``once`` was told already)."""
    if name is None:
        name = store.webhooks.experiment_name(exp_id)
    event = payloads.make(kind, exp_id, name, data, now=store.clock())
    if store.webhooks.record_event(exp_id, event["event_id"], kind, payloads.body(event),
                                   audit=audit, once=once) is None:
        return None
    mark_due(store, exp_id, queue)
    return event


def queue(store: Store, pipe, exp_id: str, kind: str, data: dict[str, Any], *,
          name: str | None) -> dict[str, Any]:
    """Queue the event ``kind`` in ``pipe`` (a transaction in MULTI on the experiment);
    the caller calls :func:`mark_due` once it has committed."""
    event = payloads.make(kind, exp_id, name, data, now=store.clock())
    store.webhooks.queue_event(pipe, exp_id, event["event_id"], kind, payloads.body(event))
    return event


def mark_due(store: Store, exp_id: str, queue: TaskQueue | None = None) -> None:
    """After an event was appended: the experiment is due for delivery now (the sweep's
    index), and with ``queue`` a delivery task goes at once."""
    store.webhooks.mark_hooks_due(exp_id, time.time())
    if queue is not None:
        queue.webhooks(exp_id)
