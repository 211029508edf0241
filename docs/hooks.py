"""MkDocs hooks: the reference pages generated from the code at build time.

Two pages hold a marker that :func:`on_page_markdown` replaces, so they cannot drift from
the code they describe:

- ``<!-- rankduel:configuration -->`` becomes the table of every setting of
  :class:`service.config.Config` (field, environment variable, type, default, meaning from
  the class docstring): :func:`configuration_reference`.
- ``<!-- rankduel:quickstart -->`` becomes the README's quick start (tested by
  ``tests/service/test_quickstart.py``): :func:`readme_section`.
- ``<!-- rankduel:benchmarks -->`` becomes the headline table of ``BENCHMARKS.md``:
  :func:`benchmarks_headline`.
- ``<!-- rankduel:openapi -->`` becomes the HTTP API reference rendered from the OpenAPI
  document the service serves (:func:`service.api.openapi.openapi_document`):
  :func:`http_api_reference`.
- ``<!-- rankduel:guardrails -->`` becomes the table of the guardrail thresholds
  (:data:`rollout.guardrails.PARAMS`): :func:`guardrails_reference`.
- ``<!-- rankduel:params NAME -->`` becomes the parameters of policy ``NAME`` with their
  defaults, inline (``alpha`` (0.51), ...), and ``<!-- rankduel:presets NAME -->`` the
  table of its presets, both read from the class's ``PARAMS`` and ``PRESETS``
  (:mod:`bandits.params`): :func:`policy_params` and :func:`policy_presets`. The
  algorithms page states no default by hand.

``tests/service/test_docs.py`` builds the site with ``--strict`` and checks both against the code.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `mkdocs build` from the repository without an install
    sys.path.insert(0, str(ROOT))

CONFIG_MARKER = "<!-- rankduel:configuration -->"
OPENAPI_MARKER = "<!-- rankduel:openapi -->"
QUICKSTART_MARKER = "<!-- rankduel:quickstart -->"
BENCHMARKS_MARKER = "<!-- rankduel:benchmarks -->"
GUARDRAILS_MARKER = "<!-- rankduel:guardrails -->"
PARAMS_MARKER = re.compile(r"<!-- rankduel:params ([a-z0-9_]+) -->")
PRESETS_MARKER = re.compile(r"<!-- rankduel:presets ([a-z0-9_]+) -->")


# ---------------------------------------------------------------- policy parameters


def policy_params(name: str) -> str:
    """The parameters of policy ``name`` with their declared defaults, inline:
    ``alpha`` (0.51), ``beta`` (1.5)."""
    from bandits import get_algorithm
    from bandits.params import declared_default

    declared = get_algorithm(name).PARAMS
    if not declared:
        return "none"
    return ", ".join(f"`{key}` ({declared_default(p)})" for key, p in declared.items())


def policy_presets(name: str) -> str:
    """The table of policy ``name``'s presets (``PRESETS``): alpha, batch_size, c."""
    from bandits import get_algorithm
    from cli.docs import presets_table

    lines = presets_table(get_algorithm(name).PRESETS)
    return "\n".join(lines).strip() + "\n"


def guardrails_reference() -> str:
    """The guardrail thresholds, from their declaration (name, type, default, bounds,
    meaning)."""
    from cli.docs import param_table
    from rollout.guardrails import PARAMS

    return "\n".join(param_table(PARAMS))


def benchmarks_headline(repo_url: str | None = None) -> str:
    """BENCHMARKS.md's headline table (its text up to its first ``## `` section), one
    source for the repository file and the site's summary page.

    Links into ``docs/`` become links between pages. Links to other files of the
    repository (``bench/results/...``) are no pages of the site: with ``repo_url`` set in
    mkdocs.yml they become absolute links to the repository, otherwise the path in code
    (a relative link would be a broken link, which ``mkdocs build --strict`` refuses)."""
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    head = re.split(r"\n## ", text, maxsplit=1)[0]
    head = head.split("\n", 1)[1]  # without the "# Benchmarks" title
    head = re.sub(r"\]\(docs/([^)]*)\)", r"](\1)", head)

    def outside(match: re.Match) -> str:
        label, target = match.group(1), match.group(2)
        if repo_url:
            return f"[{label}]({repo_url.rstrip('/')}/blob/main/{target})"
        path = target.split("#", 1)[0]
        return label if label.strip("`") == path else f"{label} (`{path}`)"

    return re.sub(r"\[([^\]]*)\]\(((?!https?:|#)[^)]*)\)",
                  lambda m: m.group(0) if _is_page(m.group(2)) else outside(m), head)


