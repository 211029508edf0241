"""OpenSearch User Behavior Insights (UBI) in and out (docs/ubi.md).

* ``POST /ubi/events`` (a front-end route, like ``/clicks``): the events ``ubi.js``
  sends, one object or an array, as ``application/json`` or ``text/plain`` (what
  ``navigator.sendBeacon`` sends); :mod:`service.ubi.receive` does the rest. The same at
  ``POST /ubi_events``, where ``ubi.js``'s ``new UbiClient(API)`` posts its events.
* ``GET /experiments/ID/ubi`` (admin): a page of the event log as UBI documents in
  OpenSearch's ``_bulk`` format (:mod:`service.events.ubi`), paged like
  ``GET /experiments/ID/events``.
"""

from __future__ import annotations

from flask import Blueprint, Response, g, jsonify, request

from service import schemas as s
from service.api.auth import front_end
from service.api.click_reports import JSON_TYPES
from service.api.frontend import limit_click_reports
from service.api.spec import EXP_ID, FRONTEND_KEY, Operations
from service.api.validation import parse, parse_json
from service.errors import BadRequest, NotFound, UnsupportedMediaType
from service.events import ubi as ubi_out
from service.runtime import runtime
from service.schemas.ubi import UbiEvents, UbiEventsReceived
from service.tokens import require_bearer
from service.ubi import receive

bp = Blueprint("ubi", __name__)
OPS = Operations(bp)
admin_bp = Blueprint("ubi_admin", __name__, url_prefix="/experiments")
ADMIN_OPS = Operations(admin_bp)


@admin_bp.before_request
def require_token() -> None:
    require_bearer(request.headers.get("Authorization", ""), [runtime().config.admin_token],
                   what="admin token")


_RECEIVE = dict(
    body=UbiEvents,
    body_description="One UBI event (event.schema.json, UBI 1.3.0) or a JSON array of them, "
                     "as application/json or text/plain (navigator.sendBeacon); shown here "
                     "as the array wrapped in {\"events\": [...]}, the form its errors name "
                     "(events[i].field). Other encodings answer 415.",
    responses={202: UbiEventsReceived,
               400: "A malformed event (the field named, events[i].field): nothing counted",
               401: FRONTEND_KEY,
               403: "A click or event of an impression without its token (and no "
                    "front-end key), or with another impression's: nothing counted",
               413: None, 415: None,
               422: "A click without object_id or ordinal, or of a document not shown at "
                    "that rank: nothing counted",
               429: "Over this client's click reports per minute", 503: None})


@OPS.post("/ubi_events", "receiveUbiEventsAtUbiJsPath",
    "POST /ubi/events at the path ubi.js's UbiClient(baseUrl) posts to (baseUrl/ubi_events)",
    **_RECEIVE)
@OPS.post("/ubi/events", "receiveUbiEvents",
    "UBI events as ubi.js sends them: a click on an impression is recorded as POST /clicks "
    "records it; other actions are stored in the event log, not credited", **_RECEIVE)
@front_end()
def events():
    rt = runtime()
    if request.mimetype not in JSON_TYPES:
        raise UnsupportedMediaType(f"request body of type {request.mimetype[:80]!r} is not "
                                   "read here; send JSON as application/json or text/plain")
    raw = request.get_data(cache=True)
    if not raw:
        raise BadRequest("request body is empty: send a UBI event or an array of them")
    data = parse_json(raw)
    if isinstance(data, dict) and isinstance(data.get("events"), list):
        data = data["events"]
    body = parse(UbiEvents, {"events": data if isinstance(data, list) else [data]})
    limit_click_reports(rt, keyed=g.frontend_keyed)
    out = receive.receive(rt, [e.model_dump(exclude_none=True) for e in body.events],
                          keyed=g.frontend_keyed)
    return jsonify(out), 202


@ADMIN_OPS.get("/<exp_id>/ubi", "getUbi",
    "The event log as UBI documents (ubi_queries, ubi_events) in OpenSearch _bulk format",
    query=s.EventsQuery, path_params=EXP_ID, operator=True,
    responses={200: "application/x-ndjson", 400: None, 401: None, 404: None, 503: None})
def ubi_page(exp_id: str):
    """A page of the log (``after``, ``limit``: log events read) as ``_bulk`` lines, an
    action line before each document; ``X-Next-Cursor`` as for the events. A click whose
    impression is on an earlier page finds it among the 10,000 log entries before the
    page (the CLI's export, which reads the whole log, always does)."""
    rt = runtime()
    if not rt.store.experiments.exists(exp_id):
        raise NotFound(f"no experiment {exp_id!r}")
    args = parse(s.EventsQuery, request.args.to_dict(), query=True)
    page = rt.store.event_log.events(exp_id, args.after, args.limit)
    interleaving = rt.store.experiments.snapshot(exp_id).meta.get("interleaving")
    convert = ubi_out.Converter(exp_id, interleaving)
    here = {e["id"] for e in page if e["type"] == "impression"}
    before = {e["id"] for e in page if e["type"] in ("click", "ubi")} - here
    if before and page:
        for imp in rt.store.event_log.impression_events(exp_id, before, page[0]["cursor"]):
            convert.remember(imp)
    body = "".join(x + "\n" for x in ubi_out.bulk_lines(convert.feed(page)))
    resp = Response(body, mimetype="application/x-ndjson")
    resp.headers["X-Next-Cursor"] = page[-1]["cursor"] if page else args.after
    resp.headers["X-Events-Total"] = str(rt.store.event_log.event_count(exp_id))
    return resp
