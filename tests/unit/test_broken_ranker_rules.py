"""The pure rules behind "a broken ranker is never a loser" and the ranker log lines:
what the probe says an empty answer held, what is redacted from an engine's body, which
answers of a search are screened out (no forfeit, no outcome) and recorded, and how the
failure log is rate-limited. The same rules run live in tests/service/test_broken_rankers.py.
"""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace

import pytest

from service.experiments.controller import quarantined
from service.rankers.client import RankerFailure
from service.rankers.failure_log import FailureLog
from service.rankers.probe import describe_empty
from service.rankers.redact import excerpt, header_secrets, redact
from service.search import degraded
from service.store.ranker_health import parse_health
from service.store.records import Ranker


# ---------------------------------------------------------------------- the probe's words
@pytest.mark.parametrize(("data", "path", "said"), [
    ({"response": {"docs": [{"id": 1}]}}, "response.documents",
     'results path "response.documents" is absent: "response" is an object with keys "docs"'),
    ({"hits": {"total": 0}}, "hits.hits",
     'results path "hits.hits" is absent: "hits" is an object with keys "total"'),
    ({"root": {"fields": {}}}, "root.children",
     'results path "root.children" is absent: "root" is an object with keys "fields"'),
    ({"data": [1, 2]}, "data.5.items", 'results path "data.5.items" is absent: "data" is a '
     "list of 2"),
    ({"results": "none"}, "results.items", 'results path "results.items" is absent: '
     '"results" is a str'),
    (["a"], "hits", 'results path "hits" is absent: the answer is a list of 1'),
    ({"hits": {"hits": []}}, "hits.hits", 'results path "hits.hits" is an empty list'),
    ({"hits": {"hits": None}}, "hits.hits", 'results path "hits.hits" is null'),
])
def test_an_empty_answer_is_described_by_where_its_path_stops(data, path, said):
    assert describe_empty(data, {"results": path, "id": "id"}) == said


def test_many_keys_are_cut_short():
    data = {f"k{i:02d}": i for i in range(20)}
    said = describe_empty(data, {"results": "hits", "id": "id"})
    assert said.endswith('"k11", ...') and '"k12"' not in said


# ---------------------------------------------------------------------- redaction
def test_secrets_are_redacted_from_an_engines_answer():
    secret = "Bearer abcdef0123456789"
    body = (b'{"error": {"reason": "unable to authenticate with [Bearer abcdef0123456789]"},'
            b' "api_key": "k-55aa", "password":"pw1", "url": "https://u:pw@es:9200/x?token=t0k"}')
    text = excerpt(body, [secret, "too"])
    for leaked in ("abcdef0123456789", "k-55aa", "pw1", "u:pw@", "t0k"):
        assert leaked not in text, text
    assert "unable to authenticate" in text and text.count("[redacted]") >= 5, text


def test_an_excerpt_is_one_short_line():
    text = excerpt(b"line one\nline two\t" + b"x" * 2000)
    assert "\n" not in text and text.startswith("line one line two")
    assert len(text) == 301 and text.endswith("…")


def test_header_secrets_are_the_values_set_in_this_process():
    request = {"headers": {"Authorization": "env:A", "X-Key": "env:B", "X-Plain": "v"}}
    assert header_secrets(request, {"A": "Bearer s1", "C": "x"}) == ["Bearer s1"]
    assert header_secrets(None) == []
    assert redact("tiny ab", ["ab"]) == "tiny ab"  # too short to search for


# ---------------------------------------------------------------------- screening a search
class FakeStore:
    """The store calls of a search's screening; the parts they name (``store.<part>``) are
    this one fake."""

    def __init__(self, marked: set[int] = frozenset()) -> None:
        self.ranker_health = self.experiments = self.webhooks = self
        self.recorded: list[dict[int, str]] = []
        self.audited: list[str] = []  # its records are not named as store methods
        self.restored: list[int] = []
        self.reprobed: list[int] = []
        self.marked = marked
        self.told: list[str] = []
        self.marked_due: list[str] = []

    def ranker_answers(self, exp_id, codes, **kw):
        assert kw == {"window": 50, "least": 20, "share": 0.9, "reprobe_s": 30.0}
        self.recorded.append(dict(codes))
        return {a: (20, 20 if c == "e" else 0, 20 if c == "u" else 0, a in self.marked)
                for a, c in codes.items()}

    def add_audit(self, exp_id, entry):
        self.audited.append(entry)

    def ranker_restored(self, exp_id, arm):
        self.restored.append(arm)
        return True

    def ranker_reprobe(self, exp_id, arm, at):
        self.reprobed.append(arm)

    # the webhook outbox: a degraded mark's audit entry and event go in one call
    def experiment_name(self, exp_id):
        return "exp one"

    def clock(self):
        return 1_790_000_000.0

    def record_event(self, exp_id, event_id, kind, payload, *, audit="", once=None):
        self.told.append(kind)
        if audit:
            self.audited.append(audit)
        return event_id

    def mark_hooks_due(self, exp_id, at):
        self.marked_due.append(exp_id)


def search_health(store: FakeStore, health: dict | None = None, probed: dict | None = None):
    rankers = {a: Ranker(name=f"r{a}", url=f"http://127.0.0.1/r{a}", timeout_ms=300,
                        arm=a) for a in range(4)}
    rt = SimpleNamespace(store=store, config=SimpleNamespace(ranker_quarantine_s=30.0),
                         queue=None)
    choice = SimpleNamespace(by_arm=rankers, health=health or {})
    return SimpleNamespace(rt=rt, exp_id="e1", choice=choice, probed=probed or {})


def answer(arm: int, n: int) -> tuple:
    return (arm, None, [{"id": f"d{i}"} for i in range(n)])


