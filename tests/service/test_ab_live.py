"""A/B experiments on a placement, live: a real API, Redis and HTTP toy rankers
(docs/ab-tests.md). Simulated users (a seeded generator) search through the placement
and click with a probability set by the arm's ranker, so the true CTR lift is known;
the report must decide in the right direction with the true lift inside its interval,
an A/A test must not decide, and a treatment that times out for a tenth of its searches
(whose users are then served, and counted in, the control) must be flagged by the split
check within the run, with the arm and its numbers."""

from __future__ import annotations

import itertools
import re
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import numpy as np
import pytest
from helpers.api import all_credited
from helpers.wait import wait_for

from rollout.ab import Moments

#: the toy ranker "good" is the control's; "alt" and "flaky" are treatments
CTR = {"prod": 0.30, "good": 0.30, "alt": 0.45, "flaky": 0.30}


def _toy_rankers():
    from flask import Flask, jsonify, request

    app = Flask("ab-rankers")
    calls = itertools.count()
    lock = threading.Lock()

    @app.get("/r/<name>")
    def rank(name: str):
        k = int(request.args.get("k", 10))
        if name == "flaky":
            with lock:
                n = next(calls)
            if n % 10 == 9:  # a tenth of its searches time out
                time.sleep(0.5)
        if name.startswith("tenth") and request.args.get("q", "").endswith("0"):
            time.sleep(1.5)  # the searches of a tenth of the users time out
        docs = [f"d{i:02d}" for i in range(k)]
        if name in ("alt", "tenth-alt"):
            docs = docs[1:] + docs[:1]
        return jsonify({"results": [{"id": d, "source": name} for d in docs]})

    return app


@pytest.fixture(scope="module")
def ab_rankers(api):
    from demo.wsgi_server import ThreadedServer

    server = ThreadedServer(_toy_rankers())
    yield server
    server.close()


def ranker(server, name: str, path: str | None = None, timeout_ms: int = 2000) -> dict:
    return {"name": name, "url": f"{server.url}/r/{path or name}", "timeout_ms": timeout_ms}


def new_placement(client, server) -> str:
    name = f"ab-{secrets.token_hex(3)}"
    status, body = client.request("POST", "/placements", {
        "name": name, "control": ranker(server, "prod", "good"), "probe": False}, admin=True)
    assert status == 201, body
    return name


def new_ab(client, server, place: str, *treatments: tuple[str, str], traffic=1.0,
           timeout_ms: int = 2000, **extra) -> str:
    status, body = client.request("POST", "/experiments", {
        "design": "ab", "name": f"ab {place}", "placement": place, "traffic": traffic,
        "rankers": [ranker(server, n, p, timeout_ms) for n, p in treatments],
        "probe": False, **extra}, admin=True)
    assert status == 201, body
    assert body["design"] == "ab" and body["control"] == "prod"
    return body["id"]


def simulate(client, place: str, users: range, seed: int, *, searches: int = 2,
             threads: int = 8) -> dict[str, int]:
    """Each user searches up to ``searches`` times; a search is clicked with the CTR of
    the ranker whose list was served. Returns searches served per ranker."""
    served: dict[str, int] = {}
    lock = threading.Lock()

    def one(u: int) -> None:
        rng = np.random.default_rng([seed, u])
        for _ in range(int(rng.integers(1, searches + 1))):
            status, out = client.request("GET", "/search?" + urlencode({
                "placement": place, "q": "shoes", "k": 5, "user": f"user-{seed}-{u}"}))
            assert status == 200, out
            who = out["rankers"][0]
            with lock:
                served[who] = served.get(who, 0) + 1
            if out["impression_id"] and rng.random() < CTR[who]:
                top = out["results"][0]
                status, got = client.request("POST", "/clicks", {
                    "impression_id": out["impression_id"], "token": out["token"],
                    "clicks": [{"id": top["id"], "rank": 1}]})
                assert status == 202, got

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, users))
    return served


def report(client, exp_id: str) -> dict:
    status, body = client.request("GET", f"/experiments/{exp_id}/report", admin=True)
    assert status == 200, body
    return body


