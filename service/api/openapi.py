"""The OpenAPI 3.1 document served at ``/openapi.json``, generated from the operations each
blueprint declares beside its handlers (:class:`service.api.spec.Operations`) and the
pydantic models of :mod:`service.schemas` (request bodies, query parameters and every
response).

Each operation lists every status it can answer, each error with the ``Error`` schema,
and declares the OpenAPI links a client (or a stateful fuzzer) follows: ``POST
/experiments`` gives the ``exp_id`` of every ``/experiments/{exp_id}...`` operation and
the ``experiment`` of ``/search``; ``/search`` gives the ``impression_id`` and ``token``
of ``/clicks`` and ``/impressions/{imp_id}/end``; ``POST .../rankers`` gives the name
``DELETE .../rankers/{name}`` retires.

Examples
--------
>>> doc = openapi_document(default_k=10, max_k=100)
>>> doc["paths"]["/search"]["get"]["responses"]["200"]["content"]["application/json"]
{'schema': {'$ref': '#/components/schemas/SearchResult'}}
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from flask import Blueprint, jsonify
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from service import schemas as s
from service.api.spec import Op, Operations
from service.api.validation import MAX_BODY_BYTES, MAX_DEPTH
from service.runtime import runtime
from service.serving import LIMIT_REQUEST_LINE

ERRORS = {
    400: "Malformed request: not JSON, a missing or mistyped parameter or field",
    401: "Missing, wrong, revoked or expired key (the same answer for each)",
    403: "A key outside its scope (the answer names the scope needed; nothing changed), "
         "a missing, forged, malformed or expired impression token, or an origin not "
         "allowed",
    404: "Unknown experiment, impression or ranker",
    409: "Not allowed in the current state",
    413: f"Request body larger than {MAX_BODY_BYTES} bytes",
    414: f"Request line (method, path and query string) longer than {LIMIT_REQUEST_LINE} "
         "bytes, behind gunicorn (rankduel serve)",
    415: "Request body in an encoding this endpoint does not read",
    422: "Well-formed request whose content is invalid",
    429: "Too many requests: over a per-client or per-impression limit (see Retry-After)",
    502: "No ranker of the experiment could answer",
    503: "Redis unreachable, or too busy to commit",
    431: "Request headers too large, behind gunicorn (rankduel serve)",
}
#: statuses the door's limits can answer on every operation (the request line and the
#: headers are read by gunicorn before any route)
DOOR_STATUSES = (414, 431)


DESCRIPTION = f"""Online interleaving experiments run by dueling bandits.

Every operation states the scope its key needs (`security`; docs/operations/security.md):
`Authorization: Bearer <key>`, a key made by `POST /keys` or one of the environment's
tokens (`RANKDUEL_ADMIN_TOKEN`: admin, `RANKDUEL_FRONTEND_TOKENS`: frontend,
`RANKDUEL_METRICS_TOKEN`: metrics). A missing, wrong, revoked or expired key answers 401;
a key outside its scope 403, naming the scope needed. Every change is in the audit trail
(`GET /audit`), naming the key.

