"""Keys on a live ``rankduel serve`` (gunicorn, two workers; issue 48):

* a revoked key stops working in both workers within 2 s: measured as the last 200
  after ``DELETE /keys/ID``'s answer, on keep-alive connections held by both workers
  (each connection's worker found from ``/proc``);
* no secret of a key made in the run appears in its log (the access log and the app's,
  at DEBUG), in ``/metrics``, in any answer but its creation's, or in Redis.
"""

from __future__ import annotations

import http.client
import json
import os
import time
from pathlib import Path

import pytest
from conftest import ADMIN
from helpers.wait import wait_for

from demo.client import Client
from demo.stack import child_pids, free_port, wait_until

#: the bound the issue sets; the measured value is printed (pytest -s) and in
#: docs/operations/security.md
REVOKED_WITHIN_S = 2.0
CONNECTIONS = 12


@pytest.fixture(scope="module")
def served(stack, service_env, tmp_path_factory):
    home = tmp_path_factory.mktemp("keys-live")
    env = dict(service_env, HOME=str(home), RANKDUEL_LOG_LEVEL="DEBUG")
    env.pop("PROMETHEUS_MULTIPROC_DIR")
    bind = f"127.0.0.1:{free_port()}"
    child = stack.start_api(env, bind=bind, workers=2, threads=4, name="api-keys-live")
    wait_until(lambda: len(child_pids(child.pid)) == 2, 30, "both gunicorn workers booted")
    yield child, f"http://{bind}", int(bind.rpartition(":")[2])
    child.stop()


