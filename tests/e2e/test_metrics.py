"""/metrics of a 3-worker gunicorn API and a Celery worker (pool of 2) after a reduced
demo-like run (tests/metrics_run.py): the values agree with what the run did.

Everything is counted exactly, so the comparisons are exact; the only tolerance is for
the true regret, a float sum accumulated in a different order by the client and by
Redis (1e-6 relative).
"""

from __future__ import annotations

import os
import time

import pytest
from metrics_run import (  # noqa: F401
    ADMIN,
    FORGED_CLICKS,
    PHASES,
    get,
    metrics_run,
    samples,
    total,
)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def scraped(metrics_run):  # noqa: F811
    return samples(get(metrics_run.api_url + "/metrics")), samples(
        get(metrics_run.worker_metrics_url))


def _exp(run, found, name, **labels):
    return total(found, name, experiment=run.exp_id, **labels)


def test_run_was_clean(metrics_run):  # noqa: F811
    last = metrics_run.checkpoints[-1]
    assert last.errors == 0
    assert last.queries == sum(PHASES)


def test_request_counts_are_summed_over_gunicorn_workers(metrics_run, scraped):  # noqa: F811
    api, _ = scraped
    queries = metrics_run.checkpoints[-1].queries
    faults = metrics_run.fault_searches  # the deliberate failures of the run, by status
    for status in {200, *faults}:
        n = faults.get(status, 0) + queries * (status == 200)
        assert total(api, "rankduel_http_requests_total", endpoint="/search",
                     status=str(status)) == n
        assert total(api, "rankduel_http_request_duration_seconds_count", endpoint="/search",
                     status=str(status)) == n
    ends = [lab["endpoint"] for n, lab, _ in api
            if n == "rankduel_http_requests_total" and lab["endpoint"].endswith("/end")]
    assert ends, "no /impressions/<id>/end requests counted"
    assert total(api, "rankduel_http_requests_total", endpoint=ends[0]) == (
        queries + faults.get(200, 0))
    assert total(api, "rankduel_http_request_duration_seconds_count",
                 endpoint="/search") == queries + sum(faults.values())
    assert total(api, "rankduel_tokens_refused_total") == FORGED_CLICKS
    # the sum above is genuinely over several processes: at least two gunicorn workers
    # served searches (6 concurrent keep-alive clients spread over 3 workers)
    per_pid = _per_process(metrics_run.api_prom_dir, "rankduel_http_requests_total",
                           endpoint="/search", status="200")
    assert sum(per_pid.values()) == queries + faults.get(200, 0)
    assert sum(1 for v in per_pid.values() if v > 0) >= 2, per_pid


def test_experiment_counts_match_the_run(metrics_run, scraped):  # noqa: F811
    api, _ = scraped
    state = metrics_run.final_state
    c = state["counters"]
    queries = metrics_run.checkpoints[-1].queries
    decisive = _exp(metrics_run, api, "rankduel_experiment_decisive_impressions_total")
    assert decisive == c["decisive"] > 0
    # every decisive impression adds exactly one comparison (W's total grows by 1)
    assert _exp(metrics_run, api, "rankduel_experiment_comparisons_total") == decisive
    assert sum(map(sum, state["W"])) == pytest.approx(decisive)
    assert _exp(metrics_run, api, "rankduel_experiment_impressions_total") == queries
    assert _exp(metrics_run, api, "rankduel_experiment_credited_impressions_total") == queries
    assert _exp(metrics_run, api, "rankduel_experiment_selections_total") == queries
    assert _exp(metrics_run, api, "rankduel_experiment_ties_total") == c.get("ties", 0)
    assert (_exp(metrics_run, api, "rankduel_experiment_no_click_impressions_total")
            == c.get("no_clicks", 0))
    assert _exp(metrics_run, api, "rankduel_experiment_pending_impressions") == 0
    # per-process API counter of impressions served, summed over the workers
    assert total(api, "rankduel_impressions_total", experiment=metrics_run.exp_id) == queries


