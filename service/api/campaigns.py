"""Judging campaigns (Yan 2022): the operator's routes (bearer token) and the assessors'
(``/judging/tasks/...``, identified by the id the operator issued), plus the judging page.

The logic lives in :mod:`judging.campaign`, the Redis state in :mod:`service.campaigns`;
submitted tasks are applied by the workers (``rankduel.judging_apply``).
"""

from __future__ import annotations

from importlib.resources import files

from flask import Blueprint, Response, jsonify, request

from service.api.auth import require_bearer
from service.api.schemas import Judgments, NewAssessor, NewCampaign, TaskQuery
from service.api.validation import json_body, parse
from service.campaigns import Campaigns
from service.queue import JUDGING_APPLY
from service.runtime import runtime

bp = Blueprint("judging", __name__, url_prefix="/judging")

_PAGE = files("service").joinpath("static/judging.html").read_bytes()



def _campaigns() -> Campaigns:
    return Campaigns(runtime().store)


def _operator() -> None:
    require_bearer(request.headers.get("Authorization", ""), [runtime().config.admin_token],
                   what="admin token")


@bp.post("/campaigns")
def create():
    _operator()
    spec = parse(NewCampaign, json_body(request), status=422)
    cid = _campaigns().create(spec.model_dump())
    return jsonify({"id": cid, "queries": len(spec.queries)}), 201


@bp.get("/campaigns")
def list_campaigns():
    _operator()
    return jsonify({"campaigns": _campaigns().list_ids()})


@bp.get("/campaigns/<cid>")
def state(cid: str):
    _operator()
    return jsonify(_campaigns().state(cid))


@bp.post("/campaigns/<cid>/assessors")
def add_assessor(cid: str):
    _operator()
    body = parse(NewAssessor, json_body(request, required=False) or {}, status=422)
    return jsonify({"campaign": cid, "assessor": _campaigns().add_assessor(cid, body.id)}), 201


@bp.get("/campaigns/<cid>/qrels")
def qrels(cid: str):
    """The best items as TREC qrels (``query 0 item 1``)."""
    from judging.campaign import qrels as to_qrels

    _operator()
    return Response(to_qrels(_campaigns().export(cid)), content_type="text/plain")


@bp.get("/campaigns/<cid>/graph")
def graph(cid: str):
    """Every query's preference graph (JSON)."""
    from judging.campaign import preference_graph

    _operator()
    return jsonify(preference_graph(_campaigns().export(cid)))


@bp.get("/tasks/next")
def next_task():
    args = parse(TaskQuery, request.args.to_dict(), query=True)
    campaigns = _campaigns()
    task = campaigns.next_task(campaigns.campaign_of(args.assessor), args.assessor)
    if task is None:
        return Response(status=204)
    return jsonify(task)


@bp.post("/tasks/<task_id>/judgments")
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


@bp.get("/assess")
def page():
    """The judging page (``?assessor=ID``; the assessor names the campaign): a query, two
    items side by side, keyboard shortcuts."""
    return Response(_PAGE, content_type="text/html; charset=utf-8")
