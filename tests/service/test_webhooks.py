"""Webhooks with real parts: the API on loopback, a real Redis, a real Celery worker
(``rankduel worker``, killed with SIGKILL and restarted) and a real HTTP receiver.

The module runs its own stack on its own Redis databases (state and broker), so that its
settings (a short backoff, a short delivery timeout) reach its worker alone: database 7
for the API and the worker, database 8 for the deliveries run in this process (the
disabling and the allow-list at delivery, where a worker's backoff would only slow the
test down). Conditions are waited for, never slept on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import signal
import threading
import time

import pytest
import requests
from conftest import ADMIN, LOOPBACK

from demo.stack import free_port, wait_until
from demo.wsgi_server import ThreadedServer
from service.webhooks import signing

SECRET = "whsec-TOPSECRET-0123456789abcdef"
H = {"Authorization": f"Bearer {ADMIN}"}
ALL_EVENTS = ["verdict_certified", "ranker_shown_worse", "guardrail_tripped",
              "experiment_paused", "ramp_step", "ranker_degraded", "srm_flag"]


class Receiver:
    """A webhook receiver on a fixed loopback port. It records every request; with
    ``flaky`` it answers 500 to the first attempt of a third of the events (chosen by
    their id), with ``fail`` to every one; ``stop()`` takes it down (connections
    refused), ``start()`` brings it back on the same port; ``delay_s`` slows each
    answer."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.flaky = self.fail = False
        self.delay_s = 0.0
        self.server = None
        self.start()

    def app(self, environ, start_response):
        raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))

        def header(name: str) -> str:
            return environ.get("HTTP_" + name.upper().replace("-", "_"), "")

        event_id = header("X-Rankduel-Delivery")
        if self.delay_s:
            time.sleep(self.delay_s)
        with self.lock:
            first = event_id not in self.seen
            self.seen.add(event_id)
            third = int(hashlib.sha256(event_id.encode()).hexdigest(), 16) % 3 == 0
            status = 500 if self.fail or (self.flaky and first and third) else 200
            self.requests.append({
                "event_id": event_id, "event": header("X-Rankduel-Event"),
                "signature": header("X-Rankduel-Signature"), "body": raw,
                "status": status, "t": time.time()})
        start_response(f"{status} {'OK' if status == 200 else 'Error'}",
                       [("Content-Type", "text/plain")])
        return [b"ok"]

    def start(self) -> None:
        self.server = ThreadedServer(self.app, port=self.port)

    def stop(self) -> None:
        self.server.close()

    def accepted(self) -> dict[str, dict]:
        """The first 2xx delivery of each event, by event id."""
        with self.lock:
            out: dict[str, dict] = {}
            for r in self.requests:
                if r["status"] == 200:
                    out.setdefault(r["event_id"], r)
            return out

    def all(self) -> list[dict]:
        with self.lock:
            return list(self.requests)


