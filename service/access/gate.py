"""Whose key a request carries: :class:`Gate` turns an ``Authorization: Bearer <key>``
header into a :class:`Principal` (who, which scopes) or answers 401, the same answer for
a missing, wrong, revoked or expired key.

The bootstrap keys are the environment's tokens, so the quick start needs no key made:
``RANKDUEL_ADMIN_TOKEN`` has ``admin``, each of ``RANKDUEL_FRONTEND_TOKENS``
``frontend``, ``RANKDUEL_METRICS_TOKEN`` ``metrics``. Every other key is a stored one
(:mod:`service.store.access`), looked up by the id its secret carries and compared by
SHA-256 in constant time.

A process keeps the keys it has read, and reads the keys' version (incremented by every
creation and revocation) at most every ``check_every_s`` (1 s): a revoked key stops
working in every API process within that interval plus one request. An expired key stops
at its expiry (checked on every request).
"""

from __future__ import annotations

import contextlib
import hmac
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from service.access import secret
from service.errors import Unauthorized

#: the one 401 message: no key, a wrong, a revoked or an expired one answer alike
UNAUTHORIZED = ("missing Authorization or an invalid key: send Authorization: Bearer <key> "
                "with a valid key (a key made by POST /keys, or the admin token, a "
                "front-end key or the metrics token); a missing, wrong, revoked or "
                "expired key all answer this")
#: how often a process records a key's last use (per key)
TOUCH_EVERY_S = 60.0


@dataclass(frozen=True)
class Principal:
    """Who calls: a stored key (``who = {"key": id, "name": name}``) or a bootstrap token
    (``{"bootstrap": "admin" | "frontend" | "metrics"}``), and its scopes."""

    who: dict[str, str]
    scopes: tuple[str, ...]

    @property
    def label(self) -> str:
        if "key" in self.who:
            return f"key {self.who['name']} ({self.who['key']})"
        return f"{self.who['bootstrap']} token"


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


class Gate:
    """The check of a request's key (one per process, shared by its threads).

    Parameters
    ----------
    config
        The service's :class:`~service.config.Config` (the bootstrap tokens).
    access
        The keys' store (:class:`~service.store.access.AccessStore`), or None (only the
        bootstrap tokens: a worker's exporter without Redis).
    """

    def __init__(self, config: Any, access: Any | None, *, check_every_s: float = 1.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.access = access
        self.clock = clock
        self.check_every_s = check_every_s
        self.bootstrap: list[tuple[bytes, str, tuple[str, ...]]] = [
            (t.encode(), kind, (kind,)) for t, kind in
            [(config.admin_token, "admin"), (config.metrics_token, "metrics"),
             *((k, "frontend") for k in config.frontend_keys)] if t]
        self._lock = threading.Lock()
        self._cache: dict[str, dict[str, Any]] = {}
        self._version: int | None = None
        self._checked = float("-inf")
        self._touched: dict[str, float] = {}

    def principal(self, header: str | None) -> Principal:
        """The caller of a request with this ``Authorization`` header; 401
        (:data:`UNAUTHORIZED`) for a missing, wrong, revoked or expired key."""
        token = bearer(header)
        if token is None:
            raise Unauthorized(UNAUTHORIZED)
        given = token.encode()
        found = None
        for value, kind, scopes in self.bootstrap:  # every one compared: constant time
            if hmac.compare_digest(given, value) and found is None:
                found = Principal({"bootstrap": kind}, scopes)
        if found is not None:
            return found
        key_id = secret.split(token)
        record = self._record(key_id) if key_id is not None else None
        now = self.clock()
        if (record is None or not secret.same(token, record["hash"])
                or record["revoked"] is not None
                or (record["expires_at"] is not None and now >= record["expires_at"])):
            raise Unauthorized(UNAUTHORIZED)
        self._touch(record["id"], now)
        return Principal({"key": record["id"], "name": record["name"]},
                         tuple(record["scopes"]))

    def forget(self) -> None:
        """Drop every cached key (this process's own creation or revocation)."""
        with self._lock:
            self._cache.clear()
            self._checked = float("-inf")

    def _record(self, key_id: str) -> dict[str, Any] | None:
        if self.access is None:
            return None
        now = time.monotonic()
        with self._lock:
            stale = now - self._checked >= self.check_every_s
        if stale:
            version = self.access.version()
            with self._lock:
                if version != self._version:
                    self._cache.clear()
                    self._version = version
                self._checked = now
        with self._lock:
            record = self._cache.get(key_id)
        if record is None:
            record = self.access.key(key_id)
            if record is not None:
                with self._lock:
                    self._cache[key_id] = record
        return record

    def _touch(self, key_id: str, now: float) -> None:
        if now - self._touched.get(key_id, float("-inf")) < TOUCH_EVERY_S:
            return
        self._touched[key_id] = now
        with contextlib.suppress(Exception):  # last use is a courtesy; the call goes on
            self.access.touch(key_id, now)
