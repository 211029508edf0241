"""Experiment state in Redis, one module per concept, behind one facade (:class:`Store`):

* :mod:`service.store.experiments`: the snapshot, creation, operators' transactions,
  the policy's state writes, audit, deletion;
* :mod:`service.store.impressions`: impressions and their clicks;
* :mod:`service.store.ranker_health`: ranker health (failures, quarantine, probes);
* :mod:`service.store.drains`: the pending set and its claims, drain leases, the sweep's
  index;
* :mod:`service.store.credits`: the credit script and the reads and writes of a hold;
* :mod:`service.store.rate_limits`: rate limits;
* :mod:`service.store.campaigns`: judging campaigns' storage.

Each module's Lua scripts are ``.lua`` files next to it. The key layout is documented once, in
:mod:`service.store.keys`; every call here touches the keys of one experiment (one hash tag,
so one shard of a Redis Cluster), except the experiment list.

Crediting (the design is argued in :mod:`service.credit.step`):

* **The credit script** (:meth:`Store.commit_credit`), one per batch: for each impression
  in order, unless it is already credited, gone, or got a click since the worker read it,
  add its outcomes to ``W`` in place, count the comparison in ``n``, write its
  ``credited`` mark (which closes it), add its counters and take it off the pending set.
  Atomic, so each impression changes ``W`` exactly once whatever the retries, duplicate
  deliveries or worker crashes (a crash before the script writes nothing; the impression
  stays pending and is credited later). Additions commute, so scripts of many workers on
  one experiment interleave freely. The script refuses the whole batch if the policy's
  structure changed since the worker read it (``sv``), and stops at an outcome the
  :class:`~service.credit.step.Guard` flags: it records it as the experiment's ``hold`` and
  returns; while a hold is set, every credit script refuses.
* **A hold is resolved** (:func:`service.credit.protocol.resolve_hold`, by whichever worker
  meets it, with :meth:`Store.read_hold` and :meth:`Store.write_resolution`) in one
  optimistic transaction that runs the policy's own ``update()`` on the current
  state for that impression and writes ``W``, ``n``, the new structure if it changed
  (``sv`` + 1), the mark and the audit events, and clears the hold.
* **Drains** claim due impressions from the pending set with a lease (their due time is
  pushed forward; a crashed drain's impressions come due again when it expires), so
  several drains credit one experiment without overlapping; the experiment's drain set
  holds one lease per drain queued or running, at most ``credit_parallelism``.

Every other change to an experiment's snapshot (operators) goes through
:meth:`Store.transact`: WATCH the keys the change depends on, read them, compute with the
pure code, then MULTI/EXEC the writes, retrying on ``WatchError``.

The store raises storage errors (:class:`~service.store.snapshot.ExperimentMissing`,
:class:`ImpressionMissing`, :class:`ImpressionClosed`, :class:`Contention`); the API maps
them to HTTP statuses in one place (:mod:`service.app`).
"""

from __future__ import annotations

from service.store.base import (
    AUDIT_MAX,
    DUE_MARK_EVERY_S,
    LIFECYCLES,
    MAX_ATTEMPTS,
    Contention,
    ImpressionClosed,
    ImpressionMissing,
    StoreBase,
    TooManyClicks,
    audit_entry,
)
from service.store.campaigns import JudgingStore
from service.store.credits import Committed, CreditStore
from service.store.drains import DrainStore
from service.store.experiments import ExperimentStore
from service.store.impressions import ImpressionStore
from service.store.ranker_health import HealthStore, parse_health
from service.store.rate_limits import LimitStore


class Store(ExperimentStore, ImpressionStore, HealthStore, DrainStore, CreditStore,
            LimitStore, JudgingStore, StoreBase):
    """Experiments, impressions and their transactions on one Redis or a Redis Cluster:
    the parts of :mod:`service.store` on one client (see :class:`StoreBase`)."""


__all__ = [
    "AUDIT_MAX",
    "DUE_MARK_EVERY_S",
    "LIFECYCLES",
    "MAX_ATTEMPTS",
    "Committed",
    "Contention",
    "ImpressionClosed",
    "ImpressionMissing",
    "Store",
    "TooManyClicks",
    "audit_entry",
    "parse_health",
]
