"""``GET /search``'s query parameters, read on the hot path of every search.

The common case — a first page: only ``experiment`` (or ``placement``), ``q``, ``k`` and
``user``, each within its bounds — is checked directly, without building a pydantic model
per request; anything else (a next page's ``page``/``impression_id``/``token``, an unknown name, a
value out of bounds) is handed to the schema (:func:`service.schemas.search_query`), so
that every value accepted and every refusal and its message stay the schema's (and the
OpenAPI document's).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from service.api.validation import parse
from service.errors import BadRequest
from service.id_limits import MAX_ID_CHARS
from service.schemas import MAX_NAME_CHARS, MAX_QUERY_CHARS, search_query
from service.segments.dimensions import PARAM_PREFIX, from_params

_FAST_PARAMS = frozenset(("experiment", "placement", "q", "k", "user"))
#: the longest placement name (rollout.placements)
MAX_PLACEMENT_CHARS = 64


class SearchArgs(NamedTuple):
    """The parameters of one ``GET /search`` (``page`` 1 and no ``impression_id`` or
    ``token``: a first page)."""

    experiment: str
    q: str
    k: int
    user: str | None
    page: int = 1
    impression_id: str | None = None
    token: str | None = None
    placement: str | None = None
    #: ``segment.<dimension>=<value>`` parameters (:mod:`service.segments.dimensions`); None: none
    segments: dict[str, str] | None = None
    #: an experiment's search while the store is down (:mod:`service.search.outage`)
    fallback: str = "first"


def parse_search_query(args: Any, default_k: int, max_k: int, *,
                       fast_only: bool = False) -> SearchArgs | None:
    """``GET /search``'s parameters from the query parameters ``args`` (a werkzeug
    ``MultiDict``: the first value of each name counts, as in the schema's path).
    ``fast_only``: None instead of the schema's path when the query is not the common
    case (:mod:`service.api.search_wsgi` then hands the request to Flask).

    >>> from werkzeug.datastructures import MultiDict
    >>> parse_search_query(MultiDict({"experiment": "e1", "q": "cats", "k": "5"}), 10, 100)
    ... # doctest: +NORMALIZE_WHITESPACE
    SearchArgs(experiment='e1', q='cats', k=5, user=None, page=1, impression_id=None,
               token=None, placement=None, segments=None, fallback='first')
    >>> parse_search_query(MultiDict({"experiment": "e1", "q": "cats", "page": "2",
    ...                               "impression_id": "i", "token": "t"}), 10, 100)[4:7]
    (2, 'i', 't')
    >>> parse_search_query(MultiDict({"placement": "web", "q": "cats"}), 10, 100).placement
    'web'
    >>> parse_search_query(MultiDict({"experiment": "e1", "q": "cats",
    ...                               "segment.device": "mobile"}), 10, 100).segments
    {'device': 'mobile'}
    """
    exp, q, k_raw, user = (args.get("experiment"), args.get("q"), args.get("k"),
                           args.get("user"))
    place = args.get("placement")
    segments = None
    fast = _FAST_PARAMS.issuperset(args.keys())
    if not fast:  # segment.* parameters are the schema's extras: taken apart here
        segments = from_params(args.to_dict()) or None
        fast = segments is not None and _FAST_PARAMS.issuperset(
            k for k in args if not k.startswith(PARAM_PREFIX))
    if ((exp and len(exp) <= MAX_ID_CHARS) if place is None else
            (not exp and place and len(place) <= MAX_PLACEMENT_CHARS)) \
            and q and len(q) <= MAX_QUERY_CHARS \
            and (user is None or len(user) <= MAX_NAME_CHARS) and fast:
        if k_raw is None:
            return SearchArgs(exp or "", q, default_k, user, placement=place,
                              segments=segments)
        if k_raw.isascii() and k_raw.isdigit() and len(k_raw) <= 18:
            k = int(k_raw)
            if 1 <= k <= max_k:
                return SearchArgs(exp or "", q, k, user, placement=place, segments=segments)
    if fast_only:
        return None
    parsed = parse(search_query(default_k, max_k), args.to_dict(), query=True)
    if (parsed.experiment is None) == (parsed.placement is None):
        raise BadRequest("missing parameter 'experiment' (an experiment's search) or "
                         "'placement' (a search box's): send one of the two"
                         if parsed.experiment is None else
                         "send experiment or placement, one of the two, not both")
    if parsed.placement is not None and (parsed.page > 1 or parsed.impression_id):
        raise BadRequest("a next page continues an impression: send experiment=ID (the "
                         "first page's answer names it), not placement")
    return SearchArgs(parsed.experiment or "", parsed.q, parsed.k, parsed.user, parsed.page,
                      parsed.impression_id, parsed.token, parsed.placement, segments,
                      parsed.fallback)
