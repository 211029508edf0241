"""The response body of ``GET /experiments/ID/report`` (:mod:`service.reports.build`), for the
OpenAPI document."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class VsChampion(BaseModel):
    """A ranker against the champion: ``wins`` and ``losses`` are its decisive outcomes
    (a fractional outcome, from probabilistic interleaving's marginalized credit, counts
    its share), ``ties`` its outcomes of exactly ½; ``p`` is its win rate with ties
    counted ½, ``(wins + ties/2) / (wins + losses + ties)``, with its 95 % Wilson
    interval."""

    model_config = ConfigDict(extra="forbid")
    wins: float
    losses: float
    ties: int
    p: float
    lower: float
    upper: float


class ReportRanker(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    status: str = Field(examples=["active", "eliminated", "retired"])
    impressions: int
    vs_champion: VsChampion | None
    eliminated_by: str | None
    eliminated_at_comparison: int | None
    degraded: str | None = Field(
        None, description='why it is out of the comparisons ("no results", "unparseable '
        'results"): not judged, neither winner nor loser')


class Regret(BaseModel):
    model_config = ConfigDict(extra="forbid")
    estimated: float
    true: float | None = None


class Report(BaseModel):
    """What the experiment has decided; besides the fields below, the page's data:
    ``arms``, ``preferences``, ``comparisons_by_pair``, ``traffic_share``, ``history``."""

    model_config = ConfigDict(extra="allow")
    id: str
    verdict: str
    champion: str | None
    certified: bool
    confidence: float | None
    rankers: list[ReportRanker]
    degraded: list[dict[str, str]] = Field(
        default_factory=list, description="the degraded rankers ({name, reason}), apart "
        "from the verdict")
    undecided: list[str]
    estimated_comparisons_to_decide: int | None
    estimated_seconds_to_decide: float | None
    estimate_basis: str
    regret: Regret
    timeline: list[dict[str, Any]]
    generated_at: float
    rollout: dict[str, Any] | None = Field(
        None, description="its placement, share and guardrail state, with the reason a "
                          "guardrail paused it (null: no placement)")