def test_a_search_shows_one_arm_whole_and_a_click_counts_once(client, ab_rankers):
    place = new_placement(client, ab_rankers)
    exp = new_ab(client, ab_rankers, place, ("new", "alt"))
    seen = {}
    for u in range(40):
        status, out = client.request("GET", "/search?" + urlencode({
            "placement": place, "q": "q", "k": 5, "user": f"u{u}"}))
        assert status == 200, out
        assert out["experiment"] == exp and out["impression_id"] and out["token"]
        ids = [r["id"] for r in out["results"]]
        assert ids == ([f"d{i:02d}" for i in range(5)] if out["rankers"] == ["prod"]
                       else ["d01", "d02", "d03", "d04", "d00"])  # a list whole
        seen.setdefault(out["rankers"][0], out)
        again = client.request("GET", "/search?" + urlencode({
            "placement": place, "q": "q", "k": 5, "user": f"u{u}"}))[1]
        assert again["rankers"] == out["rankers"]  # sticky
    assert set(seen) == {"prod", "new"}
    imp = seen["new"]
    body = {"impression_id": imp["impression_id"], "token": imp["token"],
            "clicks": [{"id": imp["results"][0]["id"], "rank": 1}]}
    for _ in range(3):  # repeated reports: one clicked search
        assert client.request("POST", "/clicks", body)[0] == 202
    status, end = client.request("POST", f"/impressions/{imp['impression_id']}/end",
                                 {"token": imp["token"]})
    assert status == 202 and end["status"] == "closed", end
    # the next page continues the arm's list (not another search of the user)
    status, page2 = client.request("GET", "/search?" + urlencode({
        "experiment": exp, "q": "q", "k": 5, "user": "u0", "page": 2,
        "impression_id": seen["prod"]["impression_id"], "token": seen["prod"]["token"]}))
    assert status == 200, page2
    assert [r["id"] for r in page2["results"]] == [f"d{i:02d}" for i in range(5, 10)]
    rep = report(client, exp)
    arms = {a["name"]: a for a in rep["arms"]}
    assert arms["new"]["clicked_searches"] == 1
    assert arms["new"]["users"] + arms["prod"]["users"] == 40
    assert arms["new"]["searches"] + arms["prod"]["searches"] == 80
    assert rep["design"] == "ab" and rep["control"] == "prod" and not rep["decided"]
    # an interleaving experiment's report and state are as they were
    state = client.request("GET", f"/experiments/{exp}", admin=True)[1]
    assert state["design"] == "ab"


def run_until(client, place: str, exp_id: str, done, *, seed: int, batch: int = 300,
              most: int = 4000, searches: int = 2) -> tuple[dict, int]:
    """Simulate users in batches until ``done(report)`` or ``most`` users; the report
    and the users simulated."""
    start = 0
    while True:
        simulate(client, place, range(start, start + batch), seed, searches=searches)
        start += batch
        rep = report(client, exp_id)
        if done(rep) or start >= most:
            return rep, start


def test_a_known_ctr_lift_is_decided_in_its_direction_with_the_lift_inside(client,
                                                                          ab_rankers,
                                                                          worker):
    # (the workers run and sweep meanwhile: an A/B test needs none, and they leave its
    # counts alone)
    place = new_placement(client, ab_rankers)
    exp = new_ab(client, ab_rankers, place, ("better", "alt"))
    CTR["better"] = CTR["alt"]
    t0 = time.monotonic()
    rep, users = run_until(client, place, exp, lambda r: r["decided"], seed=11)
    took = time.monotonic() - t0
    comp = rep["metrics"]["ctr"]["better"]
    assert rep["decided"], (users, rep["verdict"])
    assert comp["direction"] == 1
    true_lift = CTR["alt"] / CTR["prod"] - 1  # each search clicked independently
    lo, hi = comp["lift_interval"]
    assert lo <= true_lift <= hi, (lo, true_lift, hi)
    lo, hi = comp["interval"]
    assert lo <= CTR["alt"] - CTR["prod"] <= hi
    assert rep["trusted"] and not rep["srm"]["flagged"], rep["srm"]
    assert "higher ctr than prod" in rep["verdict"]
    assert rep["decisions"]["better"]["direction"] == 1  # kept
    print(f"decided after {users} users in {took:.1f} s: {rep['verdict']}")


