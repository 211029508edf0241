"""Every split of a placement counted on the request path, for the SRM check: each
search of a placement adds one search, and its user, to the arm that served it (the
experiment's id, or ``control`` for a control search and for an experiment's search that
fell back to the control's list) in the period of the view that assigned it (the
placement's version, :class:`service.placements.operations.View`; the shares of that
version are recorded with it, :mod:`service.store.splits`).

The counts are gathered in memory and written at most every :data:`FLUSH_S` per process
(one script: :meth:`service.store.splits.SplitStore.count_split`, which counts each user
once, where first seen), like the control's guardrail counts: no Redis call of its own on
a search. A process that dies loses at most that long of counts, of every arm alike. The
user goes in as a short keyed hash, never the id.
"""

from __future__ import annotations

import hashlib
import logging
import time

from service.placements.operations import View
from service.runtime import Runtime
from service.store.client import STORE_ERRORS

log = logging.getLogger("rankduel.search")
#: the longest a process keeps a split's counts before writing them
FLUSH_S = 1.0


def count(rt: Runtime, view: View, arm: str, user: str | None) -> None:
    """Count one search of ``view``'s placement served by ``arm`` for ``user``."""
    who = (hashlib.blake2b(user.encode(), key=rt.secret[:64], digest_size=8).hexdigest()
           if user else None)
    key = (view.version, arm)
    with view.count_lock:
        split = view.split
        if not split:
            split.update({"s": {}, "u": {}, "at": time.monotonic()})
        split["s"][key] = split["s"].get(key, 0) + 1
        if who:
            split["u"].setdefault(key, set()).add(who)
        if time.monotonic() - split["at"] < FLUSH_S:
            return
        searches, users = split["s"], split["u"]
        split.update({"s": {}, "u": {}, "at": time.monotonic()})
    try:
        rt.store.splits.count_split(view.name, searches, users, rt.config.retention_s)
    except STORE_ERRORS:
        log.warning("placement %s: split counts lost", view.name, exc_info=True)


__all__ = ["FLUSH_S", "count"]
