"""Operator endpoints (``/experiments...``), behind a key with ``read`` (GETs) or ``write``
(the rest), checked in one place (:mod:`service.api.access`)."""

from __future__ import annotations

import json
import logging
from functools import partial
from typing import Union

from flask import Blueprint, Response, jsonify, request
from pydantic import RootModel

from service import schemas as s
from service.ab import operations as ab_experiments
from service.ab.schemas import Confirm
from service.api.spec import (
    EXP_ID,
    FROM_CREATED,
    Operations,
    exp_links,
)
from service.api.validation import json_body, parse
from service.designs.registry import design_for_body, design_of, designs
from service.errors import NotFound, Unprocessable
from service.experiments import idempotency, ranker_versions
from service.experiments import operations as experiments
from service.placements import operations as placements
from service.placements import traffic as rollout_api
from service.reports import archive as archiving
from service.reports.schema import AnyReport
from service.runtime import Runtime, runtime
from service.schemas import AuditQuery, NewRanker
from service.schemas.ranker_versions import NewRankerVersion
from service.store.snapshot import ExperimentMissing


class ExperimentBody(RootModel):
    """``POST /experiments``: an interleaving experiment (one shape per algorithm), or,
    with ``"design": "ab"``, an A/B test on a placement (for the document: the handler
    parses the one the body's ``design`` names)."""

    root: Union[_BODIES]  # noqa: UP007  (each design's body: Design.schema)


bp = Blueprint("operator", __name__, url_prefix="/experiments")
OPS = Operations(bp)
log = logging.getLogger("rankduel.api")
#: what an experiment's state adds when set: an A/B test's design and control, and the
#: link between an interleaving verdict and the A/B test that confirms it
AB_FIELDS = ("design", "control", "confirms", "confirmed_by")
#: the body of ``POST /experiments`` each design takes, in the registry's order
_BODIES = tuple(d.schema for d in designs())


def _prober(rt: Runtime) -> experiments.Prober:
    return partial(experiments.probe_rankers, rt.rankers, query=rt.config.probe_query)


def _describe(exp_id: str):
    rt = runtime()
    snap = rt.store.experiments.snapshot(exp_id, full=True)
    return jsonify({**experiments.describe(rt.store, snap),
                    "rollout": placements.rollout_state(rt.store, snap.meta),
                    **{k: snap.meta[k] for k in AB_FIELDS if snap.meta.get(k)}})


@OPS.post("", "createExperiment", "Create an experiment",
    body=ExperimentBody, operator=True, placement_from="body:placement",
    header_params=[{"name": idempotency.HEADER, "required": False,
                    "schema": {"type": "string", "minLength": 1,
                               "maxLength": idempotency.MAX_KEY_CHARS,
                               "pattern": idempotency.KEY_PATTERN},
                    "description": "makes a retried creation safe: the same key and body "
                    "within 24 h answer 200 with the experiment the first created "
                    "(Idempotent-Replayed: true); the same key with another body, 422"}],
    responses={200: s.Experiment, 201: s.Experiment, 400: None, 401: None, 404: None,
               409: "A request with the same Idempotency-Key is still creating",
               413: None, 422: None, 503: None},
    links={201: exp_links(FROM_CREATED)})
def create():
    rt = runtime()
    key = idempotency.parse_key(request.headers.get(idempotency.HEADER))
    body = json_body(request)
    design = design_for_body(body)  # the body's form checked now, the rest by make()
    make = design.creation(rt, parse(design.schema, body, status=422), _prober(rt))

    if key is None:
        return _describe(make()), 201
    exp_id, replayed = idempotency.create_once(rt.store.r, key, body, make,
                                               exists=rt.store.experiments.exists)
    if not replayed:
        return _describe(exp_id), 201
    out = _describe(exp_id)
    out.headers[idempotency.REPLAYED] = "true"
    return out, 200


@OPS.get("", "listExperiments", "List experiments", operator=True,
    responses={200: s.ExperimentList, 401: None, 503: None},
    links={200: {"GetExperiment": {
        "operationId": "getExperiment",
        "parameters": {"exp_id": "$response.body#/experiments/0/id"}}}})
def list_experiments():
    rt = runtime()
    out = []
    for exp_id in rt.store.list_ids():
        try:
            out.append(experiments.summary(rt.store, rt.store.experiments.snapshot(exp_id)))
        except ExperimentMissing:  # deleted between the listing and the read
            continue
    return jsonify({"experiments": out})


