"""A world defined by a preference matrix, for running the papers' proxy experiment
through the live service (the live-versus-offline harness, ``bench/live_vs_offline.py``).

Each ranker ``n`` answers one document, ``doc<n>``. A simulated user shown the pair
(i, j) — team-draft interleaving of two one-document lists shows both — clicks ``doc<i>``
with probability ``P[i, j]`` and ``doc<j>`` otherwise, so team-draft credit records an
outcome drawn from Bernoulli(``P[i, j]``): exactly the comparison ``rankduel simulate``
draws (Li et al. 2020, §5.3), but through the real ``/search``, ``/clicks``, ``/end``, Redis and
the Celery worker, with feedback as delayed as the live path makes it.

Run the rankers under gunicorn (or in a thread)::

    gunicorn 'demo.matrix_world:create_app()'
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flask import Flask, jsonify

from demo.client import Client


def create_app() -> Flask:
    """A WSGI app serving ranker ``n`` at ``GET /rankers/<n>``: one document, ``doc<n>``."""
    app = Flask("rankduel-matrix-rankers")

    @app.get("/rankers/<int:n>")
    def rank(n: int):
        return jsonify({"results": [{"id": f"doc{n}"}]})

    @app.get("/healthz")
    def healthz():
        return jsonify({"status": "ok"})

    return app


def rankers(base_url: str, K: int, timeout_ms: int = 2000) -> list[dict[str, Any]]:
    """The ``rankers`` field of an experiment over ``K`` matrix rankers."""
    return [{"name": f"m{n}", "url": f"{base_url}/rankers/{n}", "timeout_ms": timeout_ms}
            for n in range(K)]


@dataclass
class LiveRun:
    """What the simulated users saw: pairs shown (sorted arm pairs; ``(a, a)`` for one
    list), the cumulative regret against the winner, per search in order of completion."""

    pairs: Counter = field(default_factory=Counter)
    regret: list[float] = field(default_factory=list)
    errors: int = 0


def drive(client: Client, exp_id: str, P: np.ndarray, winner: int, n_searches: int, *,
          concurrency: int, seed: int) -> LiveRun:
    """Send ``n_searches`` user sessions (search, a Bernoulli click, end), ``concurrency``
    at a time. Session ``s`` draws its click from a generator seeded by ``(seed, s)``."""
    run = LiveRun()
    lock = threading.Lock()
    gap = P[winner] - 0.5
    clients = [Client(client.base_url) for _ in range(concurrency)]

    def session(s: int) -> None:
        c = clients[s % concurrency]
        rng = np.random.default_rng([seed, s])
        status, page = c.request("GET", f"/search?experiment={exp_id}&q=q{s}&k=2")
        if status != 200 or not page.get("impression_id"):  # an error, or degraded
            with lock:
                run.errors += 1
            return
        arms = [int(r["id"][3:]) for r in page["results"]]
        if len(arms) == 2:
            i, j = arms
            pick = i if rng.random() < P[i, j] else j
            c.click(page, [(f"doc{pick}", arms.index(pick) + 1)])
        else:
            i = j = arms[0]
        c.end(page)
        with lock:
            run.pairs[(min(i, j), max(i, j))] += 1
            run.regret.append((gap[i] + gap[j]) / 2)

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(session, range(n_searches)))
    for c in clients:
        c.close()
    return run


def tv(a: Counter, b: Counter) -> float:
    """Total-variation distance between two count distributions."""
    na, nb = sum(a.values()), sum(b.values())
    return 0.5 * sum(abs(a[k] / na - b[k] / nb) for k in set(a) | set(b))


def shown_pairs(shown: np.ndarray) -> Counter:
    """The simulator's ``shown`` matrix as sorted-pair counts (as :func:`drive` counts)."""
    out: Counter = Counter()
    for i, j in zip(*np.nonzero(shown), strict=True):
        out[(min(i, j), max(i, j))] += int(shown[i, j])
    return out


