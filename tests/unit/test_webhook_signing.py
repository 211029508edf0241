"""Webhooks without a server: the signature round trip (what a receiver runs, as
docs/webhooks.md shows it), the payload's fields, the backoff."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time

from service.webhooks import signing
from service.webhooks.delivery import backoff, headers_for
from service.webhooks.payloads import EVENTS, body, make

SECRET = "whsec-test-0123456789abcdef"


def receiver_verifies(secret: str, raw: bytes, header: str, tolerance_s: int = 300) -> bool:
    """The receiver's check, written from the documented scheme alone (not with the
    service's code): ``t=<unix>,v1=<hex HMAC-SHA256(secret, f"{t}.{body}")>``."""
    fields = dict(part.split("=", 1) for part in header.split(","))
    t = int(fields["t"])
    if abs(time.time() - t) > tolerance_s:
        return False
    expected = hmac.new(secret.encode(), f"{t}.".encode() + raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["v1"])


def test_a_signed_delivery_verifies_and_a_changed_one_does_not():
    event = make("guardrail_tripped", "3fa2", "checkout", {
        "rule": "error_rate", "ranker": "neural", "reason": "errors 12 % > 5 %",
        "placement": "web", "observed": 0.12, "threshold": 0.05})
    raw = body(event).encode()
    headers = headers_for(SECRET, event["type"], event["event_id"], raw)
    header = headers[signing.HEADER]
    assert re.fullmatch(r"t=\d+,v1=[0-9a-f]{64}", header)
    assert headers["X-Rankduel-Event"] == "guardrail_tripped"
    assert headers["X-Rankduel-Delivery"] == event["event_id"]
    # the documented receiver and the service's verify agree
    assert receiver_verifies(SECRET, raw, header)
    assert signing.verify(SECRET, raw, header)
    # another body, another secret, an old timestamp: refused
    assert not receiver_verifies(SECRET, raw.replace(b"neural", b"bm25"), header)
    assert not signing.verify("another-secret-0123456789", raw, header)
    old = signing.sign(SECRET, raw, t=int(time.time()) - 3600)
    assert not signing.verify(SECRET, raw, old)
    assert not signing.verify(SECRET, raw, "v1=" + header.split("v1=")[1])  # no t
    assert not signing.verify(SECRET, raw, "garbage")


def test_every_event_has_the_contract_fields_and_a_sentence():
    samples = {
        "verdict_certified": {"champion": "neural", "rankers": 4, "comparisons": 12000},
        "ranker_shown_worse": {"ranker": "bm25", "by": "neural", "comparisons": 900},
        "guardrail_tripped": {"rule": "latency", "ranker": None, "reason": "slow",
                              "placement": "web"},
        "experiment_paused": {"actor": "guardrail", "from": "running"},
        "ramp_step": {"placement": "web", "step": 2, "steps": 3, "share": 0.1,
                      "previous_share": 0.01, "after": "30m"},
        "ranker_degraded": {"ranker": "neural", "reason": "no results", "answers": 20,
                            "empty": 19, "unparseable": 0},
        "srm_flag": {"placement": "web", "message": "the treatment got 8.1 % of users "
                     "where 10 % were assigned"},
    }
    assert set(samples) == set(EVENTS)
    ids = set()
    for kind, data in samples.items():
        event = json.loads(body(make(kind, "e1", "checkout", data)))
        assert set(event) == {"event_id", "type", "experiment", "ts", "data", "text"}
        assert event["type"] == kind and event["experiment"] == "e1"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", event["ts"])
        assert event["text"].startswith("rankduel: ") and event["text"].endswith(".")
        assert "checkout" in event["text"] and "\n" not in event["text"]
        ids.add(event["event_id"])
    assert len(ids) == len(samples)


def test_backoff_doubles_up_to_its_cap_with_bounded_jitter():
    assert [backoff(n, 1.0, 3600.0) for n in range(1, 6)] == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert backoff(40, 1.0, 3600.0) == 3600.0
    assert all(4.0 <= backoff(3, 1.0, 60.0, jitter=0.1) <= 4.4 for _ in range(100))


def test_the_default_schedule_rides_out_a_receiver_down_for_30_s():
    # with the defaults (1 s, doubling, 10 % jitter at most), a receiver down for 30 s
    # sees 5 failed attempts (1 + 2 + 4 + 8 + 16 = 31 s of waits), far from the 20 in a
    # row that disable a hook, and gets the event at most 16 × 1.1 s after it is back
    from service.config import Config
    from service.webhooks.delivery import backoff

    c = Config()
    t, failures = 0.0, 0
    while t < 30.0:  # each attempt while it is down fails
        failures += 1
        t += backoff(failures, c.webhook_backoff_s, c.webhook_backoff_max_s, jitter=0.1)
    assert failures == 5 < c.webhook_disable_after
    assert t - 30.0 <= 16 * 1.1