def test_regret_matches_the_run(metrics_run, scraped):  # noqa: F811
    api, _ = scraped
    true = _exp(metrics_run, api, "rankduel_experiment_true_regret")
    # the client's tally: Σ over impressions of (P[b,i] + P[b,j])/2 - 1/2
    assert true == pytest.approx(metrics_run.checkpoints[-1].true_regret, rel=1e-6)
    assert true > 0
    # the estimated regret, recomputed from the state the API reports: the champion's
    # empirical preference over each ranker, times the ranker's traffic
    state = metrics_run.final_state
    names = state["arms"]
    champ = names.index(state["champion"])
    p = state["preferences"]["p"][champ]
    traffic = {lab["ranker"]: v for n, lab, v in api if n == "rankduel_ranker_traffic_total"
               and lab["experiment"] == metrics_run.exp_id}
    expected = sum(traffic[name] * (p[a] - 0.5) for a, name in enumerate(names))
    # p is rounded to 4 decimals in the API's answer
    assert _exp(metrics_run, api, "rankduel_experiment_estimated_regret") == pytest.approx(
        expected, abs=1e-4 * sum(traffic.values()))
    assert sum(traffic.values()) == pytest.approx(metrics_run.checkpoints[-1].queries)


def test_ranker_state_matches_the_api(metrics_run, scraped):  # noqa: F811
    api, _ = scraped
    state = metrics_run.final_state
    e = metrics_run.exp_id
    champions = [lab["ranker"] for n, lab, v in api
                 if n == "rankduel_experiment_champion" and lab["experiment"] == e and v == 1]
    assert champions == [state["champion"]]
    statuses = {}
    for r in state["rankers"]:
        one_hot = {lab["status"]: v for n, lab, v in api if n == "rankduel_ranker_status"
                   and lab["experiment"] == e and lab["ranker"] == r["name"]}
        assert one_hot[r["status"]] == 1 and sum(one_hot.values()) == 1, (r, one_hot)
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        assert total(api, "rankduel_ranker_wins_total", experiment=e,
                     ranker=r["name"]) == pytest.approx(r["wins"])
        assert total(api, "rankduel_ranker_losses_total", experiment=e,
                     ranker=r["name"]) == pytest.approx(r["losses"])
        eliminated = [(lab["by"], v) for n, lab, v in api
                      if n == "rankduel_ranker_eliminated_at_comparison"
                      and lab["experiment"] == e and lab["ranker"] == r["name"]]
        if r["eliminated"]:
            assert eliminated == [(r["eliminated"]["by"], r["eliminated"]["step"])]
        else:
            assert eliminated == []
    for status in ("active", "eliminated", "retired"):
        assert _exp(metrics_run, api, "rankduel_experiment_rankers",
                    status=status) == statuses.get(status, 0)
    # the run eliminates rankers (the dashboards' elimination panels need some)
    assert statuses.get("eliminated", 0) >= 1
    shown = total(api, "rankduel_ranker_impressions_total", experiment=e)
    # a duel shows two rankers, a single-ranker impression one
    c = state["counters"]
    assert shown == 2 * c.get("duel", 0) + c.get("single", 0) + c.get("fallback", 0)
    pref = {(lab["ranker"], lab["opponent"]): v for n, lab, v in api
            if n == "rankduel_pair_preference" and lab["experiment"] == e}
    names = state["arms"]
    assert len(pref) == len(names) * (len(names) - 1)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if i != j:
                assert pref[a, b] == pytest.approx(state["preferences"]["p"][i][j], abs=1e-4)