class Api:
    """The API in this process, restartable (a new app and server on a new port)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.server = None
        self.start()

    def start(self) -> None:
        from service.app import create_app
        from service.config import load_config

        self.server = ThreadedServer(create_app(load_config(env=self.env)))
        self.url = self.server.url

    def restart(self) -> None:
        self.server.close()
        self.start()

    def post(self, path: str, body: dict | None = None) -> requests.Response:
        return requests.post(self.url + path, json=body, headers=H, timeout=10)

    def get(self, path: str) -> requests.Response:
        return requests.get(self.url + path, headers=H, timeout=10)


@pytest.fixture(scope="module")
def hooks_env(service_env, redis_url, tmp_path_factory) -> dict[str, str]:
    import redis

    base = redis_url.rsplit("/", 1)[0]
    for db in (7, 8):
        redis.Redis.from_url(f"{base}/{db}").flushdb()
    env = dict(service_env)
    env.update({
        "REDIS_URL": f"{base}/7",
        "RANKDUEL_WEBHOOK_BACKOFF_S": "0.2",
        "RANKDUEL_WEBHOOK_BACKOFF_MAX_S": "1",
        "RANKDUEL_WEBHOOK_TIMEOUT_S": "2",
        "RANKDUEL_SWEEP_INTERVAL_S": "0.5",
        "RANKDUEL_WORKER_METRICS_BIND": f"127.0.0.1:{free_port()}",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path_factory.mktemp("prom-hooks")),
    })
    return env


@pytest.fixture(scope="module")
def hooks_api(hooks_env):
    api = Api(hooks_env)
    yield api
    api.server.close()


@pytest.fixture(scope="module")
def hooks_worker(stack, hooks_env):
    class Control:
        child = None

        def start(self) -> None:
            self.child = stack.start_worker(hooks_env, name="hooks-worker")
            stack.wait_worker(self.child, hooks_env["REDIS_URL"])

        def kill9(self) -> None:
            self.child.kill(signal.SIGKILL)
            self.child.proc.wait(10)

    control = Control()
    control.start()
    yield control
    control.child.stop()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.stop()


def new_experiment(api: Api, ranker_server, name: str) -> str:
    resp = api.post("/experiments", {
        "name": name, "algorithm": "dts", "interleaving": "team_draft", "probe": False,
        "rankers": [{"name": "good", "url": f"{ranker_server.url}/r/good"},
                    {"name": "bad", "url": f"{ranker_server.url}/r/bad"}]})
    assert resp.status_code == 201, resp.text
    return resp.json()["id"]


def new_hook(api: Api, url: str, **more) -> dict:
    resp = api.post("/webhooks", {"url": url, "events": ALL_EVENTS, "secret": SECRET, **more})
    assert resp.status_code == 201, resp.text
    assert SECRET not in resp.text
    return resp.json()


def pause_resume(api: Api, exp_id: str) -> None:
    assert api.post(f"/experiments/{exp_id}/pause").status_code == 200
    assert api.post(f"/experiments/{exp_id}/resume").status_code == 200


def outbox_ids(redis_url: str, exp_id: str) -> list[str]:
    """The experiment's event ids, in the outbox's order (what must arrive, in order)."""
    from service.store import Store
    from service.store.client import connect

    store = Store(connect(redis_url))
    return [f["id"] for _, f in store.webhooks.outbox(exp_id, "0", 10_000)]


def check_deliveries(receiver: Receiver, expected: dict[str, list[str]]) -> None:
    """Every event arrived, every request is signed with the secret, a repeated event
    id carries the same body, and each experiment's events arrived in order (no event
    before an earlier one was accepted)."""
    accepted = receiver.accepted()
    wanted = {e for ids in expected.values() for e in ids}
    assert wanted <= set(accepted), sorted(wanted - set(accepted))
    bodies: dict[str, bytes] = {}
    for r in receiver.all():
        assert signing.verify(SECRET, r["body"], r["signature"]), r
        assert bodies.setdefault(r["event_id"], r["body"]) == r["body"]  # same id, same body
        payload = json.loads(r["body"])
        assert payload["event_id"] == r["event_id"] and payload["type"] == r["event"]
    for exp_id, ids in expected.items():
        position = {e: i for i, e in enumerate(ids)}
        got = [position[r["event_id"]] for r in receiver.all() if r["event_id"] in position]
        assert got == sorted(got), (exp_id, got)  # never a later event before an earlier
        first_ok = [position[e] for e in sorted(
            (e for e in ids), key=lambda e: accepted[e]["t"])]
        assert first_ok == list(range(len(ids)))


def test_flaky_and_down_receiver_gets_every_event_signed_and_in_order(
        hooks_api, hooks_worker, hooks_env, receiver, ranker_server):
    hook = new_hook(hooks_api, receiver.url)
    receiver.flaky = True
    exps = [new_experiment(hooks_api, ranker_server, f"flaky-{i}") for i in range(3)]
    for _ in range(3):
        for exp_id in exps:
            pause_resume(hooks_api, exp_id)
    wait_until(lambda: len(receiver.accepted()) >= 3, 20, "first deliveries")
    receiver.stop()  # down for a few seconds while events keep coming
    down_at = time.time()
    for _ in range(3):
        for exp_id in exps:
            pause_resume(hooks_api, exp_id)
    wait_until(lambda: time.time() - down_at > 4, 10, "the receiver's downtime")
    receiver.start()
    expected = {e: outbox_ids(hooks_env["REDIS_URL"], e) for e in exps}
    assert all(len(ids) == 6 for ids in expected.values())
    wait_until(lambda: all(e in receiver.accepted() for ids in expected.values()
                           for e in ids), 40, "every event delivered")
    check_deliveries(receiver, expected)
    assert any(r["status"] == 500 for r in receiver.all())  # the flaky answers happened
    # the deliveries page shows the retried events with their status codes
    page = hooks_api.get(f"/webhooks/{hook['id']}/deliveries?limit=100").json()
    retried = [d for d in page["deliveries"] if len(d["status_codes"]) > 1]
    assert retried and all(d["status_codes"][-1] == 200 for d in retried)
    assert all(d["result"] == "delivered" for d in page["deliveries"])
    assert hooks_api.get(f"/webhooks/{hook['id']}").json()["disabled"] is False
    requests.delete(f"{hooks_api.url}/webhooks/{hook['id']}", headers=H, timeout=10)


def test_no_event_is_lost_across_an_api_and_a_worker_restart(
        hooks_api, hooks_worker, hooks_env, receiver, ranker_server):
    hook = new_hook(hooks_api, receiver.url)
    receiver.delay_s = 0.2  # the worker is mid-delivery when it is killed
    exps = [new_experiment(hooks_api, ranker_server, f"restart-{i}") for i in range(2)]
    for _ in range(4):
        for exp_id in exps:
            pause_resume(hooks_api, exp_id)
    wait_until(lambda: len(receiver.all()) >= 2, 20, "deliveries under way")
    hooks_worker.kill9()
    assert len(receiver.accepted()) < 16  # killed with events still to deliver
    hooks_api.restart()  # the API restarts too, and records more meanwhile
    for _ in range(2):
        for exp_id in exps:
            pause_resume(hooks_api, exp_id)
    hooks_worker.start()
    expected = {e: outbox_ids(hooks_env["REDIS_URL"], e) for e in exps}
    assert all(len(ids) == 6 for ids in expected.values())
    wait_until(lambda: all(e in receiver.accepted() for ids in expected.values()
                           for e in ids), 45, "every event delivered after the restarts")
    check_deliveries(receiver, expected)
    requests.delete(f"{hooks_api.url}/webhooks/{hook['id']}", headers=H, timeout=10)


def test_a_pause_and_a_guardrail_trip_reach_the_receiver_within_10_s(
        hooks_api, hooks_worker, hooks_env, receiver, ranker_server):
    from rollout.guardrails import Trip
    from service.placements.guardrails import trip
    from service.store import Store
    from service.store.client import connect

    hook = new_hook(hooks_api, receiver.url)
    exp_id = new_experiment(hooks_api, ranker_server, "prompt")
    t0 = time.time()
    assert hooks_api.post(f"/experiments/{exp_id}/pause").status_code == 200
    wait_until(lambda: any(r["event"] == "experiment_paused" for r in
                           receiver.accepted().values()), 10, "the pause's event")
    assert hooks_api.post(f"/experiments/{exp_id}/resume").status_code == 200
    # a guardrail's trip, as the workers' sweep or a search makes it (no task queue at
    # hand here: the sweep delivers it)
    store = Store(connect(hooks_env["REDIS_URL"]))
    t1 = time.time()
    assert trip(store, "web", exp_id, Trip("error_rate", "bad", 0.4, 0.05,
                                           "40 % of its calls failed"))
    wait_until(lambda: any(r["event"] == "guardrail_tripped" for r in
                           receiver.accepted().values()), 10, "the trip's event")
    got = {r["event"]: r for r in receiver.accepted().values()}
    assert got["experiment_paused"]["t"] - t0 < 10
    assert got["guardrail_tripped"]["t"] - t1 < 10
    trip_event = json.loads(got["guardrail_tripped"]["body"])
    assert trip_event["experiment"] == exp_id and trip_event["data"]["rule"] == "error_rate"
    assert "prompt" in trip_event["text"] and "error_rate" in trip_event["text"]
    assert trip_event["ts"].endswith("Z")
    # the trip's audit entry and its event were written together
    audit = hooks_api.get(f"/experiments/{exp_id}/audit").json()["audit"]
    assert [a["action"] for a in audit].count("guardrail_tripped") == 1
    requests.delete(f"{hooks_api.url}/webhooks/{hook['id']}", headers=H, timeout=10)


# ------------------------------------------------------------------ in this process
@pytest.fixture
def local(hooks_env):
    """A store on database 8 (no worker there) and the deliveries' settings."""
    from service.store import Store
    from service.store.client import connect
    from service.webhooks.delivery import Settings

    url = hooks_env["REDIS_URL"].rsplit("/", 1)[0] + "/8"
    store = Store(connect(url))
    return store, Settings(timeout_s=2, backoff_s=0.001, backoff_max_s=0.002)


