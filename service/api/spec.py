"""Each route declared once, with its OpenAPI operation, beside its handler: a blueprint's
:class:`Operations` registers the route with Flask and records the :class:`Op` that
:mod:`service.api.openapi` turns into ``/openapi.json``.

>>> from flask import Blueprint
>>> ops = Operations(Blueprint("demo", __name__, url_prefix="/things"))
>>> @ops.get("/<thing_id>", "getThing", "One thing", responses={200: "object"})
... def thing(thing_id): ...
>>> ops.ops[0].method, ops.ops[0].path
('get', '/things/{thing_id}')
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint
from pydantic import BaseModel


@dataclass
class Op:
    """One operation of the API."""

    method: str
    path: str
    operation_id: str
    summary: str
    responses: dict[int, type[BaseModel] | str | None]
    body: type[BaseModel] | None = None
    body_required: bool = True
    #: the body also as ``application/x-www-form-urlencoded`` (the browser's reports)
    form: type[BaseModel] | None = None
    body_description: str = ""
    query: type[BaseModel] | None = None
    #: the query model built from the configuration (``k``'s default and bound)
    query_for: Callable[[int, int], type[BaseModel]] | None = None
    path_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: request headers it reads, as OpenAPI parameter objects without ``"in"``
    header_params: list[dict[str, Any]] = field(default_factory=list)
    operator: bool = False
    links: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: the scope a key needs (:mod:`service.access.scopes`; None: open to anyone),
    #: enforced in one place (:mod:`service.api.access`)
    scope: str | None = None
    #: a browser may call it without a key, with an impression token (security ``{}``)
    browser: bool = False
    #: where the placement it acts on comes from (``"path"``: the ``name`` in its path;
    #: ``"experiment"``: the placement of the ``exp_id`` in its path; ``"body"``: the
    #: body's ``placement``), for ``write:placement:NAME`` keys and the audit trail
    placement_from: str | None = None
    #: the Flask endpoint of its handler (set when the route is registered)
    endpoint: str = ""


class Operations:
    """The routes of ``bp``, each declared once: ``@ops.get(rule, operation_id, summary,
    **fields)`` registers the handler for ``rule`` (a Flask rule, under the blueprint's
    prefix) and records its :class:`Op` (``fields``: the rest of it)."""

    def __init__(self, bp: Blueprint) -> None:
        self.bp = bp
        self.ops: list[Op] = []

    def route(self, method: str, rule: str, operation_id: str, summary: str,
              **fields: Any) -> Callable[[Callable], Callable]:
        path = (self.bp.url_prefix or "") + re.sub(r"<(?:[^>]*:)?(\w+)>", r"{\1}", rule)
        if "scope" not in fields and fields.get("operator"):  # the operator API's default
            fields["scope"] = "read" if method == "get" else "write"
        op = Op(method, path or "/", operation_id, summary, **fields)
        self.ops.append(op)

        def register(view: Callable) -> Callable:
            self.bp.add_url_rule(rule, view_func=view, methods=[method.upper()])
            op.endpoint = f"{self.bp.name}.{view.__name__}"
            return view

        return register

    def get(self, rule: str, operation_id: str, summary: str, **fields: Any):
        return self.route("get", rule, operation_id, summary, **fields)

    def post(self, rule: str, operation_id: str, summary: str, **fields: Any):
        return self.route("post", rule, operation_id, summary, **fields)

    def patch(self, rule: str, operation_id: str, summary: str, **fields: Any):
        return self.route("patch", rule, operation_id, summary, **fields)

    def delete(self, rule: str, operation_id: str, summary: str, **fields: Any):
        return self.route("delete", rule, operation_id, summary, **fields)


# texts and links several operations share
FRONTEND_KEY = ("A wrong front-end key (Authorization: Bearer <key> must be one of "
                "RANKDUEL_FRONTEND_TOKENS, or the admin token; without the header the "
                "request is a browser's)")
BROWSER_BODIES = (
    "JSON; the same JSON as text/plain (navigator.sendBeacon with a string or a text/plain "
    "Blob, a fetch without a CORS preflight); or application/x-www-form-urlencoded fields "
    "(sendBeacon with URLSearchParams). Other encodings answer 415.")
OUTCOME_BODIES = (
    "JSON, or the same JSON as text/plain (navigator.sendBeacon with a string, a fetch "
    "without a CORS preflight). Other encodings answer 415.")
EXP_ID = {"exp_id": {"type": "string", "description": "experiment id"}}
FROM_CREATED = "$response.body#/id"
CID = {"cid": {"type": "string", "description": "judging campaign id"}}


def exp_links(source: str) -> dict[str, Any]:
    """Links from a response carrying an experiment (its id at ``source``)."""
    exp = {"exp_id": source}
    return {
        "GetExperiment": {"operationId": "getExperiment", "parameters": exp},
        "RenameExperiment": {"operationId": "renameExperiment", "parameters": exp},
        "AddRanker": {"operationId": "addRanker", "parameters": exp},
        "RetireRanker": {"operationId": "retireRanker",
                         "parameters": {**exp, "name": "$response.body#/rankers/0/name"}},
        "AddRankerVersion": {"operationId": "addRankerVersion",
                             "parameters": {**exp, "name": "$response.body#/rankers/0/name"}},
        "ChangeLifecycle": {"operationId": "changeLifecycle", "parameters": exp},
        "GetAudit": {"operationId": "getAudit", "parameters": exp},
        "GetReport": {"operationId": "getReport", "parameters": exp},
        "Confirm": {"operationId": "confirmExperiment", "parameters": exp},
        "GetEvents": {"operationId": "getEvents", "parameters": exp},
        "GetUbi": {"operationId": "getUbi", "parameters": exp},
        "Search": {"operationId": "search", "parameters": {"experiment": source}},
        "DeleteExperiment": {"operationId": "deleteExperiment", "parameters": exp},
        "ArchiveExperiment": {"operationId": "archiveExperiment", "parameters": exp},
        "GetArchive": {"operationId": "getArchive", "parameters": exp},
    }
