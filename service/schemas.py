"""Every request and response body of the HTTP API, defined once as pydantic models.

The handlers validate what they receive through these models (:func:`service.validation.parse`)
and :mod:`service.openapi` builds ``/openapi.json`` from their JSON Schema, so what the
document allows is what the API accepts:

* operator bodies are closed (``additionalProperties: false``, an unknown field is 422);
  front-end bodies (``/clicks``, ``/impressions/ID/end``) ignore fields they do not know,
  as they always have;
* bounds are the API's real ones: names, URLs, click counts, algorithm parameters;
* ``POST /experiments`` is a union keyed by ``algorithm``: each algorithm has its own
  parameters (generated from the policy's declaration, ``PARAMS``: names, types, bounds,
  defaults and docs; :mod:`bandits.params`) and its own interleaving methods (pairwise
  or multileaving); a campaign's ``params`` come from :class:`judging.base.Judge`'s.

What no JSON Schema can say stays in the core and answers 422: ranker names unique within
an experiment, a ``true_preferences`` matrix that is a preference matrix over the
rankers, a ``true_best`` that names one of them, and MergeDTS/MergeRUCB's default ``C``
being computable (``alpha > 0.5`` without ``c``).

Examples
--------
>>> Click.model_validate({"id": "d1", "rank": 2}).rank
2
>>> sorted(NewExperiment.model_json_schema()["discriminator"]["mapping"])[:3]
['ccb', 'dts', 'mdb']
"""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    RootModel,
    WithJsonSchema,
    create_model,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

import bandits
from bandits.params import Param, declared_default
from judging.base import Judge
from service.limits import MAX_DOC_ID_CHARS, MAX_ID_CHARS

# ---------------------------------------------------------------------- limits
MAX_QUERY_CHARS = 1000
MAX_CLICKS = 100
MAX_NAME_CHARS = 200
MAX_RANKERS = 1000
MAX_TIMEOUT_MS = 60_000
MAX_SEED = 2**63 - 1

#: a ranker's name: it appears in URLs (``DELETE .../rankers/NAME``) and metric labels
RANKER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
#: an absolute http(s) URL: host name or IPv4 address, optional port, then printable
#: ASCII without spaces or a fragment (no user info, no IPv6 literal)
RANKER_URL_PATTERN = rf"^https?://[A-Za-z0-9.\-]+(?::{_PORT})?(?:[/?][!-\"$-~]*)?$"
#: a response path: keys separated by single dots (an integer key indexes a list)
PATH_PATTERN = r"^[^.]+(\.[^.]+)*$"
#: an HTTP header name (RFC 9110 token)
HEADER_NAME_PATTERN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$"

#: what each pattern means, for error messages
PATTERN_MEANING = {
    RANKER_NAME_PATTERN: "1-64 letters, digits, '_', '.' or '-', starting with a letter "
                         "or digit",
    RANKER_URL_PATTERN: "an absolute http(s) URL (host, optional port, path and query in "
                        "printable ASCII; no user info, no fragment)",
    PATH_PATTERN: "a dot path: keys separated by single dots (an integer indexes a list)",
    HEADER_NAME_PATTERN: "an HTTP header name (letters, digits and !#$%&'*+.^_`|~-)",
    r"^[^\r\n]*$": "one line",
}


PROBE = ("send the ranker(s) a test query first and refuse (422) one that does not answer "
         "with a valid result list; false to skip")


# ---------------------------------------------------------------------- base classes
class Closed(BaseModel):
    """A request body that refuses unknown fields; JSON types exactly (no coercion)."""

    model_config = ConfigDict(strict=True, extra="forbid")


class Open(BaseModel):
    """A request body that ignores unknown fields (the front end's)."""

    model_config = ConfigDict(strict=True, extra="allow")


class Out(BaseModel):
    """A response body: every field documented, nothing else sent."""

    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------------- field types
