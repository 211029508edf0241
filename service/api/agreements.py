"""``GET /agreements``: every confirmed pair (an interleaving verdict and the A/B test of
its winner) with both verdicts and whether they agree, and the running agreement rate
(:func:`service.reports.ab.agreements`), behind the admin token."""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from service import schemas as s
from service.api.auth import require_bearer
from service.api.spec import Operations
from service.reports import ab as ab_report
from service.runtime import runtime

bp = Blueprint("agreements", __name__, url_prefix="/agreements")
OPS = Operations(bp)


@bp.before_request
def require_token() -> None:
    require_bearer(request.headers.get("Authorization", ""), [runtime().config.admin_token],
                   what="admin token")


@OPS.get("", "listAgreements",
    "Confirmed pairs: the interleaving verdict, the A/B test of its winner, and whether "
    "they agree", operator=True, responses={200: s.Agreements, 401: None, 503: None})
def agreements():
    return jsonify(ab_report.agreements(runtime().store))
