"""Judging campaigns (Yan 2022): the operator's routes (a key with ``read`` or ``write``)
and the assessors' (``/judging/tasks/...``, identified by the id the operator issued),
plus the judging page.

The logic lives in :mod:`judging.campaign`, the Redis state in :mod:`service.campaigns.operations`;
submitted tasks are applied by the workers (``rankduel.judging_apply``).
"""

from __future__ import annotations

from importlib.resources import files

from flask import Blueprint, Response, jsonify, request

from service import schemas as s
from service.api.spec import (
    CID,
    Operations,
)
from service.api.validation import json_body, parse
from service.campaigns.operations import Campaigns
from service.queue import JUDGING_APPLY
from service.runtime import runtime
from service.schemas import Judgments, NewAssessor, NewCampaign, TaskQuery

bp = Blueprint("judging", __name__, url_prefix="/judging")
OPS = Operations(bp)

_PAGE = files("service").joinpath("static/judging.html").read_bytes()



def _campaigns() -> Campaigns:
    return Campaigns(runtime().store)


@OPS.post("/campaigns", "createCampaign",
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
                          "parameters": {"cid": "$response.body#/id"}}}})
def create():
    spec = parse(NewCampaign, json_body(request), status=422)
    cid = _campaigns().create(spec.model_dump())
    return jsonify({"id": cid, "queries": len(spec.queries)}), 201


@OPS.get("/campaigns", "listCampaigns", "Judging campaigns", operator=True,
    responses={200: s.CampaignList, 401: None, 503: None})
def list_campaigns():
    return jsonify({"campaigns": _campaigns().list_ids()})


@OPS.get("/campaigns/<cid>", "getCampaign",
    "A campaign's state: per query its phase, pool, judgments and best items",
    path_params=CID, operator=True,
    responses={200: s.CampaignState, 401: None, 404: None, 503: None})
def state(cid: str):
    return jsonify(_campaigns().state(cid))


@OPS.post("/campaigns/<cid>/assessors", "addAssessor",
    "Issue an assessor id (ids are unique across campaigns)",
    body=s.NewAssessor, body_required=False, path_params=CID, operator=True,
    responses={201: s.AssessorCreated, 400: None, 401: None, 404: None,
               409: "The assessor id is taken", 413: None, 422: None, 503: None},
    links={201: {"NextTask": {"operationId": "nextTask", "parameters": {
        "assessor": "$response.body#/assessor"}}}})
def add_assessor(cid: str):
    body = parse(NewAssessor, json_body(request, required=False) or {}, status=422)
    return jsonify({"campaign": cid, "assessor": _campaigns().add_assessor(cid, body.id)}), 201


@OPS.get("/campaigns/<cid>/qrels", "campaignQrels",
    "The best items as TREC qrels", path_params=CID, operator=True,
    responses={200: "text/plain", 401: None, 404: None, 503: None})
def qrels(cid: str):
    """The best items as TREC qrels (``query 0 item 1``)."""
    from judging.campaign import qrels as to_qrels

    return Response(to_qrels(_campaigns().export(cid)), content_type="text/plain")


@OPS.get("/campaigns/<cid>/graph", "campaignGraph",
    "The preference graph of every query", path_params=CID, operator=True,
    responses={200: "object", 401: None, 404: None, 503: None})
def graph(cid: str):
    """Every query's preference graph (JSON)."""
    from judging.campaign import preference_graph

    return jsonify(preference_graph(_campaigns().export(cid)))


@OPS.get("/tasks/next", "nextTask",
    "An assessor's task: ten target pairs and three test pairs (204: none now)",
    query=s.TaskQuery,
    responses={200: s.Task, 204: "empty", 400: None,
               403: "Not an assessor, or excluded (< 75% of test pairs right)",
               503: None},
    links={200: {"SubmitJudgments": {
        "operationId": "submitJudgments",
        "parameters": {"task_id": "$response.body#/task_id"},
        "requestBody": {"assessor": "$response.body#/assessor", "judgments": [
            {"pair": "$response.body#/pairs/0/pair", "choice": "left"}]}}}})
def next_task():
    args = parse(TaskQuery, request.args.to_dict(), query=True)
    campaigns = _campaigns()
    task = campaigns.next_task(campaigns.campaign_of(args.assessor), args.assessor)
    if task is None:
        return Response(status=204)
    return jsonify(task)


@OPS.post("/tasks/<task_id>/judgments", "submitJudgments",
    "Submit a task's judgments (once; a replay with the same judgments is 200)",
    body=s.Judgments,
    path_params={"task_id": {"type": "string", "minLength": 1, "maxLength": 80}},
    responses={200: s.Submitted, 202: s.Submitted, 400: None,
               403: "The task was given to another assessor", 404: None,
               409: "Submitted before with other judgments", 413: None,
               422: "Not one judgment per pair of the task", 503: None})
def submit(task_id: str):
    body = parse(Judgments, json_body(request), status=422)
    cid = task_id.rpartition(".")[0]
    answers = {j.pair: {"choice": j.choice, "no_difference": j.no_difference}
               for j in body.judgments}
    out, new = _campaigns().submit(cid, task_id, body.assessor, answers,
                                   duplicates=len(body.judgments) - len(answers))
    if new:
        runtime().queue.send(JUDGING_APPLY, cid)
    return jsonify(out), 202 if new else 200


@OPS.get("/assess", "judgingPage",
    "The judging page (?assessor=ID): two items side by side, keyboard shortcuts",
    responses={200: "text/html"})
def page():
    """The judging page (``?assessor=ID``; the assessor names the campaign): a query, two
    items side by side, keyboard shortcuts."""
    return Response(_PAGE, content_type="text/html; charset=utf-8")
