"""Placements as Prometheus metrics, read from Redis at scrape time (as
:class:`service.experiments.collector.StateCollector` reads experiments, and for the same reason:
the state is in Redis, so it is exported once per scrape whatever the number of
processes): ``rankduel_guardrail_tripped{placement, experiment, rule}`` (1 while a
guardrail keeps the experiment paused; the alert ``RankduelGuardrailTripped``) and
``rankduel_placement_share{placement, experiment}`` (each experiment's share now, and
``experiment="control"``'s), and the control ranker's health:
``rankduel_placement_control_{calls,failures,empty}_total{placement}`` (the alerts
``RankduelControlFailing`` and ``RankduelControlEmpty``)."""

from __future__ import annotations

import logging
import time

from service.experiments.collector import Family
from service.placements.operations import control_health, shares_now
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
        now = time.time()
        for name in self.store.placement_names():
            try:
                data = self.store.placement(name)
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
            except Exception:  # one unreadable placement must not hide the others
                log.error("metrics: cannot read placement %s", name, exc_info=True)
        return [tripped, share, *health.values()]

    def exposition(self) -> bytes:
        out: list[str] = []
        for fam in self.families():
            fam.text(out)
        return "".join(out).encode()
