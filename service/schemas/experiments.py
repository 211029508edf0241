"""The operator's bodies and answers about experiments and their rankers
(``/experiments...``); ``POST /experiments``' body is :mod:`service.schemas.params`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
)

from service.schemas.base import (
    HEADER_NAME_PATTERN,
    MAX_TIMEOUT_MS,
    PATH_PATTERN,
    PROBE,
    Closed,
    Int,
    Name,
    Number,
    Out,
    RankerName,
    RankerUrl,
    _query_int,
)

# operator
TemplateText = Annotated[str, Field(max_length=4096)]
PathText = Annotated[str, Field(min_length=1, max_length=256, pattern=PATH_PATTERN)]
HeaderName = Annotated[str, Field(pattern=HEADER_NAME_PATTERN)]
HeaderValue = Annotated[str, Field(max_length=4096, pattern=r"^[^\r\n]*$")]
ParamValue = TemplateText | Int() | float | bool
PLACEHOLDER_NOTE = ("placeholders {q}, {k}, {user} and {offset} in string values; exactly "
                    "\"{k}\" becomes the integer")


def _closed_map(schema: dict[str, Any]) -> None:
    """A map whose keys must match its ``patternProperties`` (no other keys)."""
    schema["additionalProperties"] = False


class RankerRequest(Closed):
    """How to call a ranker in its engine's own shape (see docs/integrating-rankers.md)."""

    method: Literal["GET", "POST"] = Field("GET", description="GET (default) or POST")
    params: Annotated[dict[str, ParamValue], Field(max_length=100)] = Field(
        default_factory=dict, description="query-string parameters, after any in `url` ("
        "q and k are not appended); " + PLACEHOLDER_NOTE)
    headers: Annotated[dict[HeaderName, HeaderValue], Field(max_length=50)] = Field(
        default_factory=dict, description="request headers; a value `env:NAME` is read from "
        "the API process's environment at request time (only `env:NAME` is stored); "
        + PLACEHOLDER_NOTE, json_schema_extra=_closed_map)
    body: dict[str, Any] | None = Field(
        None, description="a JSON body (sent with Content-Type: application/json; usually "
        "with POST, though Elasticsearch also reads one with GET); " + PLACEHOLDER_NOTE)


class RankerResponse(Closed):
    """Where the results are in the engine's answer: dot paths, an integer segment
    indexing a list."""

    results: PathText = Field(description="the list of results (absent: no results)")
    id: PathText = Field(description="each result's document id (required), under the "
                                     "result")
    url: PathText | None = Field(None, description="the result's URL (what /r redirects to)")
    title: PathText | None = Field(None, description="the result's title")
    fields: Annotated[dict[str, PathText], Field(max_length=50)] = Field(
        default_factory=dict, description="other fields passed through, by name (id, url "
        "and title are the mapping's own: a field of those names does not replace them)")


class RankerIn(Closed):
    """A ranker: by default called as ``GET URL?q=TEXT&k=K``, answering
    ``{"results": [{"id"}, ...]}``; with ``request``/``response``, in its engine's shape."""

    name: RankerName
    url: RankerUrl
    timeout_ms: Int(ge=1, le=MAX_TIMEOUT_MS) | None = Field(
        None, description="default: the service's RANKDUEL_RANKER_TIMEOUT_MS")
    request: RankerRequest | None = Field(
        None, description="optional: how to call the engine (default: GET URL?q=&k=)")
    response: RankerResponse | None = Field(
        None, description='optional: where the results are (default: {"results": [{"id"}]})')
    allow_empty: bool = Field(
        False, description="the probe at creation accepts an answer with no results (by "
        "default such a ranker is refused: an empty answer usually means a wrong results "
        "path)")


class NewRanker(RankerIn):
    """``POST /experiments/ID/rankers``: a ranker added mid-run."""

    probe: bool = Field(True, description=PROBE)


Share = Annotated[float, Field(ge=0, le=1, description="0.1 is 10 % of the searches")]


class RampStep(Closed):
    """From ``after`` (since the schedule started) on, the share is ``share``."""

    after: Annotated[str, Field(pattern=r"^\s*\d+(\.\d+)?\s*[smhd]?\s*$", max_length=20,
                                description="a duration: 30s, 30m, 2h, 1d (or 0)")]
    share: Share


