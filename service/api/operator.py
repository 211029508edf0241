"""Operator endpoints (``/experiments...``), behind ``Authorization: Bearer <token>``."""

from __future__ import annotations

import logging
from functools import partial

from flask import Blueprint, jsonify, request

from service import experiments
from service.api.auth import require_bearer
from service.api.schemas import AuditQuery, ExperimentPatch, NewExperiment, NewRanker
from service.api.validation import json_body, parse
from service.errors import NotFound
from service.reports.build import build as build_report
from service.runtime import Runtime, runtime
from service.store.snapshot import ExperimentMissing

bp = Blueprint("operator", __name__, url_prefix="/experiments")
log = logging.getLogger("rankduel.api")


@bp.before_request
def require_token() -> None:
    require_bearer(request.headers.get("Authorization", ""), [runtime().config.admin_token],
                   what="admin token")


def _prober(rt: Runtime) -> experiments.Prober:
    return partial(experiments.probe_rankers, rt.rankers, query=rt.config.probe_query)


def _describe(exp_id: str):
    rt = runtime()
    return jsonify(experiments.describe(rt.store, rt.store.snapshot(exp_id, full=True)))


@bp.post("")
def create():
    rt = runtime()
    spec = parse(NewExperiment, json_body(request), status=422)
    exp_id = experiments.create(rt.store, spec, default_timeout_ms=rt.config.ranker_timeout_ms,
                                probe=_prober(rt), policy=rt.rankers.policy)
    return _describe(exp_id), 201


@bp.get("")
def list_experiments():
    rt = runtime()
    out = []
    for exp_id in rt.store.list_ids():
        try:
            out.append(experiments.summary(rt.store, rt.store.snapshot(exp_id)))
        except ExperimentMissing:  # deleted between the listing and the read
            continue
    return jsonify({"experiments": out})


@bp.get("/<exp_id>")
def get(exp_id: str):
    return _describe(exp_id)


@bp.get("/<exp_id>/report")
def report(exp_id: str):
    """What the experiment has decided, in words and figures (:mod:`service.reports.build`)."""
    return jsonify(build_report(runtime().store, exp_id))


@bp.delete("/<exp_id>")
def delete(exp_id: str):
    rt = runtime()
    keys = rt.store.delete_experiment(exp_id)
    rt.controller.forget(exp_id)
    log.info("experiment %s deleted (%d keys)", exp_id, keys)
    return jsonify({"id": exp_id, "deleted": True, "keys": keys})


@bp.patch("/<exp_id>")
def patch(exp_id: str):
    body = json_body(request)
    experiments.refuse_definition_change(body)
    change = parse(ExperimentPatch, body, status=422)
    experiments.rename(runtime().store, exp_id, change.name)
    return _describe(exp_id)


@bp.post("/<exp_id>/rankers")
def add_ranker(exp_id: str):
    rt = runtime()
    ranker = parse(NewRanker, json_body(request), status=422)
    entry = experiments.add_ranker(rt.store, exp_id, ranker,
                                   default_timeout_ms=rt.config.ranker_timeout_ms,
                                   probe=_prober(rt), policy=rt.rankers.policy)
    return jsonify(entry.to_json()), 201


@bp.delete("/<exp_id>/rankers/<name>")
def retire_ranker(exp_id: str, name: str):
    return jsonify(experiments.retire_ranker(runtime().store, exp_id, name).to_json())


@bp.post("/<exp_id>/<any(pause, resume, stop):action>")
def lifecycle(exp_id: str, action: str):
    state = experiments.set_lifecycle(runtime().store, exp_id, action)
    return jsonify({"id": exp_id, "lifecycle": state})


@bp.get("/<exp_id>/audit")
def audit(exp_id: str):
    rt = runtime()
    if not rt.store.exists(exp_id):
        raise NotFound(f"no experiment {exp_id!r}")
    args = parse(AuditQuery, request.args.to_dict(), query=True)
    return jsonify({"id": exp_id, "audit": rt.store.audit(exp_id, -args.limit, -1)})
