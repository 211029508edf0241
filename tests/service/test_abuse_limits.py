"""Abuse limits and closed doors (issue 11): click-report limits per client and per
impression (429), the ranker allow-list, ``/metrics`` behind a token, ``DELETE
/experiments/ID``, and the sweep's due index.

Each runs against the app on a real loopback port with the session's real Redis (the
sweep-index tests on a Redis of their own, whose command counts nothing else touches).
"""

from __future__ import annotations

import time

import pytest
import redis
from conftest import ADMIN
from helpers.api import rankers_for
from test_service_api import assert_error

from demo.client import Client
from demo.stack import Stack, wait_until
from demo.wsgi_server import ThreadedServer
from service.app import create_app
from service.store import Store
from service.store.keys import DUE, experiment_pattern


@pytest.fixture
def app_with(api):
    """A second app on the session's Redis with some settings changed."""
    servers: list[ThreadedServer] = []

    def start(**changes) -> Client:
        server = ThreadedServer(create_app(api.config.replace(**changes)))
        servers.append(server)
        return Client(server.url, ADMIN)

    yield start
    for s in servers:
        s.close()


def _exp(client: Client, ranker_server, **body) -> dict:
    return client.create_experiment(name="limits", algorithm="uniform",
                                    interleaving="team_draft", seed=11,
                                    rankers=rankers_for(ranker_server, "good", "bad"), **body)


# ---------------------------------------------------------------------- /metrics
def test_metrics_need_the_metrics_token_or_the_admin_token(api, app_with):
    anonymous = Client(api.url)
    assert_error(anonymous.request("GET", "/metrics"), 401, "missing Authorization")
    # one 401 for a missing, wrong, revoked or expired key (issue 48)
    assert_error(anonymous.request("GET", "/metrics",
                                   headers={"Authorization": "Bearer wrong"}),
                 401, "missing Authorization or an invalid key")
    status, text = anonymous.request("GET", "/metrics",
                                     headers={"Authorization": f"Bearer {ADMIN}"})
    assert status == 200 and "rankduel_http_requests_total" in text

    scraper = app_with(metrics_token="scrape-token-0123456789")
    ok = scraper.request("GET", "/metrics",
                         headers={"Authorization": "Bearer scrape-token-0123456789"})
    assert ok[0] == 200
    # the metrics token opens /metrics only, never the operator API: a valid key outside
    # its scope is 403, naming the scope needed (issue 48)
    assert_error(scraper.request("GET", "/experiments", headers={
        "Authorization": "Bearer scrape-token-0123456789"}), 403, "needs scope 'read'")


# ---------------------------------------------------------------------- ranker allow-list
@pytest.mark.parametrize("url", [
    "http://127.0.0.1:6379/", "http://localhost:1/", "http://169.254.169.254/latest/",
    "http://10.0.0.1/", "http://192.168.1.1:8000/", "http://0.0.0.0:80/",
])
def test_internal_ranker_urls_are_refused_by_default(app_with, url):
    strict = app_with(ranker_allow="")
    body = {"name": "x", "algorithm": "uniform", "interleaving": "team_draft",
            "rankers": [{"name": "a", "url": url}, {"name": "b", "url": url}]}
    assert_error(strict.request("POST", "/experiments", body, admin=True), 422,
                 "rankers[0].url", "RANKDUEL_RANKER_ALLOW")


def test_allow_list_entries_open_hosts_and_networks(app_with, ranker_server):
    for allow in ("127.0.0.1", "127.0.0.0/8", "*"):
        client = app_with(ranker_allow=allow)
        assert _exp(client, ranker_server)["id"]
    # adding a ranker mid-run is checked the same way
    client = app_with(ranker_allow="")
    exp = _exp(app_with(ranker_allow="127.0.0.1"), ranker_server)
    assert_error(client.request("POST", f"/experiments/{exp['id']}/rankers",
                                {"name": "c", "url": f"{ranker_server.url}/r/mid"},
                                admin=True), 422, "RANKDUEL_RANKER_ALLOW")


def test_every_connection_is_checked_not_only_the_added_url(app_with, ranker_server, rd):
    """A ranker allowed when added, on an address the rule no longer allows when fetched
    (as after a DNS change): refused at connect time, never fetched; this process's
    configuration, not counted against the ranker (no strike, no forfeit)."""
    exp = _exp(app_with(ranker_allow="127.0.0.1"), ranker_server, probe=False)
    strict = app_with(ranker_allow="")
    status, body = strict.request("GET", f"/search?experiment={exp['id']}&q=x")
    assert_error((status, body), 502, "no ranker", "allow-list", "RANKDUEL_RANKER_ALLOW")
    assert "127.0.0.1" not in body["error"]  # no upstream detail for the client
    assert not rd.hgetall(f"rd:{{{exp['id']}}}:health")  # no failure counted
    _, text = strict.request("GET", "/metrics", admin=True)
    refused = [line for line in text.splitlines()
               if line.startswith("rankduel_ranker_failures_total{")
               and f'experiment="{exp["id"]}"' in line and 'reason="refused"' in line]
    assert len(refused) == 2, refused  # both rankers, each refused at connect time


