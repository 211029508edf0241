"""A ranker's answer headers are read as the standard library reads them
(:func:`service.rankers.http_response.read_headers` beside ``http.client.parse_headers``):
the simple lines by the fast parse, every other block (folded lines, a line without a
colon, a name with a space, bare line feeds) as the email parser reads it, and the same
limit on the number of headers. On bytes: no ranker is started (the transport over real
connections: tests/service/test_ranker_transport.py)."""

from __future__ import annotations

import http.client
import io

import pytest

from service.rankers.http_response import read_headers

HEADER_BLOCKS = [
    b"Content-Type: application/json\r\nContent-Length: 12\r\n\r\n",
    b"content-length:12\r\nX-A:  spaced  \r\n\r\n",
    b"Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n",
    b"X-Folded: one\r\n two\r\nContent-Length: 3\r\n\r\n",  # obs-fold: the email parser
    b"Bad Header: x\r\nContent-Length: 3\r\n\r\n",  # a space in a name ends the headers
    b"no colon here\r\nContent-Length: 3\r\n\r\n",
    b":empty-name\r\n\r\n",
    b"X-Latin: caf\xe9\r\n\r\n",
    b"\r\n",
    b"X-Unix: lf only\nContent-Length: 2\n\n",
]


@pytest.mark.parametrize("block", HEADER_BLOCKS)
def test_headers_are_read_as_the_standard_library_reads_them(block):
    ours = read_headers(io.BytesIO(block + b"rest"))
    theirs = http.client.parse_headers(io.BytesIO(block + b"rest"))
    assert ours.items() == theirs.items()
    assert ours.get_all("set-cookie") == theirs.get_all("set-cookie")


def test_too_many_headers_are_refused_like_the_standard_library():
    block = b"".join(b"X-%d: v\r\n" % i for i in range(101)) + b"\r\n"
    with pytest.raises(http.client.HTTPException, match="more than 100 headers"):
        read_headers(io.BytesIO(block))
    with pytest.raises(http.client.HTTPException, match="more than 100 headers"):
        http.client.parse_headers(io.BytesIO(block))
