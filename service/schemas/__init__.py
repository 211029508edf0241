"""Every request and response body of the HTTP API, defined once as pydantic models, one
module per area (:mod:`~service.schemas.frontend`, :mod:`~service.schemas.experiments`,
:mod:`~service.schemas.params`, :mod:`~service.schemas.campaigns`, on
:mod:`~service.schemas.base`); this package names them all. They sit below both the HTTP
layer, which parses bodies with them, and the operations that take the parsed specs
(:mod:`service.experiments.operations`), so neither reaches into the other.

The handlers validate what they receive through these models
(:func:`service.api.validation.parse`) and :mod:`service.api.openapi` builds
``/openapi.json`` from their JSON Schema, so what the document allows is what the API
accepts:

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

from service.schemas.base import (
    HEADER_NAME_PATTERN,
    MAX_CLICKS,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    MAX_RANKERS,
    MAX_SEED,
    MAX_TIMEOUT_MS,
    PATH_PATTERN,
    PATTERN_MEANING,
    PROBE,
    RANKER_NAME_PATTERN,
    RANKER_URL_PATTERN,
    Closed,
    DocId,
    Id,
    Int,
    Name,
    Number,
    Open,
    Out,
    RankerName,
    RankerUrl,
)
from service.schemas.campaigns import (
    MAX_POOL,
    MAX_QUERIES,
    AssessorCreated,
    CampaignCreated,
    CampaignList,
    CampaignState,
    ItemText,
    JudgingItem,
    JudgingParams,
    JudgingQuery,
    Judgment,
    Judgments,
    NewAssessor,
    NewCampaign,
    Submitted,
    Task,
    TaskItem,
    TaskPair,
    TaskQuery,
    TestPair,
)
from service.schemas.experiments import (
    PLACEHOLDER_NOTE,
    Archive,
    Audit,
    AuditEntry,
    AuditQuery,
    Elimination,
    EventsQuery,
    Experiment,
    ExperimentDeleted,
    ExperimentList,
    ExperimentPatch,
    ExperimentRollout,
    ExperimentSummary,
    HeaderName,
    HeaderValue,
    Lifecycle,
    LifecycleChanged,
    Matrix,
    NewRanker,
    NonCondorcet,
    ParamValue,
    PathText,
    Preferences,
    RankerEntry,
    RankerHealth,
    RankerIn,
    RankerRequest,
    RankerResponse,
    RankerState,
    RankerStatus,
    TemplateText,
    Tripped,
)
from service.schemas.frontend import (
    Click,
    ClickForm,
    Clicks,
    ClicksAccepted,
    Ended,
    EndForm,
    EndImpression,
    Error,
    Healthy,
    Ready,
    RedirectQuery,
    ResultItem,
    SearchResult,
    search_query,
)
from service.schemas.outcomes import (
    Outcome,
    OutcomeAccepted,
    OutcomeAttribution,
)
from service.schemas.params import (
    NewExperiment,
    param_annotation,
    param_description,
)
from service.schemas.placements import (
    Guardrails,
    NewPlacement,
    PlacementList,
    PlacementPatch,
    PlacementState,
)

__all__ = [
    "HEADER_NAME_PATTERN",
    "MAX_CLICKS",
    "MAX_NAME_CHARS",
    "MAX_POOL",
    "MAX_QUERIES",
    "MAX_QUERY_CHARS",
    "MAX_RANKERS",
    "MAX_SEED",
    "MAX_TIMEOUT_MS",
    "PATH_PATTERN",
    "PATTERN_MEANING",
    "PLACEHOLDER_NOTE",
    "PROBE",
    "RANKER_NAME_PATTERN",
    "RANKER_URL_PATTERN",
    "Archive",
    "AssessorCreated",
    "Audit",
    "AuditEntry",
    "AuditQuery",
    "CampaignCreated",
    "CampaignList",
    "CampaignState",
    "Click",
    "ClickForm",
    "Clicks",
    "ClicksAccepted",
    "Closed",
    "DocId",
    "Elimination",
    "EndForm",
    "EndImpression",
    "Ended",
    "Error",
    "EventsQuery",
    "Experiment",
    "ExperimentDeleted",
    "ExperimentList",
    "ExperimentPatch",
    "ExperimentRollout",
    "ExperimentSummary",
    "Guardrails",
    "HeaderName",
    "HeaderValue",
    "Healthy",
    "Id",
    "Int",
    "ItemText",
    "JudgingItem",
    "JudgingParams",
    "JudgingQuery",
    "Judgment",
    "Judgments",
    "Lifecycle",
    "LifecycleChanged",
    "Matrix",
    "Name",
    "NewAssessor",
    "NewCampaign",
    "NewExperiment",
    "NewPlacement",
    "NewRanker",
    "NonCondorcet",
    "Number",
    "Open",
    "Out",
    "Outcome",
    "OutcomeAccepted",
    "OutcomeAttribution",
    "ParamValue",
    "PathText",
    "PlacementList",
    "PlacementPatch",
    "PlacementState",
    "Preferences",
    "RankerEntry",
    "RankerHealth",
    "RankerIn",
    "RankerName",
    "RankerRequest",
    "RankerResponse",
    "RankerState",
    "RankerStatus",
    "RankerUrl",
    "Ready",
    "RedirectQuery",
    "ResultItem",
    "SearchResult",
    "Submitted",
    "Task",
    "TaskItem",
    "TaskPair",
    "TaskQuery",
    "TemplateText",
    "TestPair",
    "Tripped",
    "param_annotation",
    "param_description",
    "search_query",
]