def fake_experiment(store, name: str) -> str:
    """An experiment's hash, enough for the outbox (events are appended only to an
    experiment that exists)."""
    import secrets

    from service.store.keys import exp_key

    exp_id = secrets.token_hex(6)
    store.r.hset(exp_key(exp_id), "meta", json.dumps({"name": name}))
    return exp_id


def test_twenty_failures_in_a_row_disable_the_hook_with_an_audit_entry(local, receiver, caplog):
    from service.rankers.allow_list import RankerPolicy
    from service.webhooks import operations, outbox
    from service.webhooks.delivery import run

    store, settings = local
    caplog.set_level(logging.DEBUG)
    receiver.fail = True
    policy = RankerPolicy(LOOPBACK)
    hook = operations.create(store, policy, url=receiver.url, events=ALL_EVENTS,
                             secret=SECRET)
    exp_id = fake_experiment(store, "failing")
    first = outbox.record(store, exp_id, "ramp_step", {
        "placement": "web", "step": 2, "steps": 2, "share": 0.5, "previous_share": 0.1,
        "after": "1h"})
    outbox.record(store, exp_id, "experiment_paused", {"actor": "operator"})

    def disabled() -> bool:
        run(store, exp_id, settings, policy)
        return operations.describe(store, hook["id"])["disabled"]

    wait_until(disabled, 30, "the hook disabled")
    shown = operations.describe(store, hook["id"])
    assert shown["failures_in_a_row"] == 20 and "20 failed deliveries" in shown[
        "disabled_reason"]
    # exactly 20 attempts, all at the first event (the second waits behind it)
    assert len(receiver.all()) == 20
    assert {r["event_id"] for r in receiver.all()} == {first["event_id"]}
    audit = [a for a in store.experiments.audit(exp_id) if a["action"] == "webhook_disabled"]
    assert len(audit) == 1 and audit[0]["webhook"] == hook["id"]
    # a disabled hook gets nothing more
    run(store, exp_id, settings, policy)
    assert len(receiver.all()) == 20
    assert operations.deliveries(store, hook["id"], 5)[0]["attempts"] == 20
    assert SECRET not in caplog.text