Traffic = Share | Annotated[list[RampStep], Field(min_length=1, max_length=100)]
TRAFFIC_DOC = ("the share of the placement's searches (0.1), or a ramp: "
               '[{"after": "0m", "share": 0.01}, {"after": "30m", "share": 0.1}]')


class ExperimentPatch(Closed):
    """``PATCH /experiments/ID``: a new name, or a new ``traffic`` on its placement (from
    now, audited); the definition fields are 409."""

    name: Name | None = None
    traffic: Traffic | None = Field(None, description=TRAFFIC_DOC + " (from now)")


class AuditQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    limit: Annotated[int, Field(ge=1, le=10_000), BeforeValidator(_query_int)] = Field(
        1000, description="how many of the newest entries")


class EventsQuery(BaseModel):
    """``GET /experiments/ID/events``: a page of the event log."""

    model_config = ConfigDict(extra="ignore")

    # a stream id's parts are 64-bit: 19 digits always fit (the cursors handed out are
    # milliseconds and a sequence number, far shorter), 20 may not (Redis refuses them)
    after: Annotated[str, Field(pattern=r"^(0|[0-9]{1,19}-[0-9]{1,19})$")] = Field(
        "0", description="the cursor: 0 (the start), or the X-Next-Cursor of the previous "
                         "page")
    limit: Annotated[int, Field(ge=1, le=10_000), BeforeValidator(_query_int)] = Field(
        1000, description="at most this many events")


Lifecycle = Literal["running", "paused", "stopped"]
RankerStatus = Literal["active", "eliminated", "retired"]


class RankerEntry(Out):
    """A ranker of an experiment."""

    name: str
    url: str
    timeout_ms: int
    arm: Annotated[int, Field(ge=0, description="its index in W")]
    request: dict[str, Any] | None = Field(
        None, description="its request template, when it has one (header secrets as env:NAME)")
    response: dict[str, Any] | None = Field(
        None, description="its response mapping, when it has one")
    status: RankerStatus
    added_at: float
    retired_at: float | None
    version: Annotated[int, Field(ge=1)] = Field(
        1, description="which version of the ranker this is: 1, or N for NAME@vN (a "
        "definition never changes inside an experiment; a change is a new version)")
    version_of: str | None = Field(
        None, description="the ranker's plain name (NAME for NAME@vN)")


class Elimination(Out):
    step: int
    by: str | int = Field(description="the ranker that beat it")


class RankerHealth(Out):
    failures: Annotated[int, Field(ge=0, description="consecutive failures")]
    quarantined_until: float | None = Field(description="unix time; null: not quarantined")
    degraded: str | None = Field(
        None, description='why it is out of comparisons ("no results", "unparseable '
        'results"); null: not degraded')
    degraded_until: float | None = Field(
        None, description="unix time of its next probe while degraded")


class RankerState(RankerEntry):
    eliminated: Elimination | None
    health: RankerHealth
    wins: float
    losses: float
    comparisons: float


class _ExperimentHead(Out):
    id: str
    name: str
    algorithm: str
    interleaving: str
    lifecycle: Lifecycle
    champion: str | None = Field(description="the policy's best ranker so far")
    comparisons: Annotated[int, Field(ge=0)]
    active_rankers: Annotated[int, Field(ge=0)]


class ExperimentSummary(_ExperimentHead):
    rankers: Annotated[int, Field(ge=0)]


class ExperimentList(Out):
    experiments: list[ExperimentSummary]


Matrix = list[list[float]]


class Preferences(Out):
    p: Matrix = Field(description="p_ij = W_ij / (W_ij + W_ji), ½ where never compared")
    lower: Matrix
    upper: Matrix
    interval: Literal["wilson"]
    confidence: float


class NonCondorcet(Out):
    """The non-Condorcet guard of a MergeGuard (``recommended``) experiment."""

    flagged: bool = Field(description="the counts contradict a Condorcet winner")
    flagged_at: int | None = Field(description="comparisons recorded when it was raised")
    delta: float = Field(description="false-flag rate over the whole run")
    mode: Literal["merge", "copeland"] = Field(
        description="merge, or copeland after on_non_condorcet=switch acted")
    cycle: list[str] = Field(description="rankers each beaten with confidence by the next")
    beat_champion: list[str] = Field(
        description="eliminated rankers that beat the champion with confidence")


class Tripped(Out):
    """The guardrail that paused an experiment."""

    rule: str
    ranker: str | None
    reason: str = Field(description="a sentence with the figures")
    observed: float
    threshold: float
    ts: float


