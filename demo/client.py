"""The one HTTP JSON client of the tooling: the rankduel API's (keep-alive, one connection
per thread), and :func:`http_json` for one request to any URL (health checks, /metrics,
Prometheus' query API).

Used by the demo's simulated users, ``rankduel traffic``, the benchmarks and the tests; a
front end in another language calls the same endpoints. (The API's own calls to the
rankers are :mod:`service.rankers.client`, a different concern: timeouts, metrics, fallbacks.)
"""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any
from urllib.parse import SplitResult, urlencode, urlsplit


def check_http_url(url: str) -> SplitResult:
    """``url`` split, or a ``ValueError`` that says what an address must look like (a
    command's mistyped ``--api`` is one line, not a traceback).

    >>> check_http_url("http://127.0.0.1:8000/x").port
    8000
    >>> check_http_url("127.0.0.1:8000")
    Traceback (most recent call last):
    ...
    ValueError: '127.0.0.1:8000' is not an http://HOST:PORT URL
    """
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"{url!r} is not an http://HOST:PORT URL")
    return parts


class ApiResponseError(Exception):
    """A non-2xx answer: ``status`` and the decoded body."""

    def __init__(self, status: int, body: Any) -> None:
        msg = body.get("error") if isinstance(body, dict) else body
        super().__init__(f"HTTP {status}: {msg}")
        self.status = status
        self.body = body


class Client:
    """Call the API at ``base_url``; operator calls send ``admin_token`` when given, and
    front-end calls (search, click, end) send ``frontend_token``, a front-end key
    (``RANKDUEL_FRONTEND_TOKENS``: a server-side front end is not held to the
    per-address click limit), when given."""

    def __init__(self, base_url: str, admin_token: str | None = None,
                 timeout: float = 30.0, frontend_token: str | None = None) -> None:
        parts = check_http_url(base_url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.base_url = base_url.rstrip("/")
        self.admin_token = admin_token
        self.frontend_token = frontend_token or None
        self.timeout = timeout
        self._local = threading.local()

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(
                self.host, self.port, timeout=self.timeout)
        return conn

    def close(self) -> None:
        """Close this thread's connection (the next request opens a new one)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def request(self, method: str, path: str, body: Any = None, *,
                headers: dict[str, str] | None = None, raw: bytes | None = None,
                admin: bool = False) -> tuple[int, Any]:
        """Send one request; return ``(status, decoded JSON body)`` whatever the status (the
        text when the body is not JSON, ``None`` when it is empty)."""
        hdrs = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        if admin and self.admin_token:
            hdrs.setdefault("Authorization", f"Bearer {self.admin_token}")
        for attempt in range(2):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=hdrs)
                resp = conn.getresponse()
                payload = resp.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
            except (OSError, http.client.HTTPException):
                # refused, timed out...: a connection left mid-request would refuse every
                # later request of this thread (CannotSendRequest), so the next one opens
                # a new connection
                conn.close()
                self._local.conn = None
                raise
        try:
            decoded = json.loads(payload) if payload else None
        except ValueError:
            decoded = payload.decode(errors="replace")
        return resp.status, decoded

    def _ok(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        status, out = self.request(method, path, body, **kw)
        if not 200 <= status < 300:
            raise ApiResponseError(status, out)
        return out

    # ------------------------------------------------------------------ front end
    def _front(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.frontend_token}"} if self.frontend_token else {}

    def search(self, experiment: str, q: str, k: int | None = None,
               user: str | None = None,
               segments: dict[str, str] | None = None) -> dict[str, Any]:
        """``GET /search``; ``segments`` (dimension -> value) are sent as
        ``segment.<dimension>=<value>``."""
        params = {"experiment": experiment, "q": q}
        if k is not None:
            params["k"] = k
        if user is not None:
            params["user"] = user
        for dim, value in (segments or {}).items():
            params[f"segment.{dim}"] = value
        return self._ok("GET", "/search?" + urlencode(params), headers=self._front())

    def click(self, impression: dict[str, Any], docs: list[tuple[Any, int]]) -> dict[str, Any]:
        """Report clicks ``[(doc id, rank), ...]`` on an impression returned by ``search``."""
        return self._ok("POST", "/clicks", {
            "impression_id": impression["impression_id"], "token": impression["token"],
            "clicks": [{"id": d, "rank": r} for d, r in docs]}, headers=self._front())

    def end(self, impression: dict[str, Any]) -> dict[str, Any]:
        return self._ok("POST", f"/impressions/{impression['impression_id']}/end",
                        {"token": impression["token"]}, headers=self._front())

    def outcome(self, **body: Any) -> dict[str, Any]:
        """``POST /outcomes`` with the front-end key (a back end's event: ``user``,
        ``action``, ``id``, ``value``, ``event_id``)."""
        return self._ok("POST", "/outcomes", body, headers=self._front())

    # ------------------------------------------------------------------ operator
    def create_experiment(self, **body: Any) -> dict[str, Any]:
        return self._ok("POST", "/experiments", body, admin=True)

    def experiment(self, exp_id: str) -> dict[str, Any]:
        return self._ok("GET", f"/experiments/{exp_id}", admin=True)

    def experiments(self) -> list[dict[str, Any]]:
        return self._ok("GET", "/experiments", admin=True)["experiments"]

    def add_ranker(self, exp_id: str, name: str, url: str,
                   timeout_ms: int | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "url": url}
        if timeout_ms is not None:
            body["timeout_ms"] = timeout_ms
        return self._ok("POST", f"/experiments/{exp_id}/rankers", body, admin=True)

    def retire_ranker(self, exp_id: str, name: str) -> dict[str, Any]:
        return self._ok("DELETE", f"/experiments/{exp_id}/rankers/{name}", admin=True)

    def lifecycle(self, exp_id: str, action: str) -> dict[str, Any]:
        return self._ok("POST", f"/experiments/{exp_id}/{action}", admin=True)

    def report(self, exp_id: str) -> dict[str, Any]:
        """``GET /experiments/ID/report``: what the experiment has decided."""
        return self._ok("GET", f"/experiments/{exp_id}/report", admin=True)

    def audit(self, exp_id: str) -> list[dict[str, Any]]:
        return self._ok("GET", f"/experiments/{exp_id}/audit", admin=True)["audit"]


def http_json(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None,
              timeout: float = 10.0) -> tuple[int, Any]:
    """One request to ``url`` on a connection of its own; ``(status, decoded JSON body)``,
    the text when the body is not JSON (``/metrics``)."""
    parts = check_http_url(url)
    client = Client(f"{parts.scheme}://{parts.netloc}", timeout=timeout)
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return client.request(method, target, body, headers=headers)
    finally:
        client.close()


def http_ok(url: str) -> bool:
    """Whether ``GET url`` answers 200 (within two seconds)."""
    status, _ = http_json("GET", url, timeout=2.0)
    return status == 200
