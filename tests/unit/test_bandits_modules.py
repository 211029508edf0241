"""The policies' package stays in small modules, one concept each, and declares every
parameter once: no file of ``bandits/`` over :data:`MAX_LINES` lines, and no parameter
name constructed with ``Param(...)`` in two places (a class whose default or words differ
takes the one declaration with :meth:`bandits.params.Param.override`). Read with
:mod:`ast`; nothing is imported for the declarations."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BANDITS = ROOT / "bandits"
#: the most lines a module of bandits/ may have (docs/architecture.md, "one module per
#: concept")
MAX_LINES = 450


def long_modules(folder: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """``file -> lines`` for each ``*.py`` of ``folder`` (recursively) over ``limit``."""
    return {str(p.relative_to(folder)): n for p in sorted(folder.rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > limit}


def param_declarations(source: str, where: str = "<source>") -> dict[str, list[str]]:
    """``parameter name -> [where:line, ...]`` for every ``Param(...)`` constructed in
    ``source``: as the value of a string key of a dict (``{"alpha": Param(...)}``) it is
    that key; assigned to a constant (``ALPHA = Param(...)``) it is the constant's name in
    lower case. A ``Param(...)`` anywhere else is listed under ``"?"`` (it could not be
    told apart from a second declaration)."""
    tree = ast.parse(source, where)
    named: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    named[id(value)] = key.value
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                named[id(node.value)] = targets[0].id.lower()
    out: dict[str, list[str]] = defaultdict(list)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "Param"):
            out[named.get(id(node), "?")].append(f"{where}:{node.lineno}")
    return dict(out)


def declared_twice(folder: Path) -> dict[str, list[str]]:
    """The parameter names of ``folder``'s modules constructed more than once, or where
    the name cannot be read, with where."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(folder.rglob("*.py")):
        for name, places in param_declarations(path.read_text(), path.name).items():
            found[name] += places
    return {name: places for name, places in found.items()
            if len(places) > 1 or name == "?"}


def test_no_bandits_module_is_over_the_limit():
    assert not long_modules(BANDITS), long_modules(BANDITS)


def test_every_parameter_is_declared_once():
    assert not declared_twice(BANDITS), declared_twice(BANDITS)


def test_the_checks_can_fail(tmp_path):
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_LINES)
    assert long_modules(tmp_path) == {"long.py": MAX_LINES + 1}
    (tmp_path / "a.py").write_text('P = {"alpha": Param(float, 0.5, "α", gt=0)}\n')
    (tmp_path / "b.py").write_text('ALPHA = Param(float, 0.51, "α", gt=0)\n'
                                   'BETA = ALPHA.override(default=0.6)\n')
    assert declared_twice(tmp_path) == {"alpha": ["a.py:1", "b.py:1"]}
    (tmp_path / "b.py").write_text("ALPHA = P['alpha'].override(default=0.51)\n"
                                   "def f():\n    return Param(int, 1, 'k')\n")
    assert declared_twice(tmp_path) == {"?": ["b.py:3"]}


@pytest.mark.parametrize("name", ["alpha", "c", "verify_scale", "delta", "check_every"])
def test_shared_parameters_keep_one_type(name):
    # the same name is the same parameter wherever a policy takes it (override keeps
    # the type)
    from bandits import ALGORITHMS, get_algorithm

    types = {get_algorithm(a).PARAMS[name].dtype for a in ALGORITHMS
             if name in get_algorithm(a).PARAMS}
    assert len(types) == 1, (name, types)