def test_an_event_of_the_millisecond_the_hook_was_created_in_is_delivered(local, receiver):
    # the outbox's stream ids count milliseconds: an event appended in the millisecond the
    # hook was created in is one it must get (its id, "<ms>-0", was once the hook's own
    # exclusive cursor, so the event was skipped; a fast test run hit that)
    from service.rankers.allow_list import RankerPolicy
    from service.store.keys import outbox_key
    from service.webhooks import operations, payloads
    from service.webhooks.delivery import run

    store, settings = local
    policy = RankerPolicy(LOOPBACK)
    hook = operations.create(store, policy, url=receiver.url, events=ALL_EVENTS,
                             secret=SECRET)
    exp_id = fake_experiment(store, "same-ms")
    ms = int(store.webhooks.webhook(hook["id"])["created_at"] * 1000)
    event = payloads.make("experiment_paused", exp_id, "same-ms", {"actor": "operator"})
    store.r.xadd(outbox_key(exp_id), {"id": event["event_id"], "type": event["type"],
                                      "payload": payloads.body(event)}, id=f"{ms}-0")
    assert run(store, exp_id, settings, policy) == 1
    assert list(receiver.accepted()) == [event["event_id"]]
    operations.delete(store, hook["id"])  # the database's other tests count on its hooks


def test_a_url_outside_the_allow_list_is_refused_at_creation_and_at_delivery(
        hooks_api, local, receiver, caplog):
    from service.rankers.allow_list import RankerPolicy
    from service.webhooks import operations, outbox
    from service.webhooks.delivery import run

    for url in ("http://169.254.169.254/latest/meta-data", "http://10.1.2.3/hook",
                "http://192.168.0.1:8080/hook"):
        resp = hooks_api.post("/webhooks", {"url": url, "events": ["ramp_step"],
                                            "secret": SECRET})
        assert resp.status_code == 422, resp.text
        assert resp.json()["error"].startswith("field 'url': host ")
        assert "RANKDUEL_RANKER_ALLOW" in resp.json()["error"]
    # at delivery: a hook created while loopback was allowed, delivered by a process
    # whose allow-list no longer allows it, connects nowhere
    store, settings = local
    caplog.set_level(logging.DEBUG)
    hook = operations.create(store, RankerPolicy(LOOPBACK), url=receiver.url,
                             events=ALL_EVENTS, secret=SECRET)
    exp_id = fake_experiment(store, "ssrf")
    outbox.record(store, exp_id, "experiment_paused", {"actor": "operator"})
    run(store, exp_id, settings, RankerPolicy(""))
    assert receiver.all() == []
    [row] = operations.deliveries(store, hook["id"], 5)
    assert row["result"] == "refused" and row["status_codes"] == [None]
    assert "refused by the allow-list" in row["error"]
    operations.delete(store, hook["id"])
    assert SECRET not in caplog.text


