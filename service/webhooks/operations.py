"""The operator's webhooks: create, list, read, delete, and the last deliveries. A hook's
URL must pass the ranker allow-list (:mod:`service.rankers.allow_list`: no SSRF through
a webhook either); its secret is stored to sign deliveries and never shown again
(``"secret": "set"``)."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from service.errors import NotFound, Unprocessable
from service.rankers.allow_list import RankerPolicy, RankerRefused
from service.store import Store
from service.webhooks.payloads import iso


def create(store: Store, policy: RankerPolicy, *, url: str, events: Sequence[str],
           secret: str, experiments: Sequence[str] | None = None,
           description: str | None = None) -> dict[str, Any]:
    """A new webhook (its URL checked by the allow-list, its experiments must exist:
    422 naming the field); it receives the events recorded from now on."""
    try:
        policy.check_url(url)
    except RankerRefused as exc:
        raise Unprocessable(f"field 'url': {exc}") from None
    for i, exp_id in enumerate(experiments or ()):
        if not store.experiments.exists(exp_id):
            raise Unprocessable(f"field 'experiments[{i}]': no experiment {exp_id!r}")
    now = store.webhooks.server_time()  # the outbox's clock: the hook starts after this
    hook_id = "wh_" + secrets.token_hex(8)
    store.webhooks.create_webhook(hook_id, {
        "url": url, "events": list(dict.fromkeys(events)),
        "experiments": list(dict.fromkeys(experiments)) if experiments else None,
        "description": description, "created_at": now,
        "since": f"{int(now * 1000)}-0"}, secret)
    return describe(store, hook_id)


def describe(store: Store, hook_id: str) -> dict[str, Any]:
    """A webhook as the API shows it: never its secret."""
    hook = store.webhooks.webhook(hook_id)
    if hook is None:
        raise NotFound(f"no webhook {hook_id!r}")
    return {"id": hook_id, "url": hook["url"], "events": hook["events"],
            "experiments": hook.get("experiments"), "description": hook.get("description"),
            "secret": "set", "created_at": iso(hook["created_at"]),
            "failures_in_a_row": hook["fails"], "disabled": hook["disabled"],
            "disabled_reason": hook["disabled_reason"],
            "disabled_at": iso(hook["disabled_at"]) if hook["disabled_at"] else None}


def listing(store: Store) -> list[dict[str, Any]]:
    out = []
    for hook_id in store.webhooks.webhook_ids():
        try:
            out.append(describe(store, hook_id))
        except NotFound:  # deleted between the listing and the read
            continue
    return out


def delete(store: Store, hook_id: str) -> dict[str, Any]:
    if not store.webhooks.delete_webhook(hook_id):
        raise NotFound(f"no webhook {hook_id!r}")
    return {"id": hook_id, "deleted": True}


def deliveries(store: Store, hook_id: str, limit: int) -> list[dict[str, Any]]:
    """The last ``limit`` events tried on the hook, newest first, each with its attempts
    (oldest first): status codes, times, the last error, whether it got through."""
    if store.webhooks.webhook(hook_id) is None:
        raise NotFound(f"no webhook {hook_id!r}")
    return group(store.webhooks.deliveries(hook_id), limit)


def group(attempts: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Attempts (newest first) grouped by event, newest event first.

    >>> rows = [{"event_id": "b", "event": "ramp_step", "experiment": "e", "attempt": 1,
    ...          "status": 200, "result": "delivered", "error": None, "ts": "t3"},
    ...         {"event_id": "a", "event": "ramp_step", "experiment": "e", "attempt": 2,
    ...          "status": 200, "result": "delivered", "error": None, "ts": "t2"},
    ...         {"event_id": "a", "event": "ramp_step", "experiment": "e", "attempt": 1,
    ...          "status": 500, "result": "failed", "error": "HTTP 500", "ts": "t1"}]
    >>> [(g["event_id"], g["attempts"], g["status_codes"]) for g in group(rows, 10)]
    [('b', 1, [200]), ('a', 2, [500, 200])]
    """
    out: dict[str, dict[str, Any]] = {}
    for a in attempts:
        g = out.get(a["event_id"])
        if g is None:
            if len(out) >= limit:
                break
            g = out[a["event_id"]] = {
                "event_id": a["event_id"], "event": a["event"], "experiment": a["experiment"],
                "attempts": 0, "status_codes": [], "first_attempt": a["ts"],
                "last_attempt": a["ts"], "result": a["result"], "error": None}
        g["attempts"] = max(g["attempts"], int(a["attempt"]))
        g["status_codes"].insert(0, a["status"])
        g["first_attempt"] = a["ts"]
        if g["error"] is None and a.get("error") and g["result"] != "delivered":
            g["error"] = a["error"]
    return list(out.values())