# ---------------------------------------------------------------------- /clicks limits
def _early_in_a_window(margin_s: float = 15.0) -> None:
    """Wait until the current fixed one-minute window of the click limit has at least
    ``margin_s`` left, so a short sequence of reports falls in one window (a boundary in
    the middle would reset the count and make the test's claim false by chance)."""
    wait_until(lambda: time.time() % 60 < 60 - margin_s, 20, "the start of a fresh window")


def test_click_reports_per_client_are_limited(app_with, ranker_server):
    # the impression stays open while its clicks are sent (the session's inactivity is
    # 1.5 s, and a busy machine can take longer between the search and the reports)
    client = app_with(clicks_per_client_per_minute=5, trusted_proxies=1, inactivity_s=600.0)
    exp = _exp(client, ranker_server)
    _early_in_a_window()
    page = client.search(exp["id"], "q", k=4)
    body = {"impression_id": page["impression_id"], "token": page["token"],
            "clicks": [{"id": page["results"][0]["id"], "rank": 1}]}
    me = {"X-Forwarded-For": "198.51.100.7"}
    statuses = [client.request("POST", "/clicks", body, headers=me)[0] for _ in range(5)]
    assert statuses == [202] * 5
    status, err = client.request("POST", "/clicks", body, headers=me)
    assert_error((status, err), 429, "click reports per minute")
    # another client (another address behind the same trusted proxy) is not affected
    other = {"X-Forwarded-For": "198.51.100.8"}
    assert client.request("POST", "/clicks", body, headers=other)[0] == 202
    # a spoofed left-most entry does not escape the limit: only the proxy's entry counts
    spoof = {"X-Forwarded-For": "203.0.113.1, 198.51.100.7"}
    assert client.request("POST", "/clicks", body, headers=spoof)[0] == 429