def test_validation_names_the_field(hooks_api, receiver):
    cases = [
        ({"url": "ftp://x/y"}, "field 'url'"),
        ({"events": []}, "field 'events' must have at least 1 item"),
        ({"events": ["ramp_step", "nope"]}, "field 'events[1]'"),
        ({"events": ["srm_flagged"]}, "field 'events[0]'"),  # no such event
        ({"secret": "short"}, "field 'secret' must have at least 16 characters"),
        ({"secret": "x" * 257}, "field 'secret' is longer than 256 characters"),
        ({"experiments": ["nope"]}, "field 'experiments[0]': no experiment 'nope'"),
        ({"colour": "red"}, "unknown field 'colour'"),
    ]
    for change, message in cases:
        body = {"url": receiver.url, "events": ["ramp_step"], "secret": SECRET, **change}
        resp = hooks_api.post("/webhooks", body)
        assert resp.status_code == 422, (change, resp.text)
        assert message in resp.json()["error"], (change, resp.json())


def test_the_secret_is_never_shown_logged_or_exported(
        hooks_api, hooks_worker, hooks_env, receiver, ranker_server, caplog):
    caplog.set_level(logging.DEBUG)
    receiver.flaky = True
    hook = new_hook(hooks_api, receiver.url, description="team search")
    exp_id = new_experiment(hooks_api, ranker_server, "secretive")
    for _ in range(3):
        pause_resume(hooks_api, exp_id)
    wait_until(lambda: len(receiver.accepted()) >= 3, 20, "deliveries")
    answers = [hooks_api.get("/webhooks"), hooks_api.get(f"/webhooks/{hook['id']}"),
               hooks_api.get(f"/webhooks/{hook['id']}/deliveries"),
               hooks_api.get("/openapi.json"), hooks_api.get("/metrics"),
               hooks_api.get(f"/experiments/{exp_id}/audit")]
    for resp in answers:
        assert resp.status_code == 200, resp.text
        assert SECRET not in resp.text
    shown = answers[1].json()
    assert shown["secret"] == "set" and shown["description"] == "team search"
    assert any(h["id"] == hook["id"] and h["secret"] == "set"
               for h in answers[0].json()["webhooks"])
    worker_metrics = requests.get(
        f"http://{hooks_env['RANKDUEL_WORKER_METRICS_BIND']}/metrics", headers=H, timeout=10)
    assert "rankduel_webhook_deliveries_total" in worker_metrics.text
    assert SECRET not in worker_metrics.text
    assert SECRET not in caplog.text
    assert SECRET not in hooks_worker.child.log_path.read_text(errors="replace")
    requests.delete(f"{hooks_api.url}/webhooks/{hook['id']}", headers=H, timeout=10)
    assert hooks_api.get(f"/webhooks/{hook['id']}").status_code == 404


def sweeps_pass(hooks_env, n: int = 3):
    """A condition true once the worker's sweep has completed ``n`` more times (its
    heartbeat moved): what "nothing more came" waits for instead of a sleep."""
    import redis

    from service.store.keys import SWEEP_HEARTBEAT

    client = redis.Redis.from_url(hooks_env["REDIS_URL"])
    seen = [client.get(SWEEP_HEARTBEAT)]

    def check() -> bool:
        now = client.get(SWEEP_HEARTBEAT)
        if now != seen[-1]:
            seen.append(now)
        return len(seen) > n

    return check


