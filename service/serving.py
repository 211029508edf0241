"""What every gunicorn serving the API shares: ``rankduel serve`` and
``deploy/gunicorn.conf.py`` both read :data:`GUNICORN_OPTIONS`.

* ``limit_request_line``: gunicorn's maximum, 8190 bytes, not its default 4094: the
  request line carries ``/search``'s query string percent-encoded, and the documented
  1,000 characters of ``q`` take 6,000 bytes when each is two bytes in UTF-8 (``é``).
* ``worker_class``: gunicorn's threaded worker, answering a request line or headers over
  the limits with a JSON error (``{"error": ...}``, 414 or 431) like every other error of
  the API, instead of gunicorn's HTML page.
"""

from __future__ import annotations

import json

from gunicorn import util
from gunicorn.http.errors import LimitRequestHeaders, LimitRequestLine
from gunicorn.workers.gthread import ThreadWorker

#: longest request line (method, path, percent-encoded query string), in bytes: gunicorn's
#: ``limit_request_line`` (its maximum), 414 beyond
LIMIT_REQUEST_LINE = 8190

#: the API's access log line (see ``rankduel serve --help``): client, time, method, path
#: without the query string, protocol, status, bytes, milliseconds, user agent
ACCESS_LOG_FORMAT = '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms "%(a)s"'


def access_log(config) -> str | None:
    """gunicorn's ``accesslog`` for ``config.access_log``: ``-`` (standard output), a
    file path, or None for ``off``."""
    value = config.access_log.strip()
    return None if value.lower() in ("off", "none", "no", "false", "0") else value


GUNICORN_OPTIONS = {
    "worker_class": "service.serving.JsonErrorWorker",
    "limit_request_line": LIMIT_REQUEST_LINE,
}


class JsonErrorWorker(ThreadWorker):
    """gunicorn's ``gthread`` worker; over-long request lines and headers get JSON."""

    def handle_error(self, req, client, addr, exc) -> None:
        if isinstance(exc, LimitRequestLine):
            status, reason = 414, "URI Too Long"
            message = (f"request line longer than {self.cfg.limit_request_line} bytes "
                       "(the query string counts percent-encoded)")
        elif isinstance(exc, LimitRequestHeaders):
            status, reason = 431, "Request Header Fields Too Large"
            message = f"request headers too large ({exc})"
        else:
            super().handle_error(req, client, addr, exc)
            return
        self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        body = json.dumps({"error": message}).encode()
        head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        try:
            util.write_nonblock(client, head.encode("latin-1") + body)
        except Exception:  # the client went away: nothing to answer
            self.log.debug("Failed to send error message.")
