"""The Grafana dashboards (deploy/grafana/dashboards/*.json), checked statically: both
concerns (the experiment, the service) have their panels, every panel uses the
provisioned datasource, and every PromQL query (panel targets and template variables)
refers only to metrics the code exports (the metric objects of :mod:`service.metrics`
and the families of :mod:`service.experiments.collector`), or to Prometheus's own ``up``;
a misspelled metric is caught. That every query returns data from a real Prometheus:
tests/e2e/test_dashboards_prometheus.py.
"""

from __future__ import annotations

import json
import re

import pytest
from grafana_dashboards import ALL_QUERIES, DASHBOARDS, ROOT, panels

#: series Prometheus makes itself
PROMETHEUS_BUILTIN = {"up"}

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
            "or", "unless", "offset", "inf", "nan"}


def metric_names(promql: str) -> set[str]:
    """The metric names a PromQL expression (or ``label_values(metric, label)``) reads.

    Examples
    --------
    >>> sorted(metric_names('sum by (le) (rate(a_bucket{x="y", z=~"1.."}[$__rate_interval]))'
    ...                     ' / scalar(sum(b_total{e="$e"})) or vector(0)'))
    ['a_bucket', 'b_total']
    >>> sorted(metric_names('label_values(rankduel_experiment_info, experiment)'))
    ['rankduel_experiment_info']
    """
    m = re.fullmatch(r"\s*label_values\(\s*([A-Za-z_:][\w:]*)\s*,\s*\w+\s*\)\s*", promql)
    if m:
        return {m.group(1)}
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', "", promql)  # strings
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ",
                  text)  # label lists
    names = set()
    for tok in re.finditer(r"(?<![\w$.])([A-Za-z_:][\w:]*)(\s*\()?", text):
        name, call = tok.group(1), tok.group(2)
        if not call and name.lower() not in KEYWORDS:
            names.add(name)
    return names


def exported_names() -> set[str]:
    """Every sample name the code can export."""
    from prometheus_client import Counter, Gauge, Histogram, Summary

    from service import metrics
    from service.experiments import families as collector

    out = set(collector.exported_names())
    for obj in vars(metrics).values():
        if isinstance(obj, Counter):
            out |= {obj._name + "_total", obj._name + "_created"}
        elif isinstance(obj, Histogram | Summary):
            out |= {obj._name + s for s in ("_bucket", "_sum", "_count", "_created")}
        elif isinstance(obj, Gauge):
            out.add(obj._name)
    return out


def test_dashboards_cover_both_concerns():
    uids = {json.loads(d.read_text())["uid"]: d.name for d in DASHBOARDS}
    assert uids == {"rankduel-experiment": "experiment.json", "rankduel-service": "service.json"}
    titles = {p["title"] for d in DASHBOARDS for p in panels(json.loads(d.read_text()))}
    for wanted in ("Cumulative regret", "Champion", "Rankers", "Elimination timeline",
                   "Pairwise preference heatmap", "Traffic share per ranker",
                   "Requests per second by endpoint", "/search latency",
                   "Error responses by status", "Click-to-credit lag",
                   "Queue depth and backlog"):
        assert wanted in titles


def test_panels_use_the_provisioned_datasource():
    import yaml

    prov = yaml.safe_load(
        (ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml").read_text())
    uid = prov["datasources"][0]["uid"]
    for d in DASHBOARDS:
        for p in panels(json.loads(d.read_text())):
            assert p["datasource"]["uid"] == uid, p["title"]
            assert p["targets"], p["title"]
            for t in p["targets"]:
                assert t["datasource"]["uid"] == uid, p["title"]


@pytest.mark.parametrize(("where", "promql"), ALL_QUERIES, ids=[w for w, _ in ALL_QUERIES])
def test_query_refers_to_exported_metrics(where, promql):
    names = metric_names(promql)
    assert names, f"{where}: no metric found in {promql!r}"
    unknown = names - exported_names() - PROMETHEUS_BUILTIN
    assert not unknown, f"{where}: {sorted(unknown)} are not exported"


def test_a_misspelled_metric_is_caught():
    names = metric_names('sum(rate(rankduel_http_request_total{status="200"}[5m]))')
    assert names == {"rankduel_http_request_total"}
    assert names - exported_names() == names