def _integral(value: Any) -> Any:
    """JSON Schema's integer: ``3.0`` is one (``3.5`` and ``true`` are not)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def Int(**bounds: Any) -> Any:
    """An integer of a JSON body, within ``bounds`` (strict: no strings, no booleans;
    ``3.0`` is 3). The bounds come before the conversion so that they reach the schema."""
    return Annotated[int, Field(**bounds), BeforeValidator(_integral)]


def _query_int(value: Any) -> Any:
    """A query-string integer: ASCII decimal digits with an optional minus sign."""
    if isinstance(value, str):
        if not re.fullmatch(r"-?[0-9]{1,18}", value):
            raise PydanticCustomError("int_type", "must be an integer")
        return int(value)
    return value


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
RankerName = Annotated[str, Field(pattern=RANKER_NAME_PATTERN)]
RankerUrl = Annotated[str, Field(pattern=RANKER_URL_PATTERN, max_length=2048)]
DocId = Annotated[str | Int(), Field(description="a document id as the ranker sent it")]
Number = int | float


# ---------------------------------------------------------------------- front end
@functools.lru_cache
def search_query(default_k: int, max_k: int) -> type[BaseModel]:
    """The query parameters of ``GET /search`` (``k``'s default and bound are
    configuration, so the model is built per configuration)."""
    return create_model(
        "SearchQuery",
        __config__=ConfigDict(extra="ignore"),
        experiment=(Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS,
                                         description="experiment id")], ...),
        q=(Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS,
                                description="the user's query")], ...),
        k=(Annotated[int, Field(ge=1, le=max_k), BeforeValidator(_query_int)],
           Field(default_k, description="results wanted")),
        user=(Annotated[str, Field(max_length=MAX_NAME_CHARS)] | None, Field(None, description=(
            "a stable user id: a repeated (user, query) view of the same comparison shows "
            "the same list"))),
        page=(Annotated[int, Field(ge=1, le=10_000), BeforeValidator(_query_int)],
              Field(1, description=(
                  "the result page: page N is ranks (N-1)*k+1..N*k of the same interleaved "
                  "list, under the same impression (send impression_id and token of page "
                  "1's answer; the rankers are asked for N*k results; N*k at most "
                  "RANKDUEL_MAX_DEPTH, else 400)"))),
        impression_id=(Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)] | None,
                       Field(None, description="with page: the impression page 1 answered")),
        token=(Annotated[str, Field(min_length=1, max_length=200)] | None,
               Field(None, description="with page: the token page 1 answered (403 when "
                                       "wrong, or when the impression is of another "
                                       "experiment; 409 when it is closed)")),
    )


class Click(Open):
    """One click: the document and the 1-based rank it was shown at."""

    id: DocId
    rank: Int(ge=1)
    dwell_ms: Int(ge=0, le=86_400_000) | None = Field(
        None, description="time on the clicked page before the user came back (rankduel.js "
                          "reports it on return; recorded per impression and position)")


class RedirectQuery(BaseModel):
    """``GET /r``: the click redirect (links opened in a new tab, pages without
    JavaScript)."""

    model_config = ConfigDict(extra="ignore")

    i: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS, description="impression id")]
    t: Annotated[str, Field(min_length=1, max_length=200, description="its token")]
    d: Annotated[str, Field(min_length=1, max_length=MAX_DOC_ID_CHARS,
                             description="the document id")]
    p: Annotated[int, Field(ge=1, le=1000), BeforeValidator(_query_int)] = Field(
        description="the 1-based rank it was shown at")
    u: Annotated[str, Field(min_length=1, max_length=2048, description=(
        "the result URL: must be the one the ranker returned for that document"))]


class Clicks(Open):
    """``POST /clicks``. Without ``token`` the answer is 403."""

    #: errors under these fields are 422 (well-formed, wrong content); others are 400
    content: ClassVar[frozenset[str]] = frozenset({"rank"})

    impression_id: Id
    token: str | None = Field(None, description="the token /search issued with the page")
    clicks: Annotated[list[Click], Field(min_length=1, max_length=MAX_CLICKS)]


def _no_default(schema: dict[str, Any]) -> None:
    """A form field left out is absent, never null: no ``default: null`` in the schema."""
    schema.pop("default", None)


class ClickForm(BaseModel):
    """``POST /clicks`` as a form (``application/x-www-form-urlencoded``:
    ``navigator.sendBeacon`` with ``URLSearchParams``, an HTML form): one click."""

    model_config = ConfigDict(extra="ignore")  # as the JSON body: unknown fields ignored

    impression_id: Id
    token: str | SkipJsonSchema[None] = Field(
        None, description="the token /search issued with the page",
        json_schema_extra=_no_default)
    id: Annotated[str, Field(min_length=1, max_length=MAX_DOC_ID_CHARS,
                             description="the document id")]
    rank: Annotated[int, Field(ge=1, le=1000), BeforeValidator(_query_int)] = Field(
        description="the 1-based rank it was shown at")
    dwell_ms: Annotated[int, Field(ge=0, le=86_400_000), BeforeValidator(_query_int)] | (
        SkipJsonSchema[None]) = Field(
        None, description="time on the clicked page before the user came back",
        json_schema_extra=_no_default)

    def as_clicks(self) -> dict[str, Any]:
        """The same report as a :class:`Clicks` body."""
        click: dict[str, Any] = {"id": self.id, "rank": self.rank}
        if self.dwell_ms is not None:
            click["dwell_ms"] = self.dwell_ms
        body: dict[str, Any] = {"impression_id": self.impression_id, "clicks": [click]}
        if self.token is not None:
            body["token"] = self.token
        return body


class EndImpression(Open):
    """``POST /impressions/ID/end`` (the body is optional; the token is checked when sent).

    ``clicks``: the clicks the page reported, sent again with the end (what
    ``rankduel.js`` does on ``pagehide``): a click report still in flight when the page
    closes may reach the API after the end and be refused, so the end records whichever
    of them are not recorded yet (a repeated click counts once) before it closes the
    impression. They need the token."""

    token: str | None = None
    clicks: Annotated[list[Click], Field(max_length=MAX_CLICKS)] | None = Field(
        None, description="the page's clicks, recorded (once) before the impression closes")

    #: errors under these fields are 422 (well-formed, wrong content); others are 400
    content: ClassVar[frozenset[str]] = frozenset({"rank"})


class EndForm(BaseModel):
    """``POST /impressions/ID/end`` as a form (``navigator.sendBeacon`` with
    ``URLSearchParams``, an HTML form): the token alone."""

    model_config = ConfigDict(extra="ignore")

    token: str | SkipJsonSchema[None] = Field(
        None, description="the token /search issued with the page",
        json_schema_extra=_no_default)


# ---------------------------------------------------------------------- operator
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


class NewRanker(RankerIn):
    """``POST /experiments/ID/rankers``: a ranker added mid-run."""

    probe: bool = Field(True, description=PROBE)


class ExperimentPatch(Closed):
    """``PATCH /experiments/ID``: only the name can change (the definition fields are 409)."""

    name: Name


class AuditQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    limit: Annotated[int, Field(ge=1, le=10_000), BeforeValidator(_query_int)] = Field(
        1000, description="how many of the newest entries")


# ---------------------------------------------------------------------- algorithm params
def param_annotation(param: Param) -> Any:
    """The pydantic type of a declared parameter (:mod:`bandits.params`): its bounds or
    choices reach the JSON Schema, so the document states them."""
    if param.choices is not None:
        kind: Any = Literal[param.choices]
    elif param.dtype in (str, bool):
        kind = param.dtype
    else:
        bounds = {k: v for k in ("ge", "gt", "le", "lt")
                  if (v := getattr(param, k)) is not None}
        kind = Int(**bounds) if param.dtype is int else Annotated[float, Field(**bounds)]
    return kind | None if param.nullable else kind


def param_description(param: Param) -> str:
    """A declared parameter's one line of doc, with its default."""
    return f"{param.desc}; default: {declared_default(param)}"