def test_a_ramp_step_is_told_once(hooks_api, hooks_worker, hooks_env, receiver, ranker_server):
    hook = new_hook(hooks_api, receiver.url)
    name = f"ramp{int(time.time() * 1000) % 10**8}"
    resp = hooks_api.post("/placements", {"name": name, "control": {
        "name": "prod", "url": f"{ranker_server.url}/r/good"}})
    assert resp.status_code == 201, resp.text
    resp = hooks_api.post("/experiments", {
        "name": "ramped", "algorithm": "dts", "interleaving": "team_draft", "probe": False,
        "placement": name, "traffic": [{"after": "0s", "share": 0.05},
                                       {"after": "2s", "share": 0.2}],
        "rankers": [{"name": "good", "url": f"{ranker_server.url}/r/good"},
                    {"name": "bad", "url": f"{ranker_server.url}/r/bad"}]})
    assert resp.status_code == 201, resp.text
    exp_id = resp.json()["id"]

    def steps() -> list[dict]:
        return [json.loads(r["body"]) for r in receiver.accepted().values()
                if r["event"] == "ramp_step"]

    wait_until(lambda: steps(), 15, "the ramp step's event")
    wait_until(sweeps_pass(hooks_env), 15, "three more sweeps")
    [step] = steps()  # once, however many sweeps saw it
    assert step["experiment"] == exp_id
    assert step["data"] | {"placement": name} == {
        "experiment_name": "ramped", "placement": name, "step": 2, "steps": 2,
        "share": 0.2, "previous_share": 0.05, "after": "2s"}
    assert "20 %" in step["text"] and name in step["text"]
    requests.delete(f"{hooks_api.url}/webhooks/{hook['id']}", headers=H, timeout=10)


@pytest.mark.parametrize("algorithm", ["mergedts", "recommended"])
def test_rankers_shown_worse_and_a_certified_champion_are_told_once(
        hooks_api, hooks_worker, hooks_env, receiver, ranker_server, algorithm):
    from demo.client import Client

    hook = new_hook(hooks_api, receiver.url)
    client = Client(hooks_api.url, ADMIN)
    # small C (MergeDTS), a large δ and two rankers (recommended): decided within the test
    if algorithm == "recommended":
        params = {"alpha": 0.5, "c": 10, "error_rate": 0.5, "check_every": 50}
        names: tuple[str, ...] = ("good", "bad")
    else:
        params, names = {"alpha": 0.5, "c": 10, "batch_size": 4}, ("good", "bad", "mid", "alt")
    exp = client.create_experiment(
        name="verdicts", algorithm=algorithm, params=params, interleaving="team_draft",
        seed=3, probe=False, rankers=[{"name": n, "url": f"{ranker_server.url}/r/{n}"}
                                      for n in names])
    e = exp["id"]
    for n in range(250):  # users click the lowest id: "good" wins its duels
        page = client.search(e, f"q{n}", k=6)
        res = page["results"]
        p = min(range(len(res)), key=lambda i: res[i]["id"])
        client.click(page, [(res[p]["id"], p + 1)])
        client.end(page)

    def credited() -> bool:
        c = client.experiment(e)["counters"]
        return c.get("credited", 0) == c["impressions"]

    wait_until(credited, 45, "credits")
    report = client.report(e)
    worse = (set(report["shown_worse"]) if algorithm == "recommended" else
             {r["name"] for r in report["rankers"] if r["status"] == "eliminated"})
    assert worse  # the run decided something

    def told(kind: str) -> list[dict]:
        return [json.loads(r["body"]) for r in receiver.accepted().values()
                if r["event"] == kind]

    wait_until(lambda: {t["data"]["ranker"] for t in told("ranker_shown_worse")} >= worse,
               20, "the shown-worse events")
    wait_until(sweeps_pass(hooks_env), 15, "three more sweeps")
    shown = told("ranker_shown_worse")
    assert len(shown) == len({t["data"]["ranker"] for t in shown})  # once each
    assert "good" not in {t["data"]["ranker"] for t in shown}
    certified = told("verdict_certified")
    assert report["certified"] or algorithm != "recommended"  # two rankers: it certifies
    if report["certified"]:
        assert [c["data"]["champion"] for c in certified] == [report["champion"]]
    else:
        assert certified == []
    requests.delete(f"{hooks_api.url}/webhooks/{hook['id']}", headers=H, timeout=10)


