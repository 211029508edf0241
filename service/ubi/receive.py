"""``POST /ubi/events``: UBI events, checked all first, then each recorded.

**Checked first, every event** (a bad one answers 4xx naming it, ``events[i].field``,
and nothing of the request is counted):

* a ``click`` names its document (``event_attributes.object.object_id``, 422) and its
  rank (``event_attributes.position.ordinal``, 422);
* an event of a rankduel impression (its ``query_id`` an impression id of an experiment
  that exists) carries the impression's token (``event_attributes.token``, 403 missing or
  forged), unless the request has a front-end key;
* a click's document must be the one the impression showed at that rank (422, the check
  of ``POST /clicks``: :func:`service.clicks.reports.shown_positions`).

**Then, in order**, each event is:

* ``credited``: a click, recorded by :func:`service.clicks.reports.record_clicks` (the
  one function ``POST /clicks`` calls), credited by a worker once the impression ends;
* ``accepted``: any other action of a rankduel impression, stored in the experiment's
  event log (type ``ubi``, :meth:`service.store.event_log.EventStore.append_ubi_events`),
  not credited; a conversion (:data:`CONVERSIONS`) is stored so too, and credited to
  the experiment's metrics of its action as ``POST /outcomes`` would (:func:`_conversion`);
* ``ignored``, with the reason: an event of no rankduel impression, a click already
  recorded, on an impression closed, expired or over its reports, or with a token
  expired (what the page's state decides, not a malformed event).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from service.clicks.reports import record_clicks, shown_positions
from service.errors import ApiError, Forbidden, Unprocessable
from service.outcomes import actions, attribution
from service.runtime import Runtime
from service.store import ImpressionClosed, ImpressionMissing, TooManyClicks
from service.store.keys import experiment_of
from service.tokens import verify_token

#: the conversion actions among UBI's standard names (and common others)
CONVERSIONS = frozenset({"add_to_cart", "purchase", "checkout", "add_to_wishlist"})


@dataclass
class Checked:
    """One event after the checks: what to do with it."""

    index: int
    event: dict[str, Any]
    exp: str | None = None  # its experiment: a rankduel impression's event
    click: tuple[str, int] | None = None  # (document, 1-based rank)
    expired: bool = False
    ignore: str | None = None  # why it is ignored


def _at(i: int, path: str) -> str:
    return f"events[{i}].{path}"


def _token_ok(rt: Runtime, token: Any, imp_id: str, exp: str, i: int) -> bool:
    """True when ``token`` is the impression's and unexpired, False when it is its own
    but expired; 403 naming the field when it is not the impression's."""
    try:
        verify_token(rt.secret, token, imp_id, exp, now=0)  # the MAC alone
    except Forbidden as exc:
        raise Forbidden(f"{_at(i, 'event_attributes.token')}: {exc}") from None
    return int(str(token).partition(".")[0]) >= time.time()


def check(rt: Runtime, events: Sequence[dict[str, Any]], *, keyed: bool) -> list[Checked]:
    """Every event checked (see the module docstring); the first bad one raises."""
    out, exists = [], {}
    for i, e in enumerate(events):
        c = Checked(i, e)
        attrs = e.get("event_attributes") or {}
        obj, pos = attrs.get("object") or {}, attrs.get("position") or {}
        if e["action_name"] == "click":
            if obj.get("object_id") is None:
                raise Unprocessable(f"{_at(i, 'event_attributes.object.object_id')}: a "
                                    "click names the document clicked")
            if pos.get("ordinal") is None:
                raise Unprocessable(f"{_at(i, 'event_attributes.position.ordinal')}: a "
                                    "click gives the 1-based rank the document was shown at")
            c.click = (str(obj["object_id"]), int(pos["ordinal"]))
        imp_id = e.get("query_id")
        exp = experiment_of(imp_id) if imp_id else None
        if exp is not None and exp not in exists:
            exists[exp] = rt.store.experiments.exists(exp)
        if exp is None or not exists[exp]:
            c.ignore = ("no query_id: not an event of a search" if not imp_id else
                        f"query_id {imp_id[:80]!r} is not an impression of an experiment")
            out.append(c)
            continue
        c.exp = exp
        token = attrs.get("token")
        if token is None and not keyed:
            raise Forbidden(f"{_at(i, 'event_attributes.token')}: missing: send the token "
                            "/search gave with the page, or a front-end key")
        c.expired = token is not None and not _token_ok(rt, token, imp_id, exp, i)
        if c.click is not None and not c.expired:
            imp = rt.store.impressions.impression(imp_id)
            if imp is None:
                c.ignore = "the impression is unknown or expired"
            else:
                try:
                    shown_positions(imp, [c.click])
                except Unprocessable as exc:
                    raise Unprocessable(
                        f"{_at(i, 'event_attributes.position.ordinal')}: {exc}") from None
        out.append(c)
    return out


