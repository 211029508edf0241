"""Front-end endpoints: what a search page calls (``/search``, ``/clicks``, ``/end``)."""

from __future__ import annotations

import hashlib
import time
from importlib.resources import files

from flask import Blueprint, Response, g, jsonify, redirect, request

from service import metrics
from service import schemas as s
from service.api.auth import front_end
from service.api.click_reports import outcome_body, report_body
from service.api.json_response import json_response
from service.api.search_query import parse_search_query
from service.api.spec import (
    BROWSER_BODIES,
    FRONTEND_KEY,
    OUTCOME_BODIES,
    Operations,
)
from service.api.validation import parse
from service.clicks import reports as click_ops
from service.errors import BadRequest, TooManyRequests
from service.id_limits import MAX_ID_CHARS
from service.outcomes import actions, attribution
from service.placements import control_pages
from service.placements import search as placement_search
from service.runtime import Runtime, runtime
from service.schemas import (
    ClickForm,
    Clicks,
    EndForm,
    EndImpression,
    RedirectQuery,
)
from service.search import paging
from service.search import serve as searching
from service.search.ranker_health import SearchTiming

bp = Blueprint("frontend", __name__)
OPS = Operations(bp)


@OPS.get("/search", "search", "Serve an interleaved result page",
    query_for=s.search_query,
    responses={200: s.SearchResult,
               400: "Malformed request, a page beyond RANKDUEL_MAX_DEPTH, or a "
                    "next page without impression_id",
               401: FRONTEND_KEY,
               403: "A next page with a missing or wrong token, or of an impression "
                    "of another experiment",
               404: None,
               409: "A next page of a closed (ended or credited) impression",
               422: "A next page for another q than page 1's, or one that would "
                    "skip ranks never shown",
               502: "No ranker of the experiment answered (?experiment=), or the "
                    "placement's control ranker did not (?placement=; named)",
               503: None},
    links={200: {
        "RecordClicks": {"operationId": "recordClicks", "requestBody": {
            "impression_id": "$response.body#/impression_id",
            "token": "$response.body#/token",
            "clicks": [{"id": "$response.body#/results/0/id", "rank": 1}]}},
        "EndImpression": {"operationId": "endImpression",
                          "parameters": {"imp_id": "$response.body#/impression_id"},
                          "requestBody": {"token": "$response.body#/token"}},
        "ClickRedirect": {"operationId": "clickRedirect", "parameters": {
            "i": "$response.body#/impression_id", "t": "$response.body#/token",
            "d": "$response.body#/results/0/id", "p": 1,
            "u": "$response.body#/results/0/url"}},
        "NextPage": {"operationId": "search", "parameters": {
            "experiment": "$response.body#/experiment", "q": "$request.query.q",
            "k": "$request.query.k", "page": 2,
            "impression_id": "$response.body#/impression_id",
            "token": "$response.body#/token"}},
    }})
@front_end()
def search():
    rt = runtime()
    args = parse_search_query(request.args, rt.config.default_k, rt.config.max_k)
    timing = g.search_timing = SearchTiming()
    if args.page > 1 or args.impression_id is not None:  # a next page of an impression
        if args.impression_id is None:
            raise BadRequest(f"page {args.page} continues an impression: send the "
                             "impression_id and token of page 1's answer")
        return json_response(paging.next_page(rt, args.experiment, args.q, args.k, args.page,
                                              args.impression_id, args.token,
                                              args.user or None, timing))
    if args.placement is not None:  # a search box: an experiment's search or control's
        return json_response(placement_search.search(rt, args.placement, args.q, args.k,
                                                     args.user or None, timing,
                                                     args.segments))
    return json_response(searching.search(rt, args.experiment, args.q, args.k,
                                            args.user or None, timing,
                                            segments=args.segments))


