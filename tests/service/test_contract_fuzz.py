"""Contract fuzzing (issue 11): schemathesis generates requests from the live
``/openapi.json`` and sends them to the real app (real Redis, real port), checking every
response against the document.

* ``test_every_operation_with_the_token`` — every operation, positive and negative data
  (schemathesis' examples, coverage and fuzzing phases), with the admin token;
* ``test_operator_operations_without_a_token`` — the operator operations without it: all 401;
* ``test_stateful_workflows`` — sequences that follow the document's OpenAPI links
  (create an experiment, search it, click, end, add and retire rankers, pause...);
* ``test_links_lead_everywhere`` — the links themselves, followed one by one: each gives
  its target what it needs, and every operation that needs an id is reached by one.

Every check of schemathesis is on: no 5xx (``/search``'s documented 502, every ranker
failed, is allowed), every status documented, every body conforming to its schema, a
schema-valid request never refused with 400 or 422 (except for the refusals no schema can
express, listed in :data:`SEMANTIC_422` and :data:`SEMANTIC_400`), a schema-invalid one
never accepted.

Generated ranker URLs are pointed at the test's own toy rankers (a valid URL stays
valid), so the fuzzer never calls an outside host.

The size of the run: ``RANKDUEL_FUZZ_EXAMPLES`` examples per operation (default 12, for
CI), ``RANKDUEL_FUZZ_SCENARIOS`` stateful scenarios (default 10) and
``RANKDUEL_FUZZ_COVERAGE`` (``positive`` by default, ``all`` for the negative coverage
cases too), a fixed seed and derandomized generation; ``RANKDUEL_FUZZ_REPORT=path`` writes
the figures as JSON and lets the run go on past failures (``bench/fuzz.py``, the long run,
sets them all).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck
from schemathesis.core.failures import FailureGroup, ServerError
from schemathesis.openapi.checks import RejectedPositiveData

from service.schemas import RANKER_URL_PATTERN

ADMIN = "test-admin-token-0123456789"
EXAMPLES = int(os.environ.get("RANKDUEL_FUZZ_EXAMPLES", "12"))
SCENARIOS = int(os.environ.get("RANKDUEL_FUZZ_SCENARIOS", "10"))
REPORT = os.environ.get("RANKDUEL_FUZZ_REPORT")
SEED = int(os.environ.get("RANKDUEL_FUZZ_SEED", "20261123"))
#: the coverage phase's modes: "positive" (its boundary values inside every bound: what
#: finds a schema-valid request refused) for CI, "all" (also one case per way to break each
#: constraint, ~1,500 requests for POST /experiments alone) for the long run
COVERAGE = os.environ.get("RANKDUEL_FUZZ_COVERAGE", "positive")

#: 422s a schema-valid request can get, by operation: what no JSON Schema can express
SEMANTIC_422 = {
    "POST /clicks": ("was not shown in impression", "was shown at rank"),
    "POST /impressions/{imp_id}/end": ("was not shown in impression", "was shown at rank"),
    "POST /experiments": ("ranker names must be unique", "true_preferences", "true_best",
                          "C(eps)", "did not answer the test query",
                          "go together", "add up to",
                          # a declaration's fields together (service.outcomes.declared.
                          # problems), an A/B test's metric named like its own
                          "is declared twice", ".action: required", "is the click metric",
                          "the click metric takes no", "metric has a cap",
                          "an A/B test measures itself",
                          # the metric the policy learns from, without metrics declared
                          "field 'primary' needs 'metrics'"),
    "PATCH /experiments/{exp_id}": ("send a new name or a new traffic",),
    "POST /experiments/{exp_id}/rankers": ("did not answer the test query",),
    "POST /placements": ("did not answer the test query",),
    "PATCH /placements/{name}": ("did not answer the test query",),
    "GET /r": ("not shown at rank", "not the one shown"),
    # which actions the running experiments declare, a value a sum metric needs, an
    # impression's age and id: the service's state, not the body's shape
    "POST /outcomes": ("declares no metric of action", "declares a metric of action",
                       "sums the values", "beyond the window", "not an impression id"),
    "GET /search": ("is not the query of page 1", "were never shown"),
    "POST /judging/campaigns": ("fewer than two distinct items", "appears twice"),
    "POST /judging/tasks/{task_id}/judgments": ("each of its pairs", "judged once"),
    # an experiment that does not exist; a URL the allow-list refuses (the rankers')
    "POST /webhooks": ("no experiment", "field 'url': host"),
}
#: 400s a schema-valid request can get: a next result page deeper than
#: RANKDUEL_MAX_DEPTH (page·k, a product no schema bounds), without the impression it
#: continues, or with both or neither of experiment and placement (dependencies between
#: parameters)
SEMANTIC_400 = {
    "GET /search": ("beyond the deepest result served", "continues an impression",
                    "one of the two"),
}
TOY_RANKERS = ("good", "bad", "mid", "alt")
_URL = re.compile(RANKER_URL_PATTERN)


# ---------------------------------------------------------------------- bookkeeping
@dataclass
class Tally:
    """What the run sent and saw; shared by the three tests of the module."""

    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    by_operation: dict[str, Counter] = field(default_factory=dict)
    server_errors: list[str] = field(default_factory=list)
    #: operations reached past their 404, with ids a link supplied: a 2xx, or a refusal
    #: that comes after the lookup (403 token, 409 state, 502 rankers, a 422 of
    #: SEMANTIC_422). schemathesis merges the link's values into generated ones (e.g. the
    #: linked click into a generated list of clicks), so a 2xx is not always in reach.
    reached: set[str] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)
    documented: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, case, response, failures: list[str]) -> None:
        label = f"{case.method.upper()} {case.path}"
        with self.lock:
            self.requests += 1
            self.statuses[response.status_code] += 1
            self.by_operation.setdefault(label, Counter())[response.status_code] += 1
            if response.status_code >= 500 and not _documented_5xx(label, response):
                self.server_errors.append(f"{label} -> {response.status_code}: "
                                          f"{response.text[:300]}\n{case.as_curl_command()}")
            self.violations += failures
            if (200 <= response.status_code < 300 or response.status_code in (403, 409, 502)
                    or _semantic_422(label, response)):
                self.reached.add(label)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "operations": {k: {str(s): n for s, n in sorted(v.items())}
                           for k, v in sorted(self.by_operation.items())},
            "server_errors": len(self.server_errors),
            "unreached": sorted(self.documented - self.reached),
            "violations": len(self.violations),
            "failures": self.server_errors[:20] + self.violations[:20],
        }


def _documented_5xx(label: str, response) -> bool:
    return label == "GET /search" and response.status_code == 502


TALLY = Tally()


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if REPORT:
        with open(REPORT, "w") as f:
            json.dump(TALLY.as_dict(), f, indent=1)


def _check(case, response, *, expect: int | None = None, **kwargs: Any) -> None:
    """Validate one response with every check of schemathesis (and, with ``expect``, its
    status); record it; raise on a failure unless in report mode."""
    failures: list[str] = []
    try:
        case.validate_response(response, **kwargs)
    except FailureGroup as group:
        # a 5xx is counted as such (Tally.server_errors), not also as a violation
        failures = [f"{f.title}: {f.message[:300]}" for f in group.exceptions
                    if not _semantic_refusal(case, response, f)
                    and not isinstance(f, ServerError)]
    if expect is not None and response.status_code != expect:
        failures.append(f"expected {expect}")
    failures = [f"{case.method.upper()} {case.path}: {f}\n-> {response.status_code} "
                f"{response.text[:300]}\n{case.as_curl_command()[:1500]}" for f in failures]
    TALLY.record(case, response, failures)
    if (failures or TALLY.server_errors) and not REPORT:
        raise AssertionError("\n\n".join(failures + TALLY.server_errors))


def _semantic_refusal(case, response, failure) -> bool:
    """A 422 for what no schema can express (``SEMANTIC_422``) is not a contract breach."""
    return isinstance(failure, RejectedPositiveData) and _semantic_422(
        f"{case.method.upper()} {case.path}", response)


def _semantic_422(label: str, response) -> bool:
    """A 422 of ``SEMANTIC_422`` (or a 400 of ``SEMANTIC_400``)."""
    table = {422: SEMANTIC_422, 400: SEMANTIC_400}.get(response.status_code, {})
    if label not in table:
        return False
    try:
        message = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return False
    return any(fragment in message for fragment in table[label])


# ---------------------------------------------------------------------- the schema
TOY_BASE: list[str] = []  # the toy rankers' URL, set by the api_schema fixture


def _fix_ranker(ranker: dict, n: int) -> None:
    url = ranker.get("url")
    if TOY_BASE and isinstance(url, str) and _URL.match(url):
        ranker["url"] = f"{TOY_BASE[0]}/r/{TOY_RANKERS[n % len(TOY_RANKERS)]}"
    timeout = ranker.get("timeout_ms")
    if (timeout is None and "name" in ranker) or (
            isinstance(timeout, int) and not isinstance(timeout, bool) and 1 <= timeout < 2000):
        ranker["timeout_ms"] = 2000  # the service's default is shorter than a loaded CI's


@schemathesis.hook
def before_call(context, case, kwargs):
    """Every valid ranker URL in a body → one of the toy rankers, with a timeout long
    enough on a busy machine (values stay schema-valid). A global hook (schemathesis
    allows before_call nowhere else), applied to every case of every phase, so the fuzzer
    never calls another host."""
    body = case.body
    if isinstance(body, dict):
        if isinstance(body.get("rankers"), list):
            for n, r in enumerate(body["rankers"]):
                if isinstance(r, dict):
                    _fix_ranker(r, n)
        elif "url" in body:
            _fix_ranker(body, 0)
        if isinstance(body.get("control"), dict):  # a placement's control ranker
            _fix_ranker(body["control"], 0)


def load_schema(url: str, *, token: str | None, coverage: bool = True):
    """The live document, with the run's configuration: ``token`` for the bearer scheme
    (None: schemathesis sends none, or a made-up one), ``coverage`` for schemathesis'
    coverage phase (its boundary and missing-field cases)."""
    config = schemathesis.Config.from_dict({
        "seed": SEED,
        "suppress-health-check": ["all"],
        "generation": {"mode": "all", "max-examples": EXAMPLES, "deterministic": True},
        "checks": {"enabled": True,
                   # a body over the size limit is refused too
                   "negative_data_rejection": {"expected-statuses": [
                       400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]}},
        "operations": [
            {"include-path": "/search", "checks": {
                "not_a_server_error": {"expected-statuses": ["2xx", "3xx", "4xx", 502]}}},
        ],
        "phases": {"coverage": {"enabled": coverage, "generation": {"mode": COVERAGE}}},
        **({"auth": {"openapi": {"bearer": {"bearer": token}}}} if token else {}),
    })
    return schemathesis.openapi.from_url(url, config=config)


@pytest.fixture(scope="module")
def api_schema(api, ranker_server):
    TOY_BASE[:] = [ranker_server.url]
    schema = load_schema(f"{api.url}/openapi.json", token=ADMIN)
    TALLY.documented = {r.ok().label for r in schema.get_all_operations()}
    return schema


SETTINGS = hypothesis.settings(max_examples=EXAMPLES, derandomize=True, deadline=None,
                               suppress_health_check=list(HealthCheck), database=None,
                               print_blob=True)


def run_every_operation(schema, test_func, paths: str = "") -> None:
    """Run ``test_func(case)`` over every operation of ``schema`` with schemathesis'
    phases (explicit examples, coverage, fuzzing), as ``@schema.parametrize()`` does.

    Called from a plain test because ``schemathesis.pytest.from_fixture`` (the loader for
    a schema served by a fixture) sets ``node._nodeid``, which pytest 9.2 renamed; this
    uses the same per-operation test builder. A failing operation does not stop the
    others; the failures are raised together at the end. ``paths``: only the operations
    whose path starts with it.
    """
    from schemathesis.pytest.lazy import get_all_tests

    errors = []
    for result in get_all_tests(schema=schema, test_func=test_func, settings=SETTINGS,
                                given_kwargs=None):
        operation, sub_test = result.ok()
        if not operation.path.startswith(paths):
            continue
        try:
            sub_test()
        except (AssertionError, FailureGroup) as exc:
            errors.append(f"{operation.label}: {exc}")
        except hypothesis.errors.Flaky:  # see test_stateful_workflows
            pass
    assert not errors, "\n\n".join(errors)
    _assert_clean()


def _assert_clean() -> None:
    """Every response was checked and recorded when it came: none may have failed."""
    if not REPORT:
        assert not TALLY.server_errors and not TALLY.violations, "\n\n".join(
            TALLY.server_errors + TALLY.violations)


# ---------------------------------------------------------------------- the tests
def test_every_operation_with_the_token(api_schema):
    def check(case):
        _check(case, case.call())

    run_every_operation(api_schema, check)


def test_operator_operations_without_a_token(api):
    def check(case):  # no Authorization header, or a made-up token
        positive = case.meta is None or case.meta.generation.mode.is_positive
        _check(case, case.call(), expect=401 if positive else None)

    # the fuzzing phase only: what the coverage phase adds is the body's boundaries, which
    # an unauthenticated request never reaches
    schema = load_schema(f"{api.url}/openapi.json", token=None, coverage=False)
    run_every_operation(schema, check, paths="/experiments")


def test_stateful_workflows(api_schema):
    class Workflows(api_schema.as_state_machine()):
        def validate_response(self, response, case, additional_checks=None, **kwargs):
            _check(case, response, additional_checks=additional_checks,
                   transport_kwargs=kwargs)

    # A scenario can replay differently: the server's state is not the generator's to
    # reset (timing, other tests' experiments), and Hypothesis then calls the run flaky;
    # schemathesis' own runner passes such a suite too. What failed is in TALLY.
    with contextlib.suppress(hypothesis.errors.Flaky):
        Workflows.run(settings=hypothesis.settings(
            SETTINGS, max_examples=SCENARIOS, stateful_step_count=20))
    _assert_clean()
    # How far the random workflows got (every operation past its 404, in the long run's
    # figures) depends on the state earlier tests left; test_links_lead_everywhere checks
    # the links themselves, deterministically.


# ---------------------------------------------------------------------- the links
#: operations whose success needs a state no link can make, and the documented status
#: they answer without it: a confirmation needs a certified verdict on a placement
NEEDS_STATE = {"confirmExperiment": 409}
#: what a link leaves to the client, per target operation (valid values)
REST = {
    "search": {"query": {"q": "lake", "k": 3}},
    "renameExperiment": {"body": {"name": "renamed"}},
    "addRanker": {"body": {"name": "late", "url": "{toy}/r/mid"}},
    "addRankerVersion": {"body": {"url": "{toy}/r/alt"}},
    "changeLifecycle": {"path": {"action": "pause"}},
    "updatePlacement": {"body": {"control": {"name": "prod2", "url": "{toy}/r/mid"}}},
}


def _evaluate(expression, response: dict, path_params: dict):
    """An OpenAPI runtime expression (the two kinds the document uses), in a value."""
    if isinstance(expression, dict):
        return {k: _evaluate(v, response, path_params) for k, v in expression.items()}
    if isinstance(expression, list):
        return [_evaluate(v, response, path_params) for v in expression]
    if not isinstance(expression, str) or not expression.startswith("$"):
        return expression
    if expression.startswith("$request.path."):
        return path_params[expression.removeprefix("$request.path.")]
    value = response
    for part in expression.removeprefix("$response.body#/").split("/"):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def test_links_lead_everywhere(api, ranker_server):
    """Follow every link of the live document from a created experiment: each one gives
    the ids its target needs (the target answers 2xx), and every operation that needs an
    id someone else makes is reached through a link."""
    import requests

    doc = requests.get(f"{api.url}/openapi.json", timeout=10).json()
    ops = {op["operationId"]: (method, path, op) for path, item in doc["paths"].items()
           for method, op in item.items()}
    auth = {"Authorization": f"Bearer {ADMIN}"}
    toy = ranker_server.url
    visited: set[str] = set()

    def call(op_id: str, path_params: dict, query: dict | None = None, body=None):
        method, path, _ = ops[op_id]
        url = api.url + path.format(**path_params)
        r = requests.request(method, url, params=query, json=body, headers=auth, timeout=10,
                             allow_redirects=False)
        assert (200 <= r.status_code < 300 or r.status_code == 302
                or r.status_code == NEEDS_STATE.get(op_id)), (op_id, r.status_code, r.text)
        visited.add(op_id)
        return r

    def follow(source: str, status: int, response: dict, path_params: dict, depth=0) -> None:
        links = ops[source][2]["responses"][str(status)].get("links", {})
        # the experiment's deletion last: every other link still needs it
        for link in sorted(links.values(), key=lambda x: x["operationId"] == "deleteExperiment"):
            target = link["operationId"]
            if target in visited and depth:
                continue
            rest = json.loads(json.dumps(REST.get(target, {})).replace("{toy}", toy))
            values = _evaluate(link.get("parameters", {}), response, path_params)
            params = {**rest.get("path", {}),
                      **{k: v for k, v in values.items() if "{" + k + "}" in ops[target][1]}}
            query = {**rest.get("query", {}),
                     **{k: v for k, v in values.items() if "{" + k + "}" not in ops[target][1]}}
            body = _evaluate(link["requestBody"], response, path_params) \
                if "requestBody" in link else rest.get("body")
            if target == "submitJudgments":  # the link shows one judgment; a task has 13
                body["judgments"] = [{"pair": p["pair"], "choice": "left"}
                                     for p in response["pairs"]]
            r = call(target, params, query or None, body)
            # a redirect or a text export has no JSON body to follow links from
            if r.headers.get("Content-Type", "").startswith("application/json"):
                follow(target, r.status_code, r.json(), params, depth + 1)

    created = call("createExperiment", {}, body={
        "name": "links", "algorithm": "uniform", "interleaving": "team_draft",
        "rankers": [{"name": n, "url": f"{toy}/r/{n}"} for n in ("good", "bad", "alt")]})
    listed = call("listExperiments", {})  # before the created one's links delete it
    follow("listExperiments", 200, listed.json(), {})
    follow("createExperiment", 201, created.json(), {})
    items = [{"id": f"i{n}", "text": f"answer {n}"} for n in range(4)]
    campaign = call("createCampaign", {}, body={"name": "links", "queries": [
        {"id": "Q1", "text": "a question", "items": items, "test_pairs": [
            {"better": items[0], "worse": {"id": "off", "text": "off topic"}}]}]})
    follow("createCampaign", 201, campaign.json(), {})
    placement = call("createPlacement", {}, body={
        "name": "links", "control": {"name": "prod", "url": f"{toy}/r/good"}})
    follow("createPlacement", 201, placement.json(), {})
    hook = call("createWebhook", {}, body={
        "url": f"{toy}/r/good", "events": ["ramp_step"], "secret": "links-0123456789abcdef"})
    follow("createWebhook", 201, hook.json(), {})
    needs_ids = {op_id for op_id, (_, path, _) in ops.items() if "{" in path}
    assert needs_ids | {"search", "recordClicks"} <= visited, sorted(
        (needs_ids | {"search", "recordClicks"}) - visited)
