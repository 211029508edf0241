"""The Grafana dashboards (deploy/grafana/dashboards/*.json).

* Every PromQL query (panel targets and template variables) refers only to metrics the
  code exports (the metric objects of :mod:`service.metrics` and the families of
  :mod:`service.experiments.collector`), or to Prometheus's own ``up``.
* Every query, evaluated by a real Prometheus server (Debian's ``prometheus``, installed
  by ``scripts/test``) that scraped the API and the worker during a reduced demo run
  (tests/metrics_run.py), returns data; and the regret and comparison series have, at
  the end of each round of traffic, exactly the values the run produced.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from metrics_run import metrics_run  # noqa: F401 - the shared run fixture

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "deploy/grafana/dashboards").glob("*.json"))
#: series Prometheus makes itself
PROMETHEUS_BUILTIN = {"up"}
#: what Grafana substitutes for its interval variable when the test evaluates a query
#: (Grafana's $__rate_interval is at least 4 scrape intervals; the run scrapes every 1 s)
RATE_INTERVAL = "15s"

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
            "or", "unless", "offset", "inf", "nan"}


def panels(dashboard: dict) -> list[dict]:
    out = []
    for p in dashboard.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []))  # collapsed rows keep their panels inside
    return out


def queries(dashboard: dict) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and query variable."""
    out = []
    for p in panels(dashboard):
        for t in p.get("targets", []):
            out.append((f"{dashboard['uid']}: {p['title']} [{t['refId']}]", t["expr"]))
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            out.append((f"{dashboard['uid']}: variable {v['name']}", q))
    return out


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
    from service.experiments import collector

    out = set(collector.exported_names())
    for obj in vars(metrics).values():
        if isinstance(obj, Counter):
            out |= {obj._name + "_total", obj._name + "_created"}
        elif isinstance(obj, Histogram | Summary):
            out |= {obj._name + s for s in ("_bucket", "_sum", "_count", "_created")}
        elif isinstance(obj, Gauge):
            out.add(obj._name)
    return out


ALL_QUERIES = [q for d in DASHBOARDS for q in queries(json.loads(d.read_text()))]


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


# ---------------------------------------------------------------------- real Prometheus
@pytest.fixture(scope="module")
def prom_run(metrics_run):  # noqa: F811
    if not metrics_run.prometheus_url:
        pytest.fail("the prometheus binary is not in PATH: run scripts/test, which "
                    "installs Debian's package")
    return metrics_run


def _substitute(promql: str, run) -> str:
    return promql.replace("$experiment", run.exp_id).replace("$__rate_interval",
                                                                   RATE_INTERVAL)


@pytest.mark.timeout(300)
def test_every_query_returns_data(prom_run):
    """At the end of the run (the last round's checkpoint) every query has a result,
    and a finite value at some checkpoint (a quantile of an idle histogram is NaN)."""
    empty, never_finite = [], []
    final = prom_run.checkpoints[-1].at
    for where, promql in ALL_QUERIES:
        m = re.fullmatch(r"label_values\((\w+), (\w+)\)", promql)
        if m:
            values = prom_run.prom(f"/api/v1/label/{m.group(2)}/values",
                                   **{"match[]": m.group(1)})
            if prom_run.exp_id not in values:
                empty.append(where)
            continue
        expr = _substitute(promql, prom_run)
        result = prom_run.prom("/api/v1/query", query=expr, time=final)["result"]
        if not result:
            empty.append(f"{where}: {expr}")
            continue
        finite = False
        for cp in prom_run.checkpoints:
            for r in prom_run.prom("/api/v1/query", query=expr, time=cp.at)["result"]:
                finite |= math.isfinite(float(r["value"][1]))
        if not finite:
            never_finite.append(f"{where}: {expr}")
    assert not empty, "queries without data:\n" + "\n".join(empty)
    assert not never_finite, "queries never finite:\n" + "\n".join(never_finite)


def test_both_targets_were_scraped(prom_run):
    for job in ("rankduel-api", "rankduel-worker"):
        assert prom_run.prom_value(f'up{{job="{job}"}}', prom_run.checkpoints[-1].at) == 1


def test_regret_and_comparisons_follow_the_run(prom_run):
    """The series Prometheus recorded have, at the end of each round, the values the run
    produced: true regret = the client's tally (float sums in different orders: 1e-6
    relative), comparisons = decisive impressions = what the API reported."""
    e = prom_run.exp_id
    cps = prom_run.checkpoints
    true_q = f'rankduel_experiment_true_regret{{experiment="{e}"}}'
    comp_q = f'rankduel_experiment_comparisons_total{{experiment="{e}"}}'
    decisive_q = f'rankduel_experiment_decisive_impressions_total{{experiment="{e}"}}'
    est_q = f'rankduel_experiment_estimated_regret{{experiment="{e}"}}'
    for cp in cps:
        assert prom_run.prom_value(true_q, cp.at) == pytest.approx(cp.true_regret, rel=1e-6)
        assert prom_run.prom_value(comp_q, cp.at) == cp.comparisons
        assert prom_run.prom_value(decisive_q, cp.at) == cp.decisive == cp.comparisons
        assert prom_run.prom_value(est_q, cp.at) is not None
    # each round of traffic added regret and comparisons
    assert all(a.true_regret < b.true_regret for a, b in itertools.pairwise(cps))
    assert cps[0].comparisons > 0 and cps[-1].comparisons > cps[0].comparisons

    # over the whole run, at every scrape: the true regret never decreases (every
    # impression adds (Δ_bi + Δ_bj)/2 >= 0 since the true best beats every ranker in
    # this world, asserted here), nor do the comparisons
    P, best = prom_run.run.P, prom_run.run.best
    assert np.all(P[best] >= 0.5)
    start = cps[0].at - 60
    for q in (true_q, comp_q):
        data = prom_run.prom("/api/v1/query_range", query=q, start=start, end=cps[-1].at,
                             step="1s")["result"]
        assert len(data) == 1, data
        values = [float(v) for _, v in data[0]["values"]]
        # one sample per scrape that landed in the window: how many depends on the
        # machine's speed, only that the series spans the rounds is asserted
        assert len(values) >= len(cps), values
        assert all(b >= a - 1e-9 for a, b in itertools.pairwise(values)), q
        assert values[-1] > values[0]
