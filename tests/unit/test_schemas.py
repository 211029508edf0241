"""The schemas of service/schemas/ agree with the code they describe: the algorithms'
parameters with the policies' declarations, the ranker URL pattern with the ranker
client, and the generated OpenAPI document with itself (links, errors, operations) and
with the door's limits (413 for a body over the limit, 414 for a request line over it,
431 for headers). That the API's answers conform to the response models:
tests/service/test_experiment_state.py and the contract fuzzing of
tests/service/test_contract_fuzz.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import bandits
from service import schemas
from service.api.openapi import openapi_document
from service.api.validation import parse

DOC = openapi_document(10, 100)


# ---------------------------------------------------------------------- algorithm params
@pytest.mark.parametrize("algorithm", sorted(bandits.ALGORITHMS))
def test_each_algorithm_documents_exactly_its_declared_parameters(algorithm):
    cls = bandits.get_algorithm(algorithm)
    keywords = set(cls.PARAMS)
    documented = DOC["components"]["schemas"][f"{_title(algorithm)}Params"]
    assert set(documented.get("properties", {})) == keywords
    assert documented["additionalProperties"] is False


def _title(algorithm: str) -> str:
    return "".join(p.title() for p in algorithm.split("_"))


def _bounds(algorithm: str, name: str) -> list[float]:
    """The extreme values the schema allows for a parameter."""
    prop = schemas.param_annotation(bandits.get_algorithm(algorithm).PARAMS[name])
    schema = _property_schema(prop)
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    if "exclusiveMinimum" in schema:
        lo = np.nextafter(lo, np.inf) if schema.get("type") == "number" else lo + 1
    return [lo, schema["maximum"]]


def _property_schema(annotation) -> dict:
    from pydantic import TypeAdapter

    return TypeAdapter(annotation).json_schema()


@pytest.mark.parametrize("algorithm", sorted(bandits.ALGORITHMS))
def test_every_value_the_schema_allows_makes_a_policy_that_runs(algorithm):
    """Each parameter at each of its bounds, each preset (the others at their defaults,
    c given so MergeDTS/MergeRUCB need no alpha > 0.5): the policy is built and runs 300
    steps."""
    declared = bandits.get_algorithm(algorithm).PARAMS
    names = [n for n, p in declared.items() if p.dtype in (int, float)]
    cases = [{}] + [{n: v} for n in names for v in _bounds(algorithm, n)]
    if "preset" in declared:
        cases += [{"preset": p} for p in bandits.get_algorithm(algorithm).PRESETS]
    for params in cases:
        if "c" in names and "c" not in params:
            params = {**params, "c": 10.0}
        body = {"name": "x", "algorithm": algorithm, "params": params,
                "interleaving": "team_draft_multileave" if algorithm == "mdb" else "team_draft",
                "rankers": [{"name": f"r{i}", "url": "http://127.0.0.1:9/"} for i in range(5)]}
        spec = parse(schemas.NewExperiment, body, status=422).root
        bandit = bandits.make_bandit(algorithm, 5, seed=1, **spec.params_dict())
        rng = np.random.default_rng(0)
        for _ in range(300):
            chosen = bandit.select()
            if bandit.multi:
                arms = sorted(set(chosen))
                bandit.update_many([(a, b, float(rng.random() < 0.6))
                                    for a in arms for b in arms if a < b])
            else:
                i, j = chosen
                bandit.update(i, j, float(rng.random() < 0.6))
        assert np.isfinite(bandit.W).all(), (algorithm, params)


def test_a_param_the_policy_does_not_take_is_named_with_the_valid_ones():
    body = {"name": "x", "algorithm": "rucb", "interleaving": "team_draft",
            "params": {"alfa": 0.6},
            "rankers": [{"name": "a", "url": "http://x/"}, {"name": "b", "url": "http://x/"}]}
    with pytest.raises(Exception, match="unknown parameter 'alfa' for rucb; valid: alpha"):
        parse(schemas.NewExperiment, body, status=422)


# ---------------------------------------------------------------------- the document
def test_every_operation_has_an_id_responses_and_error_schemas():
    ids = set()
    for path, ops in DOC["paths"].items():
        for method, op in ops.items():
            ids.add(op["operationId"])
            for status, response in op["responses"].items():
                content = response.get("content")
                if status == "302":  # a redirect: its Location, no body
                    assert "Location" in response["headers"], (method, path)
                    continue
                if status in ("204", "304"):  # no content; not modified
                    continue
                assert content, (method, path, status)
                if int(status) >= 400:
                    assert content["application/json"]["schema"] == {
                        "$ref": "#/components/schemas/Error"}, (method, path, status)
            if op.get("security"):
                assert "401" in op["responses"], (method, path)
            if "requestBody" in op:
                assert {"400", "413"} <= set(op["responses"]), (method, path)
                if len(op["requestBody"]["content"]) > 1:  # other encodings: 415 for the rest
                    assert "415" in op["responses"], (method, path)
    assert len(ids) == sum(len(ops) for ops in DOC["paths"].values())


def test_links_name_real_operations_and_parameters():
    by_id = {op["operationId"]: op for ops in DOC["paths"].values() for op in ops.values()}
    linked = set()
    for ops in DOC["paths"].values():
        for op in ops.values():
            for response in op["responses"].values():
                for link in response.get("links", {}).values():
                    target = by_id[link["operationId"]]
                    names = {p["name"] for p in target.get("parameters", [])}
                    assert set(link.get("parameters", {})) <= names, link
                    if "requestBody" in link:
                        assert "requestBody" in target
                    linked.add(link["operationId"])
    # every operation that needs an id someone else creates is the target of a link
    needs_ids = {op["operationId"] for path, ops in DOC["paths"].items() if "{" in path
                 for op in ops.values()} | {"search", "recordClicks"}
    assert needs_ids <= linked, needs_ids - linked


def test_operator_bodies_are_closed_and_front_end_bodies_open():
    comps = DOC["components"]["schemas"]
    for name in ("RankerIn", "ExperimentPatch", "NewUniformExperiment", "MergedtsParams"):
        assert comps[name]["additionalProperties"] is False, name
    for name in ("Clicks", "Click", "EndImpression"):
        assert comps[name].get("additionalProperties", True) is not False, name


def test_the_document_bounds_are_the_apis():
    search = {p["name"]: p for p in DOC["paths"]["/search"]["get"]["parameters"]}
    assert search["q"]["schema"]["maxLength"] == schemas.MAX_QUERY_CHARS == 1000
    assert search["k"]["schema"] == {"default": 10, "maximum": 100, "minimum": 1,
                                     "type": "integer"}
    clicks = DOC["components"]["schemas"]["Clicks"]["properties"]["clicks"]
    assert clicks["maxItems"] == schemas.MAX_CLICKS
    ranker = DOC["components"]["schemas"]["RankerIn"]["properties"]
    assert ranker["name"]["pattern"] == schemas.RANKER_NAME_PATTERN


def test_the_document_lists_what_the_door_limits_answer():
    doc = DOC
    assert "414" in doc["paths"]["/r"]["get"]["responses"]
    assert "413" in doc["paths"]["/judging/campaigns"]["post"]["responses"]
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            assert {"414", "431"} <= set(op["responses"]), (method, path)
            if "requestBody" in op:
                assert "413" in op["responses"], (method, path)
    for path in ("/search", "/clicks", "/impressions/{imp_id}/end", "/r"):
        method = "get" if path in ("/search", "/r") else "post"
        assert "front-end key" in doc["paths"][path][method]["responses"]["401"]["description"]


def test_ranker_urls_the_pattern_allows_are_urls_the_ranker_client_takes():
    import re

    from service.rankers.parsing import validate_url

    pattern = re.compile(schemas.RANKER_URL_PATTERN)
    for url in ("http://a", "https://a.b-c.d:65535/x?y=1&z=%20", "http://127.0.0.1:0",
                "http://x?q", "http://0/"):
        assert pattern.match(url) and validate_url(url) == url
    for url in ("ftp://a/", "http://", "http://a:65536/", "http://u:p@a/", "http://a/#f",
                "http://a/ b", "http://[::1]/", "HTTP://a/"):
        assert not pattern.match(url), url
