"""When every chosen ranker fails or is in quarantine, a search is served by a substitute:
the champion, the other active rankers, then the eliminated ones, never a retired one
and never one in quarantine. A converged experiment (one active ranker) whose champion is
in quarantine still serves its users (found by scripts/compose-check: 2,730 searches
answered 502 while the only active ranker sat out its quarantine on a loaded host).
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import bandits
from service.search.ranker_health import RankerHealth


def health_of(status: dict[int, str], quarantined: set[int]) -> RankerHealth:
    """A search's circuit breaker over 5 rankers with the given policy statuses."""
    bandit = bandits.make_bandit("uniform", 5, seed=1)
    for arm, what in status.items():
        if what == "eliminated":
            bandit.eliminate(arm, by=0)
        elif what == "retired":
            bandit.retire_arm(arm)
    until = time.time() + 60
    choice = SimpleNamespace(
        snapshot=SimpleNamespace(bandit=bandit), champion=0,
        by_arm={a: {"name": f"r{a}", "arm": a} for a in range(5)},
        health={a: {"failures": 5, "quarantined_until": until} for a in quarantined})
    return RankerHealth(None, "e1", choice)


def arms(subs) -> list[int]:
    return [a for a, _ in subs]


def test_a_converged_experiment_with_its_champion_in_quarantine_serves_an_eliminated_one():
    h = health_of({1: "eliminated", 2: "retired", 3: "eliminated", 4: "eliminated"}, {0})
    assert arms(h.substitutes(exclude=set())) == [1, 3]


def test_active_rankers_come_before_eliminated_ones_and_retired_never():
    h = health_of({1: "retired", 2: "eliminated"}, {3})
    assert arms(h.substitutes(exclude=set())) == [0, 4]
    h = health_of({1: "retired", 2: "retired", 3: "retired", 4: "retired"}, {0})
    assert arms(h.substitutes(exclude=set())) == []
    h = health_of({1: "retired", 2: "eliminated", 3: "retired", 4: "retired"}, set())
    assert arms(h.substitutes(exclude={0})) == [2]
