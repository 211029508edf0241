"""``POST /ubi/events``: OpenSearch User Behavior Insights (UBI 1.3.0) events as ``ubi.js``
sends them, one object or an array, and the answer (:mod:`service.ubi`).

Only the fields rankduel reads are checked; every other field is kept as sent (UBI's
objects are open), and ``null`` is taken for any optional field (``ubi.js`` sends some).
A click names its document (``event_attributes.object.object_id``) and its 1-based rank
as shown (``event_attributes.position.ordinal``); the impression's token is
``event_attributes.token`` (a browser's), or the request carries a front-end key.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, StrictStr, field_validator

from service.id_limits import MAX_DOC_ID_CHARS, MAX_ID_CHARS
from service.schemas.base import Int, Open, Out

#: events in one request
MAX_UBI_EVENTS = 100
#: UBI's bound on its short strings (application, action_name, client_id, ...)
UBI_SHORT = 100

#: an RFC 3339 date-time (the time zone optional, as UBI's examples have it)
_DATE_TIME = re.compile(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d{1,9})?([Zz]|[+-]\d\d:\d\d)?")

Short = Annotated[StrictStr, Field(max_length=UBI_SHORT)]


class UbiObject(Open):
    """``event_attributes.object``: what the event is about."""

    object_id: Any = Field(None, description="the document id (a click's: as shown)",
                           json_schema_extra={"anyOf": [
                               {"type": "string", "minLength": 1,
                                "maxLength": MAX_DOC_ID_CHARS}, {"type": "integer"},
                               {"type": "null"}]})  # null taken, as for every optional field
    object_id_field: Short | None = None

    @field_validator("object_id")
    @classmethod
    def _doc_id(cls, value: Any) -> Any:
        # one check, so that an error names object_id itself (not a branch of a union)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        if not isinstance(value, str) or not 1 <= len(value) <= MAX_DOC_ID_CHARS:
            raise ValueError(f"must be a string of 1 to {MAX_DOC_ID_CHARS} characters or "
                             "an integer")
        return value


class UbiPosition(Open):
    """``event_attributes.position``: where on the page."""

    ordinal: Int(ge=1, le=1000) | None = Field(
        None, description="the 1-based rank shown (a click's: required)")


class UbiEventAttributes(Open):
    """``event_attributes``."""

    token: Annotated[StrictStr, Field(max_length=200)] | None = Field(
        None, description="the token /search issued with the page (a browser's event)")
    object: UbiObject | None = None
    position: UbiPosition | None = None


class UbiEvent(Open):
    """One UBI event (``event.schema.json`` of UBI 1.3.0)."""

    action_name: Annotated[StrictStr, Field(min_length=1, max_length=UBI_SHORT)] = Field(
        description="click (recorded as POST /clicks records one), add_to_cart, purchase, "
                    "... (stored in the event log, not credited)")
    query_id: Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_CHARS)] | None = Field(
        None, description="the impression id /search answered")
    timestamp: Annotated[StrictStr, Field(max_length=64, json_schema_extra={
        "format": "date-time"})] | None = Field(
        None, description="ISO 8601 (RFC 3339); without a zone read as UTC")
    application: Short | None = None
    client_id: Short | None = None
    session_id: Short | None = None
    user_id: Short | None = None
    message_type: Short | None = None
    message: Annotated[StrictStr, Field(max_length=1024)] | None = None
    user_query: Annotated[StrictStr, Field(max_length=1000)] | None = None
    event_attributes: UbiEventAttributes | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None and not _DATE_TIME.fullmatch(value):
            raise ValueError("not an ISO 8601 date-time (2025-03-01T10:00:00.000Z)")
        return value


class UbiEvents(Open):
    """The body, one event or an array of them, as ``{"events": [...]}`` (the handler
    wraps what it receives, so an error names ``events[i].field``)."""

    events: Annotated[list[UbiEvent], Field(min_length=1, max_length=MAX_UBI_EVENTS)]


class UbiEventResult(Out):
    """What became of one event."""

    index: int = Field(description="its place in the request")
    status: Literal["credited", "accepted", "ignored"] = Field(
        description="credited: recorded as a click; accepted: stored in the event log, "
                    "not credited; ignored: not stored (the reason says why)")
    reason: str


class UbiEventsReceived(Out):
    """``POST /ubi/events``'s answer: each event's fate, in order, and the counts."""

    events: list[UbiEventResult]
    credited: int
    accepted: int
    ignored: int
