"""The front end's key on the front-end routes: :func:`frontend_key` (shared by Flask's
routes, through :mod:`service.api.access`, and the fast search path,
:mod:`service.api.search_wsgi`), and the :func:`front_end` decorator's id checks."""

from __future__ import annotations

import functools
from collections.abc import Callable

from flask import g

from service.access import scopes
from service.errors import BadRequest, Forbidden
from service.id_limits import MAX_ID_CHARS
from service.runtime import Runtime


def frontend_key(rt: Runtime, header: str | None) -> bool:
    """True when the request carries a key with the ``frontend`` scope (a server-side
    front end, exempt from the per-address click limit); False without an
    ``Authorization`` header (a browser). 401 for a missing, wrong, revoked or expired
    key; 403 for a valid key without ``frontend`` (a wrong key is never silently served
    as a browser)."""
    if header is None:
        return False
    principal = rt.gate.principal(header)
    if not scopes.allows(principal.scopes, "frontend"):
        raise Forbidden(f"{principal.label} may not call the front-end routes: it needs "
                        f"scope 'frontend' (it has {', '.join(principal.scopes)})")
    return True


def front_end(**path_ids: str) -> Callable[[Callable], Callable]:
    """A front-end route (``/search``, ``/clicks``, ``/impressions/ID/end``, ``/r``): the
    ids in its path named in ``path_ids`` (parameter -> what it names) are refused when
    longer than :data:`~service.id_limits.MAX_ID_CHARS` (400). The key was checked
    before (:mod:`service.api.access`); whether the request carries one is
    ``g.frontend_keyed`` for the handler."""

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def checked(**path: str):
            for name, what in path_ids.items():
                if len(path[name]) > MAX_ID_CHARS:
                    raise BadRequest(f"{what} id is longer than {MAX_ID_CHARS} characters")
            g.frontend_keyed = bool(g.get("frontend_keyed", False))
            return view(**path)

        return checked

    return decorate
