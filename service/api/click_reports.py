"""The bodies of the front end's reports (``POST /clicks``, ``POST /impressions/ID/end``)
in the encodings a browser sends, also while its page is closing.

* ``application/json`` (a ``fetch``), and JSON sent as ``text/plain``: what
  ``navigator.sendBeacon`` sends with a string or a ``text/plain`` Blob, and what
  ``rankduel.js`` sends by ``fetch``, because neither needs a CORS preflight. A body
  without a ``Content-Type``, or a "form" that starts with ``{`` (``curl -d`` labels
  JSON as a form), is read as JSON too.
* ``application/x-www-form-urlencoded`` (``sendBeacon`` with ``URLSearchParams``, an
  HTML form): flat fields, each at most once, read by the route's form model
  (:class:`service.schemas.ClickForm`, :class:`service.schemas.EndImpression`).
* Anything else (``multipart/form-data``, which ``sendBeacon`` sends with a
  ``FormData``; XML; ...) answers 415 naming the encodings accepted.

The impression's token is checked the same way whatever the encoding.
"""

from __future__ import annotations

import json
from typing import Any

from flask import Request
from pydantic import BaseModel

from service.api.validation import json_body
from service.errors import BadRequest, UnsupportedMediaType

JSON_TYPES = frozenset({"", "application/json", "text/plain"})
FORM = "application/x-www-form-urlencoded"
ACCEPTED = ("application/json, text/plain (a JSON object, as navigator.sendBeacon sends "
            "it) or application/x-www-form-urlencoded")


def outcome_body(request: Request) -> dict[str, Any]:
    """``POST /outcomes``' body: a JSON object, as ``application/json`` or ``text/plain``
    (400 when malformed, 415 for another encoding). ``NaN`` and ``Infinity`` are read as
    numbers here so that the field that holds one names it (422)."""
    if request.mimetype not in JSON_TYPES:
        raise UnsupportedMediaType(f"request body of type {request.mimetype[:80]!r} is not "
                                   "read here; send application/json or text/plain (a "
                                   "JSON object, as navigator.sendBeacon sends it)")
    raw = request.get_data(cache=True)
    try:
        data = _LENIENT.decode(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise BadRequest("request body must be a JSON object: {\"action\", \"id\", "
                         "\"event_id\", ...}")
    return data


#: JSON with NaN and ±Infinity read as floats (the field's check refuses them, by name)
_LENIENT = json.JSONDecoder(parse_constant=float)


def report_body(request: Request, form: type[BaseModel], *, required: bool = True
                ) -> tuple[dict[str, Any] | None, bool]:
    """``(fields, is_form)``: the JSON object of the body (None when empty and not
    ``required``), or the fields of a form for the model ``form`` (a field of the
    model given twice is 400; others are ignored, as unknown JSON fields are); 400 for
    a malformed body, 415 for another encoding."""
    raw = request.get_data(cache=True)
    looks_json = raw.lstrip()[:1] == b"{"
    if request.mimetype == FORM and not looks_json:
        fields: dict[str, Any] = {}
        for name, values in request.form.lists():
            if len(values) > 1 and name in form.model_fields:
                raise BadRequest(f"form field {name[:60]!r} is given more than once")
            fields[name] = values[0]
        return fields, True
    if request.mimetype in JSON_TYPES or (request.mimetype == FORM and looks_json):
        return json_body(request, required=required), False
    raise UnsupportedMediaType(
        f"request body of type {request.mimetype[:80]!r} is not read here; send "
        f"{ACCEPTED}")
