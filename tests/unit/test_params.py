"""Every declared parameter of every policy and judging algorithm goes through the same
checks (the one generic test of the declarations, :mod:`bandits.params`):

* the declared default is what the class uses when the parameter is left out, and
  giving it explicitly is accepted;
* a value just outside each bound (or not among the choices, or of the wrong type) is
  refused by the constructor, by ``check_params`` and by the API's schema, with a
  message that names the parameter;
* no constructor restates a parameter (the declaration is the one source);
* the generated reference page ``docs/reference/parameters.md`` is the declarations'.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError

import bandits
import judging
from bandits.params import Param, parse_text
from cli import docs
from service import schemas

POLICIES = sorted(bandits.ALGORITHMS)
JUDGES = sorted(judging.ALGORITHMS)
CASES = ([("policy", a, n) for a in POLICIES for n in bandits.get_algorithm(a).PARAMS]
         + [("judge", a, n) for a in JUDGES for n in judging.get_judge(a).PARAMS])


def _cls(kind: str, name: str) -> type:
    return bandits.get_algorithm(name) if kind == "policy" else judging.get_judge(name)


def _build(kind: str, name: str, **params):
    if kind == "policy":
        # c given so that MergeDTS's line 2 never needs alpha > 0.5 unless the test asks
        return bandits.make_bandit(name, 5, seed=1, **params)
    return judging.make_judge(name, 10, seed=1, **params)


def _check(kind: str, name: str, params: dict) -> dict:
    return (bandits.check_params if kind == "policy" else judging.check_params)(name, params)


def _outside(p: Param) -> list:
    """Values just outside each bound, not among the choices, or of the wrong type."""
    step = (lambda b, d: b + d) if p.dtype is int else (
        lambda b, d: float(np.nextafter(b, math.copysign(math.inf, d))))
    out: list = []
    if p.ge is not None:
        out.append(step(p.ge, -1))
    if p.gt is not None:
        out.append(p.gt)
    if p.le is not None:
        out.append(step(p.le, 1))
    if p.lt is not None:
        out.append(p.lt)
    if p.choices is not None:
        out += ["nope", 1]
    if p.dtype in (int, float):
        out += ["1", float("nan"), True]
    if p.dtype is int:
        out.append(2.5)
    if p.dtype is bool:
        out.append(1)
    if not p.nullable:
        out.append(None)
    return out


@pytest.mark.parametrize(("kind", "name", "param"), CASES)
def test_the_declared_default_is_what_the_class_uses(kind, name, param):
    p = _cls(kind, name).PARAMS[param]
    used = _build(kind, name).params()
    if p.default is None:  # computed (a preset's, a formula's, or "no limit")
        if param in ("alpha", "batch_size", "c") and kind == "policy":
            tuned = _cls(kind, name).PRESETS["tuned"][param]
            assert used[param] == tuned
        return
    assert used[param] == p.default and type(used[param]) is type(p.default), (param, used)
    # given explicitly, the default is accepted and changes nothing
    assert _check(kind, name, {param: p.default}) == {param: p.default}
    assert _build(kind, name, **{param: p.default}).params() == used


@pytest.mark.parametrize(("kind", "name", "param"), CASES)
def test_values_outside_the_declaration_are_refused_with_its_name(kind, name, param):
    p = _cls(kind, name).PARAMS[param]
    for value in _outside(p):
        with pytest.raises(ValueError, match=rf"'?{param}'? .*{name}|{param}") as exc:
            _check(kind, name, {param: value})
        assert param in str(exc.value), (value, exc.value)
        with pytest.raises(ValueError):
            _build(kind, name, **{param: value})


@pytest.mark.parametrize(("kind", "name", "param"), CASES)
def test_the_api_schema_has_the_same_bounds(kind, name, param):
    p = _cls(kind, name).PARAMS[param]
    adapter = TypeAdapter(schemas.param_annotation(p))
    for value in _outside(p):
        if value is None or isinstance(value, bool) or value != value:
            continue  # null, booleans and NaN are refused before the fields (test_api_door)
        if p.dtype in (int, float) and isinstance(value, str):
            continue
        with pytest.raises(ValidationError):
            adapter.validate_python(value, strict=True)
    if p.default is not None:
        adapter.validate_python(p.default, strict=True)


def test_an_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown parameter 'alfa' for rucb; valid: alpha"):
        bandits.make_bandit("rucb", 3, alfa=1)
    with pytest.raises(ValueError, match="valid: L, L_final, U, alpha, budget, d"):
        judging.make_judge("gauntlet", 5, dd=1)


def test_the_range_errors_say_what_was_wrong():
    with pytest.raises(ValueError, match="parameter 'alpha' of rucb must be greater than 0, "
                                         "got -1"):
        bandits.check_params("rucb", {"alpha": -1})
    with pytest.raises(ValueError, match=r"parameter .beta. of mdb must be at least 1, got 0\.5"):
        bandits.make_bandit("mdb", 3, beta=0.5)
    with pytest.raises(ValueError, match="unknown preset 'paper' for mergedts; valid: "
                                         "theoretical, tuned"):
        bandits.make_bandit("mergedts", 3, preset="paper")
    # names and types only: the API leaves the bounds to its fields' own messages
    assert bandits.check_params("rucb", {"alpha": -1}, ranges=False) == {"alpha": -1}


def test_command_line_values_are_parsed_by_the_declaration():
    alpha = bandits.get_algorithm("rucb").PARAMS["alpha"]
    batch = bandits.get_algorithm("mergedts").PARAMS["batch_size"]
    extra = judging.get_judge("prefbest").PARAMS["extra_final"]
    budget = judging.get_judge("prefbest").PARAMS["budget"]
    assert parse_text("alpha", alpha, "0.5") == 0.5
    assert parse_text("batch_size", batch, "16") == 16 and parse_text("b", batch, "1e3") == 1000
    assert parse_text("extra_final", extra, "true") is True
    assert parse_text("budget", budget, "none") is None
    for param, text, words in ((alpha, "abc", "a number"), (batch, "2.5", "an integer"),
                               (extra, "maybe", "true or false")):
        with pytest.raises(ValueError, match=f"--param k: expected {words}, got '{text}'"):
            parse_text("k", param, text)


@pytest.mark.parametrize("cls", sorted(
    {bandits.get_algorithm(a) for a in POLICIES} | {judging.get_judge(a) for a in JUDGES},
    key=lambda c: c.__name__))
def test_no_constructor_restates_a_parameter(cls):
    """The declaration is the one source: constructors take ``**params``."""
    keywords = [p.name for p in inspect.signature(cls.__init__).parameters.values()
                if p.kind == p.KEYWORD_ONLY and p.name != "seed"]
    assert keywords == [], cls
    for name, p in cls.PARAMS.items():
        assert p.desc and "\n" not in p.desc, (cls, name)


def test_the_reference_page_is_the_declarations():
    page = docs.ROOT / docs.PARAMETERS_PAGE
    assert page.read_text() == docs.render_parameters(), (
        "docs/reference/parameters.md is out of date: run python -m cli.docs")
    assert docs.main(["--check"]) == 0


def test_the_algorithms_page_states_defaults_from_the_declarations():
    """docs/algorithms.md names each policy's parameters and presets through the MkDocs
    hook's markers (docs/hooks.py), so its defaults are the declarations'."""
    import importlib.util
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("docs_hooks", root / "docs" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = (root / "docs" / "algorithms.md").read_text(encoding="utf-8")
    named = re.findall(r"<!-- rankduel:(?:params|presets) ([a-z0-9_]+) -->", page)
    assert {"rucb", "mergedts", "mergerucb", "mergemed", "recommended"} <= set(named)
    assert set(named) <= set(bandits.ALGORITHMS)
    out = hooks.on_page_markdown(page, None, None, None)
    assert "rankduel:params" not in out and "rankduel:presets" not in out
    assert "`alpha` (0.51)" in out and "| `tuned` | 0.236 | 24 | 4e+06 |" in out
    assert "`verify_scale` (0.5)" in out  # mergemed's and recommended's, declared once
