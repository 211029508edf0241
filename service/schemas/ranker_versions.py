"""``POST /experiments/ID/rankers/NAME/versions``: a new version of a ranker
(:mod:`service.experiments.ranker_versions`)."""

from __future__ import annotations

from pydantic import Field

from service.schemas.base import MAX_TIMEOUT_MS, PROBE, Closed, Int, RankerUrl
from service.schemas.experiments import RankerRequest, RankerResponse


class NewRankerVersion(Closed):
    """The definition fields to change; those left out are the latest version's."""

    url: RankerUrl | None = Field(None, description="a new URL")
    timeout_ms: Int(ge=1, le=MAX_TIMEOUT_MS) | None = Field(None, description="a new timeout")
    request: RankerRequest | None = Field(None, description="a new request template")
    response: RankerResponse | None = Field(None, description="a new response mapping")
    probe: bool = Field(True, description=PROBE)
    retire_previous: bool = Field(
        True, description="retire the version it replaces (default); false keeps both in "
        "play, to compare them")

    def change(self) -> dict:
        """The definition fields the body gives, as stored."""
        return {k: (v.model_dump(exclude_none=True) if hasattr(v, "model_dump") else v)
                for k in ("url", "timeout_ms", "request", "response")
                if (v := getattr(self, k)) is not None}