class _Params(Closed):
    algorithm: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        """Names and types first, by the policy's declaration: it names an unknown
        parameter and lists the valid ones (the bounds are the fields')."""
        if isinstance(data, dict):
            try:
                bandits.check_params(cls.algorithm, data, ranges=False)
            except ValueError as exc:
                raise PydanticCustomError(
                    "rd_params", "invalid params for {algorithm}: {reason}",
                    {"algorithm": cls.algorithm, "reason": str(exc)}) from None
        return data


def _params_model(algorithm: str) -> type[_Params]:
    """The ``params`` object of one algorithm, from its declaration."""
    # absent: the policy's default; null is not a value (check_params refuses it)
    fields = {}
    for name, param in bandits.get_algorithm(algorithm).PARAMS.items():
        fields[name] = (param_annotation(param),
                        Field(None, description=param_description(param),
                              json_schema_extra=_no_default))
    title = "".join(p.title() for p in algorithm.split("_"))
    model = create_model(f"{title}Params", __base__=_Params, **fields)
    model.algorithm = algorithm
    return model


def _methods() -> tuple[list[str], list[str]]:
    import interleaving

    pairwise = list(interleaving.PAIRWISE_METHODS)
    return pairwise, [m for m in interleaving.METHODS if m not in pairwise]


