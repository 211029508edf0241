"""The tests' and the demo's in-process server keeps connections open where that is safe
(:mod:`demo.wsgi_server`): a reused connection must never mix two requests, a streamed
answer still ends, and a closed server stops answering on the connections it kept."""

from __future__ import annotations

import http.client
import json

import pytest
from flask import Flask, jsonify, request

from demo.wsgi_server import ThreadedServer


def _app() -> Flask:
    app = Flask("keep-alive")

    @app.post("/ignore")
    def ignore():  # never reads its body
        return jsonify({"ignored": True})

    @app.post("/echo")
    def echo():
        return jsonify(request.get_json())

    @app.get("/stream")
    def stream():
        return app.response_class((b"%d," % i for i in range(3)), mimetype="text/plain")

    return app


@pytest.fixture
def keep_alive_server():
    s = ThreadedServer(_app())
    yield s
    s.close()


def test_one_connection_serves_many_requests_and_an_unread_body_is_not_the_next_request(
        keep_alive_server):
    conn = http.client.HTTPConnection("127.0.0.1", keep_alive_server.port, timeout=10)
    conn.request("POST", "/ignore", body=b'{"a": "GET /echo HTTP/1.1"}',
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200 and json.loads(r.read()) == {"ignored": True} and not r.will_close
    sock = conn.sock
    for i in range(3):
        conn.request("POST", "/echo", body=b'{"i": %d}' % i,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        assert (r.status, json.loads(r.read())) == (200, {"i": i})
    assert conn.sock is sock  # the same connection throughout


def test_a_streamed_answer_ends_with_its_connection(keep_alive_server):
    conn = http.client.HTTPConnection("127.0.0.1", keep_alive_server.port, timeout=10)
    conn.request("GET", "/stream")
    r = conn.getresponse()
    assert r.read() == b"0,1,2," and r.will_close


def test_a_closed_server_answers_no_kept_connection(keep_alive_server):
    conn = http.client.HTTPConnection("127.0.0.1", keep_alive_server.port, timeout=10)
    conn.request("POST", "/echo", body=b"{}", headers={"Content-Type": "application/json"})
    assert conn.getresponse().read() == b"{}\n"
    keep_alive_server.close()
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        conn.request("POST", "/echo", body=b"{}", headers={"Content-Type": "application/json"})
        conn.getresponse()
