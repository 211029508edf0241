"""Segments: the dimensions an experiment declares (``"segments": {"device": ["mobile",
"desktop"], "market": ["de", "fr", "us"]}``, at most :data:`MAX_DIMENSIONS` dimensions of
at most :data:`MAX_VALUES` values each), the value a search names for each
(``segment.device=mobile`` with ``/search``), and the *labels* an impression stores.

An impression carries one label per declared dimension, ``dimension=value``, in the
declared order (its ``seg`` field: ``"device=mobile,market=de"``). A value the experiment
did not declare, or none at all, is :data:`OTHER`: so every decisive impression lands in
exactly one value of each dimension, and each dimension's ``W`` sums to the total ``W``
(an outcome of a judging campaign has no search, hence no segment: it is in the total
only). The credit script adds an impression's outcomes to ``W`` per label beside the
total, in the same step (``service/store/credit.lua``; the hold's transaction likewise,
:meth:`service.store.credits.CreditStore.write_marks`); the policy runs on the total.

Pure: no Redis, no Flask.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

#: at most this many dimensions per experiment
MAX_DIMENSIONS = 3
#: at most this many declared values per dimension (``other`` comes on top)
MAX_VALUES = 16
#: the value of a dimension a search did not name, or named with an undeclared value
OTHER = "other"
#: the query-parameter prefix of a segment value with ``/search``
PARAM_PREFIX = "segment."
#: a dimension's name
DIMENSION_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
#: a declared value (no ``,``, ``=`` or ``:``, which the stored labels use as separators)
VALUE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$"

_DIMENSION = re.compile(DIMENSION_PATTERN)
_VALUE = re.compile(VALUE_PATTERN)


def problems(declared: Mapping[str, Iterable[str]]) -> list[str]:
    """What is wrong with a declaration of segments (empty: nothing), each problem a
    sentence that says how to fix it.

    >>> problems({"device": ["mobile", "desktop"]})
    []
    >>> problems({"Device": ["mobile", "mobile", "other"]})  # doctest: +NORMALIZE_WHITESPACE
    ["segments: dimension 'Device' must match ^[a-z][a-z0-9_]{0,31}$ (lower-case letters,
    digits, _)", "segments.Device: 'mobile' is declared twice", "segments.Device: 'other'
    is reserved (it counts every undeclared or absent value): leave it out"]
    """
    out = []
    if len(declared) > MAX_DIMENSIONS:
        out.append(f"segments: at most {MAX_DIMENSIONS} dimensions (got {len(declared)})")
    for dim, values in declared.items():
        values = list(values)
        if not _DIMENSION.fullmatch(dim):
            out.append(f"segments: dimension {dim!r} must match {DIMENSION_PATTERN} "
                       "(lower-case letters, digits, _)")
        if not 1 <= len(values) <= MAX_VALUES:
            out.append(f"segments.{dim}: between 1 and {MAX_VALUES} values (got "
                       f"{len(values)})")
        seen: set[str] = set()
        for v in values:
            if not isinstance(v, str) or not _VALUE.fullmatch(v):
                out.append(f"segments.{dim}: value {v!r} must match {VALUE_PATTERN}")
            elif v in seen:
                out.append(f"segments.{dim}: {v!r} is declared twice")
            elif v == OTHER:
                out.append(f"segments.{dim}: {OTHER!r} is reserved (it counts every "
                           "undeclared or absent value): leave it out")
            seen.add(v)
    return out


def values(declared: Mapping[str, Iterable[str]], dimension: str) -> list[str]:
    """The values of ``dimension`` as the counts have them: the declared ones, then
    :data:`OTHER`.

    >>> values({"device": ["mobile", "desktop"]}, "device")
    ['mobile', 'desktop', 'other']
    """
    return [*declared[dimension], OTHER]


def labels(declared: Mapping[str, Iterable[str]] | None,
           given: Mapping[str, str] | None) -> list[str]:
    """The labels of a search: for each declared dimension, in order,
    ``dimension=value`` with the value ``given`` names if declared, else :data:`OTHER`.
    Dimensions ``given`` names that the experiment did not declare are ignored.

    >>> labels({"device": ["mobile", "desktop"], "market": ["de"]},
    ...        {"device": "mobile", "market": "jp", "theme": "dark"})
    ['device=mobile', 'market=other']
    >>> labels({"device": ["mobile"]}, None), labels(None, {"device": "mobile"})
    (['device=other'], [])
    """
    if not declared:
        return []
    given = given or {}
    out = []
    for dim, vals in declared.items():
        v = given.get(dim)
        out.append(f"{dim}={v if v is not None and v in vals else OTHER}")
    return out


def from_params(params: Mapping[str, str]) -> dict[str, str]:
    """The segment values of a search's query parameters (``segment.device=mobile``).

    >>> from_params({"q": "x", "segment.device": "mobile", "segment.": "y"})
    {'device': 'mobile'}
    """
    n = len(PARAM_PREFIX)
    return {k[n:]: v for k, v in params.items() if k.startswith(PARAM_PREFIX) and len(k) > n}


