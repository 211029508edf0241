"""How rankduel talks to rankers: keep-alive connections shared by the process, calls on
them made by the search's own thread yet still concurrent, a connection the ranker closed
while idle replaced without a failure, every framing of an answer read, and the deadline
kept on a reused connection. That the headers are read as the standard library reads
them is checked on bytes: tests/unit/test_ranker_http_response.py."""

from __future__ import annotations

import json
import socket
import socketserver
import threading

import pytest

from service.rankers.client import RankerClient, RankerFailure
from service.store.records import Ranker as RankerRecord

BODY = json.dumps({"results": [{"id": "a"}, {"id": "b"}]}).encode()


class Ranker(socketserver.ThreadingTCPServer):
    """An HTTP/1.1 ranker on loopback whose keep-alive behaviour a test sets:
    ``mode`` is ``keep`` (keep-alive), ``close`` (``Connection: close``), ``chunked``,
    ``drop_idle`` (closes a connection after each answer without saying so),
    ``hang_second`` (answers a connection's first request, never its second) or
    ``barrier`` (answers only once ``parties`` requests are in flight at once)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, mode: str = "keep", parties: int = 2) -> None:
        self.mode = mode
        self.accepted = 0
        self.served = 0
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(parties, timeout=5)
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        server: Ranker = self.server
        with server.lock:
            server.accepted += 1
        n = 0
        while True:
            line = self.rfile.readline()
            if not line:
                return
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            n += 1
            if server.mode == "hang_second" and n == 2:
                self.rfile.readline()  # until the client gives up
                return
            if server.mode == "barrier":
                try:
                    server.barrier.wait()
                except threading.BrokenBarrierError:
                    self.wfile.write(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n")
                    continue
            if server.mode == "chunked":
                half = len(BODY) // 2
                out = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                       b"Content-Type: application/json\r\n\r\n"
                       + b"%x\r\n%s\r\n" % (half, BODY[:half])
                       + b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY) - half, BODY[half:]))
            else:
                close = b"Connection: close\r\n" if server.mode == "close" else b""
                out = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + close
                       + b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY)
            with server.lock:  # counted before the client can read the answer
                server.served += 1
            self.wfile.write(out)
            if server.mode in ("close", "drop_idle"):
                return


@pytest.fixture
def make_ranker():
    servers: list[Ranker] = []

    def make(mode: str = "keep", parties: int = 2) -> Ranker:
        servers.append(Ranker(mode, parties))
        return servers[-1]

    yield make
    for s in servers:
        s.stop()


def ranker(server: Ranker, path: str = "r", timeout_ms: int = 2000) -> RankerRecord:
    return RankerRecord(name=path, url=f"{server.url}/{path}", timeout_ms=timeout_ms)


def ids(result) -> list[str]:
    assert not isinstance(result, RankerFailure), result
    return [item["id"] for item in result]


def test_a_steady_stream_of_calls_reuses_one_connection(make_ranker):
    server = make_ranker("keep")
    client = RankerClient()
    for _ in range(20):
        [res] = client.fetch_all([ranker(server)], "q", 2, observe=False)
        assert ids(res) == ["a", "b"]
    assert server.served == 20
    assert server.accepted == 1


@pytest.mark.parametrize("mode", ["close", "drop_idle"])
def test_a_connection_the_ranker_ended_is_replaced_without_a_failure(make_ranker, mode):
    """``close`` says so in its answer; ``drop_idle`` closes silently, so the next call
    finds its idle connection dead and is sent again on a new one."""
    server = make_ranker(mode)
    client = RankerClient()
    for _ in range(10):
        [res] = client.fetch_all([ranker(server)], "q", 2, observe=False)
        assert ids(res) == ["a", "b"]
    assert server.served == 10
    assert server.accepted == 10


def test_a_chunked_answer_is_read_and_its_connection_kept(make_ranker):
    server = make_ranker("chunked")
    client = RankerClient()
    for _ in range(5):
        [res] = client.fetch_all([ranker(server)], "q", 2, observe=False)
        assert ids(res) == ["a", "b"]
    assert server.accepted == 1


def test_calls_on_kept_connections_are_concurrent(make_ranker):
    """Two rankers on one origin, each answering only while the other's request is in
    flight too: both answer only if the calls overlap (made one after the other, the
    first would wait for the second until the server gives up with a 503)."""
    server = make_ranker("keep")
    client = RankerClient()
    pair = [ranker(server, "one"), ranker(server, "two")]
    client.fetch_all(pair, "q", 2, observe=False)  # two connections now idle
    server.mode = "barrier"
    for _ in range(5):
        one, two = client.fetch_all(pair, "q", 2, observe=False)
        assert ids(one) == ids(two) == ["a", "b"]
    assert server.accepted == 2


def test_the_deadline_holds_on_a_kept_connection(make_ranker):
    server = make_ranker("hang_second")
    client = RankerClient()
    [first] = client.fetch_all([ranker(server, timeout_ms=300)], "q", 2, observe=False)
    assert ids(first) == ["a", "b"]
    [second], waited = client.fetch_timed([ranker(server, timeout_ms=300)], "q", 2,
                                          observe=False)
    assert isinstance(second, RankerFailure) and second.reason == "timeout", second
    assert 0.3 <= waited < 3.0, waited  # at its deadline, with slack for a busy machine
    # the hung connection is not reused: the next call opens a new one and is answered
    [third] = client.fetch_all([ranker(server, timeout_ms=2000)], "q", 2, observe=False)
    assert ids(third) == ["a", "b"]


def test_a_ranker_speaking_no_http_is_a_failure_not_an_error(make_ranker):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def garbage() -> None:
        conn, _ = listener.accept()
        conn.recv(4096)
        conn.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")
        conn.close()

    threading.Thread(target=garbage, daemon=True).start()
    port = listener.getsockname()[1]
    [res] = RankerClient().fetch_all(
        [RankerRecord(name="x", url=f"http://127.0.0.1:{port}/", timeout_ms=2000)], "q", 2,
        observe=False)
    listener.close()
    assert isinstance(res, RankerFailure) and res.reason == "error", res
