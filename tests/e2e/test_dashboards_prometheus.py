"""The Grafana dashboards' queries on a real Prometheus: every PromQL query (panel
targets and template variables), evaluated by a real Prometheus server (Debian's
``prometheus``, installed by ``scripts/test``) that scraped the API and the worker during
a reduced demo run (tests/metrics_run.py), returns data; and the regret and comparison
series have, at the end of each round of traffic, exactly the values the run produced.
The dashboards checked statically (their queries name exported metrics):
tests/unit/test_dashboards.py.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from grafana_dashboards import ALL_QUERIES
from metrics_run import metrics_run  # noqa: F401 - the shared run fixture

#: what Grafana substitutes for its interval variable when the test evaluates a query
#: (Grafana's $__rate_interval is at least 4 scrape intervals; the run scrapes every 1 s)
RATE_INTERVAL = "15s"


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
