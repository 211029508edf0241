"""Faults under load, the short forms of ``bench/faults.py`` (issue 11).

The whole platform as deployed on loopback (:class:`demo.faults.Platform`: Redis with its
append-only file, ``rankduel serve`` under gunicorn, ``rankduel worker`` with the sweep,
a ranker that can be told to fail) under 4 simulated users. Each test injects one fault
(those ``tests/test_worker_faults.py`` does not already cover under load), keeps the
load on for a few seconds, pauses it, and checks: no 5xx but the documented ones (503
while Redis cannot answer), the pending set drained, W's total equal to what the stored
impressions give (forfeits plus decisive duels: no credited click lost, none counted
twice), and a successful search soon after the fault ended. Every wait is for a
condition; the only sleeps are the faults' own durations.
"""

from __future__ import annotations

import pytest

from demo.faults import FAULTS, Platform, run_fault

#: seconds of load after each fault (the long form uses 20)
LOAD_S = 2.0


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    # a Redis call of a starved 2-core test machine may wait for a core longer than the
    # 250 ms default read timeout, and answer 503 outside the Redis faults (twice of 414
    # searches under the 3 MB answers, once in ~15 suite runs): 1 s, as conftest's
    # services; the Redis faults still answer 503, and the bench keeps the default
    p = Platform(tmp_path_factory.mktemp("faults-load"), users=4,
                 env={"RANKDUEL_REDIS_TIMEOUT_MS": "1000"})
    yield p
    p.close()


@pytest.mark.parametrize("fault", [
    "gunicorn worker SIGKILL",
    "ranker hangs 5 s",
    "ranker answers 500 for 5 s",
    "ranker answers invalid JSON 5 s",
    "ranker answers 3 MB JSON 5 s",
    "Redis SIGSTOP 5 s",
    "worker SIGKILL + restart",
])
def test_fault_under_load_loses_nothing(platform, fault):
    row = run_fault(platform, fault, LOAD_S)
    _, allowed = FAULTS[fault]
    assert not row["undocumented_5xx"], row
    assert set(row["5xx"]) <= {str(s) for s in allowed}, row
    assert row["lost"] == 0 and row["double"] == 0, row
    assert row["w_total"] == row["decisive"] == row["decisive_counted"], row
    assert row["searches"] > 0, row
    # generous on a busy 2-core machine: the figures measured are in BENCHMARKS.md
    assert row["recovery_s"] < 30, row


def test_end_answers_202_when_the_broker_is_away(api, ranker_server, rd):
    """The broker unreachable when /end queues the drain (it was a 500 in the Redis
    restart storm): the impression is closed and due, the drain lease is given back, and
    the answer is 202 — the sweep queues the drain once the broker is back."""
    from conftest import ADMIN
    from helpers.api import rankers_for

    from demo.client import Client
    from demo.stack import free_port
    from demo.wsgi_server import ThreadedServer
    from service.app import create_app
    from service.store.keys import drains_key, pending_key

    dead = f"redis://127.0.0.1:{free_port()}/0"
    server = ThreadedServer(create_app(api.config.replace(broker_url=dead)))
    try:
        client = Client(server.url, ADMIN, timeout=30)
        exp = client.create_experiment(name="no-broker", algorithm="uniform",
                                       interleaving="team_draft",
                                       rankers=rankers_for(ranker_server, "good", "bad"))
        page = client.search(exp["id"], "q", k=3)
        status, body = client.request("POST", f"/impressions/{page['impression_id']}/end",
                                      {"token": page["token"]})
        assert status == 202 and body["status"] == "closed", body
        assert rd.zcard(drains_key(exp["id"])) == 0  # the lease given back
        assert rd.zscore(pending_key(exp["id"]), page["impression_id"]) is not None
    finally:
        server.close()
