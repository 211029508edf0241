"""A small time series per experiment, sampled when the report or the operator page is read.

``rd:{e}:history`` (:func:`service.store.keys.history_key`) is a list of JSON points
``{"ts", "n", "regret"}``: the time, the comparisons recorded so far and the estimated
cumulative regret then. The API appends one when a report is built and the last point
is older than ``MIN_INTERVAL_S`` (so a page refreshing every few seconds adds at most one
point per interval), keeping the last ``MAX_POINTS``. It feeds the report's comparison
rate (``estimated_seconds_to_decide``), the page's curves of comparisons and regret over
time, and the comparison count of timeline events that the audit log records with a
time only. Nothing on the credit path writes it: a report is the only writer, so an
experiment nobody looks at costs nothing. The key is deleted with the experiment (its
hash tag puts it in the experiment's ``SCAN`` pattern).
"""

from __future__ import annotations

import json
from typing import Any

from service.store.keys import history_key

#: points kept per experiment
MAX_POINTS = 2000
#: at most one new point per this many seconds
MIN_INTERVAL_S = 2.0


def read(client, exp_id: str) -> list[dict[str, Any]]:
    """The stored points, oldest first."""
    return [json.loads(x) for x in client.lrange(history_key(exp_id), 0, -1)]


def sample(client, exp_id: str, *, ts: float, n: int, regret: float,
           points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Append ``(ts, n, regret)`` if the last of ``points`` is older than
    ``MIN_INTERVAL_S``; return the series with it."""
    point = {"ts": round(ts, 3), "n": int(n), "regret": round(float(regret), 4)}
    if points and ts - float(points[-1]["ts"]) < MIN_INTERVAL_S:
        return points
    pipe = client.pipeline(transaction=False)
    pipe.rpush(history_key(exp_id), json.dumps(point))
    pipe.ltrim(history_key(exp_id), -MAX_POINTS, -1)
    pipe.execute()
    return [*points, point][-MAX_POINTS:]
