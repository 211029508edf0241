"""What every schema of the API shares: the limits, the patterns, the base classes
(closed operator bodies, open front-end bodies, responses) and the field types."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
)
from pydantic_core import PydanticCustomError

from service.id_limits import MAX_ID_CHARS

# limits
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


# base classes
class Closed(BaseModel):
    """A request body that refuses unknown fields; JSON types exactly (no coercion)."""

    model_config = ConfigDict(strict=True, extra="forbid")


class Open(BaseModel):
    """A request body that ignores unknown fields (the front end's)."""

    model_config = ConfigDict(strict=True, extra="allow")


class Out(BaseModel):
    """A response body: every field documented, nothing else sent."""

    model_config = ConfigDict(extra="forbid")


# field types
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
