"""Bearer-token checks: the operator API's (a blueprint hook, :mod:`service.api.operator`),
``/metrics``' (the API's and a worker's), and the front end's key, checked on each
front-end route by the :func:`front_end` decorator."""

from __future__ import annotations

import functools
from collections.abc import Callable

from flask import g, request

from service.errors import BadRequest
from service.id_limits import MAX_ID_CHARS
from service.runtime import Runtime, runtime
from service.tokens import require_bearer


def frontend_key(rt: Runtime) -> bool:
    """True when the request carries a valid front-end key (``Authorization: Bearer
    <key>``, one of ``RANKDUEL_FRONTEND_TOKENS``, or the admin token, which may do
    anything): a server-side front end, exempt from the per-address click limit. False
    without an ``Authorization`` header (a browser); 401 for any other (a wrong key is
    never silently served as a browser)."""
    header = request.headers.get("Authorization")
    if header is None:
        return False
    require_bearer(header, (*rt.config.frontend_keys, rt.config.admin_token),
                   what="front-end key")
    return True


def front_end(**path_ids: str) -> Callable[[Callable], Callable]:
    """A front-end route (``/search``, ``/clicks``, ``/impressions/ID/end``, ``/r``): the
    ids in its path named in ``path_ids`` (parameter -> what it names) are refused first
    when longer than :data:`~service.id_limits.MAX_ID_CHARS` (400), then the front-end
    key is checked (:func:`frontend_key`: 401 for a wrong one); whether the request
    carries one is ``g.frontend_keyed`` for the handler."""

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def checked(**path: str):
            for name, what in path_ids.items():
                if len(path[name]) > MAX_ID_CHARS:
                    raise BadRequest(f"{what} id is longer than {MAX_ID_CHARS} characters")
            g.frontend_keyed = frontend_key(runtime())
            return view(**path)

        return checked

    return decorate