def _interleaving_for(algorithm: str, multi: bool) -> Any:
    """The interleaving methods an algorithm can run with (a pairwise policy needs a
    pairwise method, a set-selecting one a multileaving method)."""
    pairwise, multileave = _methods()
    allowed = multileave if multi else pairwise

    def check(method: str) -> str:
        if method in allowed:
            return method
        if method in pairwise + multileave:
            kind = ("compares sets of rankers: choose a multileaving method" if multi
                    else "compares pairs: choose a pairwise interleaving method")
            raise PydanticCustomError("rd_interleaving", "{algorithm} {kind} ({allowed})",
                                      {"algorithm": algorithm, "kind": kind,
                                       "allowed": ", ".join(allowed)})
        raise PydanticCustomError("rd_interleaving",
                                  "unknown interleaving method '{method}'; known: {known}",
                                  {"method": method, "known": ", ".join(pairwise + multileave)})

    return Annotated[str, AfterValidator(check),
                     WithJsonSchema({"type": "string", "enum": allowed})]


class _NewExperiment(Closed):
    name: Name
    rankers: Annotated[list[RankerIn], Field(min_length=2, max_length=MAX_RANKERS)]
    seed: Int(ge=0, le=MAX_SEED) | None = Field(
        None, description="default: drawn at random")
    # its size (one row and column per ranker) is checked with the rankers, which names it
    true_preferences: Annotated[
        list[Annotated[list[Annotated[float, Field(ge=0, le=1)]],
                       Field(min_length=1, max_length=MAX_RANKERS)]],
        Field(min_length=1, max_length=MAX_RANKERS)] | None = Field(
        None, description="simulations only: the true K×K preference matrix over `rankers` "
                          "(p_ij + p_ji = 1), for the true-regret metric")
    true_best: RankerName | None = Field(
        None, description="the ranker true regret is measured against (default: the "
                          "Condorcet winner of true_preferences); needs true_preferences")
    probe: bool = Field(True, description=PROBE)
    dwell_unsatisfied_s: Annotated[float, Field(gt=0, le=3600)] | None = Field(
        None, description="off by default: a click whose user came back to the results "
                          "within this many seconds (the dwell rankduel.js reports) is "
                          "an unsatisfied click and does not count")

    def params_dict(self) -> dict[str, Any]:
        """The parameters as given (absent ones take the policy's defaults)."""
        return self.params.model_dump(exclude_none=True)


def _experiment_model(algorithm: str) -> type[_NewExperiment]:
    cls = bandits.get_algorithm(algorithm)
    params = _params_model(algorithm)
    title = "".join(p.title() for p in algorithm.split("_"))
    return create_model(
        f"New{title}Experiment", __base__=_NewExperiment,
        algorithm=(Literal[algorithm], ...),
        params=(params, Field(default_factory=params)),
        interleaving=(_interleaving_for(algorithm, cls.multi), ...),
    )


class NewExperiment(RootModel):
    """``POST /experiments``: one shape per algorithm."""

    #: the field that picks the shape (pydantic prefixes error locations with its value)
    discriminator: ClassVar[str] = "algorithm"

    root: Annotated[Union[tuple(_experiment_model(a) for a in bandits.ALGORITHMS)],  # noqa: UP007
                    Field(discriminator="algorithm")]


# ---------------------------------------------------------------------- responses
class Error(Out):
    """Every error: what was wrong (``errors``: every problem, when an operator body had
    several)."""

    error: str
    errors: list[str] | SkipJsonSchema[None] = Field(
        None, description="every problem of the body, when there were several",
        json_schema_extra=_no_default)


class Healthy(Out):
    status: Literal["ok"]


class Ready(Out):
    status: Literal["ready"]


class ResultItem(BaseModel):
    """One result as the ranker sent it (its other fields pass through), with its rank."""

    model_config = ConfigDict(extra="allow")

    id: DocId
    rank: Annotated[int, Field(ge=1)]


class SearchResult(Out):
    impression_id: str
    token: str = Field(description="send it back with /clicks and /impressions/ID/end")
    experiment: str
    rankers: list[str] = Field(description="the rankers whose lists were interleaved "
                                           "(one: no duel)")
    results: list[ResultItem]