def test_worker_metrics_sum_over_pool_processes(metrics_run, scraped):  # noqa: F811
    _, worker = scraped
    queries = metrics_run.checkpoints[-1].queries
    decisive = metrics_run.final_state["counters"]["decisive"]
    # each impression is credited once; its outcome and lag are observed once (the
    # worker's metrics cover every experiment: the main one and the faults one, whose
    # impressions are single-ranker, decisive only when "down" forfeited)
    from demo.client import Client

    faults = Client(metrics_run.api_url, ADMIN).experiment(metrics_run.faults_exp)["counters"]
    assert faults.get("forfeits", 0) == faults.get("decisive", 0) >= 1
    impressions = queries + metrics_run.fault_searches.get(200, 0)
    statuses = {lab["status"]: v for n, lab, v in worker if n == "rankduel_credit_tasks_total"}
    assert statuses.get("credited") == decisive + faults["decisive"]
    assert sum(v for s, v in statuses.items() if s not in ("already", "missing")) == impressions
    assert total(worker, "rankduel_click_to_credit_seconds_count") == impressions
    processed = total(worker, "rankduel_worker_tasks_processed_total")
    assert processed >= total(worker, "rankduel_worker_tasks_processed_total",
                              task="rankduel.drain") >= 1
    assert total(worker, "rankduel_worker_tasks_failed_total") == 0
    assert total(worker, "rankduel_worker_task_duration_seconds_count") == processed
    # both pool processes ran tasks (sweeps every 0.5 s and drains), and the exporter
    # in the main process summed them. Sweeps go on meanwhile, so the files and a scrape
    # are read together until one reading of both agrees (a sweep can land in between)
    name = "rankduel_worker_tasks_processed_total"
    deadline = time.monotonic() + 30
    while True:
        per_pid = _per_process(metrics_run.worker_prom_dir, name)
        live = total(samples(get(metrics_run.worker_metrics_url)), name)
        if sum(per_pid.values()) == live or time.monotonic() > deadline:
            break
    assert sum(per_pid.values()) == live >= processed
    assert sum(1 for v in per_pid.values() if v > 0) >= 2, per_pid


def test_ranker_failures_and_fallbacks(metrics_run, scraped):  # noqa: F811
    """The faults experiment: its ranker "down" refuses connections."""
    api, _ = scraped
    e = metrics_run.faults_exp
    failures = total(api, "rankduel_ranker_failures_total", experiment=e, ranker="down")
    fallbacks = total(api, "rankduel_fallbacks_total", experiment=e)
    forfeits = total(api, "rankduel_ranker_forfeits_total", experiment=e, ranker="down")
    quarantines = total(api, "rankduel_ranker_quarantines_total", experiment=e, ranker="down")
    # no search failed while r00 could answer: every search that called "down" was
    # served from r00 alone, a fallback (once quarantined, "down" is not chosen at all:
    # r00 is served alone as a single list)
    assert metrics_run.fault_searches.get(502, 0) == 0
    assert fallbacks >= failures >= 1
    # "down" forfeited to r00 whenever they were paired and it was called
    assert 1 <= forfeits <= failures
    # five consecutive failures put it in quarantine
    assert quarantines >= 1
    assert total(api, "rankduel_ranker_failures_total", ranker="r00") == 0
    assert total(api, "rankduel_impressions_total", experiment=e, kind="fallback") == fallbacks


def test_queue_depth_is_read_from_redis(metrics_run, scraped):  # noqa: F811
    api, _ = scraped
    assert [lab for n, lab, _ in api if n == "rankduel_queue_length"] == [{"queue": "rankduel"}]
    # nothing left to do after the run: at most a sweep waiting for a worker
    assert total(api, "rankduel_queue_length") <= 2
    assert total(api, "rankduel_state_scrape_errors") == 0


def test_api_answers_with_several_experiments_and_a_broken_one(metrics_run):  # noqa: F811
    """A corrupt experiment is counted as a scrape error, the others are still exported."""
    import redis

    from service.store.keys import EXPERIMENTS, exp_key

    client = redis.Redis.from_url(metrics_run.stack.redis_url)
    client.zadd(EXPERIMENTS, {"broken0": 0})
    client.hset(exp_key("broken0"), mapping={"meta": "{not json", "lifecycle": "running"})
    try:
        found = samples(get(metrics_run.api_url + "/metrics"))
        assert total(found, "rankduel_state_scrape_errors") == 1
        assert total(found, "rankduel_experiment_info", experiment=metrics_run.exp_id) == 1
    finally:
        client.zrem(EXPERIMENTS, "broken0")
        client.delete(exp_key("broken0"))
        client.close()


def _per_process(prom_dir, name: str, **labels: str) -> dict[str, float]:
    """Value of counter ``name`` in each process's multiprocess file."""
    from prometheus_client.multiprocess import MultiProcessCollector

    out = {}
    for f in sorted(os.listdir(prom_dir)):
        if not f.startswith("counter_"):
            continue
        fams = MultiProcessCollector.merge([os.path.join(prom_dir, f)], accumulate=True)
        out[f] = sum(s.value for fam in fams for s in fam.samples if s.name == name
                     and all(s.labels.get(k) == v for k, v in labels.items()))
    return out
