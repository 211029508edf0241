"""Judging campaigns' bodies and answers (``/judging...``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    create_model,
)

from judging.base import Judge
from service.id_limits import MAX_ID_CHARS
from service.schemas.base import (
    MAX_QUERY_CHARS,
    MAX_SEED,
    Closed,
    Int,
    Name,
    Out,
)
from service.schemas.params import (
    param_annotation,
    param_description,
)

# judging campaigns
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
