"""A WSGI app on a loopback port in a daemon thread, with keep-alive connections: the
demo's search page, and the API and rankers the tests serve in their own process.

werkzeug's development server answers every request with ``Connection: close``, so each
request of a client that keeps its connection (the ranker client of
:mod:`service.rankers.client`, :class:`demo.client.Client`, a browser) cost a new TCP
connection, a new server thread and werkzeug's 10 ms drain of the socket: most of the CPU
of a small request, and not what a production server (gunicorn) does. The handler here
keeps the connection open when that is safe (the request's body has a ``Content-Length``
and the response has one too); anything else (a chunked or ``Expect`` request, a streamed
response without a length) is served as werkzeug serves it and closes the connection.
:meth:`ThreadedServer.close` closes the kept connections too, so a stopped server stops
answering, as a stopped process would.
"""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import threading
from typing import Any

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

#: what a client that went away raises while its answer is written
_DROPPED = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class KeepAliveHandler(WSGIRequestHandler):
    """werkzeug's request handler, minus its ``Connection: close`` where the connection can
    safely serve the next request."""

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # a streamed answer's small writes go out as they are made
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.open_connections.add(self.connection)

    def finish(self) -> None:
        self.server.open_connections.discard(self.connection)
        super().finish()

    def run_wsgi(self) -> None:
        length = self.headers.get("Content-Length", "0")
        if (self.headers.get("Transfer-Encoding") or self.headers.get("Expect")
                or not length.isdigit()):
            self.close_connection = True
            super().run_wsgi()  # werkzeug's way: it reads what it can, and closes
            return
        environ = self.make_environ()
        # the body read whole before the app runs: whatever the app reads of it, the next
        # request starts where this one's body ends
        environ["wsgi.input"] = io.BytesIO(self.rfile.read(int(length)))
        answer: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]],
                           exc_info: Any = None) -> Any:
            if exc_info and answer.get("sent"):
                raise exc_info[1].with_traceback(exc_info[2])
            answer["status"], answer["headers"] = status, headers
            return write

        def send_head(data: bytes = b"") -> None:
            """The status line and headers, with the first of the body in the same write
            (two small writes would wait on Nagle's algorithm and a delayed ACK)."""
            code, _, reason = answer["status"].partition(" ")
            self.send_response(int(code), reason)
            names = set()
            for name, value in answer["headers"]:
                self.send_header(name, value)
                names.add(name.lower())
            if "content-length" not in names or self.close_connection:
                # a streamed answer ends when the connection does
                self.close_connection = True
                self.send_header("Connection", "close")
            self._headers_buffer.append(b"\r\n")
            self.wfile.write(b"".join(self._headers_buffer) + data)
            self._headers_buffer = []
            answer["sent"] = True

        def write(data: bytes) -> None:
            if not answer.get("sent"):
                send_head(data)
            elif data:
                self.wfile.write(data)

        try:
            body = self.server.app(environ, start_response)
            try:
                for data in body:
                    write(data)
                if not answer.get("sent"):
                    send_head()
                self.wfile.flush()
            finally:
                if hasattr(body, "close"):
                    body.close()
        except _DROPPED:
            self.close_connection = True
        except Exception:
            self.close_connection = True
            if answer.get("sent"):
                return  # half an answer: the closed connection tells the client
            logging.getLogger("werkzeug").exception("error in %s %s", self.command, self.path)
            self.send_error(500)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """No access log (the tests' servers answer thousands of requests)."""


class ThreadedServer:
    """A WSGI app on a loopback port, served in a daemon thread (a thread per connection)."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0) -> None:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self.server = ThreadedWSGIServer(host, port, app, handler=KeepAliveHandler)
        self.server.open_connections = set()
        self.port = self.server.server_port
        self.url = f"http://{host}:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop accepting, and close the connections clients keep open."""
        self.server.shutdown()
        self.server.server_close()
        for conn in list(self.server.open_connections):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


__all__ = ["KeepAliveHandler", "ThreadedServer"]
