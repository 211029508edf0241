"""The audit trail's write side: who changed what, appended in the same write as the change.

An operator call that may change something runs inside a :class:`Call` (set by the API's
one enforcement, :mod:`service.api.access`, for the duration of the request): who (the
key's id and name, or the bootstrap token), the operation, the client address. Every
store write of an operator change queues :func:`queue` on its own transaction (its
MULTI/EXEC pipeline), so the trail entry and the change commit together or not at all.

The entry goes to the trail of the changed object's hash tag, ``rd:trail:{<tag>}``
(an experiment's ``{<id>}``, a placement's ``{pl-<name>}``, a webhook's ``{wh-<id>}``,
a campaign's ``{jc-<id>}``, the keys' ``{access}``): the same cluster slot as the change,
so one transaction can hold both on a Redis Cluster too. The trail key does not match an
experiment's ``rd:{<id>}*`` pattern, so deleting the experiment leaves its trail; it is
trimmed by age (``RANKDUEL_AUDIT_RETENTION_DAYS``) and expires when no one writes it for
that long. The trails are listed in ``rd:{access}:trails`` (added before the first
write, so an entry is never unlisted); :mod:`service.store.access` reads them.

A trail entry is JSON in field ``e`` of a stream entry (its ``ts`` is read back as the
stream id's time, when the change committed: :mod:`service.access.audit`)::

    {"ts": 1765100000.1, "op": "renameExperiment", "action": "renamed",
     "who": {"key": "k3fa29c01d2e4", "name": "ci-bot"}, "target": {"experiment": "3fa2"},
     "change": {"from": "old", "to": "new"}, "addr": "10.0.0.7", "result": "ok"}
"""

from __future__ import annotations

import json
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from service.store.keys import PREFIX

#: the index of every trail key (a set on the keys' slot)
TRAILS = PREFIX + "{access}:trails"
#: the trail of refused and failed calls, and of the keys themselves
ACCESS_TRAIL = PREFIX + "trail:{access}"


def trail_key(key: str) -> str:
    """The trail on the slot of ``key`` (any key with a hash tag).

    >>> trail_key("rd:{3fa2}:audit"), trail_key("rd:{pl-web}")
    ('rd:trail:{3fa2}', 'rd:trail:{pl-web}')
    """
    start = key.index("{")
    return f"{PREFIX}trail:{key[start:key.index('}', start) + 1]}"


@dataclass
class Call:
    """One operator call that may change state: who, which operation, from where."""

    op: str
    who: dict[str, str]
    addr: str
    retention_s: float
    #: the client that lists a new trail in :data:`TRAILS` (before its first entry)
    client: Any = None
    #: the placement the call acts on, when it acts on one (entries name it)
    placement: str | None = None
    #: trail entries queued (a retried transaction queues again)
    written: int = 0
    listed: set[str] = field(default_factory=set)

    @property
    def label(self) -> str:
        """Who, in words: ``key ci-bot (k3fa29c01d2e4)`` or ``admin token``."""
        if "key" in self.who:
            return f"key {self.who['name']} ({self.who['key']})"
        return f"{self.who['bootstrap']} token"


#: the operator call of this request, if any (:mod:`service.api.access` sets it)
CURRENT: ContextVar[Call | None] = ContextVar("rankduel_trail_call", default=None)

def current() -> Call | None:
    return CURRENT.get()


def entry(call: Call, action: str, target: dict[str, str], change: dict[str, Any] | None,
          *, result: str = "ok", ts: float | None = None) -> str:
    """One trail entry (JSON)."""
    if call.placement and "placement" not in target:
        target = {**target, "placement": call.placement}
    return json.dumps({"ts": round(time.time() if ts is None else ts, 3), "op": call.op,
                       "action": action, "who": call.who, "target": target,
                       "change": change or {}, "addr": call.addr, "result": result},
                      separators=(",", ":"), default=str)


def list_trail(client: Any, key: str) -> None:
    """Add trail ``key`` to the index (one SADD; operator changes are rare)."""
    client.sadd(TRAILS, key)


def append(pipe: Any, key: str, text: str, retention_s: float) -> None:
    """Queue ``text`` on trail ``key`` (``pipe``: a pipeline or a client), trimming what
    is older than the retention and renewing the trail's expiry."""
    now_ms = int(time.time() * 1000)
    pipe.xadd(key, {"e": text}, minid=now_ms - int(retention_s * 1000), approximate=True)
    pipe.pexpire(key, int(retention_s * 1000))


def queue(pipe: Any, tagged_key: str, action: str, target: dict[str, str],
          change: dict[str, Any] | None = None) -> None:
    """Queue the current call's entry for a change to the object of ``tagged_key`` on
    ``pipe`` (the change's own transaction); nothing outside an operator call."""
    call = CURRENT.get()
    if call is None:
        return
    key = trail_key(tagged_key)
    if call.client is not None and key not in call.listed:
        list_trail(call.client, key)
        call.listed.add(key)
    append(pipe, key, entry(call, action, target, change), call.retention_s)
    call.written += 1
