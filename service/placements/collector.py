"""Placements as Prometheus metrics, read from Redis at scrape time (as
:class:`service.experiments.collector.StateCollector` reads experiments, and for the same reason:
the state is in Redis, so it is exported once per scrape whatever the number of
processes): ``rankduel_guardrail_tripped{placement, experiment, rule}`` (1 while a
guardrail keeps the experiment paused; the alert ``RankduelGuardrailTripped``) and
``rankduel_placement_share{placement, experiment}`` (each experiment's share now, and
``experiment="control"``'s), and the control ranker's health:
``rankduel_placement_control_{calls,failures,empty}_total{placement}`` (the alerts
``RankduelControlFailing`` and ``RankduelControlEmpty``); every split checked:
``rankduel_srm_flagged{placement, experiment}`` (:func:`service.reports.splits.flagged`; the
alert ``RankduelSplitMismatch``), and the confirmed pairs' ``rankduel_agreement_rate``
and ``rankduel_agreement_pairs``, and the median speed-up over them
``rankduel_interleaving_speedup_median`` (:func:`service.ab.report.agreements`)."""

from __future__ import annotations

import logging
import time

from service.designs.registry import confirmer
from service.experiments.collector import Family
from service.placements.operations import control_health, shares_now
from service.reports import splits
from service.store import Store

log = logging.getLogger("rankduel.metrics")


class RolloutCollector:
    """The placements of ``store`` (:meth:`exposition`, for :func:`service.metrics.render`)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def families(self) -> list[Family]:
        tripped = Family("rankduel_guardrail_tripped")
        share = Family("rankduel_placement_share")
        health = {k: Family(f"rankduel_placement_control_{k}")
                  for k in ("calls", "failures", "empty")}
        srm = Family("rankduel_srm_flagged")
        now = time.time()
        for name in self.store.placements.placement_names():
            try:
                data = self.store.placements.placement(name)
                if data is None:
                    continue
                shares = shares_now(data, now)
                for e in data["experiments"]:
                    share.add_metric([name, e["experiment"]], shares.get(e["experiment"], 0.0))
                share.add_metric([name, "control"], max(0.0, 1.0 - sum(shares.values())))
                counts = control_health(self.store, name)
                for k, fam in health.items():
                    fam.add_metric([name], counts[k])
                for exp_id, t in (data["tripped"] or {}).items():
                    tripped.add_metric([name, exp_id, t["rule"]], 1)
                for e in data["experiments"]:
                    try:
                        snap = self.store.experiments.snapshot(e["experiment"])
                        srm.add_metric([name, e["experiment"]],
                                       int(splits.flagged(self.store, snap)))
                    except Exception:  # deleted meanwhile: the others still show
                        log.warning("metrics: no split of %s", e["experiment"],
                                    exc_info=True)
            except Exception:  # one unreadable placement must not hide the others
                log.error("metrics: cannot read placement %s", name, exc_info=True)
        return [tripped, share, *health.values(), srm, *self._agreements()]

    def _agreements(self) -> list[Family]:
        rate, pairs = Family("rankduel_agreement_rate"), Family("rankduel_agreement_pairs")
        fast = Family("rankduel_interleaving_speedup_median")
        fast_pairs = Family("rankduel_interleaving_speedup_pairs")
        try:
            every = confirmer().agreements(self.store)
        except Exception:
            log.error("metrics: cannot read the confirmed pairs", exc_info=True)
            return []
        got, sped = every["rate"], every["speedup"]
        pairs.add_metric([], got["pairs"])
        if got["rate"] is not None:
            rate.add_metric([], got["rate"])
        fast_pairs.add_metric([], sped["pairs"])
        if sped["median"] is not None:
            fast.add_metric([], sped["median"])
        return [rate, pairs, fast, fast_pairs]

    def exposition(self) -> bytes:
        out: list[str] = []
        for fam in self.families():
            fam.text(out)
        return "".join(out).encode()