def compare(P: np.ndarray, policy: str, live: dict[str, Any], *, searches: int, runs: int,
            seed: int) -> dict[str, Any]:
    """The offline counterpart of a live run (``live``: its ``pairs``, ``regret``,
    ``winner_found`` and the feedback it measured: ``applied_at``, ``delay``,
    ``feedback_batch``, ``reload_every``), over ``runs`` seeds, and how far apart they are.

    The offline runs replay the live run's own credit schedule (``applied_at``: each
    impression's outcome applied at the step it was credited live) when it is given, so a
    live run whose worker fell behind for a while is compared with offline runs that fell
    behind at the same steps; ``delay`` and ``feedback_batch`` (the median and mean) are
    the fallback, and what the row reports."""
    from bandits.simulator import simulate_run

    offs = [simulate_run(P, policy, searches, seed + r, shuffle=False, fast_forward=False,
                         delay=int(live["delay"]),
                         feedback_batch=max(1, round(live["feedback_batch"])),
                         applied_at=live.get("applied_at"),
                         reload_every=int(live["reload_every"]), record_shown=True)
            for r in range(runs)]
    pairs = [shown_pairs(o.shown) for o in offs]
    regrets = np.array([o.final_regret for o in offs])
    return {
        "policy": policy,
        "tv_live_offline": tv(live["pairs"], sum(pairs, Counter())),
        "tv_offline_offline": float(np.mean([tv(pairs[r], pairs[r + 1])
                                             for r in range(runs - 1)])),
        "winner_live": bool(live["winner_found"]),
        "winner_offline": sum(o.correct for o in offs) / runs,
        "regret_live": float(live["regret"]),
        "regret_offline_mean": float(regrets.mean()),
        "regret_offline_sd": float(regrets.std(ddof=1)),
        "delay": live["delay"], "delay_max": live.get("delay_max"),
        "feedback_batch": live["feedback_batch"], "batch_max": live.get("batch_max"),
        "reload_every": live["reload_every"],
    }


def measure_feedback(redis_client, exp_id: str, searches_per_second: float,
                     state_max_age_s: float) -> dict[str, float]:
    """The feedback the live path gave one experiment, from what its impressions recorded:
    the step each impression's outcome was credited at, by the step it was selected at
    (``applied_at``, for :func:`bandits.simulator.simulate_run`); the median and the
    largest number of selections between an impression and its credit (``delay``,
    ``delay_max``), the mean and largest number credited at one step (``feedback_batch``,
    ``batch_max``), and the selections between two snapshot re-reads of an API process
    (``reload_every``)."""
    delays, at, credited_at = [], Counter(), {}
    from service.store.keys import imp_key

    for key in redis_client.scan_iter(imp_key(exp_id, "*")):
        if key.endswith(b":clicks"):
            continue
        exp_of, t_sel, credited = redis_client.hmget(key, "exp", "t", "credited")
        if exp_of is None or exp_of.decode() != exp_id or credited is None:
            continue
        t_cred = json.loads(credited).get("t")
        if t_cred is not None:
            delays.append(t_cred - int(t_sel))
            at[t_cred] += 1
            credited_at[int(t_sel)] = int(t_cred)
    delay = float(np.median(delays)) if delays else 0.0
    last = max(credited_at, default=0)
    return {
        "applied_at": [credited_at.get(t, t + int(delay)) for t in range(1, last + 1)],
        "delay": delay, "delay_max": max(delays, default=0),
        "feedback_batch": float(np.mean(list(at.values()))) if at else 1.0,
        "batch_max": max(at.values(), default=1),
        "reload_every": max(1, round(searches_per_second * state_max_age_s)),
    }


def run_live(client, rd, rankers_url: str, P: np.ndarray, policy: str, searches: int,
             seed: int, *, concurrency: int, state_max_age_s: float = 0.1,
             timeout: float = 300) -> dict[str, Any]:
    """One policy through a running service; what its users saw and the feedback the
    service gave (the input of :func:`compare`)."""
    from bandits.matrices import arm_regret

    _, winner, _ = arm_regret(P)
    method = "team_draft_multileave" if policy == "mdb" else "team_draft"
    exp = client.create_experiment(
        name=f"live-{policy}", algorithm=policy, interleaving=method, seed=seed,
        rankers=rankers(rankers_url, P.shape[0]), true_preferences=P.tolist())
    t0 = time.monotonic()
    run = drive(client, exp["id"], P, winner, searches,
                             concurrency=concurrency, seed=seed)
    rate = searches / (time.monotonic() - t0)
    deadline = time.monotonic() + timeout
    while True:
        state = client.experiment(exp["id"])
        c = state["counters"]
        if c.get("credited", 0) >= c["impressions"]:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{policy}: impressions still uncredited")
        time.sleep(0.1)
    return {"pairs": run.pairs, "regret": float(sum(run.regret)), "errors": run.errors,
            "winner_found": state["champion"] == state["arms"][winner],
            "searches_per_second": rate,
            **measure_feedback(rd, exp["id"], rate, state_max_age_s)}
