"""Front-end endpoints: what a search page calls (``/search``, ``/clicks``, ``/end``)."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from service import impressions
from service.errors import BadRequest
from service.schemas import MAX_ID_CHARS, Clicks, EndImpression, search_query
from service.validation import json_body, parse

bp = Blueprint("frontend", __name__)


def _rt() -> impressions.Runtime:
    return current_app.extensions["rankduel"]


@bp.get("/search")
def search():
    rt = _rt()
    query = search_query(rt.config.default_k, rt.config.max_k)
    args = parse(query, request.args.to_dict(), query=True)
    return jsonify(impressions.search(rt, args.experiment, args.q, args.k, args.user or None))


@bp.post("/clicks")
def clicks():
    body = parse(Clicks, json_body(request), content=Clicks.content)
    clicked = [(str(c.id), c.rank) for c in body.clicks]
    out = impressions.record_clicks(_rt(), body.impression_id, body.token, clicked)
    return jsonify(out), 202


@bp.post("/impressions/<imp_id>/end")
def end(imp_id: str):
    if len(imp_id) > MAX_ID_CHARS:
        raise BadRequest(f"impression id is longer than {MAX_ID_CHARS} characters")
    body = parse(EndImpression, json_body(request, required=False) or {})
    return jsonify(impressions.end_impression(_rt(), imp_id, body.token)), 202
