"""Optimistic transactions of the service layer: WATCH, read, compute with the pure code,
MULTI/EXEC, retried on a conflict.

The retry loop and the computation belong to the caller's layer (operators in
:mod:`service.experiments.operations`, judging campaigns in
:mod:`service.campaigns.operations`); the store only
hands out pipelines and plain reads and writes, and never calls back into code above it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import redis

from service.store import MAX_ATTEMPTS, Contention, Store
from service.store.keys import exp_key, w_key
from service.store.snapshot import Snapshot

T = TypeVar("T")
R = TypeVar("R")


def transact(store: Store, watch: Sequence[str], read: Callable[[], T],
             write: Callable[[T, redis.client.Pipeline], R], *,
             on_conflict: Callable[[], None] | None = None) -> R:
    """One optimistic transaction: WATCH ``watch`` (keys of one experiment or campaign:
    one hash tag), ``read()`` (any reads, e.g. one pipelined round trip), then
    ``write(data, pipe)`` queues the writes on ``pipe`` (already in MULTI) and returns the
    result; EXEC. Retried from the WATCH, after ``on_conflict()``, when a watched key
    changed meanwhile. An exception from ``read``/``write`` aborts with nothing written."""
    with store.pipeline(transaction=True) as pipe:
        for _attempt in range(MAX_ATTEMPTS):
            try:
                pipe.watch(*watch)
                data = read()
                pipe.multi()
                result = write(data, pipe)
                pipe.execute()
                return result
            except redis.WatchError:
                pipe.reset()
                if on_conflict is not None:
                    on_conflict()
                continue
    raise Contention(f"gave up after {MAX_ATTEMPTS} conflicting attempts on {watch[0]}")


def update_experiment(store: Store, exp_id: str,
                      write: Callable[[Snapshot, redis.client.Pipeline], R]) -> R:
    """:func:`transact` on the experiment's snapshot and ``W`` (read in full: the policy
    decoded at the global ``t``)."""
    return transact(store, [exp_key(exp_id), w_key(exp_id)],
                    lambda: store.experiments.snapshot(exp_id, full=True), write)