@bp.after_request
def server_timing(response: Response) -> Response:
    """Every ``/search`` answer (errors too) says where its time went:
    ``Server-Timing: rankers;dur=<ms of the slowest ranker call>, rankduel;dur=<ms
    spent in rankduel>`` (milliseconds, from the request's arrival in the application
    to its answer, encoded), and the rankduel part goes into
    ``rankduel_search_overhead_seconds``."""
    if request.endpoint != "frontend.search":
        return response
    t0 = request.environ.get("rankduel.t0")
    if t0 is None:
        return response
    total = time.perf_counter() - t0
    timing = g.get("search_timing")
    rankers = min(timing.rankers_s, total) if timing is not None else 0.0
    ours = total - rankers
    response.headers["Server-Timing"] = (f"rankers;dur={rankers * 1e3:.2f}, "
                                         f"rankduel;dur={ours * 1e3:.2f}")
    metrics.SEARCH_OVERHEAD.observe(ours)
    return response


def client_address(trusted_proxies: int) -> str:
    """The address of the client behind ``trusted_proxies`` reverse proxies: the socket's
    peer with none, else that many entries from the right of ``X-Forwarded-For`` (each
    proxy appends the address it received from; entries further left are the client's
    own claims and never trusted)."""
    if trusted_proxies:
        hops = [h.strip() for h in request.headers.get("X-Forwarded-For", "").split(",")]
        hops = [h for h in hops if h]
        if len(hops) >= trusted_proxies:
            return hops[-trusted_proxies][:64]
    return request.remote_addr or "unknown"


def limit_click_reports(rt: Runtime, *, keyed: bool = False) -> None:
    """429 when this client has sent its ``clicks_per_client_per_minute`` (never for a
    front end with a key: ``keyed``)."""
    limit = rt.config.clicks_per_client_per_minute
    if not limit or keyed:
        return
    wait = rt.store.rate_limits.count_client_request(
        client_address(rt.config.trusted_proxies), limit)
    if wait:
        raise TooManyRequests(f"more than {limit} click reports per minute from this client; "
                              f"retry in {round(wait)} s", retry_after_s=wait)


@OPS.post("/clicks", "recordClicks",
    "Report clicks (one or many; a repeated click counts once), of an impression or of "
    "a control page (page_token)", body=s.Clicks,
    form=s.ClickForm, body_description=BROWSER_BODIES,
    responses={202: s.ClicksAccepted, 400: None, 401: FRONTEND_KEY, 403: None,
               404: None, 409: None,
               413: None, 415: None, 422: "Document not shown, or not at that rank",
               429: "Over this client's click reports per minute, or over the "
                    "impression's click reports", 503: None})
@front_end()
def clicks():
    limit_click_reports(runtime(), keyed=g.frontend_keyed)
    data, form = report_body(request, ClickForm)
    if form:  # one click as form fields (a beacon with URLSearchParams, an HTML form)
        data = parse(ClickForm, data, content=Clicks.content).as_clicks()
    body = parse(Clicks, data, content=Clicks.content)
    if body.page_token is not None:  # a control page's (service.placements.control_pages)
        rt = runtime()
        return jsonify(control_pages.record_click(rt.store, rt.secret, body.page_token,
                                                  rt.config.inactivity_s,
                                                  len(body.clicks))), 202
    clicked = [(str(c.id), c.rank) for c in body.clicks]
    dwell = {c.rank - 1: c.dwell_ms for c in body.clicks if c.dwell_ms is not None}
    out = click_ops.record_clicks(runtime(), body.impression_id, body.token, clicked,
                                    dwell_ms=dwell)
    return jsonify(out), 202


@OPS.post("/outcomes", "recordOutcome",
    "Report an outcome event (add to cart, purchase) of a document: attributed to the "
    "impression that showed it last (docs/conversions.md), counted once per event_id",
    body=s.Outcome, body_description=OUTCOME_BODIES,
    responses={202: s.OutcomeAccepted, 400: None,
               401: FRONTEND_KEY + "; or a user-form event without a key", 403: None,
               413: None, 415: None,
               422: "The field named: an action no running experiment declares, a bad "
                    "value, an impression older than the window, ...", 503: None})
