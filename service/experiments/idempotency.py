"""``Idempotency-Key`` on ``POST /experiments``: a retried creation creates nothing new.

A client that times out cannot tell whether its ``POST /experiments`` created the
experiment; retrying it blindly would create a second one (names need not be unique:
the id is an experiment's identity). With the header ``Idempotency-Key: <key>`` (any
1–255 printable ASCII characters, e.g. a UUID; the convention of Stripe's API and of the
IETF draft *The Idempotency-Key HTTP Header Field*), the first request with that key
creates the experiment (201) and every later request with the same key and the same
body, for ``TTL_S`` (24 hours), answers **200** with that experiment and the header
``Idempotent-Replayed: true``: the same ``id``, nothing created. The same key with a
different body answers **422** (the key names another request); a request that meets
the key while the first is still creating waits for it (up to ``WAIT_S``) and then
answers as a replay, or **409** with ``Retry-After`` if it is still running. A creation
that fails (4xx, Redis down) gives the key up, so a corrected retry may reuse it.

Bodies are compared as JSON values (key order and white space do not matter). Keys
are stored by their SHA-256 (:mod:`service.store.idempotency`).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from typing import Any

from service.errors import BadRequest, Conflict, NotFound, Unprocessable
from service.store import idempotency as stored

HEADER = "Idempotency-Key"
#: the header of a response that repeats an earlier creation
REPLAYED = "Idempotent-Replayed"
#: how long a key is kept after its request completed (seconds)
TTL_S = 24 * 3600
#: how long a request waits for another request holding its key to finish (seconds)
WAIT_S = 30.0
#: the longest key accepted
MAX_KEY_CHARS = 255
#: how often a waiting request looks again (seconds)
POLL_S = 0.05
#: a key: printable ASCII, no space at either end (a transport may strip those)
KEY_PATTERN = r"^[!-~]([ -~]{0,253}[!-~])?$"


def parse_key(raw: str | None) -> str | None:
    """The header's key, None without the header; 400 for an empty, over-long or
    non-printable one.

    >>> parse_key("7f1c-retry"), parse_key(None)
    ('7f1c-retry', None)
    """
    if raw is None:
        return None
    if not re.fullmatch(KEY_PATTERN, raw):
        raise BadRequest(f"header {HEADER} must be 1-{MAX_KEY_CHARS} printable ASCII "
                         "characters, no space at either end (a UUID, for example); leave "
                         "it out to create without one")
    return raw


def digest(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (or of the string itself).

    >>> digest({"b": 1, "a": 2}) == digest({"a": 2, "b": 1})
    True
    """
    text = value if isinstance(value, str) else json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def create_once(client, key: str, body: dict[str, Any], create: Callable[[], str], *,
                scope: str = "create", exists: Callable[[str], bool] = lambda _: True,
                clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep) -> tuple[str, bool]:
    """``(id, replayed)``: run ``create`` once per ``key`` (see the module docstring);
    ``replayed`` when an earlier request with ``key`` created ``id``. ``exists`` says
    whether what was created is still there (404 otherwise)."""
    k, b = digest(key), digest(body)
    deadline = clock() + WAIT_S
    while True:
        held = stored.claim(client, scope, k, b, TTL_S)
        if held is None:
            try:
                made = create()
            except BaseException:
                stored.release(client, scope, k)
                raise
            stored.complete(client, scope, k, b, made, TTL_S)
            return made, False
        if held and held.get("body") != b:
            raise Unprocessable(
                f"{HEADER} {key!r} was already used with a different body: a key names one "
                "request; send a new key to create another experiment")
        if held.get("id"):
            if not exists(held["id"]):
                raise NotFound(f"the experiment {held['id']!r} created with {HEADER} "
                               f"{key!r} was deleted; send a new key to create another")
            return held["id"], True
        if clock() >= deadline:
            raise Conflict(f"a request with {HEADER} {key!r} is still creating its "
                           "experiment; retry in a few seconds",
                           headers={"Retry-After": "2"})
        sleep(POLL_S)