@OPS.get("/<exp_id>", "getExperiment", "Experiment state",
    path_params=EXP_ID, operator=True, placement_from="experiment",
    responses={200: s.Experiment, 401: None, 404: None, 503: None})
def get(exp_id: str):
    return _describe(exp_id)


@OPS.delete("/<exp_id>", "deleteExperiment",
    "Delete an experiment and all its state (impressions and clicks included)",
    path_params=EXP_ID, operator=True, placement_from="experiment",
    responses={200: s.ExperimentDeleted, 401: None, 404: None, 503: None})
def delete(exp_id: str):
    rt = runtime()
    rollout_api.leave(rt, exp_id)
    keys = rt.store.experiments.delete_experiment(exp_id)
    rt.controller.forget(exp_id)
    log.info("experiment %s deleted (%d keys)", exp_id, keys)
    return jsonify({"id": exp_id, "deleted": True, "keys": keys})


@OPS.patch("/<exp_id>", "renameExperiment",
    "Rename, or change its traffic share (algorithm, params, interleaving, seed and "
    "rankers are immutable: 409)",
    body=s.ExperimentPatch, path_params=EXP_ID, operator=True, placement_from="experiment",
    responses={200: s.Experiment, 400: None, 401: None, 404: None, 409: None,
               413: None, 422: None, 503: None})
def patch(exp_id: str):
    body = json_body(request)
    experiments.refuse_definition_change(body)
    change = parse(s.ExperimentPatch, body, status=422)
    if change.name is None and change.traffic is None:
        raise Unprocessable("send a new name or a new traffic")
    if change.traffic is not None:
        rollout_api.set_traffic(runtime(), exp_id, change.traffic)
    if change.name is not None:
        experiments.rename(runtime().store, exp_id, change.name)
    return _describe(exp_id)


@OPS.post("/<exp_id>/rankers", "addRanker", "Add a ranker mid-experiment",
    body=s.NewRanker, path_params=EXP_ID, operator=True, placement_from="experiment",
    responses={201: s.RankerEntry, 400: None, 401: None, 404: None,
               409: "Duplicate name, or the experiment is stopped", 413: None,
               422: None, 503: None},
    links={201: {"RetireRanker": {
        "operationId": "retireRanker",
        "parameters": {"exp_id": "$request.path.exp_id",
                       "name": "$response.body#/name"}}}})
def add_ranker(exp_id: str):
    rt = runtime()
    ranker = parse(NewRanker, json_body(request), status=422)
    entry = experiments.add_ranker(rt.store, exp_id, ranker,
                                   default_timeout_ms=rt.config.ranker_timeout_ms,
                                   probe=_prober(rt), policy=rt.rankers.policy)
    return jsonify(entry.to_json()), 201


@OPS.post("/<exp_id>/rankers/<name>/versions", "addRankerVersion",
    "Change a ranker: add a new version (a new arm NAME@vN; the previous version retired "
    "unless retire_previous is false)",
    body=NewRankerVersion,
    path_params={**EXP_ID, "name": {"type": "string", "description": "ranker name"}},
    operator=True, placement_from="experiment",
    responses={201: s.RankerEntry, 400: None, 401: None, 404: None,
               409: "The experiment is stopped, or the body changes nothing", 413: None,
               422: None, 503: None})
def add_ranker_version(exp_id: str, name: str):
    rt = runtime()
    body = parse(NewRankerVersion, json_body(request), status=422)
    entry = ranker_versions.add_version(
        rt.store, exp_id, name, body.change(), retire_previous=body.retire_previous,
        probe=body.probe, default_timeout_ms=rt.config.ranker_timeout_ms,
        prober=_prober(rt), policy=rt.rankers.policy)
    return jsonify(entry.to_json()), 201


@OPS.delete("/<exp_id>/rankers/<name>", "retireRanker", "Retire a ranker",
    path_params={**EXP_ID, "name": {"type": "string", "description": "ranker name"}},
    operator=True, placement_from="experiment",
    responses={200: s.RankerEntry, 401: None, 404: None,
               409: "Already retired, or the last active ranker", 503: None})
def retire_ranker(exp_id: str, name: str):
    return jsonify(experiments.retire_ranker(runtime().store, exp_id, name).to_json())