class ExperimentRollout(Out):
    """An experiment's place on its placement."""

    placement: str
    traffic: float | list[dict[str, Any]] | None
    status: str
    share: float
    guardrails: dict[str, Any] = Field(description="the thresholds it overrides")
    guardrail: Tripped | None = Field(description="the guardrail that paused it, if any")


class Experiment(_ExperimentHead):
    """The full state of an experiment."""

    rankers: list[RankerState]
    params: dict[str, Number | str] = Field(
        description="the policy's effective parameters (defaults included)")
    seed: int
    created_at: float
    version: int
    t: Annotated[int, Field(ge=0, description="selections so far")]
    selections: Annotated[int, Field(ge=0, description="same as t")]
    counters: dict[str, int]
    arms: list[str] = Field(description="ranker names in arm order (the rows of W)")
    stage: int | None = Field(description="MergeDTS/MergeRUCB's stage, else null")
    batches: list[list[str]] | None = Field(
        description="MergeDTS/MergeRUCB's batches of rankers, else null")
    non_condorcet: NonCondorcet | None = Field(
        description="the recommended policy's non-Condorcet guard, else null")
    W: Matrix = Field(description="W_ij: comparisons ranker i won against ranker j")
    preferences: Preferences
    dwell_unsatisfied_s: float | None = Field(
        description="clicks with a shorter dwell do not count (null: every click counts)")
    rollout: ExperimentRollout | None = Field(
        None, description="its placement, share and guardrail state (null: no placement)")
    segments: dict[str, list[str]] | None = Field(
        None, description="the declared segment values per dimension, `other` last (null: "
                          "no segments)")
    segment_W: dict[str, dict[str, Matrix]] | None = Field(
        None, description="W per dimension and value (each dimension's matrices sum to the "
                          "total W but for judged outcomes); null: no segments")
    metrics: list[dict[str, Any]] | None = Field(
        None, description="only with declared metrics: each as declared, defaults filled "
                          "in (docs/conversions.md)")
    primary: str | None = Field(None, description="only with metrics: the metric the policy "
                                                  "learns from")
    metric_W: dict[str, Matrix] | None = Field(
        None, description="only with metrics: W of each metric of an action, and the "
                          "click metric's when primary is another (otherwise W is the "
                          "click metric's)")
    metric_values: dict[str, dict[str, float]] | None = Field(
        None, description="only with metrics: each sum metric's values credited per ranker")
    metric_segment_W: dict[str, dict[str, dict[str, Matrix]]] | None = Field(
        None, description="only with metrics and segments: each metric of an action's W "
                          "per dimension and value")
    design: str | None = Field(
        None, description="only for an A/B test: \"ab\" (docs/ab-tests.md)")
    control: str | None = Field(
        None, description="only for an A/B test: its control arm (the placement's control)")
    confirms: str | None = Field(
        None, description="only for an A/B test made by POST /experiments/ID/confirm: the "
                          "interleaving experiment whose verdict it confirms")
    confirmed_by: str | None = Field(
        None, description="only once confirmed: the A/B test of this experiment's winner")


class LifecycleChanged(Out):
    id: str
    lifecycle: Lifecycle


class KeysAndBytes(Out):
    keys: int
    bytes: int = Field(description="MEMORY USAGE of those keys")


class Archive(Out):
    """A stopped experiment's archive (service.reports.archive)."""

    id: str
    archived_at: float = Field(description="epoch seconds")
    report: dict[str, Any] = Field(description="the report (GET /experiments/ID/report) "
                                               "as it stood when archived")
    freed: KeysAndBytes = Field(description="the per-user and per-impression keys freed")
    before: KeysAndBytes = Field(description="the experiment's keys before")
    kept: KeysAndBytes = Field(description="its keys after: state, verdicts, timeline")


class ExperimentDeleted(Out):
    id: str
    deleted: bool = Field(description="always true: the experiment and its keys are gone")
    keys: int = Field(description="Redis keys deleted (experiment, impressions, clicks)")


class AuditEntry(BaseModel):
    """One audit entry; the detail fields depend on the action."""

    model_config = ConfigDict(extra="allow")

    ts: float
    action: str = Field(examples=["created", "pause", "ranker_added", "eliminated",
                                  "stage_changed"])
    actor: str = Field(examples=["operator", "bandit"])


class Audit(Out):
    id: str
    audit: list[AuditEntry]
