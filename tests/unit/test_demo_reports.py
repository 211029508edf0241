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
