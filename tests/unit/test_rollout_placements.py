"""Placements and ramps (rollout.placements, rollout.ramps): traffic as a share or a
schedule, the share at a time, pause and stop, and the checks with their messages."""

from __future__ import annotations

import pytest

from rollout.placements import Placement
from rollout.ramps import max_share, next_change, parse_duration, parse_traffic, share_at

RAMP = [{"after": "0m", "share": 0.01}, {"after": "30m", "share": 0.1},
        {"after": "2h", "share": 0.25}, {"after": "1d", "share": 0.5}]


def web(*experiments: dict) -> Placement:
    return Placement.from_json({"name": "web", "control": "prod",
                                "experiments": list(experiments)})


@pytest.mark.parametrize(("text", "seconds"), [
    ("30s", 30), ("30m", 1800), ("2h", 7200), ("1d", 86400), ("0", 0), ("1.5h", 5400),
    (" 5m ", 300)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["30", "5 minutes", "-1m", "m", "", 30, None])
def test_bad_durations_say_what_is_expected(text):
    with pytest.raises(ValueError, match="such as 30s, 30m, 2h or 1d"):
        parse_duration(text)


def test_a_ramp_gives_the_share_of_its_last_step_reached():
    ramp = parse_traffic(RAMP)
    assert [share_at(ramp, t) for t in (0, 1799, 1800, 7199, 7200, 86399, 86400, 10**7)] \
        == [0.01, 0.01, 0.1, 0.1, 0.25, 0.25, 0.5, 0.5]
    assert max_share(ramp) == 0.5
    assert next_change(ramp, 0) == 1800 and next_change(ramp, 86400) is None
    assert ramp.to_json() == RAMP
    late = parse_traffic([{"after": "1h", "share": 0.2}])
    assert share_at(late, 3599) == 0 and share_at(late, 3600) == 0.2
    assert parse_traffic(0.3) == 0.3 and next_change(0.3, 5) is None


@pytest.mark.parametrize(("traffic", "message"), [
    (1.2, "traffic must be a number from 0 to 1"),
    (-0.1, "traffic must be a number from 0 to 1"),
    (True, "traffic must be a number from 0 to 1"),
    ("10%", "expected a share"),
    ({"share": 0.1}, "expected a share"),
    ([], "at least one step"),
    ([{"after": "0m"}], r"step 1 must be \{\"after\""),
    ([{"after": "0m", "share": 0.1, "x": 1}], r"step 1 must be"),
    ([{"after": "soon", "share": 0.1}], "step 1's \"after\": expected a duration"),
    ([{"after": "0m", "share": 2}], "step 1's share must be a number from 0 to 1"),
    ([{"after": "1h", "share": 0.1}, {"after": "30m", "share": 0.2}],
     r"step 2's \"after\" \(30m\) must be later than step 1's \(1h\)"),
])
def test_bad_traffic_says_what_is_wrong(traffic, message):
    with pytest.raises(ValueError, match=message):
        parse_traffic(traffic)


def test_a_placement_gives_each_running_experiment_its_share_now():
    p = web({"experiment": "e1", "traffic": 0.1}, {"experiment": "e2", "traffic": RAMP},
            {"experiment": "e3", "traffic": 0.2, "status": "paused"})
    assert p.salt == "web"
    assert p.shares_at({"e2": 7200}) == {"e1": 0.1, "e2": 0.25}
    # pause and stop send the share to control at once, whatever the schedule
    paused = p.with_status("e2", "paused")
    assert paused.shares_at({"e2": 7200}) == {"e1": 0.1}
    assert paused.experiment("e2").share_at(7200) == 0.0
    assert p.with_status("e1", "stopped").shares_at({}) == {"e2": 0.01}
    assert p.with_traffic("e1", 0.3).experiment("e1").traffic == 0.3
    assert Placement.from_json(p.to_json()) == p


def test_the_shares_must_add_up_to_at_most_one_at_the_top_of_each_ramp():
    with pytest.raises(ValueError, match=r"add up to 1\.1 \(e1 0\.6, e2 0\.5 at the top of "
                                         r"its ramp\).*pause or stop"):
        web({"experiment": "e1", "traffic": 0.6}, {"experiment": "e2", "traffic": RAMP})
    # a paused experiment does not count, but resuming it checks again
    p = web({"experiment": "e1", "traffic": 0.6},
            {"experiment": "e2", "traffic": 0.5, "status": "paused"})
    with pytest.raises(ValueError, match=r"add up to 1\.1"):
        p.with_status("e2", "running")
    assert web({"experiment": "e1", "traffic": 0.7}, {"experiment": "e2", "traffic": 0.3})


@pytest.mark.parametrize(("data", "message"), [
    ({"name": "web"}, "'control' must be a string"),
    ({"name": "web", "control": " "}, "control must name the production ranker"),
    ({"name": "a b", "control": "prod"}, "placement name 'a b'"),
    ({"name": "web", "control": "prod", "shares": 1}, "unknown field.*shares"),
    ({"name": "web", "control": "prod", "experiments": {}}, "must be a list"),
    ({"name": "web", "control": "prod", "experiments": [{"experiment": "e1"}]},
     "each experiment is"),
    ({"name": "web", "control": "prod",
      "experiments": [{"experiment": "e1", "traffic": 0.1}] * 2}, "listed twice"),
    ({"name": "web", "control": "prod",
      "experiments": [{"experiment": "e1", "traffic": 0.1, "status": "gone"}]},
     "status 'gone'.*running, paused, stopped"),
    ({"name": "web", "control": "prod",
      "experiments": [{"experiment": "e1", "traffic": "all"}]}, "experiment 'e1': traffic"),
    ([], "a placement is an object"),
])
def test_bad_placements_say_what_is_wrong(data, message):
    with pytest.raises(ValueError, match=message):
        Placement.from_json(data)


def test_an_unknown_experiment_is_named():
    with pytest.raises(KeyError, match=r"no experiment 'nope'.*it has: e1"):
        web({"experiment": "e1", "traffic": 0.1}).with_traffic("nope", 0.2)