def _is_page(target: str) -> bool:
    """A link target that is a page of the site (a Markdown file under docs/)."""
    path = target.split("#", 1)[0]
    return bool(path) and (ROOT / "docs" / path).is_file()


def readme_section(title: str) -> str:
    """The body of the README's ``## title`` section (the quick start has one source:
    the README, whose commands ``tests/service/test_quickstart.py`` runs)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not match:
        raise ValueError(f"README.md has no '## {title}' section")
    body = match.group(1)
    # README links point into docs/; on the site they are relative to the page
    return re.sub(r"\]\(docs/([^)]*)\)", r"](\1)", body)


# ---------------------------------------------------------------- configuration


def setting_descriptions() -> dict[str, str]:
    """Each setting's meaning, from the ``Parameters`` section of ``Config``'s docstring
    (numpydoc: a line of names, then the indented description)."""
    from service.config import Config

    doc = Config.__doc__ or ""
    section = doc.split("Parameters\n    ----------\n", 1)[-1]
    out: dict[str, str] = {}
    names: list[str] = []
    for line in section.splitlines():
        if not line.strip():
            continue
        if line.startswith("        "):
            for name in names:
                out[name] = (out.get(name, "") + " " + line.strip()).strip()
        elif line.startswith("    "):
            names = [n.strip() for n in line.split(",")]
    return out


def _rst_to_md(text: str) -> str:
    """The docstring's reST roles and literals as Markdown."""
    text = re.sub(r":(?:mod|data|class|func|meth):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _default(name: str, value: Any) -> str:
    from service.config import SECRETS

    if name == "broker_url":
        return "the value of `REDIS_URL`"
    if value == "" and name in SECRETS:
        return "none"
    if value == "":
        return "empty"
    if isinstance(value, bool):
        return "`1`" if value else "`0`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def configuration_rows() -> list[dict[str, str]]:
    """One row per setting: ``setting``, ``variable``, ``type``, ``default``, ``meaning``."""
    from service.config import ENV, Config

    meaning = setting_descriptions()
    rows = []
    for field in dataclasses.fields(Config):
        rows.append({
            "setting": field.name,
            "variable": ENV.get(field.name, ""),
            "type": str(field.type),
            "default": _default(field.name, field.default),
            "meaning": _rst_to_md(meaning.get(field.name, "")),
        })
    return rows


def configuration_reference() -> str:
    """The Markdown table of every setting."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    for row in configuration_rows():
        var = f"`{row['variable']}`" if row["variable"] else "—"
        text = row["meaning"].replace("|", "\\|")
        lines.append(f"| {var} | {row['default']} | {text} "
                     f"File key `{row['setting']}` ({row['type']}). |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- HTTP API


def _ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref", "")
    return ref.rsplit("/", 1)[-1] if ref else None


def _type(schema: dict[str, Any]) -> str:
    """A short type for a JSON schema."""
    if not isinstance(schema, dict):
        return ""
    name = _ref_name(schema)
    if name:
        return f"[{name}](#{name.lower()})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(dict.fromkeys(_type(s) for s in schema[key]))
    if "enum" in schema:
        return ", ".join(f"`{v}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    kind = schema.get("type", "")
    if kind == "array":
        return f"list of {_type(schema.get('items', {})) or 'any'}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return kind or "any"


def _bounds(schema: dict[str, Any]) -> str:
    parts = []
    for key, fmt in (("minimum", "≥ {}"), ("exclusiveMinimum", "> {}"), ("maximum", "≤ {}"),
                     ("exclusiveMaximum", "< {}"), ("minLength", "length ≥ {}"),
                     ("maxLength", "length ≤ {}"), ("minItems", "≥ {} items"),
                     ("maxItems", "≤ {} items"), ("pattern", "matches `{}`")):
        if key in schema:
            parts.append(fmt.format(schema[key]))
    for sub in schema.get("anyOf", []):
        if isinstance(sub, dict) and sub.get("type") != "null":
            parts += [p for p in _bounds(sub).split("; ") if p]
    return "; ".join(dict.fromkeys(parts))


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _fields_table(schema: dict[str, Any]) -> list[str]:
    props = schema.get("properties", {})
    if not props:
        return []
    required = set(schema.get("required", []))
    lines = ["| field | type | required | default | notes |", "|---|---|---|---|---|"]
    for name, prop in props.items():
        default = f"`{json.dumps(prop['default'])}`" if "default" in prop else ""
        notes = "; ".join(p for p in (_rst_to_md(prop.get("description", "")), _bounds(prop))
                          if p)
        lines.append(f"| `{name}` | {_cell(_type(prop))} | "
                     f"{'**required**' if name in required else 'optional'} | "
                     f"{_cell(default)} | {_cell(notes)} |")
    return lines


def http_api_reference(doc: dict[str, Any] | None = None) -> str:
    """The OpenAPI document as Markdown: every operation, then every schema."""
    if doc is None:
        from service.api.openapi import openapi_document
        from service.config import Config

        doc = openapi_document(default_k=Config.default_k, max_k=Config.max_k)
    out: list[str] = [doc["info"].get("description", "").strip(), "", "## Operations", ""]
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            out += [f"### {method.upper()} `{path}`", "", op.get("summary", "") + ".", ""]
            if op.get("security"):
                out += ["Operator: `Authorization: Bearer` with the admin token "
                        "(`/metrics` also takes the metrics token).", ""]
            params = op.get("parameters", [])
            if params:
                out += ["| parameter | in | type | required | notes |", "|---|---|---|---|---|"]
                for p in params:
                    schema = p.get("schema", {})
                    notes = "; ".join(x for x in (
                        p.get("description", "") or schema.get("description", ""),
                        f"default `{json.dumps(schema['default'])}`" if "default" in schema
                        else "",
                        _bounds(schema)) if x)
                    out.append(f"| `{p['name']}` | {p['in']} | {_cell(_type(schema))} | "
                               f"{'**required**' if p.get('required') else 'optional'} | "
                               f"{_cell(notes)} |")
                out.append("")
            body = op.get("requestBody")
            if body:
                kinds = ", ".join(f"`{k}`" for k in body["content"])
                schema = body["content"].get("application/json", {}).get("schema", {})
                need = "required" if body.get("required") else "optional"
                out += [f"Body ({need}; {kinds}): {_type(schema)}."
                        + (f" {body['description']}" if body.get("description") else ""), ""]
            out += ["| status | meaning |", "|---|---|"]
            for status, resp in op.get("responses", {}).items():
                schema = resp.get("content", {}).get("application/json", {}).get("schema")
                what = _cell(resp.get("description", ""))
                if schema and _ref_name(schema) not in (None, "Error"):
                    what += f": {_type(schema)}"
                out.append(f"| {status} | {what} |")
            out.append("")
    out += ["## Schemas", ""]
    for name, schema in sorted(doc["components"]["schemas"].items()):
        out += [f"### {name}", ""]
        if schema.get("description"):
            out += [_cell(_rst_to_md(schema["description"])), ""]
        table = _fields_table(schema)
        out += (table or [f"Type: {_type(schema)}."]) + [""]
    return "\n".join(out)


# ---------------------------------------------------------------- the hook


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the markers with the generated references."""
    if CONFIG_MARKER in markdown:
        markdown = markdown.replace(CONFIG_MARKER, configuration_reference())
    if QUICKSTART_MARKER in markdown:
        markdown = markdown.replace(QUICKSTART_MARKER, readme_section("Quick start"))
    if BENCHMARKS_MARKER in markdown:
        markdown = markdown.replace(BENCHMARKS_MARKER,
                                    benchmarks_headline(config.get("repo_url")))
    if OPENAPI_MARKER in markdown:
        markdown = markdown.replace(OPENAPI_MARKER, http_api_reference())
    if GUARDRAILS_MARKER in markdown:
        markdown = markdown.replace(GUARDRAILS_MARKER, guardrails_reference())
    markdown = PARAMS_MARKER.sub(lambda m: policy_params(m.group(1)), markdown)
    markdown = PRESETS_MARKER.sub(lambda m: policy_presets(m.group(1)), markdown)
    return markdown