def test_an_aa_test_is_not_decided(client, ab_rankers):
    place = new_placement(client, ab_rankers)
    exp = new_ab(client, ab_rankers, place, ("same", "good"))
    CTR["same"] = CTR["prod"]
    rep, _ = run_until(client, place, exp, lambda r: False, seed=12, batch=400,
                       most=1200)
    assert not rep["decided"], rep["verdict"]
    assert all(a["users"] >= 100 for a in rep["arms"]), rep["arms"]
    assert not rep["srm"]["flagged"], rep["srm"]
    assert rep["verdicts"]["same"]["statement"].startswith("same: not decided")


def test_a_treatment_that_times_out_for_a_tenth_is_flagged_as_srm(client, ab_rankers):
    # "flaky" times out on every tenth call: those searches are served the control's
    # list and count in the control, so the treatment loses a tenth of its users
    place = new_placement(client, ab_rankers)
    # (the failures guardrail would pause it at 5 % of failed calls: not in this test)
    exp = new_ab(client, ab_rankers, place, ("flaky", "flaky"), timeout_ms=200,
                 guardrails={"max_failure_rate": 0.5})
    t0 = time.monotonic()
    rep, users = run_until(client, place, exp, lambda r: r["srm"]["flagged"], seed=13,
                           batch=500, most=6000, searches=1)
    took = time.monotonic() - t0
    srm = rep["srm"]
    assert srm["flagged"], (users, srm)
    assert srm["arm"] == "flaky"
    assert srm["observed"]["flaky"] < srm["expected"]["flaky"]
    assert "'flaky' got" in srm["message"] and "where 50 % were assigned" in srm["message"]
    assert not rep["trusted"]
    assert rep["verdict"].startswith("not to be trusted until the split is explained")
    arms = {a["name"]: a for a in rep["arms"]}
    assert arms["flaky"]["observed_share"] < 0.48 < arms["prod"]["observed_share"]
    print(f"flagged after {users} users in {took:.1f} s: {srm['message']}")
    # the metric says so, by placement and experiment
    status, text = client.request("GET", "/metrics", admin=True)
    text = text if isinstance(text, str) else str(text)
    line = f'rankduel_srm_flagged{{experiment="{exp}",placement="{place}"}} 1.0'
    assert status == 200 and line in text, [x for x in text.splitlines() if "srm" in x]


def test_an_interleaving_experiment_that_falls_back_for_a_tenth_is_flagged(client,
                                                                         ab_rankers):
    # both rankers time out for the users whose query ends in 0: those searches fall
    # back to the placement's control list and count there
    place = new_placement(client, ab_rankers)
    status, body = client.request("POST", "/experiments", {
        "name": "tenth", "algorithm": "uniform", "interleaving": "team_draft",
        # (a timeout long enough that a busy machine's slow answer is not one: the
        # circuit breaker would quarantine the rankers for everyone)
        "rankers": [ranker(ab_rankers, "a", "tenth", 1000),
                    ranker(ab_rankers, "b", "tenth-alt", 1000)],
        "placement": place, "traffic": 0.5, "probe": False,
        "guardrails": {"enabled": False}}, admin=True)
    assert status == 201, body
    exp = body["id"]

    def one(u: int) -> None:
        status, out = client.request("GET", "/search?" + urlencode({
            "placement": place, "q": f"q{u}", "k": 5, "user": f"i-{u}"}))
        assert status == 200, out

    rep, start = None, 0
    while start < 6000:
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(one, range(start, start + 500)))
        start += 500
        rep = report(client, exp)
        if rep["split"]["flagged"]:
            break
    split = rep["split"]
    assert split["flagged"], (start, split)
    users = split["placement"]["users"]
    assert users["arm"] == "treatment" and users["flagged"]
    assert users["observed"]["treatment"] < users["expected"]["treatment"]
    # (50 % assigned; less if a busy machine got the rankers quarantined and the
    # experiment paused meanwhile: the periods' shares say so)
    assert re.match(r"the treatment got [\d.]+ % of users where [\d.]+ % were assigned \(",
                    users["message"]), users["message"]
    assert rep["verdict"].startswith("not to be trusted until the split is explained")
    # team draft's coin is fair: neither the first pick nor a position is flagged
    assert split["first_pick"] and not split["first_pick"]["flagged"], split["first_pick"]
    assert not split["positions"]["flagged"], split["positions"]
    print(f"flagged after {start} users: {split['message']}")


