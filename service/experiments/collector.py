"""Experiment state as Prometheus metrics, read from Redis at scrape time.

prometheus-client's multiprocess mode (gunicorn, Celery prefork) aggregates counters and
histograms that each process writes to files; it does not support custom collectors nor
callback gauges. Experiment state (regret, ranker status, champion, queue depth) lives
in Redis anyway, so rather than mirroring it into per-process gauges,
:class:`StateCollector` reads it once per scrape and exports it. The API registers it in
the registry it builds for ``/metrics`` (next to the multiprocess aggregate), never in the
per-process registries, so each value is exported once per scrape, whatever the number of
gunicorn workers.

Exported families (``experiment`` is the experiment id, ``ranker`` and ``opponent`` are
ranker names; all label values are bounded by what operators registered):

=============================================== ========================================
``rankduel_experiment_info``                    1, with name, algorithm, interleaving
``rankduel_experiment_lifecycle``               1 for the current lifecycle, 0 otherwise
``rankduel_experiment_estimated_regret``        cumulative regret estimated from ``W``
``rankduel_experiment_true_regret``             cumulative regret against the truth given
                                                at creation (simulations, the demo)
``rankduel_experiment_comparisons_total``       outcomes recorded in ``W`` (bandit steps)
``rankduel_experiment_selections_total``        comparisons chosen by ``/search``
``rankduel_experiment_impressions_total``       impressions served
``rankduel_experiment_decisive_impressions_total`` impressions whose clicks decided a duel
``rankduel_experiment_ties_total``              decisive impressions with a tie
``rankduel_experiment_no_click_impressions_total`` duels credited without any click
``rankduel_experiment_credited_impressions_total`` impressions credited by a worker
``rankduel_experiment_pending_impressions``     impressions waiting to be credited
``rankduel_experiment_champion``                1, labelled with the champion's name
``rankduel_experiment_rankers``                 rankers by status (active, eliminated, ...)
``rankduel_experiment_stage``                   MergeDTS/MergeRUCB stage
``rankduel_experiment_batches``                 MergeDTS/MergeRUCB number of batches
``rankduel_ranker_status``                      1 for the ranker's status, 0 for the others
``rankduel_ranker_quarantined``                 1 while its circuit breaker is open
``rankduel_ranker_consecutive_failures``        failures since its last good answer
``rankduel_ranker_degraded``                    1 while it is degraded (no or unparseable results)
``rankduel_ranker_stage``                       stage the ranker plays in (active only)
``rankduel_ranker_batch``                       index of its batch (active only)
``rankduel_ranker_impressions_total``           impressions that showed the ranker
``rankduel_ranker_traffic_total``               the same, weighted 1/(rankers shown)
``rankduel_ranker_wins_total``                  row sum of ``W`` (a tie counts ½)
``rankduel_ranker_losses_total``                column sum of ``W``
``rankduel_ranker_eliminated_at_comparison``    bandit step of its elimination, by whom
``rankduel_pair_preference``                    empirical P(ranker beats opponent)
``rankduel_queue_length``                       tasks waiting in the Celery queue
``rankduel_queue_unacked_tasks``                tasks delivered to workers, not yet acked
``rankduel_state_scrape_errors``                experiments that could not be read
``rankduel_guardrail_tripped``                  1 while a guardrail keeps it paused
``rankduel_placement_share``                    its share of the placement's searches now
``rankduel_placement_control_calls_total``      calls of a placement's control ranker
``rankduel_placement_control_failures_total``   of them failed (error, timeout, bad answer)
``rankduel_placement_control_empty_total``      of them answered no results
=============================================== ========================================

Regret follows the papers' definition (Li et al. 2020, §5.4, eq. 1): an impression comparing
``i`` and ``j`` costs ``(Δ_ci + Δ_cj) / 2`` with ``Δ_ca = p_ca − ½``; a single-ranker
impression counts ``i = j`` and a multileaved one the mean over its rankers. That is
linear in how often each ranker was shown, so the cumulative regret is
``Σ_a s_a Δ_ca`` with ``s_a`` = ``rankduel_ranker_traffic_total`` (the per-arm exposure
the API records with each impression), and needs no per-impression history
(:func:`bandits.matrices.exposure_regret`):

* **estimated**: ``c`` is the current champion and ``p`` the empirical preference matrix
  ``W / (W + Wᵀ)`` (½ for pairs never compared), recomputed at every scrape, so the whole
  history is re-weighted as the estimates sharpen (the series can go down);
* **true**: ``p`` and ``c`` come from the ``true_preferences`` / ``true_best`` given at
  creation; without ``true_best``, the Condorcet winner, or the Copeland regret of Li
  et al. 2020, eq. 10, when there is none (:func:`bandits.matrices.arm_regret`), as in ``rankduel
  simulate``. Rankers added after creation are outside the matrix and do not count.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from prometheus_client.core import Metric

from bandits.base import STATUS_NAMES
from bandits.common import preferences
from bandits.matrices import exposure_regret
from service.experiments.families import (
    FAMILIES,
    OTHER_FAMILIES,
    PAIRWISE_MAX,
    Family,
    _family,
)
from service.store import LIFECYCLES, Store

log = logging.getLogger(__name__)

#: kombu's Redis transport keeps a queue's messages of priority p > 0 in "<queue>\x06\x16p"
_PRIORITY_SEP = "\x06\x16"
_PRIORITY_STEPS = (0, 3, 6, 9)
_UNACKED = "unacked"

class StateCollector:
    """A prometheus-client collector exporting every experiment in ``store``.

    Parameters
    ----------
    store
        The API's :class:`~service.store.Store`.
    broker
        A Redis client of the Celery broker (its own setting, ``RANKDUEL_BROKER_URL``);
        None exports no queue metrics.
    queues
        Celery queues whose length to export.
    pairwise_max
        Largest experiment (in rankers) whose pairwise preferences are exported.
    """

    def __init__(self, store: Store, *, broker: Any = None,
                 queues: Iterable[str] = ("rankduel",),
                 pairwise_max: int = PAIRWISE_MAX) -> None:
        self.store = store
        self.broker = broker
        self.queues = tuple(queues)
        self.pairwise_max = pairwise_max

    def describe(self) -> list[Metric]:
        return [_family(name) for name in FAMILIES if name not in OTHER_FAMILIES]

    def collect(self) -> Iterator[Metric]:
        """prometheus-client's collector interface."""
        for fam in self._families().values():
            yield fam.metric()

    def exposition(self) -> bytes:
        """The text format of every family (what ``generate_latest`` of a registry
        holding this collector returns), rendered directly."""
        out: list[str] = []
        for fam in self._families().values():
            fam.text(out)
        return "".join(out).encode()

    def _families(self) -> dict[str, Family]:
        fams = {name: Family(name) for name in FAMILIES if name not in OTHER_FAMILIES}
        errors = 0
        for exp_id, read in self.store.experiments.scrape(self.store.list_ids()):
            try:
                if isinstance(read, Exception):
                    raise read
                self._experiment(fams, exp_id, *read)
            except Exception:  # one unreadable experiment must not hide the others
                errors += 1
                log.error("metrics: cannot read experiment %s", exp_id, exc_info=True)
        if self.broker is not None:
            self._queues(fams)
        fams["rankduel_state_scrape_errors"].add_metric([], errors)
        return fams

    # ------------------------------------------------------------------ parts
    def _queues(self, fams: dict[str, Family]) -> None:
        pipe = self.broker.pipeline(transaction=False)
        for q in self.queues:
            for p in _PRIORITY_STEPS:
                pipe.llen(f"{q}{_PRIORITY_SEP}{p}" if p else q)
        pipe.hlen(_UNACKED)
        out = pipe.execute()
        for n, q in enumerate(self.queues):
            chunk = out[n * len(_PRIORITY_STEPS):(n + 1) * len(_PRIORITY_STEPS)]
            fams["rankduel_queue_length"].add_metric([q], sum(chunk))
        fams["rankduel_queue_unacked_tasks"].add_metric([], out[-1])

    def _experiment(self, fams: dict[str, Family], exp_id: str, snap, shown: dict,
                    truth: Any, pending: int) -> None:
        now = time.time()
        bandit = snap.bandit
        K = bandit.K
        names = snap.names
        name = [names.get(a, str(a)) for a in range(K)]
        e = [exp_id]
        meta = snap.meta
        fams["rankduel_experiment_info"].add_metric(
            [exp_id, str(meta.get("name", "")), str(meta.get("algorithm", "")),
             str(meta.get("interleaving", ""))], 1)
        for lc in LIFECYCLES:
            fams["rankduel_experiment_lifecycle"].add_metric([exp_id, lc],
                                                             int(snap.lifecycle == lc))
        counters = snap.counters or {}
        for family, key in (("rankduel_experiment_impressions", "impressions"),
                            ("rankduel_experiment_decisive_impressions", "decisive"),
                            ("rankduel_experiment_ties", "ties"),
                            ("rankduel_experiment_no_click_impressions", "no_clicks"),
                            ("rankduel_experiment_credited_impressions", "credited")):
            fams[family].add_metric(e, counters.get(key, 0))
        fams["rankduel_experiment_comparisons"].add_metric(e, bandit.n_updates)
        fams["rankduel_experiment_selections"].add_metric(e, snap.selections or 0)
        fams["rankduel_experiment_pending_impressions"].add_metric(e, pending)

        # regret: the exposure of each arm times its gap to the champion
        W = bandit.W
        p = preferences(W)
        champion = int(bandit.best_arm())
        traffic = np.zeros(K)
        impressions = np.zeros(K)
        for arm, (n, share) in shown.items():
            if arm < K:
                impressions[arm], traffic[arm] = n, share
        fams["rankduel_experiment_estimated_regret"].add_metric(
            e, exposure_regret(p, traffic, best=champion))
        if truth:
            fams["rankduel_experiment_true_regret"].add_metric(
                e, exposure_regret(truth["preferences"], traffic, best=truth.get("best")))
        fams["rankduel_experiment_champion"].add_metric([exp_id, name[champion]], 1)

        status = bandit.status
        for code, label in STATUS_NAMES.items():
            fams["rankduel_experiment_rankers"].add_metric(
                [exp_id, label], int(np.count_nonzero(status == code)))
        structure = bandit.structure()
        stage, batches = structure.get("stage"), structure.get("batches")
        if stage is not None:
            fams["rankduel_experiment_stage"].add_metric(e, int(stage))
        guard = structure.get("non_condorcet")
        if guard is not None:
            fams["rankduel_non_condorcet_flagged"].add_metric(e, int(bool(guard["flagged"])))
        batch_of: dict[int, int] = {}
        if batches is not None:
            fams["rankduel_experiment_batches"].add_metric(e, len(batches))
            batch_of = {int(a): m for m, batch in enumerate(batches) for a in batch}

        wins, losses = W.sum(axis=1), W.sum(axis=0)
        for a in range(K):
            rk = [exp_id, name[a]]
            for code, label in STATUS_NAMES.items():
                fams["rankduel_ranker_status"].add_metric([*rk, label], int(status[a] == code))
            if a in batch_of:
                fams["rankduel_ranker_batch"].add_metric(rk, batch_of[a])
                if stage is not None:
                    fams["rankduel_ranker_stage"].add_metric(rk, int(stage))
            fams["rankduel_ranker_impressions"].add_metric(rk, impressions[a])
            fams["rankduel_ranker_traffic"].add_metric(rk, traffic[a])
            fams["rankduel_ranker_wins"].add_metric(rk, float(wins[a]))
            fams["rankduel_ranker_losses"].add_metric(rk, float(losses[a]))
            health = (snap.health or {}).get(a, {})
            until = health.get("quarantined_until")
            fams["rankduel_ranker_quarantined"].add_metric(
                rk, int(until is not None and until > now))
            fams["rankduel_ranker_consecutive_failures"].add_metric(rk, health.get("failures", 0))
            fams["rankduel_ranker_degraded"].add_metric(rk, int(bool(health.get("degraded"))))
            elim = bandit.eliminated.get(a)
            if elim is not None:
                fams["rankduel_ranker_eliminated_at_comparison"].add_metric(
                    [*rk, names.get(elim["by"], str(elim["by"]))], elim["step"])
        if self.pairwise_max >= K:  # K² series
            add = fams["rankduel_pair_preference"].samples.append
            rows = p.tolist()
            for i in range(K):
                row, ni = rows[i], name[i]
                for j in range(K):
                    if i != j:
                        add(((exp_id, ni, name[j]), row[j]))
