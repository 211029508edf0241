"""Archiving a stopped experiment (issue 49; service/experiments/archive.py): its
per-user and per-impression data freed, its state, report, verdicts and timeline kept."""

from __future__ import annotations

from tests.service.test_workers_credit import all_credited, rankers_for, wait_for


def test_an_archive_keeps_the_record_and_frees_the_rest(client, worker, rd, ranker_server):
    exp = client.create_experiment(name="archive", rankers=rankers_for(
        ranker_server, "good", "bad"), algorithm="uniform", interleaving="team_draft")
    exp_id = exp["id"]
    for i in range(30):
        page = client.search(exp_id, f"q{i}", k=3, user=f"user-{i}")
        client.click(page, [(page["results"][0]["id"], 1)])
        client.end(page)
    state = wait_for(all_credited(client, exp_id), what="every impression credited")
    status, body = client.request("POST", f"/experiments/{exp_id}/archive", admin=True)
    assert status == 409 and "stop it first" in body["error"], body
    client.request("POST", f"/experiments/{exp_id}/stop", admin=True)
    report = client.request("GET", f"/experiments/{exp_id}/report", admin=True)[1]
    keys_before = {k.decode() for k in rd.scan_iter(match=f"rd:{{{exp_id}}}*")}
    assert any(":imp:" in k for k in keys_before) and any(
        k.endswith(":events") for k in keys_before)

    status, record = client.request("POST", f"/experiments/{exp_id}/archive", admin=True)
    assert status == 200, record
    kept = {k.decode() for k in rd.scan_iter(match=f"rd:{{{exp_id}}}*")}
    # what remains: the state, W, the counts, the timeline; no impression, click, event
    # (a drain lease the sweep takes after the archive is one member, expiring)
    suffixes = sorted(k[len(f"rd:{{{exp_id}}}"):] for k in kept - {f"rd:{{{exp_id}}}:drains"})
    assert set(suffixes) <= {"", ":W", ":ties", ":segments", ":metrics", ":counters",
                             ":shown", ":health", ":t", ":audit", ":history", ":hooks",
                             ":outbox", ":ab:m", ":ab:decided"}, suffixes
    assert {"", ":W", ":counters", ":audit"} <= set(suffixes)
    assert record["before"]["keys"] == len(keys_before)
    assert record["kept"]["keys"] + record["freed"]["keys"] == len(keys_before)
    assert record["kept"]["keys"] <= 12 < len(keys_before)
    assert record["kept"]["bytes"] < record["before"]["bytes"]
    assert record["report"]["verdict"] == report["verdict"]
    after = client.experiment(exp_id)  # the state reads as before
    assert after["W"] == state["W"] and after["lifecycle"] == "stopped"
    assert after["counters"]["impressions"] == 30
    audit = client.request("GET", f"/experiments/{exp_id}/audit", admin=True)[1]["audit"]
    assert audit[-1]["action"] == "archived"
    assert client.request("GET", f"/experiments/{exp_id}/report", admin=True)[0] == 200
    again = client.request("POST", f"/experiments/{exp_id}/archive", admin=True)[1]
    assert again["archived_at"] == record["archived_at"]  # archiving again: the same
    got = client.request("GET", f"/experiments/{exp_id}/archive", admin=True)[1]
    assert got["kept"] == record["kept"] and got["freed"] == record["freed"]
    print(f"archive: {record['before']} -> {record['kept']}")


def test_an_experiment_not_archived_says_how(client, ranker_server):
    exp = client.create_experiment(name="live", rankers=rankers_for(
        ranker_server, "good", "bad"), algorithm="uniform", interleaving="team_draft")
    status, body = client.request("GET", f"/experiments/{exp['id']}/archive", admin=True)
    assert status == 404 and "/archive once it is stopped" in body["error"], body
    assert client.request("GET", "/experiments/nope/archive", admin=True)[0] == 404
    assert client.request("GET", f"/experiments/{exp['id']}/archive")[0] == 401
