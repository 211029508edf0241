"""An experiment's ``error_rate`` δ: the chance, over the whole run, that a verdict it
states is wrong (issue 32; :mod:`bandits.confidence`).

``POST /experiments`` takes ``error_rate`` (default 0.05) beside ``params``. A policy that
states its verdicts at a family-wise error rate declares the parameter ``error_rate``
(``recommended``): the experiment's δ is passed to it. A policy that does not (the
Merge family, faithful to their papers, eliminates one test at a time; the policies
without a test never certify) has no δ: giving one explicitly answers 422, so nobody
believes a guarantee that is not there; the report then says its eliminations carry no
family-wise guarantee.
"""

from __future__ import annotations

from typing import Any

import bandits
from service.errors import Unprocessable

#: δ when the body gives none
DEFAULT = 0.05


def declares(algorithm: str) -> bool:
    """Whether the policy states its verdicts at an error rate it is given."""
    return "error_rate" in bandits.get_algorithm(algorithm).PARAMS


def resolve(algorithm: str, params: dict[str, Any], error_rate: float,
            given: bool) -> float | None:
    """The experiment's δ (None: the policy has none), written into ``params`` for a
    policy that declares it; 422 for a δ the policy cannot honour or given twice.
    ``given``: the body named ``error_rate`` (else it is the default)."""
    if not declares(algorithm):
        if given:
            raise Unprocessable(
                f"field 'error_rate': {algorithm} states no verdicts at an error rate (its "
                "eliminations, if any, carry no family-wise guarantee); leave error_rate "
                "out, or use algorithm 'recommended'")
        return None
    if "error_rate" in params:
        if given and float(params["error_rate"]) != float(error_rate):
            raise Unprocessable(
                "error_rate is given twice, as field 'error_rate' and as "
                "'params.error_rate', with different values: give it once")
        return float(params["error_rate"])
    params["error_rate"] = float(error_rate)
    return float(error_rate)