def _certify(rd, exp_id: str, winner: int, loser: int) -> None:
    """The comparisons a worker would have credited, applied with the policy's own
    update() (as tests/service/test_report_words.py does): ``winner`` certified."""
    from service.store import Store
    from service.transaction import update_experiment

    def write(snap, pipe):
        bandit = snap.bandit
        for n in range(4000):
            bandit.update(winner, loser, 1.0 if n % 10 else 0.0)
        Store(rd).experiments.write_state(pipe, exp_id, bandit)

    update_experiment(Store(rd), exp_id, write)


def test_a_confirmed_verdict_and_its_ab_test_appear_in_agreements(client, ab_rankers, rd,
                                                                   worker):
    place = new_placement(client, ab_rankers)
    status, body = client.request("POST", "/experiments", {
        "name": "which", "algorithm": "recommended", "interleaving": "team_draft",
        "rankers": [ranker(ab_rankers, "prod", "good"), ranker(ab_rankers, "new", "alt")],
        "placement": place, "traffic": 0.5, "probe": False}, admin=True)
    assert status == 201, body
    inter = body["id"]
    # not certified yet: nothing to confirm
    status, err = client.request("POST", f"/experiments/{inter}/confirm", {}, admin=True)
    assert status == 409 and "not certified" in err["error"], err
    _certify(rd, inter, winner=1, loser=0)
    assert client.report(inter)["champion"] == "new"
    # the interleaving experiment stops; its winner's A/B test takes the whole placement
    assert client.request("POST", f"/experiments/{inter}/stop", admin=True)[0] == 200
    status, ab = client.request("POST", f"/experiments/{inter}/confirm",
                                {"traffic": 1.0}, admin=True)
    assert status == 201, ab
    assert ab["design"] == "ab" and ab["confirms"] == inter and ab["control"] == "prod"
    assert [r["name"] for r in ab["rankers"]] == ["prod", "new"]
    assert client.experiment(inter)["confirmed_by"] == ab["id"]
    status, again = client.request("POST", f"/experiments/{inter}/confirm", {}, admin=True)
    assert status == 409 and "confirmed already" in again["error"]
    status, err = client.request("POST", f"/experiments/{ab['id']}/confirm", {}, admin=True)
    assert status == 409 and "A/B test" in err["error"]

    def pair() -> dict:
        status, got = client.request("GET", "/agreements", admin=True)
        assert status == 200, got
        return next(p for p in got["pairs"] if p["ab"] == ab["id"]), got["rate"]

    before, _ = pair()
    assert before["decided"] is False and before["agree"] is None
    assert before["winner"] == "new" and before["preference"] > 0.5
    assert "new" in before["interleaving_verdict"]
    CTR["new"] = CTR["alt"]
    rep, _ = run_until(client, place, ab["id"], lambda r: r["decided"], seed=21)
    assert rep["decided"] and rep["confirms"] == inter
    after, rate = pair()
    assert after["decided"] is True and after["agree"] is True, after
    assert after["lift"] > 0 and after["interval"][0] > 0  # decided on the difference
    assert "higher ctr than prod" in after["ab_verdict"]
    assert rate["pairs"] >= 1 and rate["agree"] >= 1
    status, text = client.request("GET", "/metrics", admin=True)
    assert "rankduel_agreement_rate " in text and "rankduel_agreement_pairs " in text


def _interleave(client, place: str, users: range, seed: int) -> int:
    """Users search the placement once each and click ``d01`` (the ``alt`` ranker's top
    document, always on its team under team draft) nine times in ten, else nothing;
    each page ended. The searches served."""
    served = 0
    for u in users:
        rng = np.random.default_rng([seed, u])
        status, out = client.request("GET", "/search?" + urlencode({
            "placement": place, "q": "shoes", "k": 5, "user": f"iu-{seed}-{u}"}))
        assert status == 200, out
        if not out["impression_id"]:
            continue
        served += 1
        ids = [r["id"] for r in out["results"]]
        clicks = ([{"id": "d01", "rank": ids.index("d01") + 1}]
                  if "d01" in ids and rng.random() < 0.9 else [])
        if clicks:
            status, got = client.request("POST", "/clicks", {
                "impression_id": out["impression_id"], "token": out["token"],
                "clicks": clicks})
            assert status == 202, got
        status, got = client.request("POST", f"/impressions/{out['impression_id']}/end",
                                     {"token": out["token"]})
        assert status in (200, 202), got
    return served