Every error is `{{"error": "<what was wrong>"}}`; when an operator body has several
problems, `errors` lists every one of them. A server-side front end sends its front-end key
(`Authorization: Bearer <key>`, one of `RANKDUEL_FRONTEND_TOKENS`) with `/search`,
`/clicks`, `/impressions/{{imp_id}}/end` and `/r`: its click reports are not held to the
per-address limit (401 for a wrong key). At the door: request bodies are UTF-8 JSON
objects of at most {MAX_BODY_BYTES} bytes (413 beyond), nested at most {MAX_DEPTH} deep
(400 beyond); `NaN`, `Infinity` and `-Infinity` are not JSON (400). The browser's reports
(`/clicks`, `/impressions/{{imp_id}}/end`) are also read as `text/plain` JSON or as form
fields (415 for other encodings). The front-end routes answer CORS requests from the
origins in `RANKDUEL_CORS_ORIGINS` (403 for others); the operator routes never do. Behind gunicorn
(`rankduel serve`, `deploy/gunicorn.conf.py`) the request line is limited to
{LIMIT_REQUEST_LINE} bytes (414 beyond, with a JSON error): 1,000 characters of `q` fit when
they take at most two bytes each in UTF-8.
"""


def operations(default_k: int, max_k: int) -> list[Op]:
    """Every operation of the API, as each blueprint declares it beside its handlers
    (``k``'s default and bound are configuration)."""
    from service.api import agreements as agreements_api
    from service.api import campaigns, frontend, keys, operator, status, ui
    from service.api import placements as placements_api
    from service.api import ubi as ubi_api
    from service.api import webhooks as webhooks_api

    ops = [*frontend.OPS.ops, *operator.OPS.ops, *ui.OPS.ops, *campaigns.OPS.ops,
           *status.OPS.ops, *placements_api.OPS.ops, *webhooks_api.OPS.ops, *ubi_api.OPS.ops,
           *ubi_api.ADMIN_OPS.ops, *agreements_api.OPS.ops, *keys.OPS.ops, *OPS.ops]
    return [replace(op, query=op.query_for(default_k, max_k)) if op.query_for else op
            for op in ops]


def _strip_titles(schema: Any) -> Any:
    """Drop the property titles pydantic derives from field names (noise for readers)."""
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for prop in props.values():
                if isinstance(prop, dict):
                    prop.pop("title", None)
        for value in schema.values():
            _strip_titles(value)
    elif isinstance(schema, list):
        for value in schema:
            _strip_titles(value)
    return schema


def _components(ops: list[Op]) -> tuple[dict[str, Any], dict[tuple[Any, str], Any]]:
    models: list[tuple[type[BaseModel], str]] = [(s.Error, "serialization")]
    for op in ops:
        if op.body is not None:
            models.append((op.body, "validation"))
        if op.form is not None:
            models.append((op.form, "validation"))
        models += [(m, "serialization") for m in op.responses.values()
                   if isinstance(m, type) and m not in (s.Error,)]
    refs, defs = models_json_schema(list(dict.fromkeys(models)),
                                    ref_template="#/components/schemas/{model}")
    return _strip_titles(defs.get("$defs", {})), refs


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = _strip_titles(model.model_json_schema())
    required = set(schema.get("required", ()))
    out = []
    for name, prop in schema["properties"].items():
        description = prop.pop("description", None)
        if "anyOf" in prop:  # an optional parameter: absent rather than null
            prop = next(p for p in prop["anyOf"] if p.get("type") != "null")
        param = {"name": name, "in": "query", "required": name in required, "schema": prop}
        if description:
            param["description"] = description
        out.append(param)
    return out


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _operation(op: Op, refs: dict[tuple[Any, str], Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"operationId": op.operation_id, "summary": op.summary}
    params = [{"name": n, "in": "path", "required": True, "schema": schema}
              for n, schema in op.path_params.items()]
    if op.query is not None:
        params += _query_parameters(op.query)
    params += [{**h, "in": "header"} for h in op.header_params]
    if params:
        out["parameters"] = params
    if op.body is not None:
        out["requestBody"] = {"required": op.body_required, "content": {
            "application/json": {"schema": refs[(op.body, "validation")]}}}
        if op.form is not None:
            out["requestBody"]["content"]["application/x-www-form-urlencoded"] = {
                "schema": refs[(op.form, "validation")]}
        if op.body_description:
            out["requestBody"]["description"] = op.body_description
    if op.scope is not None:
        out["security"] = [{"bearer": [] if op.scope == "key" else [op.scope]}]
        if op.browser:  # a browser's call, with the impression token instead
            out["security"].append({})
    responses: dict[str, Any] = {}
    listed = dict(op.responses)
    for status in DOOR_STATUSES:
        listed.setdefault(status, None)
    for status, model in sorted(listed.items()):
        if status >= 400:
            text = model if isinstance(model, str) else ERRORS[status]
            responses[str(status)] = _json({"$ref": "#/components/schemas/Error"}, text)
        elif model == "redirect":
            responses[str(status)] = {
                "description": "Found: on to the result",
                "headers": {"Location": {"schema": {"type": "string"},
                                         "description": "the result URL"}}}
        elif model == "not modified":
            responses[str(status)] = {"description": "Not modified (If-None-Match: its ETag)"}
        elif model == "empty":
            responses[str(status)] = {"description": "No content"}
        elif model == "text/html":
            responses[str(status)] = {"description": "the page", "content": {
                "text/html": {"schema": {"type": "string"}}}}
        elif model == "text/javascript":
            responses[str(status)] = {"description": "the script", "content": {
                "text/javascript": {"schema": {"type": "string"}}}}
        elif model == "text/css":
            responses[str(status)] = {"description": "the style sheet", "content": {
                "text/css": {"schema": {"type": "string"}}}}
        elif model == "text/plain":
            responses[str(status)] = {"description": "Prometheus text exposition",
                                      "content": {"text/plain": {"schema": {"type": "string"}}}}
        elif model == "application/x-ndjson":
            responses[str(status)] = {
                "description": "JSON lines: one event a line (docs/segments-and-export.md)",
                "headers": {"X-Next-Cursor": {"schema": {"type": "string"}, "description":
                                              "the cursor of the next page (after=)"}},
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}
        elif model == "object":
            responses[str(status)] = _json({"type": "object"}, "OK")
        else:
            responses[str(status)] = _json(refs[(model, "serialization")],
                                           {200: "OK", 201: "Created", 202: "Accepted"}[status])
        if status in op.links:
            responses[str(status)]["links"] = op.links[status]
    out["responses"] = responses
    return out


@functools.lru_cache
def openapi_document(default_k: int, max_k: int) -> dict[str, Any]:
    """The API description (``k``'s default and bound are configuration)."""
    ops = operations(default_k, max_k)
    components, refs = _components(ops)
    paths: dict[str, dict[str, Any]] = {}
    for op in ops:
        paths.setdefault(op.path, {})[op.method] = _operation(op, refs)
    return {
        "openapi": "3.1.0",
        "info": {"title": "rankduel", "version": "0.1.0", "description": DESCRIPTION},
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": paths,
    }


bp = Blueprint("openapi", __name__)
OPS = Operations(bp)


@OPS.get("/openapi.json", "openapi", "This document", responses={200: "object"})
def openapi():
    config = runtime().config
    return jsonify(openapi_document(config.default_k, config.max_k))
