"""The report (``GET /experiments/ID/report``, admin token) and the operator page
(``/ui/``, static files; the page asks for the token and sends it as a Bearer header)."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, current_app, jsonify, request, send_from_directory

from service import reports
from service.auth import require_bearer
from service.impressions import Runtime

bp = Blueprint("report", __name__)
STATIC = Path(__file__).resolve().parent.parent / "static" / "ui"


def _rt() -> Runtime:
    return current_app.extensions["rankduel"]


@bp.get("/experiments/<exp_id>/report")
def report(exp_id: str):
    rt = _rt()
    require_bearer(request.headers.get("Authorization", ""), [rt.config.admin_token],
                   what="admin token")
    return jsonify(reports.build(rt.store, exp_id))


@bp.get("/ui/")
def ui_index():
    return _static("index.html")


@bp.get("/ui/ui.js")
def ui_script():
    return _static("ui.js")


@bp.get("/ui/ui.css")
def ui_style():
    return _static("ui.css")


def _static(name: str):
    response = send_from_directory(STATIC, name, max_age=0)
    # the page runs only its own script and style: no CDN, no inline code from elsewhere
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'")
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response