class ClicksAccepted(Out):
    impression_id: str
    accepted: Annotated[int, Field(ge=0)]
    duplicates: Annotated[int, Field(ge=0, description="clicks already recorded")]


class Ended(Out):
    impression_id: str
    status: Literal["closed"]
    already_closed: bool


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


class Elimination(Out):
    step: int
    by: str | int = Field(description="the ranker that beat it")


class RankerHealth(Out):
    failures: Annotated[int, Field(ge=0, description="consecutive failures")]
    quarantined_until: float | None = Field(description="unix time; null: not quarantined")


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


class LifecycleChanged(Out):
    id: str
    lifecycle: Lifecycle


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


# ---------------------------------------------------------------------- judging campaigns
MAX_POOL = 1000
MAX_QUERIES = 1000
ItemText = Annotated[str, Field(min_length=1, max_length=20_000)]


class JudgingItem(Closed):
    """An item of a pool: its id and the text (or the URL) the assessor sees."""

    id: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS,
                             pattern=r"^[A-Za-z0-9_.:/#-]+$")]  # a qrels docid: no spaces
    text: ItemText = Field(description="what the assessor reads; exact duplicates merge")
    url: Annotated[str, Field(pattern=r"^https?://", max_length=2048)] | None = Field(
        None, description="optional: a link to the item")


class TestPair(Closed):
    """A known better item (``better``) against an off-topic one (``worse``)."""

    better: JudgingItem
    worse: JudgingItem


class JudgingQuery(Closed):
    id: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS,
                             pattern=r"^[A-Za-z0-9_.:-]+$")]  # a TREC query id: no spaces
    text: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    items: Annotated[list[JudgingItem], Field(min_length=2, max_length=MAX_POOL)]
    test_pairs: Annotated[list[TestPair], Field(max_length=100)] = Field(
        default_factory=list, description="mixed into the tasks (three per task)")


JudgingParams = create_model(
    "JudgingParams", __base__=Closed, __doc__="A campaign's judging parameters "
    "(:class:`judging.base.Judge`'s declaration).",
    **{name: (param_annotation(p), Field(p.default, description=param_description(p)))
       for name, p in Judge.PARAMS.items()})


class NewCampaign(Closed):
    """``POST /judging/campaigns``."""

    name: Name
    algorithm: Literal["recommended", "gauntlet", "gauntlet_ties", "prefbest",
                       "prefbest_extra"] = "recommended"
    params: JudgingParams = Field(default_factory=JudgingParams)
    queries: Annotated[list[JudgingQuery], Field(min_length=1, max_length=MAX_QUERIES)]
    seed: Int(ge=0, le=MAX_SEED) | None = None
    task_ttl_s: Int(ge=10, le=7 * 86_400) = Field(
        3600, description="an unanswered task's pairs go back to the algorithm after this")


class NewAssessor(Closed):
    id: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS,
                             pattern=r"^[A-Za-z0-9_.-]+$")] | None = (
        Field(None, description="default: a random id"))


class Judgment(Closed):
    pair: Int(ge=0, le=100)
    choice: Literal["left", "right"]
    no_difference: bool = Field(
        False, description="recorded; the side chosen still counts (Yan 2022, §3.1)")


class Judgments(Closed):
    """``POST /judging/tasks/ID/judgments``: one judgment per pair of the task."""

    assessor: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
    judgments: Annotated[list[Judgment], Field(min_length=1, max_length=100)]


class TaskQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    assessor: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS,
                                   description="assessor id")]


class CampaignCreated(Out):
    id: str
    queries: Annotated[int, Field(ge=1)]


class AssessorCreated(Out):
    campaign: str
    assessor: str


class TaskItem(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    text: str | None = None
    url: str | None = None


class TaskPair(Out):
    pair: int
    query: str
    query_id: str
    left: TaskItem
    right: TaskItem


class Task(Out):
    task_id: str
    campaign: str
    assessor: str
    pairs: list[TaskPair]


class Submitted(Out):
    task_id: str
    status: Literal["submitted", "applied"]
    replay: bool


class CampaignState(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    name: str
    algorithm: str
    done: bool
    queries: dict[str, Any]
    assessors: dict[str, Any]
    tasks: dict[str, int]


class CampaignList(Out):
    campaigns: list[str]