def test_retry_after_is_sent_with_429(app_with, ranker_server):
    import http.client
    import json
    from urllib.parse import urlsplit

    client = app_with(clicks_per_client_per_minute=1, inactivity_s=600.0)
    exp = _exp(client, ranker_server)
    _early_in_a_window()
    page = client.search(exp["id"], "q", k=2)
    body = json.dumps({"impression_id": page["impression_id"], "token": page["token"],
                       "clicks": [{"id": page["results"][0]["id"], "rank": 1}]})
    parts = urlsplit(client.base_url)
    seen = []
    for _ in range(2):
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        conn.request("POST", "/clicks", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        seen.append((resp.status, resp.getheader("Retry-After")))
        resp.read()
        conn.close()
    assert seen[0] == (202, None)
    assert seen[1][0] == 429 and 1 <= int(seen[1][1]) <= 60, seen


def test_a_click_storm_on_one_impression_changes_nothing(app_with, ranker_server, rd):
    client = app_with(clicks_per_impression=3, clicks_per_client_per_minute=0)
    exp = _exp(client, ranker_server)
    page = client.search(exp["id"], "q", k=4)
    imp = page["impression_id"]

    def report(rank: int):
        return client.request("POST", "/clicks", {
            "impression_id": imp, "token": page["token"],
            "clicks": [{"id": page["results"][rank - 1]["id"], "rank": rank}]})

    assert [report(1)[0], report(1)[0], report(2)[0]] == [202, 202, 202]
    before = rd.smembers(f"rd:{{{exp['id']}}}:imp:{imp}:clicks")
    deadline_before = rd.zscore(f"rd:{{{exp['id']}}}:pending", imp)
    for _ in range(20):
        assert_error(report(3), 429, "limit of 3 click reports")
    # the refused reports recorded nothing and did not push the credit back
    assert rd.smembers(f"rd:{{{exp['id']}}}:imp:{imp}:clicks") == before == {b"0", b"1"}
    assert rd.zscore(f"rd:{{{exp['id']}}}:pending", imp) == deadline_before


# ---------------------------------------------------------------------- DELETE
def test_delete_experiment_removes_every_key(client, ranker_server, rd, worker):
    exp = _exp(client, ranker_server)
    for n in range(4):
        page = client.search(exp["id"], f"q{n}", k=3)
        client.click(page, [(page["results"][0]["id"], 1)])
        if n % 2:
            client.end(page)
    assert list(rd.scan_iter(match=experiment_pattern(exp["id"])))

    assert_error(Client(client.base_url).request("DELETE", f"/experiments/{exp['id']}"),
                 401, "missing Authorization")
    status, body = client.request("DELETE", f"/experiments/{exp['id']}", admin=True)
    assert status == 200 and body["id"] == exp["id"] and body["deleted"] is True
    assert body["keys"] >= 4, body

    def nothing_left() -> bool:
        # a drain that was running may still write once (its lease); it then stops
        return not list(rd.scan_iter(match=experiment_pattern(exp["id"])))

    wait_until(nothing_left, 30, "every key of the deleted experiment gone")
    assert rd.zscore(DUE, exp["id"]) is None
    assert exp["id"] not in {e["id"] for e in client.experiments()}
    assert_error(client.request("GET", f"/experiments/{exp['id']}", admin=True), 404)
    assert_error(client.request("GET", f"/search?experiment={exp['id']}&q=x"), 404)
    assert_error(client.request("DELETE", f"/experiments/{exp['id']}", admin=True), 404,
                 "no experiment")


def test_the_state_collector_forgets_a_deleted_experiment(client, ranker_server):
    exp = _exp(client, ranker_server)
    client.search(exp["id"], "q", k=2)
    label = f'experiment="{exp["id"]}"'

    def state_series() -> list[str]:
        _, text = client.request("GET", "/metrics", admin=True)
        return [line for line in text.splitlines()
                if line.startswith("rankduel_experiment_") and label in line]

    assert state_series()
    assert client.request("DELETE", f"/experiments/{exp['id']}", admin=True)[0] == 200
    assert state_series() == []


def test_a_search_running_during_delete_leaves_nothing(client, ranker_server, rd):
    """A search waiting for its (slow) rankers while its experiment is deleted: it answers
    404 and writes nothing (no pending set, counters or impression without an owner)."""
    import threading

    slow = [{"name": n, "url": f"{ranker_server.url}/r/slow", "timeout_ms": 6000}
            for n in ("s1", "s2")]
    exp = client.create_experiment(name="racing", algorithm="uniform", seed=5,
                                   interleaving="team_draft", rankers=slow, probe=False)
    answer: list = []
    search = threading.Thread(target=lambda: answer.append(
        client.request("GET", f"/search?experiment={exp['id']}&q=x")))
    search.start()
    # the search has taken its step (t) and now waits 1.5 s for the rankers
    wait_until(lambda: rd.exists(f"rd:{{{exp['id']}}}:t"), 10, "the search selected")
    assert client.request("DELETE", f"/experiments/{exp['id']}", admin=True)[0] == 200
    search.join(30)
    assert_error(answer[0], 404, "no experiment")
    assert list(rd.scan_iter(match=experiment_pattern(exp["id"]))) == []
    assert rd.zscore(DUE, exp["id"]) is None


def test_writes_of_the_request_path_refuse_a_deleted_experiment(client, ranker_server, rd):
    """What a running search may still write after DELETE (an impression, a ranker's
    failure, an audit entry) writes nothing once the experiment is gone."""
    from service.store import audit_entry
    from service.store.keys import new_impression_id
    from service.store.snapshot import ExperimentMissing

    exp = _exp(client, ranker_server)
    assert client.request("DELETE", f"/experiments/{exp['id']}", admin=True)[0] == 200
    store = Store(rd)
    with pytest.raises(ExperimentMissing):
        store.impressions.save_impression(new_impression_id(exp["id"]), exp_id=exp["id"], t=1,
                                          arms=[0, 1], shown=["d00"], record=None, duel=False,
                                          forfeits=[], token_expires=0, ttl_s=60, inactivity_s=1,
                                          counters={"impressions": 1})
    assert store.ranker_health.ranker_failed(
        exp["id"], 0, threshold=1, quarantine_s=5) == (0, False)
    store.experiments.add_audit(exp["id"], audit_entry(1.0, "ranker_quarantined", actor="service"))
    assert list(rd.scan_iter(match=experiment_pattern(exp["id"]))) == []
    assert rd.zscore(DUE, exp["id"]) is None


def test_a_deleted_experiments_leftovers_are_purged_by_its_drain(client, ranker_server, rd,
                                                                 worker):
    """Leftovers of a deleted experiment (what a request running during the DELETE of an
    older version could leave: a pending impression, counters, a drain lease, an index
    entry) are removed by the first drain the sweep queues for it, which credits nothing;
    the sweep then forgets it (no drain queued again and again)."""
    exp = _exp(client, ranker_server)
    e = exp["id"]
    assert client.request("DELETE", f"/experiments/{e}", admin=True)[0] == 200
    imp = f"{e}.{'ab' * 12}"
    rd.hset(f"rd:{{{e}}}:imp:{imp}", mapping={"exp": e, "arms": "[0, 1]", "closed": 1})
    rd.expire(f"rd:{{{e}}}:imp:{imp}", 600)
    rd.zadd(f"rd:{{{e}}}:pending", {imp: 1.0})
    rd.hincrby(f"rd:{{{e}}}:counters", "impressions", 1)
    rd.zadd(DUE, {e: 1.0})
    wait_until(lambda: not list(rd.scan_iter(match=experiment_pattern(e))), 60,
               "the deleted experiment's leftovers purged")
    wait_until(lambda: rd.zscore(DUE, e) is None, 30, "the experiment out of the index")


# ---------------------------------------------------------------------- sweep index
@pytest.fixture
def own_redis(tmp_path):
    with Stack(tmp_path) as stack:
        url = stack.start_redis()
        client = redis.Redis.from_url(url)
        yield client
        client.close()


def _command_calls(r: redis.Redis, name: str) -> int:
    return int(r.info("commandstats").get(f"cmdstat_{name}", {}).get("calls", 0))


def test_sweep_reads_only_the_experiments_the_index_lists(own_redis):
    """1,000 experiments, impressions pending on three, one of them due: the sweep's
    scan reads that one (plus the other two listed in the index), not 1,000."""
    clock = [1_000.0]
    store = Store(own_redis, clock=lambda: clock[0])
    pipe = own_redis.pipeline()
    for n in range(1000):
        pipe.zadd("rd:experiments", {f"e{n:04d}": n})
    pipe.execute()
    for n, due_in in ((10, 5.0), (20, 50.0), (30, 500.0)):
        e = f"e{n:04d}"
        own_redis.zadd(f"rd:{{{e}}}:pending", {f"{e}.imp": clock[0] + due_in})
        store.drains.mark_due(e, clock[0] + due_in)
    assert store.drains.experiments_with_due() == []  # nothing is due yet
    clock[0] += 10
    own_redis.config_resetstat()
    assert store.drains.experiments_with_due() == ["e0010"]
    assert _command_calls(own_redis, "zrange") == 1  # only the due one was read
    # the index follows the pending set: e0010 stays listed at its impression's time
    assert own_redis.zscore(DUE, "e0010") == 1_005.0

    # a full scan reads all 1,000 and rebuilds the index from the pending sets
    own_redis.delete(DUE)
    own_redis.config_resetstat()
    assert store.drains.experiments_with_due(full=True) == ["e0010"]
    assert _command_calls(own_redis, "zrange") == 1 + 1000  # the list, then each
    assert {k.decode(): v for k, v in own_redis.zrange(DUE, 0, -1, withscores=True)} == {
        "e0010": 1_005.0, "e0020": 1_050.0, "e0030": 1_500.0}
    # credited: the experiment leaves the index at its next scan
    own_redis.delete("rd:{e0010}:pending")
    assert store.drains.experiments_with_due() == []
    assert own_redis.zscore(DUE, "e0010") is None


def test_marks_are_written_once_a_second_unless_earlier(own_redis):
    clock = [50.0]
    store = Store(own_redis, clock=lambda: clock[0])
    own_redis.config_resetstat()
    for _ in range(100):  # a busy experiment: its impressions' due times only grow
        store.drains.mark_due("busy", clock[0] + 30)
        clock[0] += 0.001
    assert _command_calls(own_redis, "zadd") == 1
    store.drains.mark_due("busy", clock[0])  # an /end: due now, earlier than the mark
    assert own_redis.zscore(DUE, "busy") == pytest.approx(clock[0])
    assert _command_calls(own_redis, "zadd") == 2


def test_impressions_without_end_are_credited_through_the_index(client, ranker_server, rd,
                                                                 worker):
    """End to end: a search whose user never comes back is credited once it is idle
    (inactivity 1.5 s in the test config), found by the sweep through the index."""
    exp = _exp(client, ranker_server)
    page = client.search(exp["id"], "q", k=4)
    client.click(page, [(page["results"][0]["id"], 1)])
    assert rd.zscore(DUE, exp["id"]) is not None
    pending = f"rd:{{{exp['id']}}}:pending"
    wait_until(lambda: not rd.zcard(pending), 60, "the idle impression credited")
    credited = rd.hget(f"rd:{{{exp['id']}}}:imp:{page['impression_id']}", "credited")
    assert credited and b'"status"' in credited, credited
