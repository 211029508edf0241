"""``POST /outcomes``' body and answer (:mod:`service.outcomes.attribution`), and the
metrics' parts of an experiment's state (docs/conversions.md)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from service.id_limits import MAX_DOC_ID_CHARS
from service.outcomes.declared import ACTION_PATTERN, MAX_VALUE
from service.schemas.base import Id, Int, Open, Out

#: an event id: printable ASCII without spaces, as order ids and UUIDs are
EVENT_ID_PATTERN = r"^[!-~]{1,128}$"
_ONE_FORM = {"oneOf": [
    {"required": ["impression_id"], "not": {"required": ["user"]}},
    {"required": ["user"], "not": {"anyOf": [{"required": ["impression_id"]},
                                             {"required": ["token"]}]}}]}
ONE_FORM_MESSAGE = ("field 'impression_id' or 'user': send exactly one (the browser: "
                    "impression_id and token; a back end: user, not null)")


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class Outcome(Open):
    """``POST /outcomes``: an outcome event (an add-to-cart, a purchase) for document
    ``id``, from the browser (``impression_id`` and ``token``, as ``rankduel.js``'s
    ``track()`` sends) or from a back end (``user``, with the front-end key or the admin
    token). Exactly one of ``impression_id`` and ``user``."""

    model_config = ConfigDict(json_schema_extra=_ONE_FORM)

    #: errors under these fields are 422 (well-formed, wrong content); others too
    content: ClassVar[frozenset[str]] = frozenset({"action", "id", "value", "event_id",
                                                   "impression_id", "token", "user"})

    action: Annotated[str, Field(pattern=ACTION_PATTERN)] = Field(
        description="the action a running experiment declares a metric of (`purchase`)")
    id: Annotated[str, Field(min_length=1, max_length=MAX_DOC_ID_CHARS)] | Int() = Field(
        description="the document the event is about, as the ranker returned its id")
    value: Annotated[float, Field(ge=0, le=MAX_VALUE, allow_inf_nan=False)] | None = Field(
        None, description="the event's value (a sum metric's: required there)")
    event_id: Annotated[str, Field(pattern=EVENT_ID_PATTERN)] = Field(
        description="the event's own id (an order id): a retry with the same id counts once")
    impression_id: Id | SkipJsonSchema[None] = Field(
        None, description="the browser's: the impression", json_schema_extra=_no_default)
    token: Annotated[str, Field(max_length=200)] | None = Field(
        None, description="with impression_id: the token /search issued with it")
    user: Annotated[str, Field(min_length=1, max_length=256)] | SkipJsonSchema[None] = Field(
        None, description="a back end's: the user the searches named (needs the "
                          "front-end key or the admin token)", json_schema_extra=_no_default)

    @model_validator(mode="before")
    @classmethod
    def _one_form(cls, data: Any) -> Any:
        if isinstance(data, dict):
            forms = [k for k in ("impression_id", "user") if data.get(k) is not None]
            if (len(forms) != 1 or any(k in data and data[k] is None
                                       for k in ("impression_id", "user"))
                    or ("user" in data and "token" in data)):
                raise ValueError(ONE_FORM_MESSAGE)
        return data


class OutcomeAttribution(Out):
    experiment: str
    impression_id: str = Field(description="the impression credited (last touch)")
    metrics: list[str] = Field(description="the metrics it counts for (within their window)")


class OutcomeAccepted(Out):
    """202: recorded for crediting, or not attributable (``attributed`` false)."""

    attributed: bool
    event_id: str
    duplicate: bool | None = Field(
        None, description="this event_id was recorded before: counted once")
    experiments: list[OutcomeAttribution] | None = None
    reason: str | None = Field(
        None, description="why not attributed: no_impression, outside_window, not_shown, "
                          "impression_expired, no_experiment")
