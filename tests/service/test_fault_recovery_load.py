"""Recovery under load at the default credit settings (``credit_retry_s`` 60, sweep 5 s,
``drain_lease_s`` 3): the short forms of ``bench/fault_recovery.py``.

The whole platform as deployed on loopback (:class:`demo.faults.Platform`: Redis with its
append-only file, ``rankduel serve`` under gunicorn, ``rankduel worker`` with the sweep)
under 4 simulated users. After a Redis SIGKILL + restart and after a worker SIGKILL +
restart, :class:`demo.faults.CreditWatch` checks that ``credited`` never stood still for
more than 10 s while impressions were due, counted from the moment the component was
back (with a lease of ``credit_retry_s`` it stood still ~60 s); that the pending set
drains within 5 s of the load stopping (generous slack on a busy 2-core machine: the
bench prints the figure), and that no impression waits due with no drain at work for
more than 2.5 s meanwhile (:class:`demo.faults.DrainTimeline`: the follow-up drains, not
the 5 s sweep, pick each one up as it falls due); and that W equals the decisive
impressions.

Two failing rankers (one hanging, one answering garbage; added with ``"probe": false``)
join a MergeDTS experiment mid-run: once both are quarantined, at least 80 % of searches
are still duels (between healthy rankers: a quarantined one is never called), and both
are retired within the bound ``ranker_retire_after`` quarantines give (here with a
quarantine of 3 s; the bench shows the default's figure).

Every wait is for a condition; the only sleeps are the faults' own.
"""

from __future__ import annotations

import pytest

from demo.faults import Platform, run_quarantine, run_recovery

#: seconds of load after each fault
LOAD_S = 12.0
#: the figures the issue asks for, and the slack a busy shared machine needs for drain
FLAT_MAX_S = 10.0
DRAIN_MAX_S = 15.0
#: the longest stretch, once the load paused, with impressions due and no drain at work
#: (a drain is scheduled for each impression as it falls due; before, the sweep's 5 s)
DUE_IDLE_MAX_S = 2.5
QUARANTINE_S = 3.0


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    p = Platform(tmp_path_factory.mktemp("fault-recovery"), users=4, env={
        # the default credit settings (the platform's own are shorter)
        "RANKDUEL_CREDIT_RETRY_S": "60", "RANKDUEL_SWEEP_INTERVAL_S": "5",
        "RANKDUEL_DRAIN_LEASE_S": "3",
        # a starved machine's Redis call may pass the 250 ms default (test_faults_under_load)
        "RANKDUEL_REDIS_TIMEOUT_MS": "1000",
        "RANKDUEL_RANKER_QUARANTINE_S": str(QUARANTINE_S)})
    yield p
    p.close()


@pytest.mark.parametrize("fault", ["Redis SIGKILL + restart", "worker SIGKILL + restart"])
def test_crediting_resumes_within_seconds(platform, fault):
    row = run_recovery(platform, fault, LOAD_S)
    print(row)
    assert row["lost"] == 0 and row["double"] == 0, row
    assert row["w_total"] == row["decisive"] == row["decisive_counted"], row
    assert row["flat_after_back_s"] <= FLAT_MAX_S, row
    assert row["drain_s"] <= DRAIN_MAX_S, row
    waits = row["drain_timeline"]["due_waits"]
    assert all(length <= DUE_IDLE_MAX_S for _start, length in waits), waits


def test_failing_rankers_leave_the_comparisons_to_healthy_ones(platform):
    row = run_quarantine(platform, searches_after=200, timeout=300)
    print(row)
    assert row["healthy_share"] >= 0.8, row
    assert row["status"]["hang"] == row["status"]["garbage"] == "retired", row
    assert {e["ranker"] for e in row["retired_audit"]} == {"hang", "garbage"}, row
    assert all(e["actor"] == "service" for e in row["retired_audit"]), row
    assert row["out_of_play_s"] <= 300, row
