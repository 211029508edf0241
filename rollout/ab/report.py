"""The A/B report in one call, and whether a confirmed interleaving verdict held up.

:func:`ab_report` puts together what the service shows for an A/B experiment: every
metric's comparisons (:func:`rollout.ab.compare.analyse`), the split's check
(:func:`rollout.srm.check`), and the verdict on the primary metric, which is *not to be
trusted* while the split is flagged: a sample ratio mismatch means the arms no longer
hold comparable users, so neither the decision nor the interval means what it says until
the cause is found. Everything is plain JSON.

:func:`agrees` says whether an interleaving verdict and the A/B test that confirmed it
point the same way, and :func:`agreement_rate` gives the running rate over confirmed
pairs with its Wilson interval (Airbnb and Thumbtack publish 82 % and 90 %).

Pure: numpy and scipy only.

Examples
--------
>>> arms = {"ctr": {"prod": Moments(20_000, 11_000.0, 11_000.0),
...                 "new": Moments(20_000, 11_600.0, 11_600.0)}}
>>> periods = [Period({"prod": 0.5, "new": 0.5}, {"prod": 20_000, "new": 20_000})]
>>> r = ab_report(arms, "prod", 0.05, periods)
>>> r["verdict"]["decided"], r["verdict"]["direction"], r["verdict"]["trusted"]
(True, 1, True)
>>> r["verdict"]["statement"]
'new: higher ctr than prod (+5.45 %, interval +2.56 % to +8.35 % at 95 %)'
>>> bad = [Period({"prod": 0.5, "new": 0.5}, {"prod": 22_000, "new": 18_000})]
>>> r = ab_report(arms, "prod", 0.05, bad)
>>> r["verdict"]["trusted"], r["verdict"]["statement"].startswith("not to be trusted")
(False, True)
>>> agrees(0.62, r["metrics"]["ctr"]["new"]), agrees(0.41, r["metrics"]["ctr"]["new"])
(True, False)
>>> agreement_rate([True] * 9 + [False])
{'pairs': 10, 'agree': 9, 'rate': 0.9, 'interval': [0.596, 0.982]}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from bandits.common import wilson_interval
from rollout import srm
from rollout.ab.compare import MIN_USERS, analyse
from rollout.ab.moments import METRICS, Moments
from rollout.ab.sequence import DEFAULT_TARGET_USERS
from rollout.srm import Period


def ab_report(arms: Mapping[str, Mapping[str, Moments]], control: str, delta: float,
              periods: Sequence[Period] = (), *, primary: str = "ctr",
              n_target: float = DEFAULT_TARGET_USERS,
              min_users: int = MIN_USERS) -> dict[str, Any]:
    """The report of an A/B experiment.

    Parameters
    ----------
    arms
        metric → arm → the arm's per-user :class:`~rollout.ab.moments.Moments` of it.
    control
        The control arm's name.
    delta
        The experiment's error rate (split over the treatments, Bonferroni).
    periods
        The users first seen per arm with the shares in force (:class:`rollout.srm.Period`);
        none: no split check.
    primary
        The metric the verdict is on.
    n_target, min_users
        As for :func:`rollout.ab.compare.analyse`.

    Returns
    -------
    dict
        ``metrics`` (metric → treatment → comparison as JSON, with its ``sentence``),
        ``srm`` (the check as JSON, or None) and ``verdict`` (per treatment when there
        are several: ``decided``, ``direction``, ``trusted``, ``statement``).
    """
    metrics: dict[str, dict[str, Any]] = {}
    for metric, by_arm in arms.items():
        comps = analyse(by_arm, control, delta, n_target=n_target, min_users=min_users,
                        metric=metric if metric in METRICS else None)
        metrics[metric] = {t: {**c.to_json(), "sentence": c.sentence(metric)}
                           for t, c in comps.items()}
    check = srm.check(periods) if periods else None
    trusted = check is None or not check.flagged
    verdicts = {}
    for t, c in metrics.get(primary, {}).items():
        statement = _statement(t, primary, c, control, len(metrics[primary]))
        if not trusted:
            statement = f"not to be trusted until the split is explained: {check.message}; " \
                        + statement
        verdicts[t] = {"decided": c["decided"], "direction": c["direction"],
                       "trusted": trusted, "statement": statement}
    verdict: dict[str, Any] = (next(iter(verdicts.values())) if len(verdicts) == 1
                               else verdicts)
    return {"metrics": metrics, "srm": None if check is None else check.to_json(),
            "verdict": verdict}


def _statement(t: str, metric: str, c: Mapping[str, Any], control: str, k: int) -> str:
    """One treatment's comparison on ``metric`` (as JSON) in words; ``k`` treatments."""
    if not c["decided"]:
        return (f"{t}: not decided on {metric} yet"
                + (f" (about {c['users_needed']:,} more users at the current "
                   f"difference)" if c["users_needed"] else ""))
    lo, hi = (100.0 * x if x is not None else math.nan for x in c["lift_interval"])
    lift = 100.0 * c["lift"] if c["lift"] is not None else math.nan
    pct = f"{100.0 * (1.0 - c['delta'] * max(k, 1)):g} %"
    return (f"{t}: {'higher' if c['direction'] > 0 else 'lower'} {metric} "
            f"than {control} ({lift:+.2f} %, interval {lo:+.2f} % to {hi:+.2f} % at {pct})")


