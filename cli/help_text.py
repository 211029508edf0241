"""Help texts as plain text: a command's docstring (reST, for the API docs) shown by
``--help`` without its markup.

>>> plain("``rankduel serve``: see :data:`service.serving.ACCESS_LOG_FORMAT`::")
'rankduel serve: see service.serving.ACCESS_LOG_FORMAT:'
>>> plain("a *path* and `x`")
'a path and x'
"""

from __future__ import annotations

import re

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")
_CODE = re.compile(r"`([^`]+)`")
_EMPHASIS = re.compile(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])")


def plain(text: str) -> str:
    """``text`` with reST inline markup removed (roles, literals, emphasis) and a
    literal-block ``::`` turned into ``:``."""
    text = _ROLE.sub(r"\1", text)
    text = _LITERAL.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    return re.sub(r"::$", ":", text, flags=re.MULTILINE)
