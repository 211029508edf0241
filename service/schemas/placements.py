"""Placements (``/placements...``) and what an experiment says about its traffic: the
``placement``, ``traffic`` and ``guardrails`` fields of ``POST /experiments``, the
``traffic`` of ``PATCH /experiments/ID`` (the rules: :mod:`rollout`, docs/operations/
rollout.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, create_model

from rollout.guardrails import PARAMS as GUARDRAIL_PARAMS
from service.schemas.base import PROBE, Closed, Int, Out
from service.schemas.experiments import RankerIn, Tripped

PLACEMENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
PlacementName = Annotated[str, Field(pattern=PLACEMENT_PATTERN, description=(
    "1 to 64 letters, digits, _, - or ., starting with a letter or a digit"))]
def _annotation(name: str) -> Any:
    p = GUARDRAIL_PARAMS[name]
    if p.dtype is bool:
        return bool | None
    bounds = {k: v for k in ("ge", "gt", "le", "lt") if (v := getattr(p, k)) is not None}
    return (Int(**bounds) if p.dtype is int else Annotated[float, Field(**bounds)]) | None


#: an experiment's ``guardrails``: only the thresholds it changes (rollout.guardrails)
Guardrails = create_model(
    "Guardrails", __base__=Closed, __doc__="Guardrail thresholds (absent: the default).",
    **{n: (_annotation(n), Field(None, description=f"{p.desc}; default: {p.default}"))
       for n, p in GUARDRAIL_PARAMS.items()})


class NewPlacement(Closed):
    """``POST /placements``: a search box and its control (production) ranker."""

    name: PlacementName
    control: RankerIn = Field(description="the production ranker: it answers every search "
                                          "no experiment takes")
    salt: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        None, description="the hash salt of sticky assignment (default: the name); a new "
                          "salt reshuffles every user")
    probe: bool = Field(True, description=PROBE.replace("ranker(s)", "control ranker"))


class PlacementPatch(Closed):
    """``PATCH /placements/NAME``: a new control ranker or salt."""

    control: RankerIn | None = None
    salt: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    probe: bool = Field(True, description=PROBE.replace("ranker(s)", "new control ranker"))


class ControlHealth(Out):
    """The control ranker's calls since it last changed."""

    calls: int
    failures: int = Field(description="failed: an error, a timeout or an answer that is "
                                      "not a result list (the control search answered 502)")
    empty: int = Field(description="answered no results")
    failure_rate: float | None = Field(description="failures / calls (null before any call)")


class PlacementExperiment(Out):
    experiment: str
    traffic: float | list[dict[str, Any]]
    status: Literal["running", "paused", "stopped"]
    since: float = Field(description="when its traffic clock started (epoch seconds)")
    share: float = Field(description="its share now")
    guardrail: Tripped | None = Field(description="the guardrail that paused it, if any")


class PlacementState(Out):
    """A placement: its control, its experiments' shares and the buckets they hold."""

    name: str
    salt: str
    control: dict[str, Any] = Field(description="the control ranker")
    created_at: float
    version: int
    experiments: list[PlacementExperiment]
    control_share: float = Field(description="the share of searches the control answers")
    control_health: ControlHealth
    ranges: dict[str, list[list[int]]] = Field(
        description="each experiment's buckets [start, end) of 10,000")
    next_change: float | None = Field(description="when a ramp next changes a share")


class PlacementList(Out):
    placements: list[PlacementState]
