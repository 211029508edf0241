"""Fault injection under load: the harness of ``bench/faults.py`` and
``tests/test_faults_under_load.py``.

* :class:`FaultRanker` — an HTTP ranker whose behaviour is switched at run time
  (``ok``, ``hang``, ``http500``, ``invalid``, ``huge``), beside two healthy ones.
* :class:`Users` — simulated users in threads: search, click one result, end half the
  time; every answer is counted by status, with the time of each 5xx and of each
  success, so that the time a fault cost can be read off afterwards.
* :class:`CreditWatch` — samples an experiment's ``credited`` counter and its due
  impressions, so that the longest time crediting stood still while work was due can
  be read off after a fault (:func:`run_recovery`).
* :func:`run_quarantine` — two failing rankers added mid-run: the share of searches
  that still compare healthy rankers once both are quarantined, and the time until
  both are out of play.
* :func:`check_invariant` — what must hold once the load stops: nothing pending, every
  impression credited, and W's total equal to the decisive impressions recomputed from
  what Redis stored (so no click lost, none counted twice).

A fault's **recovery time** is measured from the moment the fault ends (the process is
back, the ranker healthy again) to the first successful search after it; its **drain
time** from the moment the load stops to the moment nothing is pending.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import interleaving
from demo.client import Client
from demo.stack import Stack, child_pids, free_port, wait_until
from demo.wsgi_server import ThreadedServer

#: what the fault ranker can be told to do
MODES = ("ok", "hang", "http500", "invalid", "huge")


def _docs(name: str, k: int) -> list[dict[str, Any]]:
    base = [f"d{i:02d}" for i in range(30)]
    order = {"good": base, "bad": base[::-1], "flaky": base[5:] + base[:5]}[name]
    return [{"id": d, "title": f"doc {d}"} for d in order[:k]]


class FaultRanker:
    """Three rankers on one Flask app: ``good`` and ``bad`` always answer, ``flaky``
    does what :meth:`set` last said (a ``hang`` lasts 30 s, far past any timeout)."""

    def __init__(self) -> None:
        from flask import Flask, jsonify, request

        self.mode = "ok"
        app = Flask("fault-rankers")

        @app.get("/healthz")
        def healthz():
            return jsonify({"status": "ok"})

        @app.get("/r/<name>")
        def rank(name: str):
            k = int(request.args.get("k", 10))
            if name == "hang":  # a ranker that never answers in time
                time.sleep(10)
                return jsonify({"results": _docs("good", k)})
            if name == "garbage":  # a ranker that answers garbage
                return "{not json", 200, {"Content-Type": "application/json"}
            if name == "flaky":
                mode = self.mode
                if mode == "hang":
                    time.sleep(30)
                elif mode == "http500":
                    return jsonify({"error": "boom"}), 500
                elif mode == "invalid":
                    return "{not json", 200, {"Content-Type": "application/json"}
                elif mode == "huge":
                    return jsonify({"results": [{"id": f"d{i:02d}", "pad": "x" * 100_000}
                                                for i in range(30)]})
            if name not in ("good", "bad", "flaky"):
                return jsonify({"error": "no such ranker"}), 404
            return jsonify({"results": _docs(name, k)})

        self.app = app

    def set(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.mode = mode


@dataclass
class Tally:
    """What the users saw."""

    statuses: Counter = field(default_factory=Counter)
    searches: int = 0
    errors_5xx: list[tuple[float, int]] = field(default_factory=list)
    successes: list[float] = field(default_factory=list)


class Users:
    """``n`` simulated users in threads against ``api_url``; see the module docstring.

    Exceptions of the connection (a refused connection while a gunicorn worker is
    replaced, a reset) are counted under their type name, never raised.
    """

    def __init__(self, api_url: str, exp_id: str, *, n: int = 6, end: float = 0.5,
                 admin: str = "", seed: int = 0) -> None:
        self.api_url, self.exp_id, self.end, self.admin = api_url, exp_id, end, admin
        self.tally = Tally()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.paused = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(seed * 1000 + i,), daemon=True)
                        for i in range(n)]
        for t in self.threads:
            t.start()

    def _count(self, status: int | str) -> None:
        now = time.monotonic()
        with self.lock:
            self.tally.statuses[str(status)] += 1
            if isinstance(status, int) and status >= 500:
                self.tally.errors_5xx.append((now, status))

    def _run(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        client = Client(self.api_url, self.admin, timeout=10)
        while not self.stop.is_set():
            if self.paused.is_set():
                self.stop.wait(0.05)
                continue
            try:
                status, page = client.request(
                    "GET", f"/search?experiment={self.exp_id}&q=q{rng.integers(50)}&k=5")
                self._count(status)
                if status != 200 or page.get("degraded"):  # no impression while Redis is down
                    self.stop.wait(0.02)
                    continue
                with self.lock:
                    self.tally.searches += 1
                    self.tally.successes.append(time.monotonic())
                if rng.random() < 0.8:
                    pos = int(rng.integers(len(page["results"])))
                    st, _ = client.request("POST", "/clicks", {
                        "impression_id": page["impression_id"], "token": page["token"],
                        "clicks": [{"id": page["results"][pos]["id"], "rank": pos + 1}]})
                    self._count(st)
                if rng.random() < self.end:
                    st, _ = client.request("POST", f"/impressions/{page['impression_id']}/end",
                                           {"token": page["token"]})
                    self._count(st)
            except Exception as exc:  # connection-level: counted, the user goes on
                self._count(type(exc).__name__)
                client.close()
                self.stop.wait(0.05)

    @property
    def searches(self) -> int:
        return self.tally.searches

    def wait_for_more(self, n: int, timeout: float = 120) -> None:
        start = self.searches
        wait_until(lambda: self.searches >= start + n, timeout, f"{n} more searches")

    def first_success_after(self, t: float, timeout: float = 120) -> float:
        """Seconds from ``t`` (monotonic) to the first successful search after it."""
        def seen() -> bool:
            with self.lock:
                return any(s >= t for s in self.tally.successes[-200:])

        wait_until(seen, timeout, "a successful search after the fault")
        with self.lock:
            return min(s for s in self.tally.successes if s >= t) - t

    def errors_between(self, t0: float, t1: float) -> Counter:
        with self.lock:
            return Counter(st for at, st in self.tally.errors_5xx if t0 <= at <= t1)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


def celery_main(supervisor: int) -> int:
    """The Celery worker's main process: the ``rankduel worker`` supervisor's one child."""
    found: list[int] = []

    def one() -> bool:
        found[:] = child_pids(supervisor)
        return len(found) == 1

    wait_until(one, 30, "the Celery worker process")
    return found[0]


def pool(supervisor: int, size: int) -> list[int]:
    """The pool processes of the worker (children of its main process), once ``size``
    of them are there."""
    found: list[int] = []

    def full() -> bool:
        found[:] = child_pids(celery_main(supervisor))
        return len(found) == size

    wait_until(full, 60, f"{size} pool processes")
    return found


def decisive_in_redis(rd, exp_id: str) -> int:
    """W's total as the stored impressions give it: per impression, one win per ranker
    that forfeited (failed to answer) and one for a duel whose clicks decide it
    (``interleaving.credit``) — recomputed from every impression in Redis."""
    from service.store.keys import imp_key

    n = 0
    for key in rd.scan_iter(match=imp_key(exp_id, "*"), count=1000):
        if key.endswith(b":clicks"):
            continue
        raw = rd.hgetall(key)
        if raw.get(b"exp", b"").decode() != exp_id:
            continue
        n += len(json.loads(raw.get(b"forfeits") or b"[]"))
        if raw.get(b"duel") != b"1":
            continue
        clicks = sorted(int(x) for x in rd.smembers(key + b":clicks"))
        n += bool(interleaving.credit(json.loads(raw[b"record"]), clicks))
    return n


def exp_state(rd, exp_id: str) -> dict[str, Any]:
    """Counters and the pending count of an experiment, read from Redis."""
    from service.store.keys import counters_key, pending_key

    counters = {k.decode(): int(float(v)) for k, v in rd.hgetall(counters_key(exp_id)).items()}
    return {"counters": counters, "pending": rd.zcard(pending_key(exp_id))}


def drained(rd, exp_id: str) -> bool:
    """Nothing of ``exp_id`` pending, every impression credited."""
    s = exp_state(rd, exp_id)
    c = s["counters"]
    return s["pending"] == 0 and c.get("credited", 0) == c.get("impressions", -1)


def check_invariant(rd, client: Client, exp_id: str) -> dict[str, Any]:
    """W's total against the decisive impressions (from the API and recomputed from
    Redis) once drained; returns the figures, with ``ok``."""
    state = client.experiment(exp_id)
    w_total = float(np.array(state["W"]).sum())
    decisive = decisive_in_redis(rd, exp_id)
    counted = state["counters"].get("decisive", 0)
    return {"impressions": state["counters"].get("impressions", 0), "w_total": w_total,
            "decisive": decisive, "decisive_counted": counted,
            "lost": max(0, decisive - int(w_total)), "double": max(0, int(w_total) - decisive),
            "ok": w_total == decisive == counted}


class Platform:
    """The platform as deployed, on loopback, under ``users`` simulated users: Redis
    (append-only file), ``rankduel serve`` (gunicorn, 2 workers), ``rankduel worker``
    (pool of 2, with the sweep), and a :class:`FaultRanker`; one experiment on it. Each
    fault method injects its fault and returns once the fault is over."""

    def __init__(self, work: Path, users: int, env: dict[str, str] | None = None) -> None:
        root = Path(__file__).resolve().parent.parent
        self.stack = Stack(work).__enter__()
        self.redis_url = self.stack.start_redis()
        self.admin = secrets.token_hex(16)
        self.env = dict(
            os.environ, REDIS_URL=self.redis_url, RANKDUEL_ADMIN_TOKEN=self.admin,
            RANKDUEL_SECRET_KEY=secrets.token_hex(16),
            RANKDUEL_RANKER_ALLOW="127.0.0.1,localhost",
            RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE="0",  # every user clicks from loopback
            RANKDUEL_INACTIVITY_S="3", RANKDUEL_SWEEP_INTERVAL_S="1",
            RANKDUEL_CREDIT_RETRY_S="5", RANKDUEL_VISIBILITY_TIMEOUT_S="10",
            RANKDUEL_LOG_LEVEL="WARNING", RANKDUEL_ACCESS_LOG="off",
            PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.env.pop("RANKDUEL_CONFIG", None)
        self.env.update(env or {})
        self.rankers = FaultRanker()
        self.ranker_server = ThreadedServer(self.rankers.app)
        self.bind = f"127.0.0.1:{free_port()}"
        self.metric_dirs = [tempfile.mkdtemp(dir=work)]
        self.api = self.stack.start_api(
            dict(self.env, PROMETHEUS_MULTIPROC_DIR=self.metric_dirs[0]),
            bind=self.bind, workers=2, threads=8)
        self.api_url = f"http://{self.bind}"
        self.worker = None
        self.start_worker()
        self.client = Client(self.api_url, self.admin, timeout=10)
        url = self.ranker_server.url
        self.exp_id = self.client.create_experiment(
            name="faults", algorithm="uniform", interleaving="team_draft", seed=7,
            # the healthy rankers get time to spare on a loaded machine; the flaky one 300 ms
            rankers=[{"name": n, "url": f"{url}/r/{n}", "timeout_ms": t}
                     for n, t in (("good", 1000), ("bad", 1000), ("flaky", 300))])["id"]
        import redis

        self.rd = redis.Redis.from_url(self.redis_url, socket_timeout=5, retry_on_timeout=True)
        self.users = Users(self.api_url, self.exp_id, n=users, admin=self.admin)

    def start_worker(self) -> None:
        self.metric_dirs.append(tempfile.mkdtemp(dir=self.stack.workdir))
        self.worker = self.stack.start_worker(dict(
            self.env, PROMETHEUS_MULTIPROC_DIR=self.metric_dirs[-1]),
            name=f"worker{len(self.stack.children)}", concurrency=2)
        self.stack.wait_worker(self.worker, self.redis_url)

    # ------------------------------------------------------------------ faults
    # each injects its fault and returns when the fault is over (the component back)
    def worker_pool_kill(self) -> None:
        for pid in pool(self.worker.pid, 2):
            os.kill(pid, signal.SIGKILL)
        pool(self.worker.pid, 2)

    def worker_kill_and_restart(self) -> None:
        self.worker.kill(signal.SIGKILL)
        self.worker.proc.wait(30)
        self.start_worker()

    def redis_restart(self) -> None:
        self.stack.restart_redis()

    def redis_restarts_3_in_40s(self) -> None:
        t0 = time.monotonic()
        for _ in range(3):
            self.stack.restart_redis()
            self.users.wait_for_more(20, timeout=60)
        assert time.monotonic() - t0 < 40 + 60, "restarts took too long to be a storm"

    def gunicorn_worker_kill(self) -> None:
        workers = child_pids(self.api.pid)
        os.kill(workers[0], signal.SIGKILL)
        wait_until(lambda: len(set(child_pids(self.api.pid)) - set(workers)) == 1, 60,
                   "gunicorn replaces its worker")

    def redis_sigstop_5s(self) -> None:
        pid = self.stack.redis_child.pid
        os.kill(pid, signal.SIGSTOP)
        time.sleep(5)  # the fault itself lasts 5 s: this is what is injected, not a wait
        os.kill(pid, signal.SIGCONT)

    def _ranker(self, mode: str, seconds: float = 5.0) -> None:
        self.rankers.set(mode)
        time.sleep(seconds)  # how long the ranker misbehaves
        self.rankers.set("ok")

    def ranker_hang(self) -> None:
        self._ranker("hang")

    def ranker_500(self) -> None:
        self._ranker("http500")

    def ranker_invalid_json(self) -> None:
        self._ranker("invalid")

    def ranker_huge_json(self) -> None:
        self._ranker("huge")

    def close(self) -> None:
        self.users.close()
        self.ranker_server.close()
        self.rd.close()
        self.stack.close()


#: fault name -> (method, 5xx statuses it may cause)
FAULTS = {
    "worker pool SIGKILL": ("worker_pool_kill", set()),
    "worker SIGKILL + restart": ("worker_kill_and_restart", set()),
    "Redis SIGKILL + restart": ("redis_restart", {503}),
    "Redis 3 restarts in 40 s": ("redis_restarts_3_in_40s", {503}),
    "gunicorn worker SIGKILL": ("gunicorn_worker_kill", set()),
    "ranker hangs 5 s": ("ranker_hang", set()),
    "ranker answers 500 for 5 s": ("ranker_500", set()),
    "ranker answers invalid JSON 5 s": ("ranker_invalid_json", set()),
    "ranker answers 3 MB JSON 5 s": ("ranker_huge_json", set()),
    "Redis SIGSTOP 5 s": ("redis_sigstop_5s", {503}),
}


def run_fault(p: Platform, name: str, load_s: float,
              marks: dict[str, float] | None = None) -> dict:
    """Inject fault ``name`` under load, keep the load on ``load_s`` more, pause it and
    check the invariant (see the module docstring); ``marks`` receives the monotonic
    times ``fault`` (injected) and ``back`` (the fault over)."""
    method, allowed = FAULTS[name]
    marks = {} if marks is None else marks
    p.users.paused.clear()
    p.users.wait_for_more(20)
    searches0 = p.users.searches
    t_fault = time.monotonic()
    getattr(p, method)()
    t_over = time.monotonic()
    marks.update(fault=t_fault, back=t_over)
    recovery = p.users.first_success_after(t_over)
    t_load = time.monotonic()
    while time.monotonic() - t_load < load_s:  # the load goes on after the fault
        p.users.wait_for_more(1)
    p.users.paused.set()
    t_pause = time.monotonic()
    timeline = DrainTimeline(p.redis_url, p.exp_id)
    try:
        wait_until(lambda: drained(p.rd, p.exp_id), 300, f"pending drained after {name}")
        drain = time.monotonic() - t_pause
    finally:
        timeline.close()
    errors = p.users.errors_between(t_fault, time.monotonic())
    inv = check_invariant(p.rd, p.client, p.exp_id)
    undocumented = {str(k): v for k, v in errors.items() if k not in allowed}
    return {"fault": name, "fault_s": round(t_over - t_fault, 2),
            "searches": p.users.searches - searches0,
            "5xx": {str(k): v for k, v in errors.items()}, "undocumented_5xx": undocumented,
            "recovery_s": round(recovery, 2), "drain_s": round(drain, 2),
            "drain_timeline": timeline.summary(t_pause, drain), **inv,
            "ok": inv["ok"] and not undocumented}


class DrainTimeline:
    """Where a drain's seconds go, once the load paused: samples (every ``every_s``) the
    experiment's pending set (how many, how many due, the latest due time: an idle
    impression's inactivity deadline, or a claim's lease), the live drain leases and
    ``credited``. :meth:`summary` gives the floor (when the last impression became due,
    from the pause) and what crediting added after it."""

    def __init__(self, redis_url: str, exp_id: str, every_s: float = 0.05) -> None:
        import redis

        from service.store.keys import counters_key, drains_key, follow_key, pending_key

        self.rd = redis.Redis.from_url(redis_url, socket_timeout=1, socket_connect_timeout=1)
        self.keys = (counters_key(exp_id), pending_key(exp_id), drains_key(exp_id),
                     follow_key(exp_id))
        self.every = every_s
        #: (monotonic, credited, pending, due, latest due as monotonic, leases, follow)
        self.samples: list[tuple[float, int, int, int, float | None, int, bool]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import redis

        counters, pending, drains, follow = self.keys
        while not self.stop.wait(self.every):
            try:
                now_wall, now = time.time(), time.monotonic()
                pipe = self.rd.pipeline(transaction=False)
                pipe.hget(counters, "credited")
                pipe.zcard(pending)
                pipe.zcount(pending, "-inf", now_wall)
                pipe.zrange(pending, -1, -1, withscores=True)
                pipe.zcount(drains, now_wall, "+inf")
                pipe.exists(follow)
                credited, n, due, last, leases, fol = pipe.execute()
            except redis.RedisError:
                continue
            latest = (float(last[0][1]) - now_wall + now) if last else None
            self.samples.append((now, int(float(credited or 0)), int(n), int(due), latest,
                                 int(leases), bool(fol)))

    def summary(self, t_pause: float, drain_s: float) -> dict[str, Any]:
        """``floor_s``: from the pause to the moment the last impression became due (the
        latest due time seen while any was pending and no drain held a lease);
        ``after_floor_s``: ``drain_s`` minus that; ``due_waits``: stretches (start from
        the pause, length) during which impressions were due and no drain lease was
        held, the time a drain took to be queued or picked up."""
        # a claim pushes its impression's due time a lease ahead; a claim is held only
        # with a lease, so the samples without one give the inactivity deadlines
        latest = [s[4] for s in self.samples if s[2] > 0 and s[4] is not None and not s[5]]
        floor = (max(latest) - t_pause) if latest else 0.0
        waits, start = [], None
        for at, _c, _n, due, _l, leases, _f in self.samples:
            idle = due > 0 and leases == 0
            if idle and start is None:
                start = at
            elif not idle and start is not None:
                waits.append((round(start - t_pause, 2), round(at - start, 2)))
                start = None
        first_due_idle = [w for w in waits if w[1] >= 0.2]
        trace, last = [], -1.0
        for at, credited, n, due, lat, leases, fol in self.samples:
            if at - last >= 0.25:
                trace.append([round(at - t_pause, 2), credited, n, due,
                              None if lat is None else round(lat - t_pause, 2), leases,
                              int(fol)])
                last = at
        return {"floor_s": round(floor, 2), "after_floor_s": round(drain_s - floor, 2),
                "due_waits": first_due_idle[:8], "samples": len(self.samples),
                "trace": trace}

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.rd.close()


class CreditWatch:
    """Sample ``credited`` and the due impressions (pending, due by now, not claimed)
    of ``exp_id`` every ``every_s`` in a thread; :meth:`flat` reads the longest time
    ``credited`` stood still while impressions were due. A sample Redis cannot answer
    (it is down) is skipped: the time counts as flat."""

    def __init__(self, redis_url: str, exp_id: str, every_s: float = 0.2) -> None:
        import redis

        from service.store.keys import counters_key, pending_key

        self.rd = redis.Redis.from_url(redis_url, socket_timeout=1, socket_connect_timeout=1)
        self.keys = counters_key(exp_id), pending_key(exp_id)
        self.every = every_s
        self.samples: list[tuple[float, int, int]] = []  # (monotonic, credited, due)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import redis

        while not self.stop.wait(self.every):
            try:
                pipe = self.rd.pipeline(transaction=False)
                pipe.hget(self.keys[0], "credited")
                pipe.zcount(self.keys[1], "-inf", time.time())
                credited, due = pipe.execute()
            except redis.RedisError:
                continue
            self.samples.append((time.monotonic(), int(float(credited or 0)), int(due)))

    def flat(self, since: float, until: float | None = None,
             back: float | None = None) -> float:
        """The longest stretch within ``[since, until]`` during which ``credited`` did not
        move while impressions were due; with ``back``, a stretch counts only from
        ``back`` on (the moment the faulty component answered again)."""
        until = time.monotonic() if until is None else until
        start, last, worst = None, None, 0.0
        for at, credited, due in self.samples:
            if at < since or at > until:
                continue
            if due == 0 or credited != last:
                start, last = at, credited
                continue
            origin = start if back is None else max(start, back)
            worst = max(worst, at - origin)
        return round(worst, 2)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.rd.close()


def run_recovery(p: Platform, name: str, load_s: float) -> dict:
    """:func:`run_fault` with a :class:`CreditWatch`: besides its figures, ``flat_s``
    (longest stretch with ``credited`` still while impressions were due, from the fault
    on) and ``flat_after_back_s`` (the same counted from the moment the faulty component
    was back)."""
    watch = CreditWatch(p.redis_url, p.exp_id)
    try:
        marks: dict[str, float] = {}
        row = run_fault(p, name, load_s, marks)
        row["flat_s"] = watch.flat(marks["fault"])
        row["flat_after_back_s"] = watch.flat(marks["fault"], back=marks["back"])
        return row
    finally:
        watch.close()


def run_quarantine(p: Platform, *, searches_after: int = 300, algorithm: str = "mergedts",
                   users: int = 4, timeout: float = 600) -> dict:
    """Two failing rankers (``hang``: never answers in time; ``garbage``: invalid JSON)
    added with ``"probe": false`` to a fresh experiment of three healthy rankers under
    load. Returns ``healthy_share`` (duels among the searches served once both failing
    rankers were quarantined, over ``searches_after`` searches or until both were out of
    play, whichever is later; a quarantined ranker is never called, so every duel is
    between healthy rankers), ``share_before`` (the same share over 100 searches before
    they were added: the policy's own rate of duels), ``quarantined_s`` (added to both
    quarantined) and ``out_of_play_s`` (added to both retired or eliminated), with the
    audit entries."""
    url = p.ranker_server.url
    exp_id = p.client.create_experiment(
        name=f"quarantine-{algorithm}", algorithm=algorithm, interleaving="team_draft", seed=3,
        rankers=[{"name": n, "url": f"{url}/r/{n}", "timeout_ms": 1000}
                 for n in ("good", "bad", "flaky")])["id"]
    p.users.paused.set()
    load = Users(p.api_url, exp_id, n=users, admin=p.admin, seed=11)
    try:
        load.wait_for_more(30)
        start = p.client.experiment(exp_id)["counters"]
        load.wait_for_more(100)
        base = p.client.experiment(exp_id)["counters"]
        t_add = time.monotonic()
        for name in ("hang", "garbage"):
            p.client._ok("POST", f"/experiments/{exp_id}/rankers",
                         {"name": name, "url": f"{url}/r/{name}", "timeout_ms": 300,
                          "probe": False}, admin=True)

        def audit(kind: str) -> set[str]:
            return {e.get("ranker") for e in _audit(p, exp_id) if e.get("action") == kind}

        failing = {"hang", "garbage"}
        wait_until(lambda: failing <= audit("ranker_quarantined"), timeout,
                   "both failing rankers quarantined")
        t_q = time.monotonic()
        before = p.client.experiment(exp_id)["counters"]

        def out_of_play() -> bool:
            state = p.client.experiment(exp_id)
            return all(r["status"] != "active" for r in state["rankers"]
                       if r["name"] in failing)

        wait_until(out_of_play, timeout, "both failing rankers out of play")
        t_out = time.monotonic()
        target = before.get("impressions", 0) + searches_after
        wait_until(lambda: p.client.experiment(exp_id)["counters"].get("impressions", 0)
                   >= target, timeout, f"{searches_after} searches after the quarantine")
        after = p.client.experiment(exp_id)["counters"]
        state = p.client.experiment(exp_id)
    finally:
        load.close()
        p.users.paused.clear()
    served = after.get("impressions", 0) - before.get("impressions", 0)
    duels = after.get("duel", 0) - before.get("duel", 0)
    retired = [e for e in _audit(p, exp_id) if e.get("action") == "ranker_retired"]
    base_served = base.get("impressions", 0) - start.get("impressions", 0)
    base_duels = base.get("duel", 0) - start.get("duel", 0)
    return {"algorithm": algorithm, "exp_id": exp_id,
            "share_before": round(base_duels / max(base_served, 1), 3),
            "searches_after": served,
            "duels_after": duels, "healthy_share": round(duels / max(served, 1), 3),
            # the searches after that were not duels: a chosen ranker not called or failed
            # (fallback), or one ranker chosen (single)
            **{f"{kind}_after": after.get(kind, 0) - before.get(kind, 0)
               for kind in ("fallback", "single")},
            "quarantined_s": round(t_q - t_add, 1), "out_of_play_s": round(t_out - t_add, 1),
            "status": {r["name"]: r["status"] for r in state["rankers"]},
            "retired_audit": retired}


def _audit(p: Platform, exp_id: str) -> list[dict[str, Any]]:
    """The experiment's audit entries (the last 1,000)."""
    return p.client._ok("GET", f"/experiments/{exp_id}/audit?limit=1000", None,
                        admin=True)["audit"]
