"""Idempotency keys of operator requests: plain reads and writes of ``rd:idem:<scope>:<h>``
(:func:`service.store.keys.idempotency_key`), given plain values.

An entry is JSON ``{"body": <digest of the request body>, "id": <what the request
created, null while it runs>}`` with a time to live. The decisions (what a repeated key
answers, how long a retry waits for the first request) are :mod:`service.experiments.idempotency`'s.
"""

from __future__ import annotations

import json
from typing import Any

from service.store.keys import idempotency_key


def claim(client, scope: str, key: str, body: str, ttl_s: int) -> dict[str, Any] | None:
    """Take ``key`` for a request whose body digest is ``body``: None when this call took
    it (the caller runs the request), else the entry another request holds (``{}`` when
    it vanished between the two reads: claim again)."""
    name = idempotency_key(scope, key)
    if client.set(name, json.dumps({"body": body, "id": None}), nx=True, ex=ttl_s):
        return None
    raw = client.get(name)
    return json.loads(raw) if raw else {}


def complete(client, scope: str, key: str, body: str, created: str, ttl_s: int) -> None:
    """Record what the request holding ``key`` created (kept ``ttl_s`` from now)."""
    client.set(idempotency_key(scope, key), json.dumps({"body": body, "id": created}),
               ex=ttl_s)


def release(client, scope: str, key: str) -> None:
    """Give ``key`` up: its request created nothing (a retry runs it again)."""
    client.delete(idempotency_key(scope, key))
