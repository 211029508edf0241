"""The metric families read from Redis at scrape time, declared once: their kind, words
and labels (:data:`FAMILIES`), and :class:`Family`, the samples of one family rendered
straight to Prometheus' text format. The experiments' collector
(:mod:`service.experiments.collector`), the placements' collector
(:mod:`service.placements.collector`) and the metrics' collector
(:mod:`service.reports.metric_collector`) export them; the dashboards' tests read
:func:`exported_names`.
"""

from __future__ import annotations

from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.utils import INF, floatToGoString

#: pairwise preferences are exported only for experiments with at most this many rankers
#: (K² series; a heatmap of more is unreadable anyway)
PAIRWISE_MAX = 40
#: name -> (kind, documentation, labels)
FAMILIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "rankduel_experiment_info": (
        "gauge", "Experiment definition (value 1).",
        ("experiment", "name", "algorithm", "interleaving")),
    "rankduel_experiment_lifecycle": (
        "gauge", "1 for the experiment's lifecycle state, 0 for the others.",
        ("experiment", "lifecycle")),
    "rankduel_experiment_estimated_regret": (
        "gauge", "Cumulative regret estimated from the empirical preference matrix against "
        "the current champion (Li et al. 2020, eq. 1, re-weighted at every scrape).",
        ("experiment",)),
    "rankduel_experiment_true_regret": (
        "gauge", "Cumulative regret against the true preference matrix given at creation.",
        ("experiment",)),
    "rankduel_experiment_comparisons": (
        "counter", "Comparisons recorded in W (bandit updates).", ("experiment",)),
    "rankduel_experiment_selections": (
        "counter", "Comparisons chosen by the controller (one per /search).", ("experiment",)),
    "rankduel_experiment_impressions": (
        "counter", "Impressions served.", ("experiment",)),
    "rankduel_experiment_decisive_impressions": (
        "counter", "Impressions whose clicks decided a comparison (win, loss or tie).",
        ("experiment",)),
    "rankduel_experiment_ties": (
        "counter", "Decisive impressions with a tie.", ("experiment",)),
    "rankduel_experiment_no_click_impressions": (
        "counter", "Duel impressions credited without a click.", ("experiment",)),
    "rankduel_experiment_credited_impressions": (
        "counter", "Impressions credited by a worker (whatever their outcome).",
        ("experiment",)),
    "rankduel_experiment_pending_impressions": (
        "gauge", "Impressions waiting to be credited.", ("experiment",)),
    "rankduel_experiment_champion": (
        "gauge", "The current champion (value 1, name in the ranker label).",
        ("experiment", "ranker")),
    "rankduel_experiment_rankers": (
        "gauge", "Rankers of the experiment by status.", ("experiment", "status")),
    "rankduel_experiment_stage": (
        "gauge", "Stage of a MergeDTS/MergeRUCB experiment.", ("experiment",)),
    "rankduel_experiment_batches": (
        "gauge", "Number of batches of a MergeDTS/MergeRUCB experiment.", ("experiment",)),
    "rankduel_non_condorcet_flagged": (
        "gauge", "1 once the recommended policy's guard found that the counts contradict a "
        "Condorcet winner (false-flag rate delta over the run), else 0.", ("experiment",)),
    "rankduel_ranker_status": (
        "gauge", "1 for the ranker's status (active, eliminated, retired), 0 for the others.",
        ("experiment", "ranker", "status")),
    "rankduel_ranker_quarantined": (
        "gauge", "1 while the ranker is in quarantine (its circuit breaker is open).",
        ("experiment", "ranker")),
    "rankduel_ranker_consecutive_failures": (
        "gauge", "Failures of the ranker since its last successful answer.",
        ("experiment", "ranker")),
    "rankduel_ranker_degraded": (
        "gauge", "1 while the ranker is degraded: out of comparisons for answering no or "
        "unparseable results while others answered.", ("experiment", "ranker")),
    "rankduel_ranker_stage": (
        "gauge", "Stage in which an active ranker plays.", ("experiment", "ranker")),
    "rankduel_ranker_batch": (
        "gauge", "Index of the batch of an active ranker.", ("experiment", "ranker")),
    "rankduel_ranker_impressions": (
        "counter", "Impressions that showed the ranker's results (times chosen).",
        ("experiment", "ranker")),
    "rankduel_ranker_traffic": (
        "counter", "Impressions that showed the ranker, each weighted 1/(rankers shown): "
        "its share of the traffic.", ("experiment", "ranker")),
    "rankduel_ranker_wins": (
        "counter", "Comparisons the ranker won (row sum of W; a tie counts 1/2).",
        ("experiment", "ranker")),
    "rankduel_ranker_losses": (
        "counter", "Comparisons the ranker lost (column sum of W; a tie counts 1/2).",
        ("experiment", "ranker")),
    "rankduel_ranker_eliminated_at_comparison": (
        "gauge", "Bandit step (comparisons recorded) at which the ranker was eliminated, "
        "and by which ranker.", ("experiment", "ranker", "by")),
    "rankduel_pair_preference": (
        "gauge", "Empirical probability that ranker beats opponent (1/2 before any "
        f"comparison); experiments of at most {PAIRWISE_MAX} rankers.",
        ("experiment", "ranker", "opponent")),
    "rankduel_queue_length": (
        "gauge", "Tasks waiting in the Celery queue (Redis broker).", ("queue",)),
    "rankduel_queue_unacked_tasks": (
        "gauge", "Tasks delivered to workers and not yet acknowledged.", ()),
    "rankduel_state_scrape_errors": (
        "gauge", "Experiments whose state could not be read during this scrape.", ()),
    # placements, read by service.placements.collector
    "rankduel_guardrail_tripped": (
        "gauge", "1 while a guardrail keeps the experiment paused (docs/operations/rollout.md).",
        ("placement", "experiment", "rule")),
    "rankduel_placement_share": (
        "gauge", "An experiment's share of its placement's searches now (experiment "
        "\"control\": the control ranker's).", ("placement", "experiment")),
    "rankduel_placement_control_calls": (
        "counter", "Calls of the placement's control ranker (since it last changed).",
        ("placement",)),
    "rankduel_placement_control_failures": (
        "counter", "Calls of the placement's control ranker that failed: an error, a timeout "
        "or an answer that is not a result list (each such control search answers 502).",
        ("placement",)),
    "rankduel_placement_control_empty": (
        "counter", "Calls of the placement's control ranker that answered no results.",
        ("placement",)),
    "rankduel_srm_flagged": (
        "gauge", "1 while a split of the experiment is flagged (sample ratio mismatch at "
        "p < 0.001 with a minimum deviation: its arms' users, its share of its placement, "
        "team draft's coin); its verdict is not to be trusted until explained.",
        ("placement", "experiment")),
    "rankduel_agreement_rate": (
        "gauge", "Share of confirmed pairs (an interleaving verdict and the A/B test of its "
        "winner, both decided) that agree in direction.", ()),
    "rankduel_agreement_pairs": (
        "gauge", "Confirmed pairs whose A/B test has decided.", ()),
    "rankduel_interleaving_speedup_median": (
        "gauge", "Median, over confirmed pairs whose A/B test decided as interleaving did, "
        "of the A/B test's searches to decide over interleaving's (docs/ab-tests.md).", ()),
    "rankduel_interleaving_speedup_pairs": (
        "gauge", "Confirmed pairs with a speed-up (the A/B test decided, agreeing).", ()),
    "rankduel_metric_comparisons": (
        "counter", "Comparisons a metric of an action counted (outcome events credited to "
        "it; the click metric's are rankduel_experiment_comparisons).",
        ("experiment", "metric")),
    "rankduel_metric_wins": (
        "counter", "A ranker's wins on a metric of an action: the sum of its row of the "
        "metric's W (a tie counts a half; a sum metric's wins are value-weighted).",
        ("experiment", "metric", "ranker")),
    "rankduel_metric_events": (
        "counter", "Outcome events of a metric of an action credited as a ranker's win.",
        ("experiment", "metric", "ranker")),
    "rankduel_metric_value": (
        "counter", "A sum metric's values credited to a ranker (the plain sum, for display).",
        ("experiment", "metric", "ranker")),
}

