"""The checks of bench/export_load.py say FAILED when an event is missing, repeated or
out of order, or when the replay differs from the live W: each fault is planted in an
otherwise complete log. No server is run here."""

import copy

from bench.export_load import checks, replay_matches


def log() -> tuple[list[dict], dict, dict]:
    """Two impressions, one click report, both credited; the live state they give."""
    events = [
        {"cursor": "1-0", "type": "impression", "id": "e.a"},
        {"cursor": "1-1", "type": "click", "id": "e.a", "positions": [0]},
        {"cursor": "2-0", "type": "impression", "id": "e.b"},
        {"cursor": "3-0", "type": "outcome", "id": "e.a",
         "mark": {"outcomes": [[0, 1, 1.0]]}, "seg": ["device=mobile"]},
        {"cursor": "3-1", "type": "outcome", "id": "e.b", "mark": {"outcomes": []},
         "seg": ["device=other"]},
    ]
    state = {"W": [[0, 1], [0, 0]], "counters": {"impressions": 2, "credited": 2},
             "segment_W": {"device": {"mobile": [[0, 1], [0, 0]],
                                      "other": [[0, 0], [0, 0]]}}}
    return events, state, {"clicks": 1}


def test_a_complete_log_passes():
    events, state, sent = log()
    assert all(checks(events, state, len(events), sent)["ok"].values())
    r = replay_matches(events, state)
    assert r["total_equal"] and r["segments_equal"] and r["segment_values"] == 2


def test_each_planted_fault_fails_its_check():
    events, state, sent = log()
    twice = [*events, events[3]]
    ok = checks(twice, state, len(events), sent)["ok"]
    assert not ok["no_cursor_twice"] and not ok["one_outcome_event_per_credited"]
    assert not ok["every_event_of_the_stream"]
    missing = events[:2] + events[3:]  # the second impression's event lost
    ok = checks(missing, state, len(events), sent)["ok"]
    assert not ok["one_impression_event_per_impression"]
    assert not ok["every_event_of_the_stream"]
    swapped = [events[1], events[0], *events[2:]]
    assert not checks(swapped, state, len(events), sent)["ok"]["in_cursor_order"]
    assert not checks(events, state, len(events), {"clicks": 2})["ok"][
        "one_click_event_per_report"]
    other = copy.deepcopy(state)
    other["segment_W"]["device"]["other"][1][0] = 0.5
    r = replay_matches(events, other)
    assert r["total_equal"] and not r["segments_equal"] and r["segments_max_diff"] == 0.5
    other["W"][1][0] = 1
    assert not replay_matches(events, other)["total_equal"]
