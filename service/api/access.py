"""The one place keys are enforced: every request's operation (the :class:`~service.api.spec.Op`
its route declared) says the scope it needs; :func:`install` checks it before any handler.

* an operation open to anyone (``scope=None``) passes;
* a front-end operation without an ``Authorization`` header is a browser's (its
  impression token is checked by the handler); with one, the key must hold ``frontend``
  (``g.frontend_keyed``);
* otherwise the key (:class:`~service.access.gate.Gate`): 401 for a missing, wrong,
  revoked or expired one, 403 naming the scope needed when it may not (recorded in the
  audit trail, nothing else changed); for ``write:placement:NAME`` keys the placement
  the call acts on comes from the operation's ``placement_from``.

A call that may change something (an operation needing ``write`` or ``admin`` that is not
a GET) runs inside a :class:`~service.store.trail.Call`: each store write of the change
appends its trail entry in the same transaction. After the handler, a failed call (4xx,
5xx) is recorded with its status and message; a successful call whose change wrote no
entry (a replayed idempotent creation) is recorded then, marked ``same_write: false``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from flask import Flask, Response, g, request

from service.access import scopes
from service.access.gate import Principal
from service.api.frontend import client_address
from service.api.spec import Op
from service.api.validation import json_body
from service.errors import Forbidden
from service.runtime import Runtime, runtime
from service.store import trail
from service.store.snapshot import ExperimentMissing

log = logging.getLogger("rankduel.api")


def mutates(op: Op) -> bool:
    """Whether ``op`` may change state under an operator's key (its calls are audited)."""
    return op.method != "get" and op.scope in ("write", "admin")


def placement_of(op: Op, rt: Runtime) -> str | None:
    """The placement the request acts on, from the operation's ``placement_from``
    (None: none, or an unknown experiment, which its handler answers 404)."""
    where = op.placement_from
    if where is None:
        return None
    if where == "path":
        return (request.view_args or {}).get("name")
    if where == "experiment":
        exp_id = (request.view_args or {}).get("exp_id")
        try:
            placement = rt.store.experiments.snapshot(exp_id).meta.get("placement")
        except ExperimentMissing:
            return None
        return placement if isinstance(placement, str) else None
    if where.startswith("body:"):
        raw = request.get_data(cache=True)
        if not raw:
            return None
        body = json_body(request)  # the project's parsing: 400 for bad or deep JSON
        value = body.get(where.partition(":")[2])
        return value if isinstance(value, str) else None
    raise ValueError(f"unknown placement_from {where!r}")


def refuse(rt: Runtime, op: Op, principal: Principal, placement: str | None,
           addr: str) -> Forbidden:
    """The 403 of a key outside its scope, recorded in the audit trail first."""
    needed = scopes.needed_words(op.scope or "", placement)
    target = {"placement": placement} if placement else {}
    exp_id = (request.view_args or {}).get("exp_id")
    if exp_id:
        target["experiment"] = exp_id
    call = trail.Call(op=op.operation_id, who=principal.who, addr=addr,
                      retention_s=retention_s(rt))
    try:
        rt.store.access.record(trail.entry(call, "refused", target, None,
                                           result=f"403: needs {needed}"),
                               retention_s(rt))
    except Exception:
        log.warning("could not record a refused call of %s", op.operation_id)
    return Forbidden(f"{principal.label} may not call {op.operation_id}: it needs scope "
                     f"{needed} (it has {', '.join(principal.scopes)})")


def retention_s(rt: Runtime) -> float:
    return rt.config.audit_retention_days * 86_400.0


def install(app: Flask, ops: list[Op]) -> None:
    """Check every request's key against its operation's scope (before any handler),
    and record each operator change's failure (after it)."""
    table: dict[tuple[str, str], Op] = {(op.endpoint, op.method.upper()): op for op in ops}

    def enforce() -> None:
        # HEAD runs the GET handler (Flask adds it to every GET rule): the GET's scope
        method = "GET" if request.method == "HEAD" else request.method
        op = table.get((request.endpoint or "", method))
        if op is None or op.scope is None:
            return
        rt = runtime()
        header = request.headers.get("Authorization")
        if op.browser and header is None:
            g.frontend_keyed = False
            return
        principal = rt.gate.principal(header)
        g.principal = principal
        change = mutates(op)
        placement = None
        held = set(principal.scopes)
        if op.placement_from and (change or not (held & {"admin", "write", "read"})):
            placement = placement_of(op, rt)
        addr = client_address(rt.config.trusted_proxies)
        if not scopes.allows(principal.scopes, op.scope, placement):
            raise refuse(rt, op, principal, placement, addr)
        g.frontend_keyed = op.scope == "frontend"
        if change:
            call = trail.Call(op=op.operation_id, who=principal.who, addr=addr,
                              retention_s=retention_s(rt), client=rt.store.r,
                              placement=placement)
            g.trail_call = call
            g.trail_reset = trail.CURRENT.set(call)

    def after(response: Response) -> Response:
        call = g.pop("trail_call", None)
        if call is None:
            return response
        trail.CURRENT.set(None)
        status = response.status_code
        if status < 400 and call.written:
            return response
        target: dict[str, str] = {}
        for name, what in (("exp_id", "experiment"), ("name", "placement"),
                           ("hook_id", "webhook"), ("cid", "campaign"),
                           ("key_id", "key")):
            value = (request.view_args or {}).get(name)
            if name == "name" and not request.path.startswith("/placements/"):
                continue  # a ranker's name (/experiments/ID/rankers/NAME)
            if value:
                target[what] = value
        if status < 400:
            result, change = "ok", {"same_write": False}
        else:
            result, change = f"{status}: {_error_of(response)}", None
        rt = runtime()
        try:
            rt.store.access.record(trail.entry(call, "failed" if status >= 400 else "done",
                                               target, change, result=result),
                                   retention_s(rt))
        except Exception:
            log.warning("could not record the result of %s", call.op)
        return response

    def teardown(_exc: BaseException | None) -> None:
        token = g.pop("trail_reset", None)
        if token is not None:
            try:
                trail.CURRENT.reset(token)
            except ValueError:  # set in another context: clear it
                trail.CURRENT.set(None)

    app.before_request(enforce)
    app.after_request(after)
    app.teardown_request(teardown)


def _error_of(response: Response) -> str:
    try:
        body: Any = json.loads(response.get_data())
    except ValueError:
        return ""
    message = body.get("error", "") if isinstance(body, dict) else ""
    return str(message)[:200]
