"""API keys and the audit trail's reads, on the keys' own hash tag ``{access}`` (one
cluster slot): a part of the store of its own (``store.access``).

* ``rd:{access}:key:<id>``: a key's hash (name, scopes as JSON, the SHA-256 of the
  secret, its visible prefix, created, expires_at, last_used, revoked);
* ``rd:{access}:keys``: every key's id, by creation time;
* ``rd:{access}:version``: incremented by every creation and revocation, in the same
  transaction: an API process re-reads a key it has cached when the version moved
  (:mod:`service.access.gate`), so a revocation is seen within its check interval;
* the audit trails (:mod:`service.store.trail`): ``rd:{access}:trails`` lists them,
  ``rd:trail:{access}`` holds the keys' own changes and the refused and failed calls.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from service.store import trail
from service.store.base import StorePart
from service.store.keys import PREFIX

KEYS = PREFIX + "{access}:keys"
VERSION = PREFIX + "{access}:version"


def key_record_key(key_id: str) -> str:
    """The hash of key ``key_id``.

    >>> key_record_key("k3fa29c01d2e4")
    'rd:{access}:key:k3fa29c01d2e4'
    """
    return f"{PREFIX}{{access}}:key:{key_id}"


def _text(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def _record(raw: dict[Any, Any]) -> dict[str, Any] | None:
    if not raw:
        return None
    r = {_text(k): _text(v) for k, v in raw.items()}
    return {
        "id": r["id"], "name": r["name"], "prefix": r["prefix"],
        "scopes": json.loads(r["scopes"]), "hash": r["hash"],
        "created": float(r["created"]),
        "expires_at": int(r["expires_at"]) if r.get("expires_at") else None,
        "last_used": float(r["last_used"]) if r.get("last_used") else None,
        "revoked": float(r["revoked"]) if r.get("revoked") else None,
    }


class AccessStore(StorePart):
    """Keys and the audit trail's reads (``store.access``), on the store's client (a
    server or a cluster)."""

    # ------------------------------------------------------------------ keys
    def create_key(self, record: dict[str, Any]) -> None:
        """Store a new key (``record``: id, name, prefix, scopes, hash, created,
        expires_at), with its trail entry and the version's increment, in one
        transaction."""
        mapping = {**record, "scopes": json.dumps(record["scopes"]),
                   "expires_at": record.get("expires_at") or ""}
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(key_record_key(record["id"]), mapping=mapping)
        pipe.zadd(KEYS, {record["id"]: record["created"]})
        pipe.incr(VERSION)
        trail.queue(pipe, KEYS, "key_created", {"key": record["id"]},
                    {"name": record["name"], "scopes": record["scopes"],
                     "expires_at": record.get("expires_at"), "prefix": record["prefix"]})
        pipe.execute()

    def revoke_key(self, key_id: str) -> dict[str, Any] | None:
        """Mark key ``key_id`` revoked (with its trail entry and the version's
        increment, in one transaction); its record, or None when there is no such key.
        Revoking a revoked key changes nothing."""
        rkey = key_record_key(key_id)
        with self.r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(rkey)
                    record = _record(pipe.hgetall(rkey))
                    if record is None or record["revoked"] is not None:
                        pipe.reset()
                        return record
                    now = self.clock()
                    pipe.multi()
                    pipe.hset(rkey, "revoked", now)
                    pipe.incr(VERSION)
                    trail.queue(pipe, KEYS, "key_revoked", {"key": key_id},
                                {"name": record["name"], "prefix": record["prefix"]})
                    pipe.execute()
                    return {**record, "revoked": now}
                except redis.WatchError:  # changed meanwhile: read again
                    continue

    def key(self, key_id: str) -> dict[str, Any] | None:
        return _record(self.r.hgetall(key_record_key(key_id)))

    def key_records(self) -> list[dict[str, Any]]:
        """Every key (revoked ones too), oldest first."""
        ids = [_text(x) for x in self.r.zrange(KEYS, 0, -1)]
        pipe = self.r.pipeline(transaction=False)
        for key_id in ids:
            pipe.hgetall(key_record_key(key_id))
        return [r for r in map(_record, pipe.execute()) if r is not None]

    def version(self) -> int:
        return int(self.r.get(VERSION) or 0)

    def touch(self, key_id: str, ts: float) -> None:
        """Record when key ``key_id`` (a stored key: keys are revoked, never deleted)
        was last used."""
        self.r.hset(key_record_key(key_id), "last_used", ts)

    # ------------------------------------------------------------------ the trail
    def record(self, text: str, retention_s: float) -> None:
        """Append an entry that goes with no change (a refused or failed call) to the
        access trail."""
        trail.list_trail(self.r, trail.ACCESS_TRAIL)
        pipe = self.r.pipeline(transaction=True)
        trail.append(pipe, trail.ACCESS_TRAIL, text, retention_s)
        pipe.execute()

    def trails(self) -> list[str]:
        """Every trail key listed."""
        return sorted(_text(x) for x in self.r.smembers(trail.TRAILS))

    def trail_page(self, key: str, start: str, count: int) -> list[tuple[str, dict[str, Any]]]:
        """Up to ``count`` entries of trail ``key`` from stream id ``start`` (``(id`` for
        after it), oldest first, each ``(stream id, entry)``."""
        out = []
        for sid, fields in self.r.xrange(key, min=start, max="+", count=count):
            raw = fields.get(b"e", fields.get("e"))
            out.append((_text(sid), json.loads(raw)))
        return out

    def trail_bytes(self, key: str) -> int | None:
        """The memory of trail ``key`` (MEMORY USAGE), for the Redis keys page."""
        return self.r.memory_usage(key, samples=0)
