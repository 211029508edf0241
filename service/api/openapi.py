"""The OpenAPI 3.1 document served at ``/openapi.json``, generated from the pydantic
models of :mod:`service.api.schemas` (request bodies, query parameters and every response).

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
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from service.api import schemas as s
from service.api.validation import LIMIT_REQUEST_LINE, MAX_BODY_BYTES, MAX_DEPTH
from service.id_limits import MAX_ID_CHARS
from service.reports.schema import Report

ERRORS = {
    400: "Malformed request: not JSON, a missing or mistyped parameter or field",
    401: "Missing or wrong bearer token",
    403: "Missing, forged, malformed or expired impression token, or an origin not allowed",
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
FRONTEND_KEY = ("A wrong front-end key (Authorization: Bearer <key> must be one of "
                "RANKDUEL_FRONTEND_TOKENS, or the admin token; without the header the "
                "request is a browser's)")

DESCRIPTION = f"""Online interleaving experiments run by dueling bandits.

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
    path_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    operator: bool = False
    links: dict[int, dict[str, Any]] = field(default_factory=dict)


BROWSER_BODIES = (
    "JSON; the same JSON as text/plain (navigator.sendBeacon with a string or a text/plain "
    "Blob, a fetch without a CORS preflight); or application/x-www-form-urlencoded fields "
    "(sendBeacon with URLSearchParams). Other encodings answer 415.")
EXP_ID = {"exp_id": {"type": "string", "description": "experiment id"}}
FROM_CREATED = "$response.body#/id"
CID = {"cid": {"type": "string", "description": "judging campaign id"}}


def _exp_links(source: str) -> dict[str, Any]:
    """Links from a response carrying an experiment (its id at ``source``)."""
    exp = {"exp_id": source}
    return {
        "GetExperiment": {"operationId": "getExperiment", "parameters": exp},
        "RenameExperiment": {"operationId": "renameExperiment", "parameters": exp},
        "AddRanker": {"operationId": "addRanker", "parameters": exp},
        "RetireRanker": {"operationId": "retireRanker",
                         "parameters": {**exp, "name": "$response.body#/rankers/0/name"}},
        "ChangeLifecycle": {"operationId": "changeLifecycle", "parameters": exp},
        "GetAudit": {"operationId": "getAudit", "parameters": exp},
        "GetReport": {"operationId": "getReport", "parameters": exp},
        "Search": {"operationId": "search", "parameters": {"experiment": source}},
        "DeleteExperiment": {"operationId": "deleteExperiment", "parameters": exp},
    }


