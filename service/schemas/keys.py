"""API keys (``/keys``) and the audit trail (``/audit``): the bodies and answers
(docs/operations/security.md; the scopes: :mod:`service.access.scopes`)."""

from __future__ import annotations

import time
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from service.schemas.base import Closed, Int, Out, _query_int

MAX_NAME = 80
SCOPES_DOC = ("what the key may do: admin (everything, keys included), write "
              "(experiments, placements, webhooks, campaigns, confirmations; reads too), "
              "write:placement:NAME (that placement and the experiments on it, reads of "
              "them too), read (every GET of the operator API), frontend (search, clicks, "
              "outcomes, UBI events), metrics (/metrics)")


#: a scope as the schema states it (:func:`service.access.scopes.valid`)
SCOPE_PATTERN = (r"^(admin|write|read|frontend|metrics"
                 r"|write:placement:[A-Za-z0-9][A-Za-z0-9_.-]{0,63})$")
#: a name: printable, not blank
NAME_PATTERN = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"
Scope = Annotated[str, Field(pattern=SCOPE_PATTERN, description=(
    "admin, write, write:placement:NAME, read, frontend or metrics"))]


class NewKey(Closed):
    """``POST /keys``: a key's name, its scopes and, optionally, when it expires."""

    name: Annotated[str, Field(min_length=1, max_length=MAX_NAME, pattern=NAME_PATTERN)] = \
        Field(description="who or what holds it (shown in lists and in the audit trail; "
                          "printable, not blank)")
    scopes: list[Scope] = Field(min_length=1, max_length=20, description=SCOPES_DOC)
    expires_at: Int(ge=1, le=32_503_680_000) | None = Field(  # type: ignore[valid-type]
        None, description="unix seconds after which the key stops working (in the future)")

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, v: list[str]) -> list[str]:
        """Each scope once (the pattern is :func:`service.access.scopes.valid`'s rule)."""
        return list(dict.fromkeys(v))

    @field_validator("expires_at")
    @classmethod
    def _future(cls, v: int | None) -> int | None:
        if v is not None and v <= time.time():
            raise ValueError("is in the past: give unix seconds after now, or leave it out")
        return v


class Key(Out):
    """A key as lists show it: never its secret."""

    id: str
    name: str
    prefix: str = Field(description="the first characters of its secret (rdk_<id>)")
    scopes: list[str]
    created: float = Field(description="unix seconds")
    last_used: float | None = Field(description="unix seconds (recorded once a minute "
                                                "per API process)")
    expires_at: int | None
    revoked: float | None = Field(description="unix seconds; null: in force")
    state: str = Field(description="active, expired or revoked")


class KeyCreated(Key):
    """``POST /keys``'s answer: the only time the secret is shown."""

    key: str = Field(description="the secret: send it as Authorization: Bearer <key>; "
                                 "shown this once, stored only as its SHA-256")


class KeyList(Out):
    keys: list[Key]


class Me(Out):
    """``GET /keys/me``: who the request's key is."""

    who: dict[str, str] = Field(description="{key, name} of a stored key, or {bootstrap}: "
                                            "admin, frontend or metrics")
    scopes: list[str]


def key_view(record: dict[str, Any], now: float) -> dict[str, Any]:
    """A stored key as the API shows it (no hash, no secret)."""
    state = ("revoked" if record["revoked"] is not None else
             "expired" if record["expires_at"] is not None and now >= record["expires_at"]
             else "active")
    return {k: record[k] for k in ("id", "name", "prefix", "scopes", "created",
                                    "last_used", "expires_at", "revoked")} | {"state": state}


#: a cursor of GET /audit: ``<stream id>~<trail key>`` (:mod:`service.access.audit`)
CURSOR_PATTERN = r"^[0-9]{1,19}-[0-9]{1,19}~rd:trail:\{[^{}]{1,500}\}$"


class AuditQuery(BaseModel):
    """``GET /audit`` and ``GET /audit/export``: the filters, and the page."""

    model_config = ConfigDict(extra="forbid")

    key: Annotated[str, Field(min_length=1, max_length=MAX_NAME)] | None = Field(
        None, description="entries by this key (its id or name; admin, frontend or "
                          "metrics: a bootstrap token)")
    experiment: Annotated[str, Field(min_length=1, max_length=400)] | None = Field(
        None, description="entries on this experiment")
    placement: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        None, description="entries on this placement (its experiments' included)")
    since: Annotated[int, Field(ge=0, le=32_503_680_000),
                     BeforeValidator(_query_int)] | None = Field(
        None, description="entries from this time on (unix seconds)")
    after: Annotated[str, Field(max_length=600, pattern=CURSOR_PATTERN)] | None = Field(
        None, description="the cursor of the last entry read (the answer's next)")
    limit: Annotated[int, Field(ge=1, le=1000), BeforeValidator(_query_int)] = Field(
        100, description="how many entries (oldest first)")


class TrailEntry(BaseModel):
    """One entry of the audit trail."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(description="its cursor")
    ts: float
    op: str = Field(description="the operation (operationId)")
    action: str
    who: dict[str, str]
    target: dict[str, str]
    change: dict[str, Any]
    addr: str = Field(description="the client address")
    result: str = Field(description="ok, or the status and error of a refused or failed "
                                    "call")


class AuditPage(Out):
    entries: list[TrailEntry]
    next: str | None = Field(description="pass as after= for the next page")