@OPS.post("/<exp_id>/<any(pause, resume, stop):action>", "changeLifecycle",
    "Pause, resume or stop (running ⇄ paused → stopped)",
    path_params={**EXP_ID, "action": {"type": "string",
                                      "enum": ["pause", "resume", "stop"]}},
    operator=True, placement_from="experiment",
    responses={200: s.LifecycleChanged, 401: None, 404: None,
               409: "Transition not allowed from the current lifecycle", 503: None})
def lifecycle(exp_id: str, action: str):
    state = rollout_api.set_lifecycle(runtime(), exp_id, action)
    return jsonify({"id": exp_id, "lifecycle": state})


@OPS.get("/<exp_id>/audit", "getAudit",
    "Audit log: operator actions, eliminations, stage changes",
    query=s.AuditQuery, path_params=EXP_ID, operator=True, placement_from="experiment",
    responses={200: s.Audit, 400: None, 401: None, 404: None, 503: None})
def audit(exp_id: str):
    rt = runtime()
    if not rt.store.experiments.exists(exp_id):
        raise NotFound(f"no experiment {exp_id!r}")
    args = parse(AuditQuery, request.args.to_dict(), query=True)
    return jsonify({"id": exp_id, "audit": rt.store.experiments.audit(exp_id, -args.limit, -1)})


@OPS.get("/<exp_id>/events", "getEvents",
    "The event log, a page of JSON lines: impressions, clicks, outcomes",
    query=s.EventsQuery, path_params=EXP_ID, operator=True, placement_from="experiment",
    responses={200: "application/x-ndjson", 400: None, 401: None, 404: None, 503: None})
def events(exp_id: str):
    """A page of the event log (:mod:`service.store.event_log`) as JSON lines, oldest
    first; ``X-Next-Cursor`` is the cursor to pass as ``after`` for the next page (the
    same as ``after`` when the page is empty: nothing new yet)."""
    rt = runtime()
    if not rt.store.experiments.exists(exp_id):
        raise NotFound(f"no experiment {exp_id!r}")
    args = parse(s.EventsQuery, request.args.to_dict(), query=True)
    page = rt.store.event_log.events(exp_id, args.after, args.limit)
    body = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in page)
    resp = Response(body, mimetype="application/x-ndjson")
    resp.headers["X-Next-Cursor"] = page[-1]["cursor"] if page else args.after
    resp.headers["X-Events-Total"] = str(rt.store.event_log.event_count(exp_id))
    return resp


@OPS.get("/<exp_id>/report", "getReport",
    "What the experiment has decided: verdict, champion, certification, estimate",
    path_params=EXP_ID, operator=True, placement_from="experiment",
    responses={200: AnyReport, 401: None, 404: None, 503: None})
def report(exp_id: str):
    """What the experiment has decided, in words and figures (:mod:`service.reports.build`)."""
    rt = runtime()
    out = design_of(rt.store.experiments.snapshot(exp_id).meta).report(rt.store, exp_id)
    out["rollout"] = placements.rollout_state(rt.store, rt.store.experiments.snapshot(exp_id).meta)
    return jsonify(out)


@OPS.post("/<exp_id>/archive", "archiveExperiment",
    "Archive a stopped experiment: free its per-user and per-impression data, keep its "
    "state, report, verdicts, agreements and timeline", path_params=EXP_ID, operator=True,
    placement_from="experiment", responses={200: s.Archive, 401: None, 404: None,
               409: "Not stopped, or impressions still wait for their credit", 503: None})
def archive(exp_id: str):
    return jsonify(archiving.archive(runtime().store, exp_id))


@OPS.get("/<exp_id>/archive", "getArchive", "A stopped experiment's archive record",
    path_params=EXP_ID, operator=True, placement_from="experiment",
    responses={200: s.Archive, 401: None, 404: "No such experiment, or not archived",
               503: None})
def get_archive(exp_id: str):
    return jsonify(archiving.archived(runtime().store, exp_id))


@OPS.post("/<exp_id>/confirm", "confirmExperiment",
    "Confirm a certified interleaving verdict by an A/B test of its winner against the "
    "placement's control", path_params=EXP_ID, operator=True, placement_from="experiment",
    body=Confirm,
    body_required=False,
    responses={201: s.Experiment, 400: None, 401: None, 404: None, 413: None,
               409: "Not certified, on no placement, confirmed already, or its winner "
                    "is the control", 422: None, 503: None})
def confirm(exp_id: str):
    rt = runtime()
    raw = json_body(request) if request.get_data() else {}
    ab_id = ab_experiments.confirm(rt, exp_id, parse(Confirm, raw or {}, status=422))
    return _describe(ab_id), 201
