"""The operator page (``/ui/``): static files only. The page asks for the admin token
once and sends it as a Bearer header to the operator API (``GET /experiments/ID/report``
and the rest, :mod:`service.api.operator`)."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, send_from_directory

bp = Blueprint("report", __name__)
STATIC = Path(__file__).resolve().parent.parent / "static" / "ui"


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