def operations(default_k: int, max_k: int) -> list[Op]:
    """Every operation of the API."""
    return [
        Op("get", "/search", "search", "Serve an interleaved result page",
           query=s.search_query(default_k, max_k),
           responses={200: s.SearchResult,
                      400: "Malformed request, a page beyond RANKDUEL_MAX_DEPTH, or a "
                           "next page without impression_id",
                      401: FRONTEND_KEY,
                      403: "A next page with a missing or wrong token, or of an impression "
                           "of another experiment",
                      404: None,
                      409: "A next page of a closed (ended or credited) impression",
                      422: "A next page for another q than page 1's, or one that would "
                           "skip ranks never shown",
                      502: None,
                      503: None},
           links={200: {
               "RecordClicks": {"operationId": "recordClicks", "requestBody": {
                   "impression_id": "$response.body#/impression_id",
                   "token": "$response.body#/token",
                   "clicks": [{"id": "$response.body#/results/0/id", "rank": 1}]}},
               "EndImpression": {"operationId": "endImpression",
                                 "parameters": {"imp_id": "$response.body#/impression_id"},
                                 "requestBody": {"token": "$response.body#/token"}},
               "ClickRedirect": {"operationId": "clickRedirect", "parameters": {
                   "i": "$response.body#/impression_id", "t": "$response.body#/token",
                   "d": "$response.body#/results/0/id", "p": 1,
                   "u": "$response.body#/results/0/url"}},
               "NextPage": {"operationId": "search", "parameters": {
                   "experiment": "$response.body#/experiment", "q": "$request.query.q",
                   "k": "$request.query.k", "page": 2,
                   "impression_id": "$response.body#/impression_id",
                   "token": "$response.body#/token"}},
           }}),
        Op("post", "/clicks", "recordClicks",
           "Report clicks (one or many; a repeated click counts once)", body=s.Clicks,
           form=s.ClickForm, body_description=BROWSER_BODIES,
           responses={202: s.ClicksAccepted, 400: None, 401: FRONTEND_KEY, 403: None,
                      404: None, 409: None,
                      413: None, 415: None, 422: "Document not shown, or not at that rank",
                      429: "Over this client's click reports per minute, or over the "
                           "impression's click reports", 503: None}),
        Op("post", "/impressions/{imp_id}/end", "endImpression",
           "Close an impression; a worker credits it", body=s.EndImpression,
           body_required=False, form=s.EndForm, body_description=BROWSER_BODIES,
           path_params={"imp_id": {"type": "string", "minLength": 1,
                                   "maxLength": MAX_ID_CHARS}},
           responses={202: s.Ended, 400: None, 401: FRONTEND_KEY, 403: None, 404: None,
                      413: None, 415: None,
                      422: "A click of the body: document not shown, or not at that rank",
                      503: None}),
        Op("get", "/r", "clickRedirect",
           "Record a click and redirect (302) to the result URL the ranker returned",
           query=s.RedirectQuery,
           responses={302: "redirect", 400: None, 401: FRONTEND_KEY, 403: None, 404: None,
                      422: "Document not shown at that rank, or a URL not shown for it",
                      503: None}),
        Op("get", "/static/rankduel.js", "rankduelScript",
           "The browser client: window.RankDuel.attach(container, {api, impression_id, token})",
           responses={200: "text/javascript", 304: "not modified"}),
        Op("post", "/experiments", "createExperiment", "Create an experiment",
           body=s.NewExperiment, operator=True,
           responses={201: s.Experiment, 400: None, 401: None, 413: None, 422: None,
                      503: None},
           links={201: _exp_links(FROM_CREATED)}),
        Op("get", "/experiments", "listExperiments", "List experiments", operator=True,
           responses={200: s.ExperimentList, 401: None, 503: None},
           links={200: {"GetExperiment": {
               "operationId": "getExperiment",
               "parameters": {"exp_id": "$response.body#/experiments/0/id"}}}}),
        Op("get", "/experiments/{exp_id}", "getExperiment", "Experiment state",
           path_params=EXP_ID, operator=True,
           responses={200: s.Experiment, 401: None, 404: None, 503: None}),
        Op("delete", "/experiments/{exp_id}", "deleteExperiment",
           "Delete an experiment and all its state (impressions and clicks included)",
           path_params=EXP_ID, operator=True,
           responses={200: s.ExperimentDeleted, 401: None, 404: None, 503: None}),
        Op("patch", "/experiments/{exp_id}", "renameExperiment",
           "Rename (algorithm, params, interleaving, seed and rankers are immutable: 409)",
           body=s.ExperimentPatch, path_params=EXP_ID, operator=True,
           responses={200: s.Experiment, 400: None, 401: None, 404: None, 409: None,
                      413: None, 422: None, 503: None}),
        Op("post", "/experiments/{exp_id}/rankers", "addRanker", "Add a ranker mid-experiment",
           body=s.NewRanker, path_params=EXP_ID, operator=True,
           responses={201: s.RankerEntry, 400: None, 401: None, 404: None,
                      409: "Duplicate name, or the experiment is stopped", 413: None,
                      422: None, 503: None},
           links={201: {"RetireRanker": {
               "operationId": "retireRanker",
               "parameters": {"exp_id": "$request.path.exp_id",
                              "name": "$response.body#/name"}}}}),
        Op("delete", "/experiments/{exp_id}/rankers/{name}", "retireRanker", "Retire a ranker",
           path_params={**EXP_ID, "name": {"type": "string", "description": "ranker name"}},
           operator=True,
           responses={200: s.RankerEntry, 401: None, 404: None,
                      409: "Already retired, or the last active ranker", 503: None}),
        Op("post", "/experiments/{exp_id}/{action}", "changeLifecycle",
           "Pause, resume or stop (running ⇄ paused → stopped)",
           path_params={**EXP_ID, "action": {"type": "string",
                                             "enum": ["pause", "resume", "stop"]}},
           operator=True,
           responses={200: s.LifecycleChanged, 401: None, 404: None,
                      409: "Transition not allowed from the current lifecycle", 503: None}),
        Op("get", "/experiments/{exp_id}/audit", "getAudit",
           "Audit log: operator actions, eliminations, stage changes",
           query=s.AuditQuery, path_params=EXP_ID, operator=True,
           responses={200: s.Audit, 400: None, 401: None, 404: None, 503: None}),
        Op("get", "/experiments/{exp_id}/report", "getReport",
           "What the experiment has decided: verdict, champion, certification, estimate",
           path_params=EXP_ID, operator=True,
           responses={200: Report, 401: None, 404: None, 503: None}),
        Op("get", "/ui/", "operatorPage",
           "The operator page (asks for the admin token, then reads the operator API)",
           responses={200: "text/html"}),
        Op("get", "/ui/ui.js", "operatorPageScript", "The operator page's script",
           responses={200: "text/javascript"}),
        Op("get", "/ui/ui.css", "operatorPageStyle", "The operator page's style sheet",
           responses={200: "text/css"}),
        Op("post", "/judging/campaigns", "createCampaign",
           "Create a judging campaign: queries, their pools, test pairs, parameters",
           body=s.NewCampaign, operator=True,
           responses={201: s.CampaignCreated, 400: None, 401: None, 413: None, 422: None,
                      503: None},
           links={201: {
               "AddAssessor": {"operationId": "addAssessor",
                               "parameters": {"cid": "$response.body#/id"}},
               "GetCampaign": {"operationId": "getCampaign",
                               "parameters": {"cid": "$response.body#/id"}},
               "CampaignQrels": {"operationId": "campaignQrels",
                                 "parameters": {"cid": "$response.body#/id"}},
               "CampaignGraph": {"operationId": "campaignGraph",
                                 "parameters": {"cid": "$response.body#/id"}}}}),
        Op("get", "/judging/campaigns", "listCampaigns", "Judging campaigns", operator=True,
           responses={200: s.CampaignList, 401: None, 503: None}),
        Op("get", "/judging/campaigns/{cid}", "getCampaign",
           "A campaign's state: per query its phase, pool, judgments and best items",
           path_params=CID, operator=True,
           responses={200: s.CampaignState, 401: None, 404: None, 503: None}),
        Op("post", "/judging/campaigns/{cid}/assessors", "addAssessor",
           "Issue an assessor id (ids are unique across campaigns)",
           body=s.NewAssessor, body_required=False, path_params=CID, operator=True,
           responses={201: s.AssessorCreated, 400: None, 401: None, 404: None,
                      409: "The assessor id is taken", 413: None, 422: None, 503: None},
           links={201: {"NextTask": {"operationId": "nextTask", "parameters": {
               "assessor": "$response.body#/assessor"}}}}),
        Op("get", "/judging/campaigns/{cid}/qrels", "campaignQrels",
           "The best items as TREC qrels", path_params=CID, operator=True,
           responses={200: "text/plain", 401: None, 404: None, 503: None}),
        Op("get", "/judging/campaigns/{cid}/graph", "campaignGraph",
           "The preference graph of every query", path_params=CID, operator=True,
           responses={200: "object", 401: None, 404: None, 503: None}),
        Op("get", "/judging/tasks/next", "nextTask",
           "An assessor's task: ten target pairs and three test pairs (204: none now)",
           query=s.TaskQuery,
           responses={200: s.Task, 204: "empty", 400: None,
                      403: "Not an assessor, or excluded (< 75% of test pairs right)",
                      503: None},
           links={200: {"SubmitJudgments": {
               "operationId": "submitJudgments",
               "parameters": {"task_id": "$response.body#/task_id"},
               "requestBody": {"assessor": "$response.body#/assessor", "judgments": [
                   {"pair": "$response.body#/pairs/0/pair", "choice": "left"}]}}}}),
        Op("post", "/judging/tasks/{task_id}/judgments", "submitJudgments",
           "Submit a task's judgments (once; a replay with the same judgments is 200)",
           body=s.Judgments,
           path_params={"task_id": {"type": "string", "minLength": 1, "maxLength": 80}},
           responses={200: s.Submitted, 202: s.Submitted, 400: None,
                      403: "The task was given to another assessor", 404: None,
                      409: "Submitted before with other judgments", 413: None,
                      422: "Not one judgment per pair of the task", 503: None}),
        Op("get", "/judging/assess", "judgingPage",
           "The judging page (?assessor=ID): two items side by side, keyboard shortcuts",
           responses={200: "text/html"}),
        Op("get", "/healthz", "healthz", "Liveness (no dependency checked)",
           responses={200: s.Healthy}),
        Op("get", "/readyz", "readyz", "Readiness (Redis reachable)",
           responses={200: s.Ready, 503: None}),
        Op("get", "/metrics", "metrics",
           "Prometheus metrics (bearer: the metrics token or the admin token)",
           operator=True, responses={200: "text/plain", 401: None, 503: None}),
        Op("get", "/openapi.json", "openapi", "This document", responses={200: "object"}),
    ]


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
    if op.operator:
        out["security"] = [{"bearer": []}]
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
