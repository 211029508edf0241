"""The OpenAPI 3.1 document served at ``/openapi.json`` (written by hand, tested against
the app's URL map so that every route is documented)."""

from __future__ import annotations

from typing import Any

ERROR = {"$ref": "#/components/schemas/Error"}


def _err(*codes: int) -> dict[str, Any]:
    text = {400: "Malformed request", 401: "Missing or wrong bearer token",
            403: "Missing, forged or expired token", 404: "Unknown experiment or impression",
            409: "Not allowed in the current state", 422: "Invalid content",
            502: "Every ranker failed", 503: "Redis unreachable"}
    return {str(c): {"description": text[c], "content": {"application/json": {"schema": ERROR}}}
            for c in codes}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


EXP_ID = {"name": "exp_id", "in": "path", "required": True, "schema": {"type": "string"}}
SECURED = [{"bearer": []}]

SCHEMAS: dict[str, Any] = {
    "Error": {"type": "object", "required": ["error"],
              "properties": {"error": {"type": "string"}}},
    "Ranker": {
        "type": "object", "required": ["name", "url"],
        "properties": {
            "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}$"},
            "url": {"type": "string", "format": "uri",
                    "description": "called as GET URL?q=TEXT&k=K → {\"results\": [{\"id\"}]}"},
            "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 60000},
        },
    },
    "NewExperiment": {
        "type": "object", "required": ["name", "rankers", "algorithm", "interleaving"],
        "properties": {
            "name": {"type": "string"},
            "rankers": {"type": "array", "minItems": 2, "items": _ref("Ranker")},
            "algorithm": {"type": "string", "examples": ["mergedts", "mergerucb", "rucb", "mdb"]},
            "params": {"type": "object", "additionalProperties": True},
            "interleaving": {"type": "string",
                             "examples": ["team_draft", "probabilistic", "balanced"]},
            "seed": {"type": "integer", "minimum": 0},
            "true_preferences": {
                "type": "array", "items": {"type": "array", "items": {"type": "number"}},
                "description": "Simulations only: the true K×K preference matrix over "
                               "`rankers` (for the true-regret metric)"},
            "true_best": {"type": "string",
                          "description": "Ranker that true regret is measured against "
                                         "(default: the Condorcet winner of true_preferences)"},
        },
    },
    "Experiment": {
        "type": "object",
        "description": "Full state: rankers with status (active/eliminated/retired, when and "
                       "by whom), batches, stage, champion, comparisons, W and the empirical "
                       "preference matrix with 95% Wilson bounds.",
        "properties": {
            "id": {"type": "string"}, "name": {"type": "string"},
            "algorithm": {"type": "string"}, "interleaving": {"type": "string"},
            "lifecycle": {"enum": ["running", "paused", "stopped"]},
            "champion": {"type": ["string", "null"]},
            "comparisons": {"type": "integer"},
            "rankers": {"type": "array", "items": {"type": "object"}},
            "batches": {"type": ["array", "null"]}, "stage": {},
            "W": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
            "preferences": {"type": "object"},
            "counters": {"type": "object"},
        },
    },
    "SearchResult": {
        "type": "object", "required": ["impression_id", "token", "rankers", "results"],
        "properties": {
            "impression_id": {"type": "string"},
            "token": {"type": "string", "description": "HMAC for /clicks and /end"},
            "experiment": {"type": "string"},
            "rankers": {"type": "array", "items": {"type": "string"}},
            "results": {"type": "array", "items": {
                "type": "object", "required": ["id", "rank"],
                "properties": {"id": {}, "rank": {"type": "integer", "minimum": 1}},
                "additionalProperties": True}},
        },
    },
    "Clicks": {
        "type": "object", "required": ["impression_id", "token", "clicks"],
        "properties": {
            "impression_id": {"type": "string"}, "token": {"type": "string"},
            "clicks": {"type": "array", "minItems": 1, "maxItems": 100, "items": {
                "type": "object", "required": ["id", "rank"],
                "properties": {"id": {}, "rank": {"type": "integer", "minimum": 1}}}},
        },
    },
}


