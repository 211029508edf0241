"""Input checks shared by the handlers; each failure raises a typed error with a message
that names the offending field.

Examples
--------
>>> int_param({"k": "5"}, "k", default=10, lo=1, hi=100)
5
>>> int_param({"k": "x"}, "k", default=10, lo=1, hi=100)
Traceback (most recent call last):
...
service.errors.BadRequest: k must be an integer, got 'x'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Request

from service.errors import BadRequest, Unprocessable

MAX_QUERY_CHARS = 1000


def json_object(request: Request) -> dict[str, Any]:
    """The request body as a JSON object, or 400."""
    data = request.get_json(silent=True, force=True)
    if not isinstance(data, dict):
        raise BadRequest("request body must be a JSON object")
    return data


def str_param(args: Mapping[str, Any], name: str, *, required: bool = True,
              max_len: int = 200) -> str | None:
    value = args.get(name)
    if value is None or value == "":
        if required:
            raise BadRequest(f"missing parameter {name!r}")
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{name} must be a string")
    if len(value) > max_len:
        raise BadRequest(f"{name} is longer than {max_len} characters")
    return value


def int_param(args: Mapping[str, Any], name: str, *, default: int | None = None,
              lo: int, hi: int) -> int:
    value = args.get(name)
    if value is None or value == "":
        if default is None:
            raise BadRequest(f"missing parameter {name!r}")
        return default
    if isinstance(value, bool):
        raise BadRequest(f"{name} must be an integer, got {value!r}")
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise BadRequest(f"{name} must be an integer, got {value!r}") from None
    if isinstance(value, float) and value != n:
        raise BadRequest(f"{name} must be an integer, got {value!r}")
    if not lo <= n <= hi:
        raise BadRequest(f"{name} must be between {lo} and {hi}, got {n}")
    return n


def field(body: Mapping[str, Any], name: str, kind: type | tuple[type, ...], *,
          required: bool = True, default: Any = None, where: str = "") -> Any:
    """A field of a JSON object with the expected JSON type (422 otherwise)."""
    label = f"{where}{name}"
    if name not in body or body[name] is None:
        if required:
            raise Unprocessable(f"missing field {label!r}")
        return default
    value = body[name]
    bad_bool = isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple)
                                                        else (kind,))
    if not isinstance(value, kind) or bad_bool:
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise Unprocessable(f"field {label!r} must be {_json_name(names)}")
    return value


def _json_name(py: str) -> str:
    return {"str": "a string", "int": "an integer", "dict": "an object", "list": "an array",
            "float": "a number", "int or float": "a number"}.get(py, py)
