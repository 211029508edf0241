"""Webhooks (``/webhooks...``): a hook's definition, what the API shows of it (never its
secret), and its last deliveries (docs/webhooks.md; the events:
:data:`service.webhooks.payloads.EVENTS`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from service.schemas.base import Closed, Id, Out, RankerUrl, _query_int
from service.webhooks.payloads import COMING, EVENTS

#: a secret's bounds (characters)
MIN_SECRET, MAX_SECRET = 16, 256
#: experiments one hook may be limited to
MAX_EXPERIMENTS = 100

EventName = Literal[tuple(EVENTS)]  # type: ignore[valid-type]
_EVENTS_DOC = ("the events to send: " + "; ".join(f"{k}: {v}" for k, v in EVENTS.items())
               + ("".join(f". Coming: {k} ({v})" for k, v in COMING.items())))


class NewWebhook(Closed):
    """``POST /webhooks``: where to send which events, and the secret that signs them."""

    url: RankerUrl = Field(description="where to POST the events: an absolute http(s) "
                                       "URL the ranker allow-list accepts "
                                       "(RANKDUEL_RANKER_ALLOW)")
    events: list[EventName] = Field(min_length=1, max_length=len(EVENTS),
                                    description=_EVENTS_DOC)
    secret: Annotated[str, Field(min_length=MIN_SECRET, max_length=MAX_SECRET)] = Field(
        description="the HMAC-SHA256 key of X-Rankduel-Signature; stored, never shown again")
    experiments: list[Id] | None = Field(
        None, min_length=1, max_length=MAX_EXPERIMENTS,
        description="only the events of these experiments (default: every experiment)")
    description: Annotated[str, Field(max_length=200)] | None = Field(
        None, description="a note for people")


class Webhook(Out):
    """A webhook as the API shows it."""

    id: str
    url: str
    events: list[str]
    experiments: list[str] | None
    description: str | None
    secret: Literal["set"] = Field(description="always \"set\": the secret is never shown")
    created_at: str = Field(description="ISO 8601, UTC")
    failures_in_a_row: int = Field(description="failed attempts since the last delivery")
    disabled: bool = Field(description="disabled after RANKDUEL_WEBHOOK_DISABLE_AFTER "
                                       "failures in a row: nothing more is sent")
    disabled_reason: str | None
    disabled_at: str | None


class WebhookList(Out):
    webhooks: list[Webhook]


class WebhookDeleted(Out):
    id: str
    deleted: bool


class Delivery(Out):
    """One event tried on a hook, with its attempts."""

    event_id: str
    event: str
    experiment: str
    attempts: int
    status_codes: list[int | None] = Field(description="each attempt's HTTP status, oldest "
                                                       "first (null: no answer)")
    first_attempt: str
    last_attempt: str
    result: Literal["delivered", "failed", "refused", "dropped"] = Field(
        description="the last attempt's: delivered (2xx), failed (retried), refused by "
                    "the allow-list (retried)")
    error: str | None = Field(description="the last failure, if not delivered")


class Deliveries(Out):
    id: str
    deliveries: list[Delivery]


class DeliveriesQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    limit: Annotated[int, Field(ge=1, le=100), BeforeValidator(_query_int)] = Field(
        20, description="how many of the newest events")
