"""The control's pages for the abandonment guardrail (rollout/control_pages.py, the page
token of service/placements/control_pages.py, and the counters read back by
service/placements/guardrails.py):
buckets, when they settle, the experiment's window, and tokens that cannot be forged."""

from __future__ import annotations

import pytest

from rollout import control_pages as cp
from rollout.call_counts import ranker_counters
from rollout.guardrails import PageCounters, evaluate
from service.errors import Forbidden
from service.placements import control_pages
from service.placements.guardrails import experiment_pages

SECRET = b"s" * 32


def test_buckets_are_at_most_a_minute_and_never_under_a_second():
    assert cp.bucket_s(1800.0) == cp.MAX_BUCKET_S == 60
    assert cp.bucket_s(30.0) == 30 and cp.bucket_s(1.5) == 1 and cp.bucket_s(0.2) == 1
    # a page belongs to the bucket that ends after it, on a multiple of the width
    assert cp.bucket_end(120.0, 60) == 180 and cp.bucket_end(179.9, 60) == 180
    assert cp.bucket_end(180.0, 60) == 240


def test_a_bucket_settles_after_its_click_window_and_the_grace():
    end, inactivity = 1_000, 30.0
    deadline = cp.click_deadline(end, inactivity)
    assert deadline == 1_030.0
    assert not cp.settled(end, now=deadline, inactivity_s=inactivity)
    assert not cp.settled(end, now=deadline + cp.SETTLE_GRACE_S, inactivity_s=inactivity)
    assert cp.settled(end, now=deadline + cp.SETTLE_GRACE_S + 0.01, inactivity_s=inactivity)


def test_settled_fields_take_only_settled_buckets_and_ignore_ranker_counters():
    counts = {"p:100": 7, "c:100": 3, "p:160": 9, "c:160": 1, "c:40": 2, "calls": 50,
              "lat:3": 20, "p:x": 4}
    got = cp.settled_fields(counts, now=100 + 30 + cp.SETTLE_GRACE_S + 1, inactivity_s=30)
    assert got == {100: (7, 3), 40: (0, 2)}  # a stray click of a folded bucket too
    assert cp.fields_of(got) == ["p:100", "c:100", "p:40", "c:40"]
    assert cp.buckets(counts)[160] == (9, 1)


def test_the_window_holds_the_buckets_overlapping_the_experiments_period():
    buckets = {100: (10, 4), 160: (20, 5), 220: (30, 6)}
    assert cp.in_window(buckets, None) == (60, 15)
    assert cp.in_window(buckets, 150.0) == (50, 11)  # 160's bucket ends after it
    assert cp.in_window(buckets, 220.0) == (0, 0)


def test_pages_without_a_click_are_abandoned_never_below_zero():
    assert cp.page_counters(10, 4) == PageCounters(settled=10, abandoned=6)
    # clicks of pages a dead process never wrote: no negative abandonment
    assert cp.page_counters(3, 5) == PageCounters(settled=3, abandoned=0)
    assert cp.page_counters(0, 0) == PageCounters()


def test_experiment_counters_read_back_as_both_sides_pages():
    counts = {"g:pages": 900, "g:abandoned": 450, "g:control_pages": 1000,
              "g:control_clicked": 700, "g:since": 12, "g:r:calls": 5, "credited": 3}
    mine, control = experiment_pages(counts)
    assert mine == PageCounters(settled=900, abandoned=450)
    assert control == PageCounters(settled=1000, abandoned=300)
    trips = evaluate(None, {}, mine, ranker_counters({}), control)
    assert [t.rule for t in trips] == ["abandonment"]
    assert "450 of the experiment's 900 pages" in trips[0].reason
    assert "30 % of the control's" in trips[0].reason
    # nothing counted yet: nothing trips
    assert experiment_pages({}) == (PageCounters(), PageCounters())


def test_a_page_token_names_its_page_and_bucket_and_cannot_be_forged():
    token, field = control_pages.new_page(SECRET, "web.v2", 30.0, now=1_000.5)
    assert field == "p:1020"  # 30-s buckets: the one ending at 1020
    placement, page_id, end = control_pages.verify(SECRET, token)
    assert (placement, end, len(page_id)) == ("web.v2", 1020, 16)
    other, _ = control_pages.new_page(SECRET, "web.v2", 30.0, now=1_000.5)
    assert control_pages.verify(SECRET, other)[1] != page_id  # one id per page
    with pytest.raises(Forbidden, match="invalid page_token"):
        control_pages.verify(b"another secret", token)
    e, p, mac, name = token.split(".", 3)
    for forged in (f"{int(e) + 60}.{p}.{mac}.{name}",  # a later bucket
                   f"{e}.{p}.{mac}.web",  # another placement
                   f"{e}.{'0' * 16}.{mac}.{name}"):  # another page
        with pytest.raises(Forbidden, match="invalid page_token"):
            control_pages.verify(SECRET, forged)
    for malformed in ("", "abc", f"{e}.{p}.{mac}", f"²{e}.{p}.{mac}.{name}", None, 3):
        with pytest.raises(Forbidden, match="page_token"):
            control_pages.verify(SECRET, malformed)


class FakeStore:
    """The two store calls of a click report (service.store.control_pages)."""

    def __init__(self) -> None:
        self.control_pages = self  # the part the code names: store.control_pages
        self.seen: set[str] = set()
        self.counts: dict[str, int] = {}

    def click_page(self, name, page_id, field, ttl_s):
        assert ttl_s >= 1
        if page_id in self.seen:
            return False
        self.seen.add(page_id)
        self.counts[field] = self.counts.get(field, 0) + 1
        return True


def test_a_pages_clicks_count_once_and_not_after_its_window():
    from service.errors import Conflict

    store = FakeStore()
    token, _ = control_pages.new_page(SECRET, "web", 30.0, now=1_000.0)
    first = control_pages.record_click(store, SECRET, token, 30.0, 2, now=1_010.0)
    again = control_pages.record_click(store, SECRET, token, 30.0, 1, now=1_040.0)
    assert first == {"impression_id": None, "accepted": 1, "duplicates": 1}
    assert again == {"impression_id": None, "accepted": 0, "duplicates": 1}
    assert store.counts == {"c:1020": 1}
    late, _ = control_pages.new_page(SECRET, "web", 30.0, now=1_000.0)
    with pytest.raises(Conflict, match="click window of this control page closed"):
        control_pages.record_click(store, SECRET, late, 30.0, 1, now=1_050.1)
    assert store.counts == {"c:1020": 1}
