"""Scopes: what a key may do, one declaration per operation (``Op(scope=...)`` in
:mod:`service.api.spec`).

* ``admin``: everything, keys included;
* ``write``: experiments, placements, webhooks, campaigns, confirmations; reads too;
* ``write:placement:NAME``: placement NAME and the experiments on it, reads of them too;
* ``read``: every GET of the operator API (reports, exports, ``/agreements``, ``/ui/``'s
  reads);
* ``frontend``: search, clicks, outcomes, UBI events;
* ``metrics``: ``/metrics`` (the API's and a worker's).

An operation needs one of ``admin``, ``write``, ``read``, ``frontend``, ``metrics`` (or
``key``: any valid key, for ``GET /keys/me``).

>>> allows(["read"], "read"), allows(["read"], "write"), allows(["admin"], "metrics")
(True, False, True)
>>> allows(["write:placement:web"], "write", "web"), allows(["write:placement:web"], "write")
(True, False)
>>> allows(["write:placement:web"], "read", "web"), allows(["write:placement:web"], "read", "app")
(True, False)
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: the scopes a key may hold (``write:placement:NAME`` besides)
FIXED = ("admin", "write", "read", "frontend", "metrics")
#: what an operation may need
NEEDS = (*FIXED, "key")
PLACEMENT_PREFIX = "write:placement:"
#: a placement name as placements accept it (service.schemas.placements)
_PLACEMENT = re.compile(r"write:placement:[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def valid(scope: str) -> bool:
    """Whether ``scope`` is one a key may hold.

    >>> valid("write:placement:web"), valid("write:placement:"), valid("root")
    (True, False, False)
    """
    return scope in FIXED or bool(_PLACEMENT.fullmatch(scope))


def allows(scopes: Iterable[str], needed: str | None, placement: str | None = None) -> bool:
    """Whether a key holding ``scopes`` may call an operation that needs ``needed``
    (None: open to anyone) on ``placement`` (the placement the call acts on, if any)."""
    held = set(scopes)
    if needed is None or needed == "key" or "admin" in held:
        return True
    if needed in ("read", "write"):
        if "write" in held or (needed == "read" and "read" in held):
            return True
        return placement is not None and PLACEMENT_PREFIX + placement in held
    return needed in held


def needed_words(needed: str, placement: str | None) -> str:
    """The scope to name in a 403.

    >>> needed_words("write", "web")
    "'write' or 'write:placement:web'"
    """
    if needed in ("read", "write") and placement:
        return f"{needed!r} or {PLACEMENT_PREFIX + placement!r}"
    return repr(needed)
