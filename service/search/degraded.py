"""Degraded rankers: a ranker that answers, but answers nothing usable, is never a loser.

A ranker whose answer holds no results (a results path with a typo, an empty index) or
cannot be read as results (``bad_response``) while another ranker of the same search
answers results did not lose that comparison: rankduel cannot tell a worse ranker from a
broken integration. So, on every search (:func:`screen`):

* **no outcome**: such a ranker is dropped from the comparison and the rankers that
  answered results are served without it (no forfeit, nothing credited), before and
  after it is marked;
* **its window**: each answer of a ranker is recorded (``o`` results, ``e`` none, ``u``
  unparseable) in a window of its last :data:`WINDOW`, kept from its first bad answer on
  while others answered (a search where no ranker has results counts for none);
* **degraded**: with at least :data:`LEAST` answers in its window, :data:`SHARE` or more
  of them bad, the ranker is marked ``degraded`` with the reason ("no results" or
  "unparseable results"): taken out of selection like a quarantined ranker
  (:func:`service.experiments.controller.quarantined`), shown in the experiment's state, its report
  and ``/ui/``, counted by ``rankduel_ranker_degraded{experiment, ranker}``, audited
  (``ranker_degraded``) and logged (:mod:`service.rankers.failure_log`);
* **coming back**: a degraded ranker is probed like a quarantined one, once per
  ``RANKDUEL_RANKER_QUARANTINE_S`` (one search calls it, its answer not shown unless
  selection chose it); an answer with results clears the mark and its window
  (``ranker_restored``), anything else waits for the next probe. An operator may also
  retire it.

Connection failures, timeouts and non-200 answers are the circuit breaker's
(:mod:`service.search.ranker_health`): they forfeit and lead to quarantine, not to this. An
unparseable answer is both: a failure for the breaker (consecutive ones quarantine the
ranker, and quarantines in a row retire it), but never a forfeit.
"""

from __future__ import annotations

import time

from service.rankers.client import RankerFailure
from service.rankers.failure_log import FAILURES
from service.search.ranker_health import UNPARSEABLE, Answer, RankerHealth
from service.store import audit_entry
from service.webhooks import outbox

#: the answers a ranker is judged on (its last ones)
WINDOW = 50
#: the share of them with no or unparseable results that marks it degraded
SHARE = 0.9
#: the fewest answers in its window before it may be marked
LEAST = 20


def screen(health: RankerHealth, ok: list[Answer], failed: list[tuple[int, RankerFailure]],
           ) -> tuple[list[Answer], list[tuple[int, RankerFailure]]]:
    """The answers and failures of a search with its empty and unparseable answers taken
    out while another ranker answered results (no outcome for them), after recording
    every answer in its ranker's window and marking or restoring degraded rankers."""
    if not failed and not health.choice.health and all(res for _, _, res in ok):
        return ok, failed  # the usual search: every ranker healthy and answering
    unparseable = [arm for arm, f in failed if f.reason in UNPARSEABLE]
    failed = [(arm, f) for arm, f in failed if f.reason not in UNPARSEABLE]
    _probed(health, ok, unparseable)
    answered = [a for a in ok if a[2]]
    if answered:
        codes = {arm: ("o" if res else "e") for arm, _, res in ok}
        codes.update((arm, "u") for arm in unparseable)
        known = health.choice.health
        if not any(c != "o" for c in codes.values()):  # record results only into a window
            codes = {a: c for a, c in codes.items() if known.get(a, {}).get("answers")}
        if codes:
            _record(health, codes)
        ok = answered
    return ok, failed


def _record(health: RankerHealth, codes: dict[int, str]) -> None:
    rt, exp_id = health.rt, health.exp_id
    rows = rt.store.ranker_health.ranker_answers(
        exp_id, codes, window=WINDOW, least=LEAST, share=SHARE,
        reprobe_s=rt.config.ranker_quarantine_s)
    for arm, (n, empty, bad, marked) in rows.items():
        if not marked:
            continue
        ranker = health.choice.by_arm[arm]
        reason = "unparseable results" if bad > empty else "no results"
        detail = {"ranker": ranker.name, "reason": reason, "answers": n, "empty": empty,
                  "unparseable": bad}
        outbox.record(rt.store, exp_id, "ranker_degraded", detail, queue=rt.queue,
                      audit=audit_entry(time.time(), "ranker_degraded", actor="service",
                                        **detail))  # the audit entry and the event at once
        FAILURES.event(exp_id, ranker, f"degraded ({reason}): {empty + bad} of its last "
                       f"{n} answers had {reason} while other rankers answered; out of "
                       "comparisons until a probe answers results")


def _probed(health: RankerHealth, ok: list[Answer], unparseable: list[int]) -> None:
    """Restore each degraded ranker called by this search that answered results; give
    the others their next probe time."""
    rt, exp_id, now = health.rt, health.exp_id, time.time()
    answers = {arm: res for arm, _, res in ok}
    answers.update((arm, []) for arm in unparseable)
    answers.update((arm, res if isinstance(res, list) else [])
                   for arm, res in health.probed.items())
    for arm, h in health.choice.health.items():
        if not h.get("degraded") or arm not in answers:
            continue
        ranker = health.choice.by_arm[arm]
        if not answers[arm]:
            rt.store.ranker_health.ranker_reprobe(exp_id, arm, now + rt.config.ranker_quarantine_s)
        elif rt.store.ranker_health.ranker_restored(exp_id, arm):
            rt.store.experiments.add_audit(exp_id, audit_entry(
                time.time(), "ranker_restored", actor="service", ranker=ranker.name,
                was=h["degraded"]))
            FAILURES.event(exp_id, ranker, f"restored: its probe answered results "
                           f"(it was degraded: {h['degraded']})")
