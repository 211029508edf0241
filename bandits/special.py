"""The ``scipy.special`` functions the pure packages use (the policies, rollout's SRM e-value and
A/B sequence), imported on their first use.

``import scipy.special`` costs about 0.2 CPU s (its array-API layer loads ``numpy.f2py``
and ``numpy.ma``), paid by every process that imports a policy: the API, the worker, the
worker's supervisor and every ``rankduel`` command, whose parser lists the policies. Most
of them never call one of these functions (``recommended``, the default policy, calls
none). A module uses them as ``special.betainc(...)`` after ``from bandits import
special``; the first access of a name imports ``scipy.special`` and keeps the function
here, so a later access is a plain module attribute.

>>> from bandits import special
>>> float(special.xlogy(0.0, 0.0))
0.0
"""

from __future__ import annotations

import importlib
from typing import Any

#: the functions of ``scipy.special`` this module lends
NAMES = frozenset({"betainc", "betaincinv", "expit", "gammaln", "lambertw", "logit",
                   "ndtr", "xlogy"})


def __getattr__(name: str) -> Any:
    if name not in NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("scipy.special"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(NAMES | {"NAMES"})