def test_agreements_state_what_each_design_needed_and_the_speedup(client, ab_rankers,
                                                                  worker):
    # an interleaving experiment certified live (its verdict checked every 10
    # comparisons), confirmed, and its A/B test run until it decides: /agreements, both
    # reports and /metrics state the searches each needed and their ratio
    worker.ensure()
    place = new_placement(client, ab_rankers)
    status, body = client.request("POST", "/experiments", {
        "name": "fast", "algorithm": "recommended", "interleaving": "team_draft",
        "params": {"check_every": 10},
        "rankers": [ranker(ab_rankers, "prod", "good"), ranker(ab_rankers, "new", "alt")],
        "placement": place, "traffic": 1.0, "probe": False}, admin=True)
    assert status == 201, body
    inter, served = body["id"], 0
    for start in range(0, 2000, 50):
        served += _interleave(client, place, range(start, start + 50), seed=3)
        wait_for(all_credited(client, inter), what="the pages credited")
        rep = client.report(inter)
        if rep["certified"]:
            break
    assert rep["certified"] and rep["champion"] == "new", rep["verdict"]
    assert client.request("POST", f"/experiments/{inter}/stop", admin=True)[0] == 200
    status, ab = client.request("POST", f"/experiments/{inter}/confirm",
                                {"traffic": 1.0}, admin=True)
    assert status == 201, ab
    CTR["new"] = CTR["alt"]
    ab_rep, _ = run_until(client, place, ab["id"], lambda r: r["decided"], seed=23)
    assert ab_rep["decided"], ab_rep["verdict"]

    status, got = client.request("GET", "/agreements", admin=True)
    assert status == 200, got
    pair = next(p for p in got["pairs"] if p["ab"] == ab["id"])
    assert pair["agree"] is True, pair
    inter_n, ab_n = pair["sample_sizes"]["interleaving"], pair["sample_sizes"]["ab"]
    # interleaving's: where its verdict came (recorded by the credit that certified it),
    # within the searches served, at least the comparisons the certificate names
    assert inter_n["basis"] == "certification" and inter_n["users"] is None
    assert 0 < inter_n["comparisons"] <= inter_n["searches"] <= served, (inter_n, served)
    assert inter_n["comparisons"] <= rep["comparisons"]
    # the A/B test's: its users and searches at the look that first decided
    decided = ab_rep["decisions"]["new"]
    assert ab_n["users"] == decided["users"] > 0 and ab_n["searches"] == decided["searches"]
    assert ab_n["searches"] >= ab_n["users"]
    assert pair["sample_sizes"]["same_error_rate"] is True
    assert pair["speedup"] == round(ab_n["searches"] / inter_n["searches"], 1) > 0
    assert pair["speedup_statement"].startswith(
        f"interleaving decided in {inter_n['searches']:,} searches; its A/B confirmation "
        f"needed {ab_n['searches']:,} ({ab_n['users']:,} users): ")
    assert got["speedup"]["pairs"] >= 1 and got["speedup"]["median"] is not None
    # both reports state it
    assert report(client, ab["id"])["speedup_statement"] == pair["speedup_statement"]
    assert client.report(inter)["speedup"] == pair["speedup"]
    # and /metrics exports the median over the pairs
    status, text = client.request("GET", "/metrics", admin=True)
    assert status == 200
    median = re.search(r"^rankduel_interleaving_speedup_median (\S+)$", text, re.M)
    assert median and float(median.group(1)) == got["speedup"]["median"], text[-2000:]
    print(pair["speedup_statement"])


def test_confirm_needs_a_placement(client, ab_rankers):
    status, body = client.request("POST", "/experiments", {
        "name": "loose", "algorithm": "uniform", "interleaving": "team_draft",
        "rankers": [ranker(ab_rankers, "x", "good"), ranker(ab_rankers, "y", "alt")],
        "probe": False}, admin=True)
    assert status == 201, body
    status, err = client.request("POST", f"/experiments/{body['id']}/confirm", admin=True)
    assert status == 409 and "on no placement" in err["error"], err


