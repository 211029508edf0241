"""Operator endpoints of placements (``/placements...``), behind the admin token: a
search box, its control ranker and the shares of its experiments
(:mod:`service.placements.operations`; an experiment joins one at creation)."""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from service import schemas as s
from service.api.auth import require_bearer
from service.api.spec import Operations
from service.api.validation import json_body, parse
from service.errors import Unprocessable
from service.experiments.operations import probe_rankers, ranker_entry
from service.placements import operations as placements
from service.runtime import runtime

bp = Blueprint("placements", __name__, url_prefix="/placements")
OPS = Operations(bp)
NAME = {"name": {"type": "string", "description": "placement name"}}


@bp.before_request
def require_token() -> None:
    require_bearer(request.headers.get("Authorization", ""), [runtime().config.admin_token],
                   what="admin token")


def _control(body, probe: bool) -> object:
    """The control ranker of a body, probed with the test query unless ``probe`` is
    false: a control that does not answer would make every control search a 502."""
    rt = runtime()
    ranker = ranker_entry(body, default_timeout_ms=rt.config.ranker_timeout_ms,
                          where="control.", policy=rt.rankers.policy)
    if probe:
        try:
            probe_rankers(rt.rankers, [ranker], rt.config.probe_query)
        except Unprocessable as exc:
            raise Unprocessable(f"field 'control': the control {exc.message}") from None
    return ranker


@OPS.post("", "createPlacement", "Create a placement (a search box) with its control ranker",
    body=s.NewPlacement, operator=True,
    responses={201: s.PlacementState, 400: None, 401: None, 409: "It exists", 413: None,
               422: None, 503: None},
    links={201: {
        "GetPlacement": {"operationId": "getPlacement",
                         "parameters": {"name": "$response.body#/name"}},
        "UpdatePlacement": {"operationId": "updatePlacement",
                            "parameters": {"name": "$response.body#/name"}},
        "SearchPlacement": {"operationId": "search",
                            "parameters": {"placement": "$response.body#/name"}}}})
def create():
    body = parse(s.NewPlacement, json_body(request), status=422)
    return jsonify(placements.create(runtime().store, body.name,
                                     _control(body.control, body.probe), body.salt)), 201


@OPS.get("", "listPlacements", "List placements", operator=True,
    responses={200: s.PlacementList, 401: None, 503: None})
def list_placements():
    store = runtime().store
    return jsonify({"placements": [placements.describe(store, n)
                                   for n in store.placements.placement_names()]})


@OPS.get("/<name>", "getPlacement",
    "A placement: control, experiments, their shares now, bucket ranges, guardrails",
    path_params=NAME, operator=True,
    responses={200: s.PlacementState, 401: None, 404: None, 503: None})
def get(name: str):
    return jsonify(placements.describe(runtime().store, name))


@OPS.patch("/<name>", "updatePlacement",
    "Change the control ranker or the salt (a new salt reshuffles every user)",
    body=s.PlacementPatch, path_params=NAME, operator=True,
    responses={200: s.PlacementState, 400: None, 401: None, 404: None, 413: None,
               422: None, 503: None})
def update(name: str):
    body = parse(s.PlacementPatch, json_body(request), status=422)
    control = _control(body.control, body.probe) if body.control is not None else None
    out = placements.update(runtime().store, name, control=control, salt=body.salt)
    if runtime().placements is not None:
        runtime().placements.forget(name)
    return jsonify(out)