def metric_verdicts(report: Mapping[str, Any], metrics: Sequence[str], control: str
                    ) -> dict[str, dict[str, dict[str, Any]]]:
    """Each of ``metrics``' decisions in an :func:`ab_report`: metric → treatment →
    ``decided``, ``direction``, ``statement`` (the conversion metrics of an A/B test, each
    decided as the primary is, at the same δ; the verdict stays the primary's).

    >>> arms = {"revenue": {"prod": Moments(5_000, 50_000.0, 2_000_000.0),
    ...                     "new": Moments(5_000, 60_000.0, 2_500_000.0)}}
    >>> v = metric_verdicts(ab_report(arms, "prod", 0.05, primary="ctr"), ["revenue"], "prod")
    >>> v["revenue"]["new"]["statement"]
    'new: higher revenue than prod (+20.00 %, interval +7.95 % to +32.05 % at 95 %)'
    """
    found = report["metrics"]
    return {m: {t: {"decided": c["decided"], "direction": c["direction"],
                    "statement": _statement(t, m, c, control, len(found[m]))}
                for t, c in found[m].items()} for m in metrics if m in found}


def agrees(preference: float, comparison: Any, higher_is_better: bool = True) -> bool | None:
    """Whether an interleaving verdict (``preference``: the share of duels the treatment
    won against the control, above ½ when it was preferred) and the A/B comparison of
    the same two rankers (a :class:`~rollout.ab.compare.Comparison` or its JSON) agree in
    direction; None while the A/B is undecided or the preference is ½."""
    decided = comparison["decided"] if isinstance(comparison, Mapping) else comparison.decided
    direction = (comparison["direction"] if isinstance(comparison, Mapping)
                 else comparison.direction)
    if not decided or preference == 0.5:
        return None
    ab_better = (direction > 0) == higher_is_better
    return ab_better == (preference > 0.5)


def agreement_rate(agreements: Sequence[bool | None]) -> dict[str, Any]:
    """The running agreement rate over confirmed pairs (undecided ones, None, left
    out), with its Wilson 95 % interval."""
    decided = [a for a in agreements if a is not None]
    n, k = len(decided), sum(decided)
    lo, hi = wilson_interval(k, n) if n else (0.0, 1.0)
    return {"pairs": n, "agree": k, "rate": k / n if n else None,
            "interval": [round(float(lo), 3), round(float(hi), 3)]}


__all__ = ["ab_report", "agreement_rate", "agrees", "metric_verdicts"]
