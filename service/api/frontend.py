"""Front-end endpoints: what a search page calls (``/search``, ``/clicks``, ``/end``)."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from service import impressions
from service.errors import BadRequest, Unprocessable
from service.validation import MAX_QUERY_CHARS, int_param, json_object, str_param

bp = Blueprint("frontend", __name__)

MAX_CLICKS = 100


def _rt() -> impressions.Runtime:
    return current_app.extensions["rankduel"]


@bp.get("/search")
def search():
    rt = _rt()
    exp_id = str_param(request.args, "experiment", max_len=64)
    q = str_param(request.args, "q", max_len=MAX_QUERY_CHARS)
    k = int_param(request.args, "k", default=rt.config.default_k, lo=1, hi=rt.config.max_k)
    user = str_param(request.args, "user", required=False, max_len=200)
    return jsonify(impressions.search(rt, exp_id, q, k, user))


@bp.post("/clicks")
def clicks():
    rt = _rt()
    body = json_object(request)
    imp_id = body.get("impression_id")
    if not isinstance(imp_id, str) or not imp_id or len(imp_id) > 64:
        raise BadRequest("impression_id must be a non-empty string")
    raw = body.get("clicks")
    if not isinstance(raw, list) or not raw:
        raise BadRequest('clicks must be a non-empty array of {"id", "rank"}')
    if len(raw) > MAX_CLICKS:
        raise BadRequest(f"at most {MAX_CLICKS} clicks per request")
    parsed = []
    for n, c in enumerate(raw):
        if not isinstance(c, dict) or "id" not in c:
            raise BadRequest(f'clicks[{n}] must be an object {{"id", "rank"}}')
        doc, rank = c["id"], c.get("rank")
        if isinstance(doc, bool) or not isinstance(doc, str | int):
            raise BadRequest(f"clicks[{n}].id must be a string or an integer")
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise Unprocessable(f"clicks[{n}].rank must be an integer (1-based)")
        parsed.append((str(doc), rank))
    out = impressions.record_clicks(rt, imp_id, body.get("token"), parsed)
    return jsonify(out), 202


@bp.post("/impressions/<imp_id>/end")
def end(imp_id: str):
    rt = _rt()
    token = None
    if request.get_data(cache=True):
        token = json_object(request).get("token")
    if len(imp_id) > 64:
        raise BadRequest("impression id too long")
    return jsonify(impressions.end_impression(rt, imp_id, token)), 202