def test_a_due_mark_lost_after_the_append_is_repaired_by_the_full_pass(local, receiver):
    from service.rankers.allow_list import RankerPolicy
    from service.webhooks import operations, payloads
    from service.webhooks.delivery import run
    from service.webhooks.sweep import behind

    store, settings = local
    hook = operations.create(store, RankerPolicy(LOOPBACK), url=receiver.url,
                             events=ALL_EVENTS, secret=SECRET)
    exp_id = fake_experiment(store, "unmarked")
    # the event appended, and its process killed before it marked the experiment due
    event = payloads.make("experiment_paused", exp_id, "unmarked", {"actor": "operator"})
    store.webhooks.record_event(exp_id, event["event_id"], event["type"], payloads.body(event))
    assert exp_id not in dict(store.webhooks.hooks_due(time.time()))
    assert behind(store, [exp_id]) == 1
    assert exp_id in dict(store.webhooks.hooks_due(time.time()))
    run(store, exp_id, settings, RankerPolicy(LOOPBACK))
    assert [r["event_id"] for r in receiver.accepted().values()] == [event["event_id"]]
    assert exp_id not in dict(store.webhooks.hooks_due(time.time()))  # done: the mark is gone
    assert behind(store, [exp_id]) == 0  # nothing behind any more
    operations.delete(store, hook["id"])


def test_a_degraded_ranker_is_told_once_with_its_audit_entry(
        hooks_api, hooks_worker, hooks_env, receiver, ranker_server):
    from demo.client import Client

    hook = new_hook(hooks_api, receiver.url)
    client = Client(hooks_api.url, ADMIN)
    # a results path with a typo: the ranker answers, but never results
    exp = client.create_experiment(
        name="typo", algorithm="uniform", interleaving="team_draft", probe=False,
        rankers=[{"name": "good", "url": f"{ranker_server.url}/r/good"},
                 {"name": "typo", "url": f"{ranker_server.url}/r/bad",
                  "response": {"results": "hits", "id": "id"}}])
    e = exp["id"]

    def degraded() -> bool:
        client.search(e, "q", k=5)
        return any(a["action"] == "ranker_degraded" for a in client.audit(e))

    wait_until(degraded, 30, "the ranker degraded")

    def told() -> list[dict]:
        return [json.loads(r["body"]) for r in receiver.accepted().values()
                if r["event"] == "ranker_degraded"]

    wait_until(told, 10, "the degraded ranker's event")
    wait_until(sweeps_pass(hooks_env), 15, "three more sweeps")
    [event] = told()
    assert event["experiment"] == e and event["data"]["ranker"] == "typo"
    assert event["data"]["reason"] == "no results" and "typo" in event["text"]
    requests.delete(f"{hooks_api.url}/webhooks/{hook['id']}", headers=H, timeout=10)


def test_a_split_that_looks_wrong_is_told_once(hooks_api, hooks_worker, hooks_env, receiver,
                                               ranker_server):
    # team draft's first pick far from its coin (900 to 100, as a biased interleaving
    # would give): the split is flagged, and the hook hears it once, with the numbers
    import redis

    from service.reports.splits import FIRST
    from service.store.keys import counters_key

    hook = new_hook(hooks_api, receiver.url)
    name = f"srm{int(time.time() * 1000) % 10**8}"
    resp = hooks_api.post("/placements", {"name": name, "control": {
        "name": "prod", "url": f"{ranker_server.url}/r/good"}})
    assert resp.status_code == 201, resp.text
    resp = hooks_api.post("/experiments", {
        "name": "skewed", "algorithm": "dts", "interleaving": "team_draft", "probe": False,
        "placement": name, "traffic": 0.5,
        "rankers": [{"name": "good", "url": f"{ranker_server.url}/r/good"},
                    {"name": "bad", "url": f"{ranker_server.url}/r/bad"}]})
    assert resp.status_code == 201, resp.text
    exp_id = resp.json()["id"]
    client = redis.Redis.from_url(hooks_env["REDIS_URL"])
    client.hset(counters_key(exp_id), mapping={f"{FIRST}0": 900, f"{FIRST}1": 100})

    def flags() -> list[dict]:
        return [json.loads(r["body"]) for r in receiver.accepted().values()
                if r["event"] == "srm_flag" and json.loads(r["body"])["experiment"] == exp_id]

    wait_until(lambda: flags(), 15, "the split's event")
    wait_until(sweeps_pass(hooks_env), 15, "three more sweeps")
    [flag] = flags()  # once, however many sweeps saw it
    assert flag["data"]["placement"] == name and "first pick" in flag["data"]["message"]
    assert "not to be trusted" in flag["text"] and "skewed" in flag["text"]
    requests.delete(f"{hooks_api.url}/webhooks/{hook['id']}", headers=H, timeout=10)
