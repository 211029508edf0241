"""JSON answers on the hot path, without Flask's per-call JSON provider machinery.

``flask.jsonify`` looks up the app's JSON provider, builds a new ``json.JSONEncoder`` for
each call (its keyword arguments differ from the module's default encoder) and goes
through the provider's ``response``. The search page is encoded on every request, so
:func:`json_response` uses one encoder built once, with the exact settings of the app's
provider in production (``sort_keys`` off, compact separators, ASCII-only escapes): the
bytes are the same as ``jsonify``'s.

>>> json_response({"b": 1, "a": "é"}).get_data()
b'{"b":1,"a":"\\\\u00e9"}\\n'
"""

from __future__ import annotations

import json
from typing import Any

from flask import Response

#: ``flask.json.provider.DefaultJSONProvider`` with ``sort_keys = False`` outside debug
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), sort_keys=False)


def json_bytes(obj: Any) -> bytes:
    """``obj`` encoded as :func:`json_response`'s body."""
    return (_ENCODER.encode(obj) + "\n").encode()


def json_response(obj: Any, status: int = 200) -> Response:
    """``obj`` (plain JSON types) as an ``application/json`` answer, as ``jsonify``
    would encode it."""
    return Response(_ENCODER.encode(obj) + "\n", status=status, mimetype="application/json")
