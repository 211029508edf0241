"""The metrics beyond the click as Prometheus metrics, read from Redis at scrape time (as
:class:`service.placements.collector.RolloutCollector` reads placements): per experiment
that declares metrics and per metric of an action (docs/conversions.md),
``rankduel_metric_comparisons{experiment, metric}`` and, per ranker,
``rankduel_metric_wins`` (its row of the metric's ``W``), ``rankduel_metric_events``
(events credited as its win) and, for a sum metric, ``rankduel_metric_value`` (the plain
sum of the values). The click metric's are the experiment's own
(``rankduel_experiment_comparisons``, ``rankduel_pairwise_wins``). An experiment without
metrics exports nothing here."""

from __future__ import annotations

import json
import logging

from service.experiments.families import Family
from service.outcomes.counts import matrix
from service.outcomes.declared import counted
from service.store import Store

log = logging.getLogger("rankduel.metrics")


class MetricsCollector:
    """The declared metrics of ``store``'s experiments (:meth:`exposition`, for
    :func:`service.metrics.render`)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def families(self) -> list[Family]:
        comparisons = Family("rankduel_metric_comparisons")
        per = {k: Family(f"rankduel_metric_{k}") for k in ("wins", "events", "value")}
        ids = self.store.list_ids()
        for exp_id, (meta, _) in self.store.outcomes.declarations(ids).items():
            try:
                metrics = counted(json.loads(meta)) if meta else []
                if not metrics:
                    continue
                names = self.store.experiments.snapshot(exp_id).names
                counts = self.store.outcomes.metric_counts(exp_id)
                for m in metrics:
                    c = counts.get(m.name)
                    comparisons.add_metric([exp_id, m.name], c.n if c else 0)
                    W = matrix(c, max(names, default=-1) + 1)
                    for arm, name in sorted(names.items()):
                        labels = [exp_id, m.name, name]
                        per["wins"].add_metric(labels, float(W[arm].sum()))
                        per["events"].add_metric(labels, c.events.get(arm, 0) if c else 0)
                        if m.value == "sum":
                            per["value"].add_metric(labels,
                                                    c.values.get(arm, 0.0) if c else 0.0)
            except Exception:  # one unreadable experiment must not hide the others
                log.error("metrics: cannot read the metrics of %s", exp_id, exc_info=True)
        return [comparisons, *per.values()]

    def exposition(self) -> bytes:
        out: list[str] = []
        for fam in self.families():
            fam.text(out)
        return "".join(out).encode()