def test_an_empty_or_unreadable_answer_beside_results_is_no_outcome():
    store = FakeStore()
    bad = RankerFailure("bad_response", "not JSON")
    slow = RankerFailure("timeout", "no answer within 300 ms")
    ok, failed = degraded.screen(search_health(store), [answer(0, 5), answer(1, 0)],
                                 [(2, bad), (3, slow)])
    assert [a for a, _, _ in ok] == [0]  # served alone: no duel with the empty answer
    assert failed == [(3, slow)]  # a timeout still forfeits; the unreadable answer not
    assert store.recorded == [{0: "o", 1: "e", 2: "u"}]


def test_a_search_where_nobody_has_results_counts_for_none():
    store = FakeStore()
    ok, failed = degraded.screen(search_health(store), [answer(0, 0), answer(1, 0)], [])
    assert [a for a, _, _ in ok] == [0, 1] and failed == [] and store.recorded == []


def test_results_are_recorded_only_into_a_window_that_exists():
    store = FakeStore()
    h = search_health(store, {1: {"failures": 0, "answers": "ee"}})
    degraded.screen(h, [answer(0, 3), answer(1, 3)], [])
    assert store.recorded == [{1: "o"}]
    store = FakeStore()
    degraded.screen(search_health(store), [answer(0, 3), answer(1, 3)], [])
    assert store.recorded == []  # healthy rankers cost no write


def test_marking_is_audited_and_logged(caplog):
    store = FakeStore(marked={1})
    with caplog.at_level(logging.WARNING, logger="rankduel.rankers"):
        degraded.screen(search_health(store), [answer(0, 5), answer(1, 0)], [])
    assert len(store.audited) == 1 and '"ranker_degraded"' in store.audited[0]
    assert '"reason": "no results"' in store.audited[0]
    assert store.told == ["ranker_degraded"] and store.marked_due == ["e1"]  # webhooks told
    assert any("experiment e1 ranker r1" in r.getMessage() and "degraded (no results)"
               in r.getMessage() for r in caplog.records)


def test_a_degraded_ranker_is_restored_by_results_and_reprobed_otherwise():
    sick = {"degraded": "no results", "degraded_until": time.time() - 1}
    store = FakeStore()
    degraded.screen(search_health(store, {1: sick, 2: sick}, probed={2: []}),
                    [answer(0, 5), answer(1, 4)], [])
    assert store.restored == [1] and store.reprobed == [2]
    assert any('"ranker_restored"' in e for e in store.audited)


def test_a_degraded_ranker_is_out_of_selection_until_its_probe():
    now = 100.0
    health = parse_health({b"d:1": b"no results", b"u:1": b"130.0", b"w:1": b"eeee",
                           b"d:2": b"no results", b"u:2": b"90.0", b"w:3": b"eo", b"o:3": b"1"})
    assert health[1]["degraded"] == "no results" and health[1]["degraded_until"] == 130.0
    assert health[3] == {"failures": 0, "quarantined_until": None, "degraded": None,
                         "degraded_until": None, "answers": "eo"}
    assert quarantined(health, now) == frozenset({1})


# ---------------------------------------------------------------------- the failure log
def test_the_failure_log_is_rate_limited_per_ranker(caplog):
    clock = [0.0]
    flog = FailureLog(interval_s=60, clock=lambda: clock[0])
    r = Ranker(name="es", url="https://es.internal/x?api_key=hunter2", timeout_ms=300,
               arm=0)
    refused = RankerFailure("connection", "[Errno 111] Connection refused")
    with caplog.at_level(logging.WARNING, logger="rankduel.rankers"):
        for i in range(1000):  # 100 searches a second for 10 s
            clock[0] = i / 100
            flog.failure("e1", r, refused)
        flog.failure("e1", r, RankerFailure("timeout", "no answer within 300 ms"))  # new kind
        flog.event("e1", r, "quarantined for 30 s after 5 consecutive failures")
        flog.failure("e1", r, refused)  # after a state change: logged again
        clock[0] = 75.0
        for _ in range(3):
            flog.failure("e1", r, refused)
        clock[0] = 140.0
        flog.failure("e1", r, refused)  # a summary of what was held back
    lines = [rec.getMessage() for rec in caplog.records]
    assert len(lines) == 6, lines
    assert all(rec.levelno == logging.WARNING for rec in caplog.records)
    assert lines[0] == ("experiment e1 ranker es (https://es.internal/x?api_key=[redacted]) "
                        "failed: connection: [Errno 111] Connection refused")
    assert "failed: timeout" in lines[1], lines[1]
    assert lines[1].endswith("(and 999 failures (999 connection) held back since the last "
                             "line)"), lines[1]
    assert "quarantined for 30 s" in lines[2] and "failed: connection" in lines[3]
    assert "1 failure (1 connection) in the last 65 s" in lines[4], lines[4]
    assert "3 failures (3 connection) in the last 65 s" in lines[5], lines[5]
    assert not any("hunter2" in line for line in lines)


def test_the_report_table_shows_a_degraded_ranker_apart():
    from cli.commands.report import table

    ranker = {"impressions": 3, "vs_champion": None, "eliminated_by": None,
              "eliminated_at_comparison": None, "status": "active"}
    rep = {"verdict": "Undecided.", "champion": "good", "estimated_comparisons_to_decide": None,
           "estimate_basis": "-", "rankers": [{**ranker, "name": "good", "degraded": None},
                                              {**ranker, "name": "typo",
                                               "degraded": "no results"}],
           "degraded": [{"name": "typo", "reason": "no results"}]}
    lines = table(rep).splitlines()
    assert lines[4].split()[:2] == ["typo", "degraded"], lines
    assert lines[5] == ("typo is degraded (no results): out of the comparisons, neither "
                        "winner nor loser")
