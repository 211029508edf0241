"""``POST /experiments`` with ``Idempotency-Key``: a retried creation creates nothing new
(:mod:`service.experiments.idempotency`), against the real API and Redis."""

from __future__ import annotations

import threading
import uuid

import requests
from conftest import ADMIN


def _body(server, name: str, *rankers: str, timeout_ms: int = 3000) -> dict:
    return {"name": name, "algorithm": "uniform", "interleaving": "team_draft",
            "rankers": [{"name": r, "url": f"{server.url}/r/{r}", "timeout_ms": timeout_ms}
                        for r in rankers]}


def _post(api, body, key=None):
    headers = {"Authorization": f"Bearer {ADMIN}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return requests.post(f"{api.url}/experiments", json=body, headers=headers, timeout=60)


def _named(client, name: str) -> list[str]:
    return [e["id"] for e in client.experiments() if e["name"] == name]


def test_a_retry_with_the_same_key_and_body_answers_the_first_creation(api, client,
                                                                         ranker_server):
    name = f"idem-{uuid.uuid4().hex[:8]}"
    key = str(uuid.uuid4())
    body = _body(ranker_server, name, "good", "bad")
    first = _post(api, body, key)
    assert first.status_code == 201, first.text
    assert "Idempotent-Replayed" not in first.headers
    # the same body in another key order is the same request
    again = _post(api, dict(reversed(list(body.items()))), key)
    assert again.status_code == 200, again.text
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert _named(client, name) == [first.json()["id"]]
    # a different body under the same key: 422, saying so, and nothing created
    other = _post(api, {**body, "algorithm": "dts"}, key)
    assert other.status_code == 422
    assert "different body" in other.json()["error"] and key in other.json()["error"]
    assert _named(client, name) == [first.json()["id"]]
    # without the key, the same body creates another (names need not be unique)
    plain = _post(api, body)
    assert plain.status_code == 201 and plain.json()["id"] != first.json()["id"]
    assert sorted(_named(client, name)) == sorted([first.json()["id"], plain.json()["id"]])


def test_concurrent_creations_with_one_key_create_one_experiment(api, client, ranker_server):
    """Both requests overlap: the probe of the ``slow`` ranker takes 1.5 s."""
    name = f"idem-race-{uuid.uuid4().hex[:8]}"
    key = str(uuid.uuid4())
    body = _body(ranker_server, name, "good", "slow")
    start = threading.Barrier(2)
    answers: list[requests.Response] = []

    def go():
        start.wait()
        answers.append(_post(api, body, key))

    threads = [threading.Thread(target=go) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert sorted(a.status_code for a in answers) == [200, 201], [a.text for a in answers]
    assert answers[0].json()["id"] == answers[1].json()["id"]
    assert _named(client, name) == [answers[0].json()["id"]]


def test_a_failed_creation_gives_its_key_up_and_bad_keys_are_refused(api, client,
                                                                    ranker_server):
    name = f"idem-fail-{uuid.uuid4().hex[:8]}"
    key = str(uuid.uuid4())
    broken = _body(ranker_server, name, "good", "broken")  # the probe refuses it: 422
    r = _post(api, broken, key)
    assert r.status_code == 422 and "broken" in r.json()["error"]
    fixed = _body(ranker_server, name, "good", "bad")
    r = _post(api, fixed, key)  # the corrected retry may reuse the key
    created = r.json()["id"]
    assert r.status_code == 201 and _named(client, name) == [created]
    for bad in ("x" * 256, "caf\u00e9"):
        r = _post(api, fixed, bad.encode("utf-8").decode("latin-1"))
        assert r.status_code == 400 and "Idempotency-Key" in r.json()["error"]
    assert _named(client, name) == [created]


def test_a_key_whose_experiment_was_deleted_answers_404(api, client, ranker_server):
    key = str(uuid.uuid4())
    body = _body(ranker_server, f"idem-del-{uuid.uuid4().hex[:8]}", "good", "bad")
    exp_id = _post(api, body, key).json()["id"]
    requests.delete(f"{api.url}/experiments/{exp_id}",
                    headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)
    r = _post(api, body, key)
    assert r.status_code == 404 and exp_id in r.json()["error"]
