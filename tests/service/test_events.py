"""The event log (service.store.event_log): every impression, click report and outcome is
appended by the script or transaction that writes it, so a worker SIGKILLed mid-credit
logs each outcome exactly once; ``GET /experiments/ID/events`` pages it without skipping
or repeating; ``rankduel export`` writes it and ``rankduel replay`` recomputes W, total
and per segment, equal to the live W exactly.
"""

from __future__ import annotations

import json
import urllib.request
from collections import Counter

import numpy as np
import pytest

from cli.commands.export import export
from cli.commands.replay import read, replay
from cli.main import main
from tests.conftest import ADMIN
from tests.service.test_segments import SEGMENTS, drive
from tests.service.test_workers_credit import all_credited, rankers_for, wait_for


def page_all(base_url, exp_id, limit):
    """Every event, ``limit`` at a time, following X-Next-Cursor."""
    after, out = "0", []
    while True:
        req = urllib.request.Request(
            f"{base_url}/experiments/{exp_id}/events?after={after}&limit={limit}",
            headers={"Authorization": f"Bearer {ADMIN}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.headers["Content-Type"].startswith("application/x-ndjson")
            lines = [json.loads(x) for x in resp.read().decode().splitlines() if x]
            cursor = resp.headers["X-Next-Cursor"]
        if not lines:
            assert cursor == after  # an empty page keeps the cursor
            return out
        out += lines
        after = cursor
        assert after == lines[-1]["cursor"]


def test_export_replays_to_the_live_w_through_a_killed_worker(client, ranker_server, worker,
                                                              api, rd, tmp_path, capsys):
    # slow, so the kill lands mid-backlog: 300 ms an impression keeps the claimed batch
    # visible for 12 s, which a test process starved on a busy machine still sees
    worker.restart(delay_ms=300)
    exp = client.create_experiment(name="events", rankers=rankers_for(
        ranker_server, "good", "bad", "mid"), algorithm="uniform",
        interleaving="team_draft", seed=6, segments=SEGMENTS)
    ids = drive(client, exp["id"], 40, np.random.default_rng(3), rd=rd, worker=worker)
    worker.kill9()
    assert client.experiment(exp["id"])["counters"]["credited"] < 40  # killed mid-batch
    worker.restart(delay_ms=0)
    state = wait_for(all_credited(client, exp["id"]), timeout=60, what="recovery")

    out = tmp_path / "events.jsonl"
    assert export(api.url, ADMIN, exp["id"], "jsonl", out, progress=None) == len(
        list(read(out)))
    events = list(read(out))
    kinds = Counter(e["type"] for e in events)
    assert kinds["impression"] == kinds["outcome"] == 40  # each once, the kill whatever
    assert Counter(e["id"] for e in events if e["type"] == "outcome") == Counter(ids)
    assert len({e["cursor"] for e in events}) == len(events)
    imp = next(e for e in events if e["type"] == "impression")
    assert {"arms", "rankers", "shown", "record", "seg", "user"} <= imp.keys()
    assert imp["seg"] == ["device=mobile", "market=de"]

    again = replay(events)
    assert again["W"] == state["W"]  # exactly: halves and ones add exactly
    for dim, by_value in state["segment_W"].items():
        for value, w in by_value.items():
            assert again["segment_W"].get(dim, {}).get(value, np.zeros_like(w).tolist()) == w

    # pages of 7 give the same events, none skipped or repeated
    assert [e["cursor"] for e in page_all(api.url, exp["id"], 7)] == [
        e["cursor"] for e in events]
    # the command line: export, then replay prints the same W
    assert main(["export", exp["id"], "--api", api.url, "--token", ADMIN,
                 "--out", str(tmp_path / "cli.jsonl")]) == 0
    capsys.readouterr()
    assert main(["replay", str(tmp_path / "cli.jsonl")]) == 0
    assert json.loads(capsys.readouterr().out)["W"] == state["W"]


def test_the_log_keeps_a_hash_of_the_user_never_the_id(client, ranker_server, api, tmp_path):
    exp = client.create_experiment(name="users", rankers=rankers_for(ranker_server, "a", "b"),
                                   algorithm="uniform", interleaving="team_draft")
    for _ in range(2):
        client.search(exp["id"], "q", k=4, user="alice@example.com")
    out = tmp_path / "e.jsonl"
    export(api.url, ADMIN, exp["id"], "jsonl", out, progress=None)
    assert "alice" not in out.read_text()
    users = {e["user"] for e in read(out)}
    assert len(users) == 1 and None not in users  # stable within the experiment


def test_bad_cursors_and_a_missing_pyarrow_are_clear(client, ranker_server, api, tmp_path,
                                                     monkeypatch):
    exp = client.create_experiment(name="cur", rankers=rankers_for(ranker_server, "a", "b"),
                                   algorithm="uniform", interleaving="team_draft")
    status, body = client.request("GET", f"/experiments/{exp['id']}/events?after=xyz",
                                  admin=True)
    assert status in (400, 422) and "after" in body["error"]
    # 20 digits a part, which Redis may refuse (a stream id's parts are 64-bit): the
    # contract fuzz found this one answering 503
    for route in ("events", "ubi"):
        status, body = client.request(
            "GET", f"/experiments/{exp['id']}/{route}?after=126-29011308466564323532",
            admin=True)
        assert status == 400 and "after" in body["error"], (route, status, body)
    status, _ = client.request("GET", f"/experiments/{exp['id']}/events")
    assert status == 401
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match=r"pip install 'rankduel\[export\]'"):
            export(api.url, ADMIN, exp["id"], "parquet", tmp_path / "e.parquet",
                   progress=None)


def test_a_parquet_export_replays_to_the_live_w_like_jsonl(client, ranker_server, worker, api,
                                                           tmp_path, capsys):
    """``--format parquet`` from a real run: pyarrow reads it back (one row per event,
    the documented columns), and ``rankduel replay`` of it prints exactly the live W,
    total and per segment, the same as of the jsonl export."""
    import pyarrow.parquet as pq  # the dev extra installs the export extra

    worker.ensure()
    exp = client.create_experiment(name="parquet", rankers=rankers_for(
        ranker_server, "good", "bad", "mid"), algorithm="uniform",
        interleaving="team_draft", seed=8, segments=SEGMENTS)
    ids = drive(client, exp["id"], 30, np.random.default_rng(11))
    state = wait_for(all_credited(client, exp["id"]), timeout=60, what="crediting")

    jsonl, parquet = tmp_path / "e.jsonl", tmp_path / "e.parquet"
    n = export(api.url, ADMIN, exp["id"], "jsonl", jsonl, progress=None)
    assert export(api.url, ADMIN, exp["id"], "parquet", parquet, progress=None) == n
    assert parquet.read_bytes()[:4] == b"PAR1"

    table = pq.read_table(str(parquet))
    assert table.column_names == ["cursor", "type", "id", "event"]
    assert table.num_rows == n
    rows = table.to_pylist()
    assert [json.loads(r["event"]) for r in rows] == list(read(jsonl))  # the same events
    assert all(json.loads(r["event"])["cursor"] == r["cursor"] for r in rows)
    assert Counter(r["type"] for r in rows)["outcome"] == 30
    assert {r["id"] for r in rows if r["type"] == "outcome"} == set(ids)

    for path in (parquet, jsonl):
        assert main(["replay", str(path)]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["W"] == state["W"]  # exactly: halves and ones add exactly
        assert out["outcomes"] == sum(len(e["mark"]["outcomes"]) for e in read(jsonl)
                                      if e["type"] == "outcome")
        for dim, by_value in state["segment_W"].items():
            for value, w in by_value.items():
                zero = np.zeros_like(w).tolist()
                assert out["segment_W"].get(dim, {}).get(value, zero) == w, (path, dim, value)


#: runs ``rankduel`` with pyarrow hidden (``import pyarrow`` raises ImportError), as on an
#: install without the export extra
WITHOUT_PYARROW = ("import sys; sys.modules['pyarrow'] = sys.modules['pyarrow.parquet'] = None; "
                   "from cli.main import main; sys.exit(main(sys.argv[1:]))")


def test_without_pyarrow_parquet_exits_2_saying_what_to_install(client, ranker_server, api,
                                                                 tmp_path):
    """No pyarrow: ``export --format parquet`` and ``replay`` of a parquet file exit 2 with
    one line naming the extra, no traceback, no file written."""
    import subprocess
    import sys

    exp = client.create_experiment(name="nopa", rankers=rankers_for(ranker_server, "a", "b"),
                                   algorithm="uniform", interleaving="team_draft")
    client.search(exp["id"], "q", k=4)
    out = tmp_path / "e.parquet"

    def rankduel(*argv):
        return subprocess.run([sys.executable, "-c", WITHOUT_PYARROW, *argv],
                              capture_output=True, text=True, timeout=120)

    done = rankduel("export", exp["id"], "--api", api.url, "--token", ADMIN,
                    "--format", "parquet", "--out", str(out))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "pip install 'rankduel[export]'" in lines[0] and lines[0].startswith(
        "rankduel export: error:")
    assert not out.exists()

    # a parquet file (written with pyarrow here) cannot be replayed without it
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"event": ['{"type": "outcome"}']}), str(out))
    done = rankduel("replay", str(out))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'rankduel[export]'" in lines[0]
    # with pyarrow the same file replays
    assert subprocess.run([sys.executable, "-m", "cli.main", "replay", str(out)],
                          capture_output=True, timeout=120).returncode == 0