def openapi_document() -> dict[str, Any]:
    """The API description."""
    lifecycle = {
        "post": {"summary": "Pause, resume or stop (running ⇄ paused → stopped)",
                 "security": SECURED,
                 "parameters": [EXP_ID, {"name": "action", "in": "path", "required": True,
                                         "schema": {"enum": ["pause", "resume", "stop"]}}],
                 "responses": {"200": _json({"type": "object"}), **_err(401, 404, 409)}},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "rankduel", "version": "0.1.0",
                 "description": "Online interleaving experiments run by dueling bandits."},
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": {
            "/search": {"get": {
                "summary": "Serve an interleaved result page",
                "parameters": [
                    {"name": "experiment", "in": "query", "required": True,
                     "schema": {"type": "string"}},
                    {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
                    {"name": "k", "in": "query", "schema": {"type": "integer", "minimum": 1}},
                    {"name": "user", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": _json(_ref("SearchResult")),
                              **_err(400, 404, 502, 503)}}},
            "/clicks": {"post": {
                "summary": "Report clicks (one or many; a repeated click counts once)",
                "requestBody": {"required": True,
                                "content": {"application/json": {"schema": _ref("Clicks")}}},
                "responses": {"202": _json({"type": "object"}, "Accepted"),
                              **_err(400, 403, 404, 409, 422)}}},
            "/impressions/{imp_id}/end": {"post": {
                "summary": "Close an impression; it is credited by a worker",
                "parameters": [{"name": "imp_id", "in": "path", "required": True,
                                "schema": {"type": "string"}}],
                "requestBody": {"required": False, "content": {"application/json": {
                    "schema": {"type": "object", "properties": {"token": {"type": "string"}}}}}},
                "responses": {"202": _json({"type": "object"}, "Accepted"),
                              **_err(400, 403, 404)}}},
            "/experiments": {
                "get": {"summary": "List experiments", "security": SECURED,
                        "responses": {"200": _json({"type": "object"}), **_err(401)}},
                "post": {"summary": "Create an experiment", "security": SECURED,
                         "requestBody": {"required": True, "content": {
                             "application/json": {"schema": _ref("NewExperiment")}}},
                         "responses": {"201": _json(_ref("Experiment"), "Created"),
                                       **_err(400, 401, 422)}},
            },
            "/experiments/{exp_id}": {
                "get": {"summary": "Experiment state", "security": SECURED,
                        "parameters": [EXP_ID],
                        "responses": {"200": _json(_ref("Experiment")), **_err(401, 404)}},
                "patch": {"summary": "Rename (algorithm, params, interleaving are immutable)",
                          "security": SECURED, "parameters": [EXP_ID],
                          "responses": {"200": _json(_ref("Experiment")),
                                        **_err(400, 401, 404, 409, 422)}},
            },
            "/experiments/{exp_id}/rankers": {"post": {
                "summary": "Add a ranker mid-experiment", "security": SECURED,
                "parameters": [EXP_ID],
                "requestBody": {"required": True,
                                "content": {"application/json": {"schema": _ref("Ranker")}}},
                "responses": {"201": _json({"type": "object"}, "Created"),
                              **_err(400, 401, 404, 409, 422)}}},
            "/experiments/{exp_id}/rankers/{name}": {"delete": {
                "summary": "Retire a ranker", "security": SECURED,
                "parameters": [EXP_ID, {"name": "name", "in": "path", "required": True,
                                        "schema": {"type": "string"}}],
                "responses": {"200": _json({"type": "object"}), **_err(401, 404, 409)}}},
            "/experiments/{exp_id}/{action}": lifecycle,
            "/experiments/{exp_id}/audit": {"get": {
                "summary": "Audit log: operator actions, eliminations, stage changes",
                "security": SECURED, "parameters": [EXP_ID],
                "responses": {"200": _json({"type": "object"}), **_err(401, 404)}}},
            "/healthz": {"get": {"summary": "Liveness", "responses": {"200": _json({})}}},
            "/readyz": {"get": {"summary": "Readiness (Redis reachable)",
                                "responses": {"200": _json({}), **_err(503)}}},
            "/metrics": {"get": {"summary": "Prometheus metrics",
                                 "responses": {"200": {"description": "text exposition"}}}},
            "/openapi.json": {"get": {"summary": "This document",
                                      "responses": {"200": _json({})}}},
        },
    }
