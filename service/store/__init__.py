"""Experiment state in Redis, one module per concept, each concept's storage a part of
:class:`Store` reached by name (``store.impressions``, ``store.webhooks``, ...; the part's
name in parentheses below):

* :mod:`service.store.keys`: the key layout, documented once; every key rankduel reads
  or writes is built there. Every call here touches the keys of one experiment (one hash
  tag, so one shard of a Redis Cluster), except the experiment list;
* :mod:`service.store.client`: the one place a Redis client is built (one server or a
  cluster);
* :mod:`service.store.snapshot`: an experiment's stored snapshot and the codec between a
  policy's state and its keys; :mod:`service.store.records`: the stored records;
* :mod:`service.store.experiments` (``experiments``): the snapshot read, creation, the
  policy's state writes, audit, deletion;
* :mod:`service.store.impressions` (``impressions``): impressions and their clicks;
* :mod:`service.store.drains` (``drains``): the pending set and its claims, drain
  leases, the sweep's index;
* :mod:`service.store.credits` (``credits``): the credit script and the marks of a
  decided hold;
* :mod:`service.store.outcomes` (``outcomes``): outcome events, the attribution index's
  reads, the metrics' credit script and counts;
* :mod:`service.store.ranker_health` (``ranker_health``): ranker health (failures,
  quarantine, probes);
* :mod:`service.store.rate_limits` (``rate_limits``): rate limits;
* :mod:`service.store.campaigns` (``campaigns``): judging campaigns' storage;
* :mod:`service.store.placements` (``placements``): placements (traffic, bucket ranges,
  control counters);
* :mod:`service.store.control_pages` (``control_pages``): the control's pages (a click
  once per page, the fold of settled buckets);
* :mod:`service.store.event_log` (``event_log``): each experiment's event log (searches,
  clicks, UBI events), read by cursor;
* :mod:`service.store.history`: a small time series per experiment;
* :mod:`service.store.webhooks` (``webhooks``): webhooks, each experiment's outbox of
  events, delivery state;
* :mod:`service.store.splits` (``splits``): every split of a placement counted per
  period, for SRM;
* :mod:`service.ab.store` (``ab``): A/B experiments' per-user counts and moments, the
  confirmed pairs: a design's part, in its folder, made on first use
  (:attr:`~service.store.base.StorePart.PART`);
* :mod:`service.store.retention` (``retention``): what outlives its use trimmed after
  ``RANKDUEL_RETENTION_S`` (the event logs and outboxes by time; the split check's users
  per generation);
* :mod:`service.store.archive` (``archive``): an archived experiment's keys, freed and
  kept;
* :mod:`service.store.server_checks`: what the Redis server does with its data
  (eviction, persistence), read at start, by ``/readyz`` and by ``rankduel doctor``;
* :mod:`service.store.migration`: from the previous key layout to the current one.

Storage only stores: plain reads, writes and Lua scripts (each a ``.lua`` file next to
its module) given plain values; it never calls a policy (``tests/unit/
test_architecture.py`` checks it). The decisions are made above it: crediting in
:mod:`service.credit` (where the credit protocol is told), operators' changes in
:mod:`service.experiments.operations` through the optimistic transactions of
:mod:`service.transaction` (WATCH, read, compute with the pure code, MULTI/EXEC, retried
on a conflict), judging campaigns in :mod:`service.campaigns.operations`. Each part of the store
depends only on the shared :class:`~service.store.base.StoreBase` (client, clock, scripts)
or, explicitly, on a part it is given (impressions mark the sweep's index through
``drains``). A caller names the storage it touches: ``rt.store.credits.commit_credit``.

The store raises storage errors (:class:`~service.store.snapshot.ExperimentMissing`,
:class:`ImpressionMissing`, :class:`ImpressionClosed`, :class:`Contention`); the API maps
them to HTTP statuses in one place (:mod:`service.app`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from service.store.access import AccessStore
from service.store.archive import ArchiveStore
from service.store.base import (
    AUDIT_MAX,
    DUE_MARK_EVERY_S,
    LIFECYCLES,
    MAX_ATTEMPTS,
    Contention,
    ImpressionClosed,
    ImpressionMissing,
    StoreBase,
    StorePart,
    TooManyClicks,
    audit_entry,
)
from service.store.campaigns import JudgingStore
from service.store.control_pages import ControlPageStore
from service.store.credits import Committed, CreditStore, Entry
from service.store.drains import DrainStore
from service.store.event_log import EventStore
from service.store.experiments import ExperimentStore
from service.store.impressions import ImpressionStore
from service.store.outcomes import OutcomeStore
from service.store.placements import PlacementStore
from service.store.ranker_health import HealthStore, parse_health
from service.store.rate_limits import LimitStore
from service.store.retention import RetentionStore
from service.store.splits import SplitStore
from service.store.webhooks import WebhookStore


class Store(StoreBase):
    """Experiments, impressions and their transactions on one Redis or a Redis Cluster:
    each concept's storage a part reached by name (``store.impressions.save_impression``),
    every part on this one client, clock and set of scripts (:class:`StoreBase`); the
    keys and the audit trail's reads are the part ``store.access``
    (:class:`~service.store.access.AccessStore`)."""

    def __init__(self, client, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(client, clock=clock)
        self.experiments = ExperimentStore(self)
        self.drains = DrainStore(self)
        self.impressions = ImpressionStore(self, self.drains)
        self.credits = CreditStore(self)
        self.outcomes = OutcomeStore(self)
        self.ranker_health = HealthStore(self)
        self.rate_limits = LimitStore(self)
        self.campaigns = JudgingStore(self)
        self.placements = PlacementStore(self)
        self.control_pages = ControlPageStore(self)
        self.event_log = EventStore(self)
        self.webhooks = WebhookStore(self)
        self.splits = SplitStore(self)
        self.access = AccessStore(self)
        self.retention = RetentionStore(self)
        self.archive = ArchiveStore(self)


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
    "StoreBase",
    "StorePart",
    "TooManyClicks",
    "audit_entry",
    "parse_health",
]