@front_end()
def outcomes():
    rt = runtime()
    body = parse(s.Outcome, outcome_body(request), status=422, content=s.Outcome.content)
    out = attribution.record(rt.store, rt.secret, actions.for_store(rt.store), action=body.action,
                             doc=str(body.id), value=body.value, event_id=body.event_id,
                             impression_id=body.impression_id, token=body.token,
                             user=body.user, keyed=g.frontend_keyed)
    return jsonify(out), 202




@OPS.post("/impressions/<imp_id>/end", "endImpression",
    "Close an impression; a worker credits it", body=s.EndImpression,
    body_required=False, form=s.EndForm, body_description=BROWSER_BODIES,
    path_params={"imp_id": {"type": "string", "minLength": 1,
                            "maxLength": MAX_ID_CHARS}},
    responses={202: s.Ended, 400: None, 401: FRONTEND_KEY, 403: None, 404: None,
               413: None, 415: None,
               422: "A click of the body: document not shown, or not at that rank",
               503: None})
@front_end(imp_id="impression")
def end(imp_id: str):
    data, form = report_body(request, EndForm, required=False)  # JSON, text/plain JSON or a form
    if form:
        data = parse(EndForm, data).model_dump(exclude_none=True)
    body = parse(EndImpression, data or {}, content=EndImpression.content)
    clicked = [(str(c.id), c.rank) for c in body.clicks or ()]
    dwell = {c.rank - 1: c.dwell_ms for c in body.clicks or () if c.dwell_ms is not None}
    return jsonify(click_ops.end_impression(runtime(), imp_id, body.token, clicks=clicked,
                                              dwell_ms=dwell)), 202


@OPS.get("/r", "clickRedirect",
    "Record a click and redirect (302) to the result URL the ranker returned",
    query=s.RedirectQuery,
    responses={302: "redirect", 400: None, 401: FRONTEND_KEY, 403: None, 404: None,
               422: "Document not shown at that rank, or a URL not shown for it",
               503: None})
@front_end()
def redirect_click():
    """Record a click and send the user on to the result (302)."""
    rt = runtime()
    keyed = g.frontend_keyed
    if "pt" in request.args and "i" not in request.args:
        raise BadRequest("a control page's click cannot go through /r: rankduel keeps no "
                         "record of what a control page showed, so it could not check u "
                         "(the redirect is never open); report it with POST /clicks "
                         "{page_token, clicks} (rankduel.js does)")
    args = parse(RedirectQuery, request.args.to_dict(), query=True)
    try:
        limit_click_reports(rt, keyed=keyed)
        counted = True
    except TooManyRequests:
        counted = False  # over the limit: not recorded, but the user still gets there
    if counted:
        url, _ = click_ops.click_through(rt, args.i, args.t, args.d, args.p, args.u)
    else:
        url = click_ops.redirect_target(rt, args.i, args.t, args.d, args.p, args.u)
    resp = redirect(url, 302)
    resp.headers["Cache-Control"] = "no-store"
    resp.headers["Referrer-Policy"] = "no-referrer"  # the token stays here
    return resp


_SCRIPT = files("service").joinpath("static/rankduel.js").read_bytes()
_SCRIPT_ETAG = hashlib.sha256(_SCRIPT).hexdigest()[:20]


@OPS.get("/static/rankduel.js", "rankduelScript",
    "The browser client: window.RankDuel.attach(container, {api, impression_id, token})",
    responses={200: "text/javascript", 304: "not modified"})
def script():
    """The browser client (no build step, no dependencies): cached for an hour, then
    revalidated by its ETag (304 when unchanged)."""
    resp = Response(_SCRIPT, content_type="text/javascript; charset=utf-8")
    resp.headers["Cache-Control"] = "public, max-age=3600"
    resp.headers["Access-Control-Allow-Origin"] = "*"  # a script anyone may load
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.set_etag(_SCRIPT_ETAG)
    return resp.make_conditional(request)