def test_what_a_creation_may_say(client, ab_rankers, rd):
    place = new_placement(client, ab_rankers)

    def create(**body) -> tuple[int, dict]:
        return client.request("POST", "/experiments", {"probe": False, **body}, admin=True)

    base = {"design": "ab", "name": "x", "placement": place, "traffic": 0.1,
            "rankers": [ranker(ab_rankers, "t", "alt")]}
    status, err = create(**{**base, "algorithm": "uniform"})
    assert status == 422 and "algorithm" in err["error"], err
    status, err = create(**{k: v for k, v in base.items() if k != "placement"})
    assert status == 422 and "placement" in err["error"], err
    status, err = create(**{**base, "rankers": [ranker(ab_rankers, "prod", "alt")]})
    assert status == 422 and "control" in err["error"], err
    status, err = create(**{**base, "placement": "nowhere"})
    assert status == 404, err
    # two treatments: each against the control, at δ/2
    status, two = create(**{**base, "rankers": [ranker(ab_rankers, "t1", "alt"),
                                                ranker(ab_rankers, "t2", "good")]})
    assert status == 201, two
    assert [r["name"] for r in two["rankers"]] == ["prod", "t1", "t2"]
    status, err = client.request("POST", f"/experiments/{two['id']}/rankers",
                                 ranker(ab_rankers, "t3", "alt"), admin=True)
    assert status == 409 and "A/B test" in err["error"], err
    for u in range(30):
        assert client.request("GET", "/search?" + urlencode({
            "placement": place, "q": "q", "k": 3, "user": f"two-{u}"}))[0] == 200
    rep = report(client, two["id"])
    assert set(rep["verdicts"]) == {"t1", "t2"} and rep["treatments"] == ["t1", "t2"]
    assert rep["metrics"]["ctr"]["t1"]["delta"] == pytest.approx(0.025)
    assert rep["decisions"] == {} and not rep["verdicts"]["t1"]["decided"]
    # a decision taken at an earlier look stands (the intervals hold together)
    from service.store import Store

    Store(rd).ab.keep_decision(two["id"], "t1", {
        "direction": 1, "difference": 0.1, "interval": [0.01, 0.2], "lift": 0.3,
        "lift_interval": [0.02, 0.6], "users": 1234, "decided_at": 0.0})
    rep = report(client, two["id"])
    assert rep["verdicts"]["t1"]["decided"] and not rep["verdicts"]["t2"]["decided"]
    assert rep["verdicts"]["t1"]["statement"].startswith(
        "t1: higher ctr than prod, decided at 1,234 users (+30.00 %"), rep["verdicts"]
    assert not rep["decided"]  # t2 is not
    # an interleaving experiment, with or without "design": as always
    for extra in ({}, {"design": "interleaving"}):
        status, body = create(name="i", algorithm="uniform", interleaving="team_draft",
                              rankers=[ranker(ab_rankers, "a", "good"),
                                       ranker(ab_rankers, "b", "alt")], **extra)
        assert status == 201, body
        assert not {"design", "control", "confirms", "confirmed_by"} & set(body)
        assert "verdicts" not in report(client, body["id"])


#: the chance that a user of each arm orders (once, after their searches)
BUY = {"prod": 0.30, "buyers": 0.50}


