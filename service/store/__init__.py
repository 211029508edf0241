"""Experiment state in Redis, one module per concept, behind one facade (:class:`Store`):

* :mod:`service.store.keys`: the key layout, documented once; every key rankduel reads or
  writes is built there. Every call here touches the keys of one experiment (one hash
  tag, so one shard of a Redis Cluster), except the experiment list;
* :mod:`service.store.client`: the one place a Redis client is built (one server or a
  cluster);
* :mod:`service.store.snapshot`: an experiment's stored snapshot and the codec between a
  policy's state and its keys; :mod:`service.store.records`: the stored records;
* :mod:`service.store.experiments`: the snapshot read, creation, the policy's state
  writes, audit, deletion;
* :mod:`service.store.impressions`: impressions and their clicks;
* :mod:`service.store.drains`: the pending set and its claims, drain leases, the sweep's
  index;
* :mod:`service.store.credits`: the credit script and the marks of a decided hold;
* :mod:`service.store.outcomes`: outcome events, the attribution index's reads, the
  metrics' credit script and counts;
* :mod:`service.store.ranker_health`: ranker health (failures, quarantine, probes);
* :mod:`service.store.rate_limits`: rate limits;
* :mod:`service.store.campaigns`: judging campaigns' storage;
* :mod:`service.store.placements`: placements (traffic, bucket ranges, control counters);
* :mod:`service.store.control_pages`: the control's pages (a click once per page, the
  fold of settled buckets);
* :mod:`service.store.history`: a small time series per experiment;
* :mod:`service.store.webhooks`: webhooks, each experiment's outbox of events, delivery
  state;
* :mod:`service.store.splits`: every split of a placement counted per period, for SRM;
* :mod:`service.store.ab`: A/B experiments' per-user counts and moments, the confirmed
  pairs;
* :mod:`service.store.migration`: from the previous key layout to the current one.

Storage only stores: plain reads, writes and Lua scripts (each a ``.lua`` file next to
its module) given plain values; it never calls a policy (``tests/unit/
test_architecture.py`` checks it). The decisions are made above it: crediting in
:mod:`service.credit` (where the credit protocol is told), operators' changes in
:mod:`service.experiments.operations` through the optimistic transactions of
:mod:`service.transaction` (WATCH, read, compute with the pure code, MULTI/EXEC, retried
on a conflict), judging campaigns in :mod:`service.campaigns.operations`. Each part of the store
depends only on :class:`~service.store.base.StoreBase` or, explicitly, on the part it
extends (impressions mark the sweep's index: ``ImpressionStore(DrainStore)``).

The store raises storage errors (:class:`~service.store.snapshot.ExperimentMissing`,
:class:`ImpressionMissing`, :class:`ImpressionClosed`, :class:`Contention`); the API maps
them to HTTP statuses in one place (:mod:`service.app`).
"""

from __future__ import annotations

from service.store.ab import ABStore
from service.store.access import AccessStore
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
from service.store.control_pages import ControlPageStore
from service.store.credits import Committed, CreditStore, Entry
from service.store.drains import DrainStore
from service.store.events import EventStore
from service.store.experiments import ExperimentStore
from service.store.impressions import ImpressionStore
from service.store.outcomes import OutcomeStore
from service.store.placements import PlacementStore
from service.store.ranker_health import HealthStore, parse_health
from service.store.rate_limits import LimitStore
from service.store.splits import SplitStore
from service.store.webhooks import WebhookStore


class Store(ExperimentStore, ImpressionStore, HealthStore, DrainStore, CreditStore,
            LimitStore, JudgingStore, PlacementStore, ControlPageStore, EventStore,
            OutcomeStore, WebhookStore, ABStore, SplitStore, StoreBase):
    """Experiments, impressions and their transactions on one Redis or a Redis Cluster:
    the parts of :mod:`service.store` on one client (see :class:`StoreBase`); the keys
    and the audit trail's reads are a part of their own, ``store.access``
    (:class:`~service.store.access.AccessStore`)."""

    def __init__(self, client, **kwargs) -> None:
        super().__init__(client, **kwargs)
        self.access = AccessStore(client, clock=self.clock)


__all__ = [
    "AUDIT_MAX",
    "DUE_MARK_EVERY_S",
    "LIFECYCLES",
    "MAX_ATTEMPTS",
    "Committed",
    "Contention",
    "Entry",
    "ImpressionClosed",
    "ImpressionMissing",
    "Store",
    "TooManyClicks",
    "audit_entry",
    "parse_health",
]
