"""The response body of ``GET /experiments/ID/report`` (:mod:`service.reports.build`), for the
OpenAPI document."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, RootModel


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
    name: str = Field(description="NAME, or NAME@vN for version N of a ranker")
    version: int = Field(description="which version of the ranker's definition was compared")
    version_of: str = Field(description="the ranker's plain name")
    status: str = Field(examples=["active", "eliminated", "retired"])
    verdict: str | None = Field(
        None, description="shown worse (at 1 − error_rate: not the best), no longer shown "
        "(the policy stopped showing it to save traffic: no claim), or null",
        examples=["shown worse", "no longer shown"])
    shown_worse_by: str | None = Field(None, description="the ranker that showed it worse")
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


class SegmentRanker(BaseModel):
    """A ranker against the champion within one segment value: as
    :class:`VsChampion`, its bounds anytime-valid at ``δ / tests``; ``preferred``: the
    value's users prefer it to the champion (``lower > ½``)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    wins: float
    losses: float
    ties: int
    p: float
    lower: float
    upper: float
    preferred: bool


class SegmentValue(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: str
    rankers: list[SegmentRanker]


class Heterogeneity(BaseModel):
    """A segment value that prefers another ranker to the overall champion."""

    model_config = ConfigDict(extra="forbid")
    dimension: str
    value: str
    ranker: str
    p: float
    lower: float


class SegmentReport(BaseModel):
    """The report per segment (experiments that declare segments; see
    docs/segments-and-export.md)."""

    model_config = ConfigDict(extra="forbid")
    delta: float = Field(description="the chance, over the whole run, of any false flag")
    tests: int = Field(description="values (other included) x rankers: the Bonferroni "
                                   "divisor of delta")
    interval: str
    champion: str | None
    dimensions: dict[str, list[SegmentValue]]
    heterogeneous: list[Heterogeneity]


class MetricEntry(BaseModel):
    """One declared metric's verdict (docs/conversions.md)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    action: str | None = Field(description="null: the click metric")
    value: str = Field(description="count or sum")
    window_s: int | None
    cap: float | None
    primary: bool = Field(description="the metric the policy learns from")
    comparisons: int = Field(description="its comparisons (events with an outcome)")
    W: list[list[float]] = Field(description="its W (the click metric's: the policy's W)")
    values: dict[str, float] | None = Field(
        description="a sum metric's values credited to each ranker (plain sums)")
    events: dict[str, int] | None = Field(description="events each ranker won")
    champion: str | None = Field(description="certified best, else the leader by win rate")
    certified: bool
    shown_worse: dict[str, str] = Field(description="ranker -> the ranker that showed it "
                                                    "worse on this metric")
    error_rate: float = Field(description="δ/M: this metric's share of the report's δ; the "
                              "primary's: the report's δ (its verdict is the headline's)")
    verdict: str


class Report(BaseModel):
    """What the experiment has decided; besides the fields below, the page's data:
    ``arms``, ``preferences``, ``comparisons_by_pair``, ``traffic_share``, ``history``."""

    model_config = ConfigDict(extra="allow")
    id: str
    algorithm: str = Field(description="the policy, by the name the experiment was created "
                           "with (every sentence of the report uses it)")
    algorithm_about: str = Field(description="what that policy is, in a sentence")
    verdict: str
    champion: str | None
    certified: bool
    confidence: float | None = Field(
        description="the confidence the verdict is stated at; null until the champion is "
        "certified (no verdict, no confidence)")
    error_rate: float | None = Field(
        None, description="δ: the chance, over the whole run, that a verdict stated is "
        "wrong; null for a policy whose verdicts carry no family-wise guarantee")
    confidence_meaning: str | None = Field(
        None, description="what the confidence means, in one sentence (for the Merge "
        "policies: that their eliminations carry no family-wise guarantee)")
    shown_worse: dict[str, str] = Field(
        default_factory=dict, description="ranker -> the ranker that showed it worse at "
        "1 − error_rate")
    no_longer_shown: list[str] = Field(
        default_factory=list, description="rankers the policy stopped showing on weaker "
        "evidence (recoverable; no claim that they are worse)")
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
    split: dict[str, Any] | None = Field(
        None, description="every split checked (sample ratio mismatch, p < 0.001): "
        "`placement` (users and searches against the shares in force, per period), "
        "`first_pick` and `positions` (team draft's coin), `flagged`, `message`; while "
        "flagged the verdict says it is not to be trusted")
    segments: SegmentReport | None = Field(
        None, description="per segment value, the champion against each ranker, and the "
                          "values that prefer another ranker (null: no segments)")
    metrics: list[MetricEntry] | None = Field(
        None, description="only with declared metrics: per metric its name, action, value "
        "kind, whether primary, comparisons, W, values and events per ranker, champion, and "
        "verdict: the primary's is the headline's (at δ), each other metric's at δ/M "
        "(docs/conversions.md)")
    metrics_disagree: str | None = Field(
        None, description="only with metrics: a sentence when the metrics name different "
                          "rankers (\"r2 wins click, r5 wins revenue: ...\"), else null")
    certification: dict[str, Any] | None = Field(
        None, description="only once certified: where the verdict came, recorded by the "
                          "credit that certified it (champion, comparisons, searches up to "
                          "the deciding one, error_rate, ts, the deciding impression); null "
                          "for a verdict written otherwise (docs/decisions.md)")
    sample_sizes: dict[str, Any] | None = Field(
        None, description="only once confirmed (confirmed_by): the searches each design "
                          "needed to decide (GET /agreements; service.reports.speedup)")
    speedup: float | None = Field(
        None, description="only once confirmed: the A/B test's searches over "
                          "interleaving's (null until it decides in the same direction)")
    speedup_statement: str | None = Field(
        None, description="only once confirmed: \"interleaving decided in 1,120 searches; "
                          "its A/B confirmation needed 38,400 (9,100 users): 34×\"")


class ABArm(BaseModel):
    """One arm of an A/B test."""

    model_config = ConfigDict(extra="forbid")
    name: str
    role: str = Field(examples=["control", "treatment"])
    assigned_share: float = Field(description="its part of the experiment's share (equal)")
    observed_share: float | None = Field(description="its part of the users seen")
    users: int
    searches: int
    clicked_searches: int
    ctr: float | None = Field(description="the mean of its users' CTRs")
    conversions: dict[str, float | None] | None = Field(
        None, description="only with conversion metrics: each one's mean per user (users "
                          "without conversions count as 0)")


class ABReport(BaseModel):
    """``GET /experiments/ID/report`` of an A/B test (``"design": "ab"``):
    docs/ab-tests.md, "The report"."""

    model_config = ConfigDict(extra="allow")
    id: str
    name: str
    design: str = Field(examples=["ab"])
    lifecycle: str
    placement: str | None
    control: str
    treatments: list[str]
    error_rate: float = Field(description="δ over the whole run, split over the treatments")
    primary: str = Field(description="the metric the verdict is on", examples=["ctr"])
    method: str
    arms: list[ABArm]
    metrics: dict[str, dict[str, dict[str, Any]]] = Field(
        description="metric -> treatment -> difference, interval, lift, lift_interval, "
        "decided, direction, users_needed, delta, sentence")
    srm: dict[str, Any] | None = Field(description="the arms' users against their shares")
    srm_searches: dict[str, Any] = Field(description="searches per arm (shown, not acted on)")
    split: dict[str, Any] = Field(description="its share of its placement checked")
    verdicts: dict[str, dict[str, Any]] = Field(
        description="per treatment: decided, direction, trusted, statement")
    verdict: str
    decided: bool
    trusted: bool
    decisions: dict[str, dict[str, Any]] = Field(
        description="per treatment, its comparison when it was first decided (kept: the "
        "decision stands)")
    confirms: str | None = Field(description="the interleaving experiment it confirms")
    conversions: list[dict[str, Any]] | None = Field(
        None, description="only with conversion metrics: each as declared (its comparisons "
                          "are in metrics, under its name)")
    conversion_verdicts: dict[str, dict[str, dict[str, Any]]] | None = Field(
        None, description="only with conversion metrics: metric -> treatment -> decided, "
                          "direction, statement")
    generated_at: float
    rollout: dict[str, Any] | None = None
    sample_sizes: dict[str, Any] | None = Field(
        None, description="only for a confirmation: the searches (and users) each design "
                          "needed to decide (service.reports.speedup)")
    speedup: float | None = Field(
        None, description="only for a confirmation: the A/B test's searches over "
                          "interleaving's (null until it decides, or if it disagrees)")
    speedup_statement: str | None = Field(
        None, description="only for a confirmation: the speed-up in words")


class AnyReport(RootModel):
    """An interleaving experiment's report, or an A/B test's."""

    root: Report | ABReport
