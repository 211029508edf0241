"""What outlives its use is bounded by ``RANKDUEL_RETENTION_S`` (issue 49;
service/store/retention.py): the split check's users kept per generation, exact within
the window; the event log and the outbox trimmed by time."""

from __future__ import annotations

import secrets
import time

from tests.service.test_workers_credit import rankers_for


def test_split_users_are_kept_per_generation(rd):
    from service.store import Store
    from service.store.keys import split_seen_key, split_users_key

    clock = [95.0]
    store = Store(rd, clock=lambda: clock[0])
    name = f"gen-{secrets.token_hex(3)}"
    rd.sadd(split_seen_key(name), "old")  # the layout before generations

    def count(*users: str) -> int:
        return store.splits.count_split(name, {(1, "control"): len(users)},
                                        {(1, "control"): set(users)}, retention_s=30)

    assert count("a", "b", "old") == 2  # "old" was seen before generations
    assert 0 < rd.ttl(split_seen_key(name)) <= 30 * 2 + 60  # the old set expires too
    clock[0] = 100.0
    assert count("a") == 0  # same generation
    clock[0] = 125.0  # the next generation: "a" seen 30 s ago is known, and kept
    assert count("a") == 0
    clock[0] = 155.0  # two generations on: "a" (seen at 125) known, "b" (95) new again
    assert count("a", "b") == 1
    assert int(rd.hget(split_users_key(name), "1|control")) == 3
    ttl = rd.ttl(f"{split_seen_key(name)}:5")
    assert 0 < ttl <= (5 + 2) * 30 - 155 + 60  # to the end of the next generation


def test_the_event_log_and_outbox_are_trimmed_by_time(client, rd, ranker_server):
    from service.store import Store
    from service.store.keys import events_key

    exp = client.create_experiment(name="retention", rankers=rankers_for(
        ranker_server, "good", "bad"), algorithm="uniform", interleaving="team_draft")
    for i in range(5):
        client.search(exp["id"], f"q{i}", k=3)
    key = events_key(exp["id"])
    assert rd.xlen(key) == 5
    store = Store(rd)
    store.retention.trim_streams(retention_s=3600)  # every event is recent: none goes
    assert rd.xlen(key) == 5
    store.retention.trim_streams(retention_s=3600, now=time.time() + 3600 + 60)  # an hour later
    assert rd.xlen(key) == 0
    assert client.experiment(exp["id"])["counters"]["impressions"] == 5  # counts stay