def test_conversion_metrics_per_user_counted_once_and_compared(client, ab_rankers, rd):
    """An A/B test with an orders and a revenue metric, the treatment's users buying more
    (docs/ab-tests.md, "Conversion metrics"): orders sent by ``user`` from a back end,
    some retried with the same ``event_id``; the per-arm moments equal a recomputation
    from the orders sent (each user once, users without orders as zeros, the retried
    orders once), and the report's revenue comparison is higher with the true lift
    inside its interval."""
    from rollout.ab.conversions import per_user_moments
    from service.store import Store
    from tests.conftest import ADMIN

    back_end = {"Authorization": f"Bearer {ADMIN}"}
    action = f"purchase_{secrets.token_hex(3)}"  # this experiment's alone
    place = new_placement(client, ab_rankers)
    exp = new_ab(client, ab_rankers, place, ("buyers", "alt"), metrics=[
        {"name": "orders", "action": action, "window_s": 3600},
        {"name": "revenue", "action": action, "value": "sum", "window_s": 3600}])
    served: dict[str, str] = {}  # user -> the arm that served them
    spent: dict[str, float] = {}  # user -> revenue sent (once per order)
    orders: dict[str, int] = {}
    lock = threading.Lock()

    def order(body: dict) -> dict:
        status, out = client.request("POST", "/outcomes", body, headers=back_end)
        assert status == 202, out
        return out

    def one(u: int, seed: int) -> None:
        rng = np.random.default_rng([seed, u])
        user = f"buyer-{seed}-{u}"
        for _ in range(int(rng.integers(1, 3))):
            status, out = client.request("GET", "/search?" + urlencode({
                "placement": place, "q": "shoes", "k": 5, "user": user}))
            assert status == 200, out
        who = out["rankers"][0]
        with lock:
            served[user] = who
        if rng.random() < BUY[who]:
            body = {"user": user, "action": action, "id": out["results"][0]["id"],
                    "value": round(float(rng.uniform(10, 50)), 2), "event_id": f"o-{user}"}
            got = order(body)
            assert got["attributed"] and not got["duplicate"], got
            with lock:
                spent[user] = body["value"]
                orders[user] = 1
            if rng.random() < 0.3:  # the order service retries: counted once
                again = order(body)
                assert again["attributed"] and again["duplicate"], again

    # the API's view of the actions learns the new experiment's within MISS_REFRESH_S
    # (service.outcomes.actions); until then its orders are refused, nothing counted
    def seen() -> bool:
        status, _ = client.request("POST", "/outcomes", {
            "user": "nobody", "action": action, "id": "d00", "value": 1.0,
            "event_id": f"probe-{secrets.token_hex(4)}"}, headers=back_end)
        return status == 202
    assert wait_for(seen, what="the experiment's action seen")
    # a document the user was never shown: unattributed, with its reason
    status, out = client.request("GET", "/search?" + urlencode({
        "placement": place, "q": "shoes", "k": 5, "user": "window-shopper"}))
    assert status == 200, out
    served["window-shopper"] = out["rankers"][0]
    got = order({"user": "window-shopper", "action": action, "id": "d99", "value": 5.0,
                 "event_id": "o-not-shown"})
    assert got == {"attributed": False, "event_id": "o-not-shown", "reason": "no_impression"}

    users = 0
    with ThreadPoolExecutor(8) as pool:
        while True:
            list(pool.map(one, range(users, users + 400), itertools.repeat(21)))
            users += 400
            rep = report(client, exp)
            if rep["metrics"]["revenue"]["buyers"]["decided"] or users >= 3200:
                break
    moments = Store(rd).ab.ab_moments(exp)
    for arm, name in enumerate(("prod", "buyers")):
        mine = [u for u, who in served.items() if who == name]
        for metric, values in (("revenue", spent), ("orders", orders)):
            want = per_user_moments(values, mine)
            have = Moments.from_json(moments[arm][metric])
            assert have.n == want.n == len(mine), (metric, name)
            assert have.total == pytest.approx(want.total, rel=1e-9)
            assert have.squares == pytest.approx(want.squares, rel=1e-9)
    rev = rep["metrics"]["revenue"]["buyers"]
    assert rev["decided"] and rev["direction"] == 1, (users, rev["sentence"])
    true_lift = BUY["buyers"] / BUY["prod"] - 1  # same values, more buyers
    lo, hi = rev["lift_interval"]
    assert lo <= true_lift <= hi, (lo, true_lift, hi)
    lo, hi = rev["interval"]
    assert lo <= 30.0 * (BUY["buyers"] - BUY["prod"]) <= hi  # E[value] = 30
    assert rep["conversion_verdicts"]["revenue"]["buyers"]["statement"].startswith(
        "buyers: higher revenue than prod")
    assert [c["name"] for c in rep["conversions"]] == ["orders", "revenue"]
    assert rep["primary"] == "ctr"  # the verdict stays on ctr
    arms = {a["name"]: a for a in rep["arms"]}
    assert arms["buyers"]["conversions"]["revenue"] == pytest.approx(
        sum(spent.get(u, 0.0) for u, w in served.items() if w == "buyers")
        / arms["buyers"]["users"])
    print(f"{users} users: {rev['sentence']}")
