"""Operator endpoints of webhooks (``/webhooks...``), behind a key with ``read`` or ``write``
(:mod:`service.webhooks`; docs/webhooks.md)."""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from service.api.spec import Operations
from service.api.validation import json_body, parse
from service.runtime import runtime
from service.schemas import webhooks as s
from service.webhooks import operations as webhooks

bp = Blueprint("webhooks", __name__, url_prefix="/webhooks")
OPS = Operations(bp)
HOOK_ID = {"hook_id": {"type": "string", "description": "webhook id"}}


@OPS.post("", "createWebhook", "Send events (a verdict, a guardrail's pause, a ramp "
          "step...) to a URL, signed",
    body=s.NewWebhook, operator=True,
    responses={201: s.Webhook, 400: None, 401: None, 413: None,
               422: "A field is invalid, or the URL is refused by the allow-list",
               503: None},
    links={201: {"GetWebhook": {"operationId": "getWebhook",
                                "parameters": {"hook_id": "$response.body#/id"}},
                 "GetDeliveries": {"operationId": "getWebhookDeliveries",
                                   "parameters": {"hook_id": "$response.body#/id"}},
                 "DeleteWebhook": {"operationId": "deleteWebhook",
                                   "parameters": {"hook_id": "$response.body#/id"}}}})
def create():
    rt = runtime()
    body = parse(s.NewWebhook, json_body(request), status=422)
    return jsonify(webhooks.create(rt.store, rt.rankers.policy, url=body.url,
                                   events=body.events, secret=body.secret,
                                   experiments=body.experiments,
                                   description=body.description)), 201


@OPS.get("", "listWebhooks", "List webhooks (secrets never shown)", operator=True,
    responses={200: s.WebhookList, 401: None, 503: None})
def list_webhooks():
    return jsonify({"webhooks": webhooks.listing(runtime().store)})


@OPS.get("/<hook_id>", "getWebhook", "A webhook: its events, whether it is disabled",
    path_params=HOOK_ID, operator=True,
    responses={200: s.Webhook, 401: None, 404: None, 503: None})
def get(hook_id: str):
    return jsonify(webhooks.describe(runtime().store, hook_id))


@OPS.delete("/<hook_id>", "deleteWebhook", "Delete a webhook (nothing more is sent)",
    path_params=HOOK_ID, operator=True,
    responses={200: s.WebhookDeleted, 401: None, 404: None, 503: None})
def delete(hook_id: str):
    return jsonify(webhooks.delete(runtime().store, hook_id))


@OPS.get("/<hook_id>/deliveries", "getWebhookDeliveries",
    "The last events tried on a webhook: attempts, status codes, times, errors",
    query=s.DeliveriesQuery, path_params=HOOK_ID, operator=True,
    responses={200: s.Deliveries, 400: None, 401: None, 404: None, 503: None})
def deliveries(hook_id: str):
    args = parse(s.DeliveriesQuery, request.args.to_dict(), query=True)
    return jsonify({"id": hook_id,
                    "deliveries": webhooks.deliveries(runtime().store, hook_id, args.limit)})