def _server_inode(server_port: int, client_port: int) -> str | None:
    """The socket inode of the server's side of a loopback TCP connection."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        parts = line.split()
        local, remote, inode = parts[1], parts[2], parts[9]
        if (int(local.split(":")[1], 16) == server_port
                and int(remote.split(":")[1], 16) == client_port):
            return inode
    return None


def _worker_of(conn: http.client.HTTPConnection, workers: list[int], port: int) -> int | None:
    inode = _server_inode(port, conn.sock.getsockname()[1])
    for pid in workers:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    return None


def _get(conn: http.client.HTTPConnection, path: str, key: str) -> int:
    conn.request("GET", path, headers={"Authorization": f"Bearer {key}"})
    resp = conn.getresponse()
    resp.read()
    return resp.status


def test_a_revoked_key_stops_in_both_workers_within_2_s(served):
    child, url, port = served
    admin = Client(url, ADMIN)
    status, made = admin.request("POST", "/keys", {"name": "to-revoke", "scopes": ["read"]},
                                 admin=True)
    assert status == 201, made
    key = made["key"]
    workers = child_pids(child.pid)
    conns: list[http.client.HTTPConnection] = []
    held: set = set()
    # at least CONNECTIONS, and more until both workers hold one: which worker accepts a
    # connection is the kernel's choice, and a busy machine can hand a dozen to one
    while len(conns) < CONNECTIONS or (not set(workers) <= held and len(conns) < 100):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        assert _get(conn, "/experiments", key) == 200  # each worker caches the key
        conns.append(conn)
        # (None: one gunicorn closed meanwhile, its keep-alive over on a loaded machine;
        # the loop below opens it again)
        held.add(_worker_of(conn, workers, port))
    assert set(workers) <= held, (held, workers)

    status, out = admin.request("DELETE", f"/keys/{made['id']}", admin=True)
    revoked_at = time.monotonic()
    assert status == 200 and out["state"] == "revoked", out
    last_200 = None
    refused = {i: False for i in range(len(conns))}
    deadline = revoked_at + 10
    while not all(refused.values()):
        assert time.monotonic() < deadline, "the revoked key still works after 10 s"
        for i, conn in enumerate(conns):
            try:
                got = _get(conn, "/experiments", key)
            except (http.client.HTTPException, OSError):  # keep-alive closed: reopen
                conn.close()
                conns[i] = conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                got = _get(conn, "/experiments", key)
            if got == 200:
                last_200 = time.monotonic()
                refused[i] = False
            else:
                assert got == 401
                refused[i] = True
    after = 0.0 if last_200 is None else last_200 - revoked_at
    print(f"\nrevocation: last 200 {after * 1000:.0f} ms after DELETE /keys/ID answered "
          f"({CONNECTIONS} keep-alive connections over {len(workers)} gunicorn workers)")
    assert after < REVOKED_WITHIN_S, after
    for conn in conns:  # and it stays refused
        assert _get(conn, "/experiments", key) == 401
        conn.close()


def test_no_secret_in_the_logs_metrics_answers_or_redis(served, rd, ranker_server):
    child, url, _port = served
    admin = Client(url, ADMIN)
    made = []
    for name, scopes in [("ops", ["admin"]), ("writer", ["write"]), ("reader", ["read"]),
                         ("front", ["frontend"]), ("scraper", ["metrics"])]:
        status, body = admin.request("POST", "/keys", {"name": name, "scopes": scopes},
                                     admin=True)
        assert status == 201, body
        made.append(body)
    keys = {b["name"]: b["key"] for b in made}
    answers = []

    def as_key(name: str, method: str, path: str, body=None) -> tuple[int, object]:
        out = Client(url).request(method, path, body,
                                  headers={"Authorization": f"Bearer {keys[name]}"})
        answers.append(json.dumps(out[1]) if not isinstance(out[1], str) else out[1])
        return out

    status, exp = as_key("writer", "POST", "/experiments", {
        "name": "secrets", "algorithm": "uniform", "interleaving": "team_draft",
        "rankers": [{"name": n, "url": f"{ranker_server.url}/r/{n}"} for n in ("good", "bad")],
        "probe": False})
    assert status == 201, exp
    assert as_key("front", "GET", f"/search?experiment={exp['id']}&q=q")[0] == 200
    assert as_key("reader", "GET", f"/experiments/{exp['id']}/report")[0] == 200
    assert as_key("reader", "POST", f"/experiments/{exp['id']}/pause")[0] == 403
    assert as_key("writer", "POST", f"/experiments/{exp['id']}/pause")[0] == 200
    assert as_key("scraper", "GET", "/metrics")[0] == 200
    assert as_key("ops", "GET", "/keys")[0] == 200
    assert as_key("ops", "GET", "/audit?limit=1000")[0] == 200
    assert as_key("ops", "GET", "/audit/export")[0] == 200
    assert as_key("ops", "DELETE", f"/keys/{made[1]['id']}")[0] == 200
    # revoked: every API process refuses it within 2 s (the next request may reach the
    # other gunicorn worker, whose check of the key is up to a second old)
    wait_for(lambda: as_key("writer", "GET", "/experiments")[0] == 401, timeout=2.0,
             what="the revoked key refused (401) by every process", interval=0.05)
    assert as_key("reader", "GET", "/experiments?" + "x" * 10)[0] == 200
    metrics = answers[5]

    log = child.log_path.read_text(errors="replace")
    assert "/experiments" in log and "DELETE /keys/" in log  # the run's requests are in it
    assert " 403 " in log and " 401 " in log
    stored = []
    for pattern in ("rd:{access}*", "rd:trail:*"):
        for k in rd.scan_iter(match=pattern):
            kind = rd.type(k)
            if kind == b"hash":
                stored.append(json.dumps({a.decode(): b.decode()
                                          for a, b in rd.hgetall(k).items()}))
            elif kind == b"stream":
                stored += [json.dumps({a.decode(): b.decode() for a, b in f.items()})
                           for _, f in rd.xrange(k)]
            elif kind == b"set":
                stored += [m.decode() for m in rd.smembers(k)]
            elif kind == b"zset":
                stored += [m.decode() for m in rd.zrange(k, 0, -1)]
            else:
                stored.append(str(rd.get(k)))
    assert stored and metrics
    for key in keys.values():
        secret_part = key[len("rdk_k0123456789ab_"):]  # the 43 random characters (may hold "_")
        assert len(secret_part) == 43, key
        for where, text in [("log", log), ("metrics", metrics), ("redis", "\n".join(stored)),
                            ("answers", "\n".join(answers))]:
            assert key not in text and secret_part not in text, where
