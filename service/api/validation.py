"""The door of the API: request bodies parsed as strict JSON, and request data checked
against the pydantic models of :mod:`service.schemas`, each failure a typed error
(:mod:`service.errors`) whose message names the offending field.

JSON is parsed by the standard library with these refusals (400): ``NaN``, ``Infinity``
and ``-Infinity`` (not JSON, though Python's parser takes them); text that is not UTF-8;
values nested deeper than :data:`MAX_DEPTH` (the parser would otherwise recurse until
``RecursionError``). A number too large for a double (``1e400``, ``10**400``) is valid
JSON: the field that receives it refuses it, as out of its bounds.

Examples
--------
>>> parse_json(b'{"a": [1, 2.5, "x"]}')
{'a': [1, 2.5, 'x']}
>>> parse_json(b'{"alpha": NaN}')
Traceback (most recent call last):
...
service.errors.BadRequest: request body is not a valid JSON object: NaN is not a JSON number
>>> parse_json(b"[" * 40 + b"]" * 40)
Traceback (most recent call last):
...
service.errors.BadRequest: request body is nested deeper than 32 levels
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from flask import Request
from pydantic import BaseModel, ValidationError

from service.errors import BadRequest, Unprocessable

#: deepest nesting of arrays and objects a request body may have (the deepest the API
#: defines is 3: ``{"true_preferences": [[p, ...], ...]}``)
MAX_DEPTH = 32
#: largest request body (the app's MAX_CONTENT_LENGTH; 413 beyond)
MAX_BODY_BYTES = 1 << 20


# ---------------------------------------------------------------------- JSON bodies
def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def parse_json(raw: bytes) -> Any:
    """Decode a request body as strict JSON (see the module docstring), or 400."""
    try:
        value = _DECODER.decode(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRequest("request body is not UTF-8 text") from None
    except RecursionError:
        raise BadRequest(f"request body is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, a refused constant, an over-long integer
        raise BadRequest(f"request body is not a valid JSON object: {exc}") from None
    if _depth(value) > MAX_DEPTH:
        raise BadRequest(f"request body is nested deeper than {MAX_DEPTH} levels")
    return value


def _depth(value: Any) -> int:
    """Nesting depth of a decoded JSON value (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, d = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, d + 1)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((v, d + 1) for v in item)
    return deepest


def json_body(request: Request, *, required: bool = True) -> dict[str, Any] | None:
    """The request body as a JSON object, or 400. Without ``required``, an empty body
    is None."""
    raw = request.get_data(cache=True)
    if not raw and not required:
        return None
    data = parse_json(raw) if raw else None
    if not isinstance(data, dict):
        raise BadRequest("request body must be a JSON object")
    return data


# ---------------------------------------------------------------------- models
def parse(model: type[BaseModel], data: Any, *, status: int = 400,
          content: frozenset[str] = frozenset(), query: bool = False) -> Any:
    """``data`` validated by a model of :mod:`service.schemas`.

    A failure raises :class:`BadRequest` (``status=400``) or :class:`Unprocessable`
    (``status=422``) whose message names every problem (``errors``: the list), an unknown
    field with the closest valid name; the status follows the first problem: under a field
    named in ``content`` it is 422 whatever ``status`` says (a well-formed request whose
    content is wrong). With ``query``, ``data`` is a query string's parameters.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        tag = getattr(model, "discriminator", None)
        if tag and isinstance(data, dict):  # drop the union's tag from the locations
            for e in errors:
                if e["loc"] and e["loc"][0] == data.get(tag):
                    e["loc"] = e["loc"][1:]
        first = errors[0]
        error = Unprocessable if status == 422 or _names(first["loc"]) & content else BadRequest
        messages = describe_errors(model, data, errors, query=query)
        raise error("; ".join(messages), errors=messages if len(messages) > 1 else None) \
            from None


def describe_errors(model: type[BaseModel], data: Any, errors: list[dict[str, Any]], *,
                    query: bool = False) -> list[str]:
    """Every problem as a sentence, each once: an unknown field as unknown, with the
    closest valid name (and no "missing" for the name it was probably meant as)."""
    out: list[str] = []
    meant: set[tuple] = set()
    for err in errors:
        if err["type"] == "extra_forbidden":
            loc = tuple(err["loc"])
            valid = _field_names(model, data, loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), valid, n=1, cutoff=0.6)
            message = f"unknown field {field_path(loc)!r}"
            if close:
                target = (*loc[:-1], close[0])
                message += f"; did you mean {field_path(target)!r}?"
                meant.add(target)
            out.append(message)
        elif err["type"] == "union_tag_not_found" and isinstance(err.get("input"), dict):
            # no shape chosen, so no field was checked: a misspelt tag is still named
            tag = str(err.get("ctx", {}).get("discriminator", "")).strip("'")
            close = difflib.get_close_matches(tag, [str(k) for k in err["input"]], n=1,
                                              cutoff=0.6)
            if close:
                out.append(f"unknown field {close[0]!r}; did you mean {tag!r}?")
                meant.add(("union_tag",))
    for err in errors:
        if err["type"] == "extra_forbidden" or (
                err["type"] == "missing" and tuple(err["loc"]) in meant) or (
                err["type"] == "union_tag_not_found" and ("union_tag",) in meant):
            continue
        message = describe_error(err, errors, query=query)
        if message not in out:
            out.append(message)
    return out


def _field_names(model: type[BaseModel], data: Any, loc: tuple) -> list[str]:
    """The fields the object at ``loc`` of ``model`` may have (from its JSON Schema)."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})

    def resolve(node: dict[str, Any], value: Any) -> dict[str, Any]:
        for _ in range(20):
            if "$ref" in node:
                node = defs[node["$ref"].rsplit("/", 1)[-1]]
            elif "oneOf" in node or "anyOf" in node:
                options = node.get("oneOf") or node.get("anyOf")
                mapping = (node.get("discriminator") or {}).get("mapping", {})
                prop = (node.get("discriminator") or {}).get("propertyName")
                if mapping and isinstance(value, dict) and value.get(prop) in mapping:
                    node = {"$ref": mapping[value[prop]]}
                else:
                    node = next((o for o in options if o.get("type") != "null"), {})
            else:
                return node
        return node

    node, value = resolve(schema, data), data
    for part in loc:
        if isinstance(part, int):
            node = node.get("items", {})
            value = value[part] if isinstance(value, list) and part < len(value) else None
        else:
            node = node.get("properties", {}).get(part, {})
            value = value.get(part) if isinstance(value, dict) else None
        node = resolve(node, value)
    return list(node.get("properties", {}))