#: the families service.placements.collector exports (declared here with the others)
PLACEMENT_FAMILIES = ("rankduel_guardrail_tripped", "rankduel_placement_share",
                      "rankduel_placement_control_calls", "rankduel_placement_control_failures",
                      "rankduel_placement_control_empty", "rankduel_srm_flagged",
                      "rankduel_agreement_rate", "rankduel_agreement_pairs",
                      "rankduel_interleaving_speedup_median",
                      "rankduel_interleaving_speedup_pairs")
#: the families service.reports.metric_collector exports: the metrics beyond the click
METRIC_FAMILIES = ("rankduel_metric_comparisons", "rankduel_metric_wins",
                   "rankduel_metric_events", "rankduel_metric_value")
#: the families the experiments' collector leaves to the others
OTHER_FAMILIES = PLACEMENT_FAMILIES + METRIC_FAMILIES


def exported_names() -> set[str]:
    """Every sample name this collector can export (counters with ``_total``)."""
    return {n + "_total" if kind == "counter" else n for n, (kind, _, _) in FAMILIES.items()}


def _family(name: str) -> Metric:
    kind, doc, labels = FAMILIES[name]
    cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
    return cls(name, doc, labels=list(labels))


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


class Family:
    """The samples of one family, rendered straight to the text format by
    :meth:`text` (what ``generate_latest`` writes for the same samples, at a fraction of
    the cost: hundreds of experiments make ~10⁵ samples per scrape), or turned into a
    prometheus-client ``Metric`` by :meth:`metric`."""

    __slots__ = ("doc", "kind", "labels", "name", "samples")

    def __init__(self, name: str) -> None:
        self.name = name
        self.kind, self.doc, self.labels = FAMILIES[name]
        self.samples: list[tuple[Any, float]] = []

    def add_metric(self, values, value: float) -> None:
        self.samples.append((values, value))

    def metric(self) -> Metric:
        m = _family(self.name)
        for values, value in self.samples:
            m.add_metric([str(v) for v in values], value)
        return m

    def text(self, out: list[str]) -> None:
        sample = self.name + "_total" if self.kind == "counter" else self.name
        doc = self.doc.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {sample} {doc}\n# TYPE {sample} {self.kind}\n")
        labels = self.labels
        if not labels:
            for _, value in self.samples:
                out.append(f"{sample} {_number(value)}\n")
            return
        order = sorted(range(len(labels)), key=lambda i: labels[i])  # names sorted
        head = sample + "{{" + ",".join(f'{labels[i]}="{{}}"' for i in order) + "}} {}\n"
        escaped: dict[Any, str] = {}
        for values, value in self.samples:
            parts = []
            for i in order:
                v = values[i]
                e = escaped.get(v)
                if e is None:
                    e = escaped[v] = _escape(str(v))
                parts.append(e)
            out.append(head.format(*parts, _number(value)))


def _number(value: float) -> str:
    """``floatToGoString`` with a fast path for the common case."""
    v = float(value)
    if v == v and abs(v) < 1e6 and v not in (INF, -INF):
        return repr(v)
    return floatToGoString(v)