def receive(rt: Runtime, events: Sequence[dict[str, Any]], *, keyed: bool = False
            ) -> dict[str, Any]:
    """Check every event, then record each: ``{"events": [{"index", "status",
    "reason"}], "credited", "accepted", "ignored"}``. ``events`` are plain dicts as
    received; ``keyed``: the request carries a front-end key."""
    results = []
    logged: dict[str, list[tuple[str, str, str]]] = {}
    for c in check(rt, events, keyed=keyed):
        status, reason = _one(rt, c, logged, keyed)
        results.append({"index": c.index, "status": status, "reason": reason})
    for exp, rows in logged.items():
        rt.store.event_log.append_ubi_events(exp, rows)
    counts = {k: sum(r["status"] == k for r in results)
              for k in ("credited", "accepted", "ignored")}
    return {"events": results, **counts}


def _one(rt: Runtime, c: Checked, logged: dict[str, list[tuple[str, str, str]]],
         keyed: bool) -> tuple[str, str]:
    if c.ignore is not None:
        return "ignored", c.ignore
    if c.expired:
        return "ignored", "the impression's token has expired"
    e, imp_id = c.event, c.event["query_id"]
    if c.click is not None:
        token = (e.get("event_attributes") or {}).get("token")
        try:
            out = record_clicks(rt, imp_id, token, [c.click], keyed=keyed)
        except ImpressionMissing:
            return "ignored", "the impression is unknown or expired"
        except ImpressionClosed:
            return "ignored", "the impression is closed (ended or credited)"
        except TooManyClicks:
            return "ignored", "over the impression's click reports"
        if not out["accepted"]:
            return "ignored", "this click was already recorded"
        return "credited", f"recorded as a click at rank {c.click[1]}"
    if e["action_name"] in CONVERSIONS:
        return _conversion(rt, c, logged, keyed)
    _log(c, logged)
    return "accepted", "stored in the event log, not credited"


def _log(c: Checked, logged: dict[str, list[tuple[str, str, str]]]) -> None:
    """Keep the event for the log, as received but for its token (never stored)."""
    e = dict(c.event)
    if e.get("event_attributes"):
        e["event_attributes"] = {k: v for k, v in e["event_attributes"].items()
                                 if k != "token"}
    logged.setdefault(c.exp or "", []).append(
        (e["query_id"], e["action_name"], json.dumps(e, separators=(",", ":"))))


def _conversion(rt: Runtime, c: Checked, logged: dict[str, list[tuple[str, str, str]]],
                keyed: bool) -> tuple[str, str]:
    """A conversion of a rankduel impression (``add_to_cart``, ``purchase``, ...): kept in
    the log as received, and recorded as an outcome event of the impression by the one
    function ``POST /outcomes`` calls (:func:`service.outcomes.attribution.record`),
    credited to the experiment's metrics of that action. Its document is
    ``event_attributes.object.object_id``; its value ``event_attributes.object.value``
    (or ``event_attributes.value``); its ``event_id`` a digest of the event as received,
    so a retried event counts once. An action the experiment declares no metric of, a
    missing or bad value, an expired token: accepted into the log, not credited, and the
    reason says why (the batch was checked already: nothing here refuses it)."""
    _log(c, logged)
    e = c.event
    attrs = e.get("event_attributes") or {}
    obj = attrs.get("object") or {}
    doc = obj.get("object_id")
    if doc is None:
        return "accepted", ("stored in the event log, not credited: no "
                            "event_attributes.object.object_id")
    value = obj.get("value", attrs.get("value"))
    body = {k: v for k, v in e.items() if k != "event_attributes"}
    body["attrs"] = {k: v for k, v in attrs.items() if k != "token"}
    event_id = "ubi-" + hashlib.blake2b(json.dumps(body, sort_keys=True, default=str)
                                        .encode(), digest_size=16).hexdigest()
    try:
        out = attribution.record(
            rt.store, rt.secret, actions.for_store(rt.store), action=e["action_name"],
            doc=str(doc), value=value if isinstance(value, int | float) else None,
            event_id=event_id, impression_id=e["query_id"], token=attrs.get("token"),
            keyed=keyed, vouched=keyed)
    except ApiError as exc:
        return "accepted", f"stored in the event log, not credited: {exc.message}"
    if not out["attributed"]:
        return "accepted", f"stored in the event log, not credited: {out['reason']}"
    if out.get("duplicate"):
        return "ignored", "this conversion was already recorded (the same event)"
    metrics = sorted({m for x in out["experiments"] for m in x["metrics"]})
    return "credited", f"recorded as an outcome of the metrics {', '.join(metrics)}"
