"""The pure credit step (:func:`service.credit.step.apply`) with an experiment's dwell
rule: the interleaving method is given only the satisfied clicks (a click whose dwell is
under the rule's seconds is unsatisfied, counted and reported as such), every click
without the rule, and an impression whose only clicks are unsatisfied is ``no_clicks``
and changes nothing. Through the browser and the API: tests/e2e/test_browser.py."""

from __future__ import annotations

import numpy as np

from bandits import make_bandit
from service.credit import step as credit


def test_the_pure_credit_step_leaves_unsatisfied_clicks_out():
    """``credit.apply`` with the dwell rule passes the interleaving method only the
    satisfied clicks; without it, every click."""
    seen = []

    def credit_fn(record, clicked):
        seen.append(list(clicked))
        return [(0, 1, 1.0)] if clicked else []

    imp = credit.Impression(id="e.1", arms=[0, 1], duel=True, record={}, clicks=[0, 3, 5],
                            dwell_ms={0: 4_999, 3: 5_000})
    names = {0: "a", 1: "b"}
    for rule, counted, short in [(5, [3, 5], [0]), (None, [0, 3, 5], [])]:
        seen.clear()
        out = credit.apply(make_bandit("uniform", 2, seed=1), [imp], ids=["e.1"], t=1,
                           names=names, credit_fn=credit_fn, update=False,
                           dwell_unsatisfied_s=rule)
        assert seen == [counted]
        assert out.results["e.1"].get("unsatisfied", []) == short
        assert out.counters.get("unsatisfied_clicks", 0) == len(short)
    only_short = credit.Impression(id="e.2", arms=[0, 1], duel=True, record={}, clicks=[0],
                                   dwell_ms={0: 10})
    bandit = make_bandit("uniform", 2, seed=1)
    out = credit.apply(bandit, [only_short], ids=["e.2"], t=1, names=names,
                       credit_fn=credit_fn, update=True, dwell_unsatisfied_s=5)
    assert out.results["e.2"]["status"] == "no_clicks" and not out.changed
    assert float(np.sum(bandit.W)) == 0.0
