"""The operator page (``/ui/``): static files only. The page asks for the admin token
once and sends it as a Bearer header to the operator API (``GET /experiments/ID/report``
and the rest, :mod:`service.api.operator`)."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, send_from_directory

from service.api.spec import (
    Operations,
)

bp = Blueprint("report", __name__)
OPS = Operations(bp)
STATIC = Path(__file__).resolve().parent.parent / "static" / "ui"


@OPS.get("/ui/", "operatorPage",
    "The operator page (asks for the admin token, then reads the operator API)",
    responses={200: "text/html"})
def ui_index():
    return _static("index.html")


@OPS.get("/ui/ui.js", "operatorPageScript", "The operator page's script",
    responses={200: "text/javascript"})
def ui_script():
    return _static("ui.js")


@OPS.get("/ui/ui.css", "operatorPageStyle", "The operator page's style sheet",
    responses={200: "text/css"})
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
