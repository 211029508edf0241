"""``GET /agreements``: every confirmed pair (an interleaving verdict and the A/B test of
its winner) with both verdicts and whether they agree, and the running agreement rate
(:func:`service.ab.report.agreements`), behind a key with ``read`` or ``write``."""

from __future__ import annotations

from flask import Blueprint, jsonify

from service.ab import report as ab_report
from service.ab.schemas import Agreements
from service.api.spec import Operations
from service.runtime import runtime

bp = Blueprint("agreements", __name__, url_prefix="/agreements")
OPS = Operations(bp)


@OPS.get("", "listAgreements",
    "Confirmed pairs: the interleaving verdict, the A/B test of its winner, and whether "
    "they agree", operator=True, responses={200: Agreements, 401: None, 503: None})
def agreements():
    return jsonify(ab_report.agreements(runtime().store))