def _names(loc: tuple) -> set[str]:
    return {part for part in loc if isinstance(part, str)}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def field_path(loc: tuple[str | int, ...]) -> str:
    """``("rankers", 0, "url")`` → ``rankers[0].url``.

    >>> field_path(("clicks", 3, "rank"))
    'clicks[3].rank'
    """
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_KINDS = {
    "string_type": "a string", "int_type": "an integer", "float_type": "a number",
    "bool_type": "true or false", "list_type": "an array", "dict_type": "an object",
    "model_type": "an object", "model_attributes_type": "an object",
    "int_from_float": "an integer", "finite_number": "a finite number",
}


def describe_error(err: dict[str, Any], errors: list[dict[str, Any]] | None = None, *,
                   query: bool = False) -> str:
    """One pydantic error as a sentence that names the field.

    >>> describe_error({"type": "missing", "loc": ("rankers", 0, "url"), "msg": ""})
    "missing field 'rankers[0].url'"
    >>> describe_error({"type": "greater_than_equal", "loc": ("k",), "msg": "", "input": 0,
    ...                 "ctx": {"ge": 1}}, query=True)
    'k must be at least 1, got 0'
    """
    loc = tuple(err["loc"])
    kind, ctx = err["type"], err.get("ctx") or {}
    path = field_path(loc)
    where = (path if query else f"field {path!r}") if path else "request body"
    got = f", got {_short(err['input'])}" if "input" in err and path else ""
    if kind == "missing":
        return f"missing {'parameter' if query else 'field'} {path!r}"
    if kind == "union_tag_not_found":
        return f"missing field {ctx['discriminator'].strip(chr(39))!r}"
    if kind == "union_tag_invalid":
        return (f"unknown {ctx['discriminator'].strip(chr(39))} {ctx['tag']!r}; known: "
                f"{ctx['expected_tags'].replace(chr(39), '')}")
    if kind == "extra_forbidden":
        parent = loc[:-1]
        extra = sorted(str(e["loc"][-1]) for e in (errors or [err])
                       if e["type"] == "extra_forbidden" and tuple(e["loc"][:-1]) == parent)
        inside = f" in {field_path(parent)}" if parent else ""
        return f"unknown fields{inside}: {', '.join(extra)}"
    if kind in _KINDS:
        return f"{where} must be {_KINDS[kind]}{got}"
    if kind == "string_too_short":
        n = ctx["min_length"]
        return f"{where} must have at least {n} character{'s' if n != 1 else ''}"
    if kind == "string_too_long":
        return f"{where} is longer than {ctx['max_length']} characters"
    if kind == "too_short":
        n = ctx["min_length"]
        return f"{where} must have at least {n} item{'s' if n != 1 else ''}"
    if kind == "too_long":
        return f"{where} must have at most {ctx['max_length']} items"
    bounds = {"greater_than": "greater than {gt}", "greater_than_equal": "at least {ge}",
              "less_than": "less than {lt}", "less_than_equal": "at most {le}"}
    if kind in bounds:
        return f"{where} must be {bounds[kind].format(**ctx)}{got}"
    if kind == "string_pattern_mismatch":
        from service.schemas import PATTERN_MEANING

        meaning = PATTERN_MEANING.get(ctx["pattern"], f"match {ctx['pattern']}")
        return f"{where} must be {meaning}{got}"
    if kind == "literal_error":
        return f"{where} must be {ctx['expected']}{got}"
    if kind in ("value_error", "assertion_error"):
        return f"{where}: {ctx.get('error', err['msg'])}"
    if kind.startswith("rd_"):  # raised by a validator of service.schemas: a full sentence
        return err["msg"]
    return f"{where}: {err['msg'][0].lower()}{err['msg'][1:]}"
