"""The events a webhook can subscribe to, and each event's payload: ``event_id``,
``type``, ``experiment``, ``ts``, ``data`` and a ``text`` sentence for people (Slack's
incoming webhooks show ``text``).

>>> e = make("experiment_paused", "3fa2", "quickstart",
...          {"actor": "operator", "from": "running", "to": "paused"}, now=0.0,
...          event_id="ev_1")
>>> e["ts"], e["text"]
('1970-01-01T00:00:00.000Z', 'rankduel: experiment quickstart (3fa2) was paused by the operator.')
>>> json.loads(body(e))["data"]["to"]
'paused'
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import UTC, datetime
from typing import Any

#: the events, each with what it tells (the API's enum and the docs read this)
EVENTS: dict[str, str] = {
    "verdict_certified": "the experiment certified its champion the best of its rankers",
    "ranker_shown_worse": "a ranker was shown worse than another (recommended: at error "
                          "rate δ; the Merge policies: eliminated by their test)",
    "guardrail_tripped": "a guardrail paused the experiment on its placement",
    "experiment_paused": "the experiment was paused (by the operator or a guardrail)",
    "ramp_step": "the experiment's ramp moved to its next share of the placement",
    "ranker_degraded": "a ranker answers no usable results and is out of comparisons",
    "srm_flag": "the experiment's split looks wrong (a sample-ratio mismatch of its users, "
                "or team draft's first pick or positions out of balance): its verdict is "
                "not to be trusted until this is explained",
}
#: events that will come with other features (not accepted until they are emitted)
COMING: dict[str, str] = {}


def new_event_id() -> str:
    """A fresh, unique event id (kept by every delivery of the event)."""
    return "ev_" + secrets.token_hex(12)


def iso(ts: float) -> str:
    """Epoch seconds as ISO 8601 UTC with milliseconds and ``Z``.

    >>> iso(1.5)
    '1970-01-01T00:00:01.500Z'
    """
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _who(name: str | None, exp_id: str) -> str:
    return f"experiment {name} ({exp_id})" if name else f"experiment {exp_id}"


def text(kind: str, exp_id: str, name: str | None, data: dict[str, Any]) -> str:
    """One sentence saying what happened."""
    who = _who(name, exp_id)
    if kind == "verdict_certified":
        return (f"rankduel: {who} certified {data['champion']} the best of its "
                f"{data['rankers']} rankers after {data['comparisons']:,} comparisons.")
    if kind == "ranker_shown_worse":
        by = f" than {data['by']}" if data.get("by") else ""
        return (f"rankduel: in {who}, {data['ranker']} was shown worse{by} after "
                f"{data['comparisons']:,} comparisons.")
    if kind == "guardrail_tripped":
        on = f" on ranker {data['ranker']}" if data.get("ranker") else ""
        return (f"rankduel: guardrail {data['rule']} tripped{on} in {who} "
                f"({data['reason']}); the experiment is paused.")
    if kind == "experiment_paused":
        actor = {"operator": "the operator", "guardrail": "a guardrail"}.get(
            data.get("actor", ""), data.get("actor") or "someone")
        return f"rankduel: {who} was paused by {actor}."
    if kind == "ramp_step":
        return (f"rankduel: {who} now takes {100 * data['share']:g} % of placement "
                f"{data['placement']}'s searches (ramp step {data['step']} of "
                f"{data['steps']}, after {data['after']}).")
    if kind == "ranker_degraded":
        return (f"rankduel: ranker {data['ranker']} of {who} is degraded ({data['reason']})"
                f": out of comparisons until a probe answers results.")
    if kind == "srm_flag":
        return (f"rankduel: the split of {who} looks wrong: {data['message']}. Its verdict "
                f"is not to be trusted until this is explained.")
    return f"rankduel: {kind} in {who}."


def make(kind: str, exp_id: str, name: str | None, data: dict[str, Any], *,
         now: float | None = None, event_id: str | None = None) -> dict[str, Any]:
    """The payload of an event of type ``kind`` (one of :data:`EVENTS`)."""
    if kind not in EVENTS:
        raise ValueError(f"unknown webhook event {kind!r}")
    now = time.time() if now is None else now
    return {"event_id": event_id or new_event_id(), "type": kind, "experiment": exp_id,
            "ts": iso(now), "data": {"experiment_name": name, **data},
            "text": text(kind, exp_id, name, data)}


def body(event: dict[str, Any]) -> str:
    """The JSON text of a payload, as stored and sent (every delivery the same bytes)."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)
