"""The front end's bodies and answers: ``GET /search``, ``POST /clicks``, the click
redirect, ``POST /impressions/ID/end``, and the health probes' answers."""

from __future__ import annotations

import functools
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    create_model,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from service.id_limits import MAX_DOC_ID_CHARS, MAX_ID_CHARS
from service.schemas.base import (
    MAX_CLICKS,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    DocId,
    Id,
    Int,
    Open,
    Out,
    _query_int,
)


# front end
@functools.lru_cache
def search_query(default_k: int, max_k: int) -> type[BaseModel]:
    """The query parameters of ``GET /search`` (``k``'s default and bound are
    configuration, so the model is built per configuration)."""
    return create_model(
        "SearchQuery",
        __config__=ConfigDict(extra="ignore"),
        experiment=(Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)] | None,
                    Field(None, description="experiment id (or placement: one of the two)")),
        placement=(Annotated[str, Field(min_length=1, max_length=64)] | None,
                   Field(None, description="a placement (search box): its experiments and "
                                           "control share the searches (instead of "
                                           "experiment; a first page only)")),
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
        fallback=(Literal["first", "none"], Field("first", description=(
            "an experiment's search while rankduel's state store is down: first (the "
            "default) answers the experiment's first ranker's list with \"degraded\": "
            "\"store\" and no impression; none answers 503 with Retry-After"))),
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


def _no_default(schema: dict[str, Any]) -> None:
    """A form field left out is absent, never null: no ``default: null`` in the schema."""
    schema.pop("default", None)


#: a control page's token (``"page_token"`` of a control answer:
#: :mod:`service.placements.control_pages`)
PageToken = Annotated[str, Field(min_length=1, max_length=200, description=(
    "a control page's page_token (a control answer of a placement has no impression): "
    "instead of impression_id and token; the page counts as clicked once"))]
#: the two kinds of click report (JSON Schema): an impression's, or a control page's
_ONE_KIND = {"oneOf": [
    {"required": ["impression_id"], "not": {"required": ["page_token"]}},
    {"required": ["page_token"],
     "not": {"anyOf": [{"required": ["impression_id"]}, {"required": ["token"]}]}}]}
ONE_KIND_MESSAGE = ("send impression_id and token (an answer with an impression) or "
                    "page_token (a control answer), exactly one of the two")


def _one_kind(data: Any) -> Any:
    """Exactly one kind of click report, neither of its ids null (400 otherwise)."""
    if isinstance(data, dict):
        kinds = [k for k in ("impression_id", "page_token") if k in data]
        if len(kinds) != 1 or ("page_token" in data and "token" in data):
            raise ValueError(ONE_KIND_MESSAGE)
        if data[kinds[0]] is None:
            raise ValueError(f"{kinds[0]} must be a string, not null")
    return data


class Clicks(Open):
    """``POST /clicks``: an impression's clicks (``impression_id`` and ``token``:
    without ``token`` the answer is 403), or a control page's (``page_token``)."""

    model_config = ConfigDict(json_schema_extra=_ONE_KIND)

    #: errors under these fields are 422 (well-formed, wrong content); others are 400
    content: ClassVar[frozenset[str]] = frozenset({"rank"})

    impression_id: Id | SkipJsonSchema[None] = Field(None, json_schema_extra=_no_default)
    token: str | None = Field(None, description="the token /search issued with the page")
    page_token: PageToken | SkipJsonSchema[None] = Field(None, json_schema_extra=_no_default)
    clicks: Annotated[list[Click], Field(min_length=1, max_length=MAX_CLICKS)]

    _check_kind = model_validator(mode="before")(_one_kind)


class ClickForm(BaseModel):
    """``POST /clicks`` as a form (``application/x-www-form-urlencoded``:
    ``navigator.sendBeacon`` with ``URLSearchParams``, an HTML form): one click, of an
    impression (``impression_id``, ``token``) or of a control page (``page_token``)."""

    # as the JSON body: unknown fields ignored, one kind of report
    model_config = ConfigDict(extra="ignore", json_schema_extra=_ONE_KIND)

    impression_id: Id | SkipJsonSchema[None] = Field(None, json_schema_extra=_no_default)
    page_token: PageToken | SkipJsonSchema[None] = Field(None, json_schema_extra=_no_default)
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

    _check_kind = model_validator(mode="before")(_one_kind)

    def as_clicks(self) -> dict[str, Any]:
        """The same report as a :class:`Clicks` body."""
        click: dict[str, Any] = {"id": self.id, "rank": self.rank}
        if self.dwell_ms is not None:
            click["dwell_ms"] = self.dwell_ms
        body: dict[str, Any] = {"clicks": [click]}
        if self.page_token is not None:
            body["page_token"] = self.page_token
        else:
            body["impression_id"] = self.impression_id
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




# responses
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
    impression_id: str | None = Field(description="null: a control search of a placement "
                                                  "(no impression: report its clicks "
                                                  "with page_token)")
    token: str | None = Field(description="send it back with /clicks and "
                                          "/impressions/ID/end (null: a control search)")
    experiment: str | None = Field(description="null: the placement's control answered")
    placement: str | None = Field(None, description="the placement searched, if any")
    page_token: str | SkipJsonSchema[None] = Field(
        None, description="a control answer's: report the page's clicks with it "
                          "(POST /clicks {page_token, clicks}); absent on an experiment's "
                          "answer", json_schema_extra=_no_default)
    rankers: list[str] = Field(description="the rankers whose lists were interleaved "
                                           "(one: no duel)")
    results: list[ResultItem]
    degraded: Literal["store"] | SkipJsonSchema[None] = Field(
        None, description="store: rankduel's state store was down or slow, so the "
                          "control's list (a placement) or the experiment's first ranker's "
                          "(fallback=first) was served, with no impression and no token: "
                          "nothing to report; absent otherwise", json_schema_extra=_no_default)


class ClicksAccepted(Out):
    impression_id: str | None = Field(description="null: a control page's clicks "
                                                  "(page_token): accepted is 1 for the "
                                                  "page's first click report, else 0")
    accepted: Annotated[int, Field(ge=0)]
    duplicates: Annotated[int, Field(ge=0, description="clicks already recorded")]


class Ended(Out):
    impression_id: str
    status: Literal["closed"]
    already_closed: bool
