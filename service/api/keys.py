"""API keys (``/keys``, ``admin`` only: no key can mint a stronger one) and the audit
trail (``/audit``, ``read``). The secret of a new key is in ``POST /keys``'s answer and
nowhere else; the store keeps its SHA-256 (:mod:`service.store.access`)."""

from __future__ import annotations

import json
import time

from flask import Blueprint, Response, g, jsonify, request

from service.access import audit as trail_reads
from service.access import secret
from service.api.spec import Operations
from service.api.validation import json_body, parse
from service.errors import NotFound
from service.runtime import runtime
from service.schemas import keys as s

bp = Blueprint("keys", __name__)
OPS = Operations(bp)
KEY_ID = {"key_id": {"type": "string", "description": "key id (k + 12 hex digits)"}}


@OPS.post("/keys", "createKey", "Create an API key (its secret is shown in this answer only)",
    body=s.NewKey, scope="admin",
    responses={201: s.KeyCreated, 400: None, 401: None, 403: None, 413: None,
               422: "The field named: an unknown scope, an empty scope list, an empty "
                    "or over-long name, scopes that are not a list, an expiry in the past",
               503: None},
    links={201: {"RevokeKey": {"operationId": "revokeKey",
                               "parameters": {"key_id": "$response.body#/id"}}}})
def create():
    rt = runtime()
    body = parse(s.NewKey, json_body(request), status=422,
                 content=frozenset({"name", "scopes", "expires_at"}))
    key_id, key = secret.new_key()
    now = time.time()
    record = {"id": key_id, "name": body.name, "prefix": secret.prefix(key_id),
              "scopes": body.scopes, "hash": secret.digest(key), "created": now,
              "expires_at": body.expires_at, "last_used": None, "revoked": None}
    rt.store.access.create_key({k: v for k, v in record.items()
                                if k not in ("last_used", "revoked")})
    return jsonify({**s.key_view(record, now), "key": key}), 201


@OPS.get("/keys", "listKeys", "Every key: name, id, scopes, created, last used, expiry "
         "(never the secret)", scope="admin",
    responses={200: s.KeyList, 401: None, 403: None, 503: None})
def listing():
    now = time.time()
    return jsonify({"keys": [s.key_view(r, now) for r in runtime().store.access.key_records()]})


@OPS.get("/keys/me", "whoAmI", "The key of this request: who and its scopes", scope="key",
    responses={200: s.Me, 401: None, 503: None})
def me():
    return jsonify({"who": g.principal.who, "scopes": list(g.principal.scopes)})


@OPS.delete("/keys/<key_id>", "revokeKey",
    "Revoke a key: every API process refuses it within 2 s", path_params=KEY_ID,
    scope="admin", responses={200: s.Key, 401: None, 403: None, 404: None, 503: None})
def revoke(key_id: str):
    rt = runtime()
    record = rt.store.access.revoke_key(key_id[:40])
    if record is None:
        raise NotFound(f"no key {key_id[:40]!r}")
    rt.gate.forget()
    return jsonify(s.key_view(record, time.time()))


def _filters() -> tuple[trail_reads.Filters, s.AuditQuery]:
    args = parse(s.AuditQuery, request.args.to_dict(), query=True)
    return trail_reads.Filters(key=args.key, experiment=args.experiment,
                               placement=args.placement, since=args.since), args


@OPS.get("/audit", "getAuditTrail",
    "Who changed what: every operator change (and refused or failed call), oldest first, "
    "filtered by key, experiment, placement, since", query=s.AuditQuery, scope="read",
    responses={200: s.AuditPage, 400: None, 401: None, 403: None, 503: None})
def trail():
    f, args = _filters()
    entries, nxt = trail_reads.page(runtime().store.access, f, after=args.after,
                                    limit=args.limit)
    return jsonify({"entries": entries, "next": nxt})


@OPS.get("/audit/export", "exportAuditTrail",
    "The audit trail as NDJSON (one entry a line; the same filters), for a SIEM",
    query=s.AuditQuery, scope="read",
    responses={200: "application/x-ndjson", 400: None, 401: None, 403: None, 503: None})
def export():
    f, args = _filters()
    if args.after:  # a bad cursor is a 400 before the answer starts
        trail_reads.parse_cursor(args.after)
    access = runtime().store.access
    lines = (json.dumps(e, separators=(",", ":")) + "\n"
             for e in trail_reads.every(access, f, after=args.after))
    return Response(lines, mimetype="application/x-ndjson")
