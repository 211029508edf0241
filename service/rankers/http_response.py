"""Reading a ranker's HTTP answer: the standard library's ``http.client``, with a faster
header parse.

``http.client`` parses a response's headers with the ``email`` package's feed parser,
about as much CPU as the rest of a ranker call on the API's side. A ranker's headers are
a handful of ``Name: value`` lines, so :class:`RankerResponse` reads them with the same
limits (65,536 bytes a line, 100 lines) and builds the same :class:`http.client.HTTPMessage`
directly. Any header block that is not only such lines (a folded continuation line, a
line without a colon, a name with a space) goes to the standard parser unchanged, so
every answer is read exactly as ``http.client`` reads it.
"""

from __future__ import annotations

import email.parser
import http.client
import re
from typing import BinaryIO

#: http.client's limits on a header line and on the number of header lines
MAX_LINE = 65536
MAX_HEADERS = 100

#: a header line the email parser reads as ``name: value`` with nothing else to it
_SIMPLE = re.compile(rb"[!-9;-~]+:[^\r\n]*\r?\n\Z")


def read_headers(fp: BinaryIO) -> http.client.HTTPMessage:
    """The headers up to the empty line, as ``http.client.parse_headers`` returns them."""
    lines = []
    while True:
        line = fp.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        lines.append(line)
        if len(lines) > MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
        if line in (b"\r\n", b"\n", b""):
            break
    fields = lines[:-1]
    if not all(_SIMPLE.match(line) for line in fields):
        text = b"".join(lines).decode("iso-8859-1")
        return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text)
    msg = http.client.HTTPMessage()
    for line in fields:
        name, _, value = line.decode("iso-8859-1").partition(":")
        msg[name] = value.lstrip(" \t").rstrip("\r\n")
    return msg


class RankerResponse(http.client.HTTPResponse):
    """``http.client.HTTPResponse`` whose :meth:`begin` reads the headers with
    :func:`read_headers`; otherwise the standard library's ``begin`` (Python 3.11),
    line for line."""

    def begin(self) -> None:
        if self.headers is not None:
            return
        while True:  # until a non-100 answer
            version, status, reason = self._read_status()
            if status != http.client.CONTINUE:
                break
            read_headers(self.fp)
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = read_headers(self.fp)
        tr_enc = self.headers.get("transfer-encoding")
        if tr_enc and tr_enc.lower() == "chunked":
            self.chunked = True
            self.chunk_left = None
        else:
            self.chunked = False
        self.will_close = self._check_close()
        self.length = None
        length = self.headers.get("content-length")
        if length and not self.chunked:
            try:
                self.length = int(length)
            except ValueError:
                self.length = None
            else:
                if self.length < 0:  # a negative length means none
                    self.length = None
        if (status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED)
                or 100 <= status < 200 or self._method == "HEAD"):
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True  # delimited by the end of the connection
