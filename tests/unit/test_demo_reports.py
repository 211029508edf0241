"""The demo's simulated front end sends clicks and ends as ``rankduel.js`` does: a 503 is
sent again after 1, 2 and 4 s, and a 409 (the impression closed before a late user's
click) is a refused click, not a failed request."""

from __future__ import annotations

import pytest

from demo.client import ApiResponseError
from demo.run import Demo


def _answers(*statuses: int):
    """A ``send`` that raises each status in turn (200: returns)."""
    left = list(statuses)

    def send() -> None:
        status = left.pop(0)
        if status != 200:
            raise ApiResponseError(status, {"error": "x"})

    return send, left


def test_a_503_is_sent_again_with_backoff_until_it_is_taken():
    waits: list[float] = []
    send, left = _answers(503, 503, 200)
    assert Demo._report(send, sleep=waits.append) is True
    assert waits == [1.0, 2.0] and left == []


def test_a_503_after_the_last_wait_is_a_failure():
    waits: list[float] = []
    send, _ = _answers(503, 503, 503, 503)
    with pytest.raises(ApiResponseError) as err:
        Demo._report(send, sleep=waits.append)
    assert err.value.status == 503 and waits == [1.0, 2.0, 4.0]


def test_a_closed_impression_is_a_refused_click_and_other_errors_raise():
    send, _ = _answers(409)
    assert Demo._report(send, sleep=pytest.fail) is False
    send, _ = _answers(422)
    with pytest.raises(ApiResponseError):
        Demo._report(send, sleep=pytest.fail)


def test_an_order_counts_as_attributed_to_its_own_experiment_even_as_a_duplicate():
    order = {"event_id": "e1-order-7-0", "user": "u", "action": "purchase", "id": "d"}
    mine = {"experiment": "e1", "impression_id": "e1.x", "metrics": ["revenue"]}
    other = {"experiment": "e0", "impression_id": "e0.x", "metrics": ["revenue"]}
    first = {"attributed": True, "duplicate": False, "experiments": [mine]}
    # the client sent it again after a dropped connection: recorded once, still ours
    again = {"attributed": True, "duplicate": True, "experiments": [mine]}
    assert Demo.attributed_here(order, first) and Demo.attributed_here(order, again)
    # an earlier run's experiment took it: not attributed here
    assert not Demo.attributed_here(order, {"attributed": True, "duplicate": True,
                                            "experiments": [other]})
    assert not Demo.attributed_here(order, {"attributed": False, "reason": "no_impression"})
