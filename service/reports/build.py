"""The report of an experiment (``GET /experiments/ID/report``): what it has decided.

The decision itself (champion, certification, each ranker against the champion, the
estimate of the comparisons still needed) is :func:`bandits.decision.decide`, a pure
function of the policy; this module reads the experiment once (:meth:`Store.scrape`:
snapshot, per-ranker exposure, the optional truth), its audit log and its sampled history
(:mod:`service.store.history`), and shapes the answer: the verdict in words, the ranker table,
the regret, the timeline and the series the operator page draws.

The timeline comes from the audit log (eliminations carry the comparison count at which
they happened; other events carry a time, and their comparison count is read off the
history at that time, ``"approx": true``), and from the policy's state for eliminations
the capped audit log no longer holds.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from bandits import get_algorithm
from bandits.base import ELIMINATED, RETIRED
from bandits.common import preferences
from bandits.decision import Decision, decide
from bandits.matrices import exposure_regret
from service.designs.registry import confirmer
from service.reports import segments as by_segment
from service.reports import splits
from service.reports.per_metric import per_metric
from service.segments.counts import matrices as segment_matrices
from service.segments.dimensions import values as segment_values
from service.store import Store, history

#: audit actions that go on the timeline
TIMELINE_ACTIONS = ("created", "eliminated", "stage_changed", "ranker_added",
                    "ranker_version_added", "ranker_retired", "ranker_quarantined",
                    "ranker_recovered", "ranker_degraded", "ranker_restored",
                    "non_condorcet_flagged", "pause", "resume", "stop")
#: the comparison rate is measured over the history points of the last this many seconds
RATE_WINDOW_S = 600.0


def _status(code: int) -> str:
    return "retired" if code == RETIRED else "eliminated" if code == ELIMINATED else "active"


def _count(n: float) -> str:
    return f"{round(n):,}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _percent(x: float) -> str:
    """``x`` as a percentage with the digits that keep it below 100 (99.97, not 100).

    >>> _percent(0.99965), _percent(0.95)
    ('99.97', '95')
    """
    for digits in range(0, 8):
        text = f"{100 * x:.{digits}f}"
        if float(text) < 100 or x >= 1:
            return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{100 * x:.8f}"


def _names_list(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    if len(names) <= 4:
        return ", ".join(names[:-1]) + " and " + names[-1]
    return ", ".join(names[:3]) + f" and {len(names) - 3} others"


def verdict(d: Decision, names: dict[int, str], *, k: int, n: int, algorithm: str,
            seconds: float | None) -> str:
    """A few plain sentences saying what the experiment has decided: for a policy with
    family-wise verdicts (``recommended``), at which error rate δ and what that means;
    for the Merge policies, that their eliminations carry no such guarantee."""
    champ = names.get(d.champion, str(d.champion))
    if n == 0:
        return f"No comparisons yet: {k} rankers, nothing decided."
    meaning = f" {d.statement[0].upper()}{d.statement[1:]}." if d.statement else ""
    if d.certified:
        if d.error_rate is not None:
            return (f"{champ} is the best of {k} rankers: each of the {k - 1} others was "
                    f"shown worse by {algorithm}'s test at error rate δ = "
                    f"{_percent(d.error_rate)}%, after {_count(n)} comparisons.{meaning}")
        return (f"{champ} is the best of {k} rankers: each of the {k - 1} others was "
                f"eliminated by {algorithm}'s test, after {_count(n)} comparisons."
                f"{meaning}")
    if d.flagged:
        return (f"No single best ranker: the comparisons show a preference cycle or an "
                f"eliminated ranker beating the champion; {champ} leads by the Copeland "
                f"rule after {_count(n)} comparisons, uncertified.")
    undecided = [names.get(a, str(a)) for a in [d.champion, *d.undecided]]
    if d.confidence is None:
        return (f"{champ} leads after {_count(n)} comparisons; {algorithm} has no "
                f"elimination test, so it will not certify a winner.")
    head = f"Undecided between {_names_list(undecided)}"
    soft = [names.get(a, str(a)) for a in d.no_longer_shown]
    if soft:
        head += (f" ({_names_list(soft)} no longer shown to save traffic, not shown "
                 f"worse)")
    if d.estimate is None:
        text = (f"{head} after {_count(n)} comparisons; {champ} leads, and no estimate of "
                f"the time to decide can be made yet.")
    else:
        when = f" (≈ {_duration(seconds)} at the current rate)" if seconds is not None else ""
        text = f"{head}; about {_count(d.estimate)} more comparisons{when} should settle it."
    if d.error_rate is not None:
        text += (f" Nothing is certified yet: a verdict is stated at error rate δ = "
                 f"{_percent(d.error_rate)}%.{meaning}")
    return text


def policy_about(algorithm: str) -> str:
    """What the policy an experiment was created with is, said once (the report names it
    by ``algorithm`` everywhere else).

    >>> policy_about("uniform")[:46]
    'uniform is the Uniform policy: Duel two distin'
    """
    cls = get_algorithm(algorithm)
    first = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
    alias = "" if cls.name == algorithm else f" (also registered as {cls.name})"
    return f"{algorithm} is the {cls.__name__} policy{alias}: {first}"


def _rate(points: list[dict[str, Any]], now: float) -> float | None:
    """Comparisons per second over the recent history (None: too little to tell)."""
    recent = [p for p in points if now - float(p["ts"]) <= RATE_WINDOW_S]
    if len(recent) < 2:
        recent = points[-2:]
    if len(recent) < 2:
        return None
    dt = float(recent[-1]["ts"]) - float(recent[0]["ts"])
    dn = float(recent[-1]["n"]) - float(recent[0]["n"])
    if dt <= 0 or dn <= 0:
        return None
    return dn / dt


def comparisons_over_time(points: list[dict[str, Any]], audit: list[dict[str, Any]],
                          created_at: float, now: float, n: int) -> list[dict[str, Any]]:
    """``[{"ts", "n"}]``, oldest first: the sampled history, the audit entries that carry
    the comparison count they happened at (eliminations, the non-Condorcet flag), the
    creation (0) and now (``n``); made non-decreasing in both."""
    pts = [(float(created_at), 0)]
    pts += [(float(e["ts"]), int(e["step"])) for e in audit
            if e.get("step") is not None and e.get("ts") is not None]
    pts += [(float(p["ts"]), int(p["n"])) for p in points]
    pts.append((float(now), int(n)))
    pts.sort()
    out: list[dict[str, Any]] = []
    top = 0
    for ts, k in pts:
        top = max(top, k)
        if out and out[-1]["ts"] == round(ts, 3):
            out[-1]["n"] = top
        else:
            out.append({"ts": round(ts, 3), "n": top})
    return out


def _n_at(series: list[dict[str, Any]], ts: float) -> int | None:
    """The comparison count at time ``ts``, interpolated in ``series``."""
    if not series:
        return None
    xs = [float(p["ts"]) for p in series]
    ys = [float(p["n"]) for p in series]
    return round(float(np.interp(ts, xs, ys)))


def timeline(audit: list[dict[str, Any]], bandit, names: dict[int, str],
             series: list[dict[str, Any]], created_at: float) -> list[dict[str, Any]]:
    """Eliminations, stage changes, rankers added and retired, quarantines, the
    non-Condorcet flag and lifecycle changes, oldest first, each with its comparison
    count (``comparison``; ``approx`` when interpolated in time from ``series``, see
    :func:`comparisons_over_time`) and time (``ts``)."""
    out: list[dict[str, Any]] = []
    seen_elim: set[str] = set()
    for e in audit:
        action = e.get("action")
        if action not in TIMELINE_ACTIONS:
            continue
        item: dict[str, Any] = {"event": action, "ts": e.get("ts")}
        for key in ("ranker", "by", "from", "to", "cycle", "beat_champion", "switched",
                    "failures", "seconds", "actor", "who", "previous", "version", "reason"):
            if key in e:
                item[key] = e[key]
        step = e.get("step")
        if action == "created":
            item["comparison"], item["approx"] = 0, False
        elif step is not None:
            item["comparison"], item["approx"] = int(step), False
        else:
            item["comparison"], item["approx"] = _n_at(series, float(e.get("ts", 0))), True
        if action == "eliminated":
            seen_elim.add(str(e.get("ranker")))
        out.append(item)
    # eliminations the capped audit log no longer holds: from the policy's state
    for arm, info in sorted(bandit.eliminated.items(), key=lambda kv: kv[1]["step"]):
        name = names.get(arm, str(arm))
        if name in seen_elim or int(bandit.status[arm]) != ELIMINATED:
            continue
        out.append({"event": "eliminated", "ts": None, "ranker": name,
                    "by": names.get(info["by"], str(info["by"])),
                    "comparison": int(info["step"]), "approx": False})
    if not any(x["event"] == "created" for x in out):
        out.insert(0, {"event": "created", "ts": created_at, "comparison": 0,
                       "approx": False})
    out.sort(key=lambda x: (x["comparison"] if x["comparison"] is not None else math.inf,
                            x["ts"] if x["ts"] is not None else 0.0))
    return out


def _vs_champion(vs: tuple[float, float, float, float, float], ties: int
                 ) -> dict[str, Any]:
    """A ranker against the champion from :attr:`Decision.vs_champion` (``W``'s counts,
    in which each tie is ½ a win to both sides) and the pair's tie count: ``wins`` and
    ``losses`` without the ties' halves, ``ties`` apart, ``p`` with ties counted ½.

    >>> _vs_champion((10.5, 20.5, 0.339, 0.19, 0.52), 1)["wins"]
    10.0
    """
    w, lo, p, lower, upper = vs
    return {"wins": round(max(w - ties / 2, 0.0), 4),
            "losses": round(max(lo - ties / 2, 0.0), 4), "ties": int(ties),
            "p": round(p, 4), "lower": round(lower, 4), "upper": round(upper, 4)}


def build(store: Store, exp_id: str, *, now: float | None = None,
          record: bool = True) -> dict[str, Any]:
    """The report of experiment ``exp_id`` (and, with ``record``, one more history point).
    Raises :class:`service.store.snapshot.ExperimentMissing` for an unknown id (404)."""
    now = time.time() if now is None else now
    (_, got), = list(store.experiments.scrape([exp_id]))
    if isinstance(got, Exception):
        raise got
    snap, shown, truth, _pending = got
    bandit = snap.bandit
    names = snap.names
    W = bandit.W
    n = int(bandit.n_updates)
    algorithm = snap.meta["algorithm"]
    d = decide(bandit, name=algorithm)  # one name for the policy in every sentence
    exposure = np.zeros(bandit.K)
    impressions = np.zeros(bandit.K, dtype=np.int64)
    for arm, (count, share) in shown.items():
        if 0 <= arm < bandit.K:
            exposure[arm], impressions[arm] = share, count
    est_regret = exposure_regret(preferences(W), exposure, best=d.champion)
    true_regret = None
    if truth:
        true_regret = exposure_regret(truth["preferences"], exposure, best=truth.get("best"))
    points = history.read(store.r, exp_id)
    if record:
        points = history.sample(store.r, exp_id, ts=now, n=n, regret=est_regret,
                                points=points)
    rate = _rate(points, now)
    seconds = None
    if d.estimate is not None and rate:
        seconds = d.estimate / rate if d.estimate else 0.0
    if d.estimate == 0:
        seconds = 0.0
    k = int(np.count_nonzero(bandit.status != RETIRED))
    ties = store.credits.ties(exp_id)
    rankers = []
    for r in snap.rankers:
        a = r.arm
        elim = bandit.eliminated.get(a) if int(bandit.status[a]) == ELIMINATED else None
        vs = d.vs_champion.get(a)
        worse_by = d.shown_worse.get(a)
        rankers.append({
            "name": r.name,
            "version": r.version, "version_of": r.version_of,  # the definition compared
            "status": _status(int(bandit.status[a])),
            "verdict": ("shown worse" if worse_by is not None else
                        "no longer shown" if a in d.no_longer_shown else None),
            "shown_worse_by": None if worse_by is None else names.get(worse_by, worse_by),
            "impressions": int(impressions[a]),
            "vs_champion": None if vs is None else _vs_champion(
                vs, ties.get((min(a, d.champion), max(a, d.champion)), 0)),
            "eliminated_by": None if elim is None else names.get(elim["by"], elim["by"]),
            "eliminated_at_comparison": None if elim is None else int(elim["step"]),
            "degraded": (snap.health or {}).get(a, {}).get("degraded"),
        })
    audit = store.experiments.audit(exp_id)
    series = comparisons_over_time(points, audit, snap.meta["created_at"], now, n)
    segments = _segments(store, snap, d, names, bandit.K)
    told = verdict(d, names, k=k, n=n, algorithm=algorithm, seconds=seconds)
    flagged = by_segment.sentence(names.get(d.champion),
                                  segments["heterogeneous"] if segments else ())
    split = splits.section(store, snap.meta)  # every split checked (SRM)
    out = {
        "id": exp_id,
        "name": snap.meta["name"],
        "algorithm": algorithm,
        "algorithm_about": policy_about(algorithm),
        "lifecycle": snap.lifecycle,
        "comparisons": n,
        "verdict": splits.untrusted(f"{told} {flagged}" if flagged else told, split),
        "split": split,
        "champion": names.get(d.champion),
        "certified": d.certified,
        # the confidence of a verdict: null until there is one (an undecided report
        # states no confidence that could read as a decision)
        "confidence": (round(d.confidence, 6) if d.certified and d.confidence is not None
                       else None),
        "error_rate": d.error_rate,
        "confidence_meaning": d.statement or None,
        "shown_worse": {names.get(a, str(a)): names.get(b, str(b))
                        for a, b in d.shown_worse.items()},
        "no_longer_shown": [names.get(a, str(a)) for a in d.no_longer_shown],
        "rankers": rankers,
        # apart from the verdict: out of the comparisons, neither winners nor losers
        "degraded": [{"name": r["name"], "reason": r["degraded"]} for r in rankers
                     if r["degraded"]],
        "undecided": [names.get(a) for a in d.undecided],
        "estimated_comparisons_to_decide": d.estimate,
        "estimated_seconds_to_decide": None if seconds is None else round(seconds, 1),
        "estimate_basis": d.basis + (
            f"; seconds from the recent rate of {rate:.2f} comparisons/s" if rate else
            "; no recent comparison rate yet, so no time estimate"),
        "regret": {"estimated": round(est_regret, 4),
                   **({"true": round(true_regret, 4)} if true_regret is not None else {})},
        "timeline": timeline(audit, bandit, names, series, snap.meta["created_at"]),
        "arms": [names.get(a, str(a)) for a in range(bandit.K)],
        "preferences": np.round(preferences(W), 4).tolist(),
        "comparisons_by_pair": (W + W.T).tolist(),
        "traffic_share": [round(float(x), 4) for x in
                          (exposure / exposure.sum() if exposure.sum() > 0
                           else exposure)],
        "history": points,
        "comparisons_over_time": series,
        "generated_at": now,
        "segments": segments,
    }
    if d.certified:  # where the verdict came (the credit that certified it)
        out["certification"] = store.experiments.certification(exp_id)
    if snap.meta.get("confirmed_by"):  # what interleaving saved over its A/B test
        out.update(confirmer().pair_speedup(store, snap.meta["confirmed_by"]) or {})
    by_metric = per_metric(store, exp_id, snap.meta, bandit, names, d.error_rate,
                           decision=d)
    if by_metric is not None:  # only with declared metrics (docs/conversions.md)
        out["metrics"], out["metrics_disagree"] = by_metric
    return out


def _segments(store: Store, snap, d: Decision, names: dict[int, str],
              k: int) -> dict[str, Any] | None:
    """The champion against each ranker per segment value, with the heterogeneity
    flags (:mod:`service.reports.segments`); None without declared segments."""
    declared = snap.meta.get("segments")
    if not declared:
        return None
    counts = store.credits.segment_counts(snap.exp_id)
    return by_segment.per_segment(
        {dim: segment_values(declared, dim) for dim in declared},
        segment_matrices(declared, counts, k),
        {label: c.ties for label, c in counts.items()},
        d.champion, sorted(d.vs_champion), names)
