"""The UBI 1.3.0 JSON schemas the tests validate UBI documents with (tests/data/ubi-1.3.0,
reconstructed: see its README; ``RANKDUEL_UBI_SCHEMAS=DIR`` adds the official files).

About ``action_name``: the released 1.3.0 event schema states it as a ``oneOf`` of an
enum of the standard names and any string, so a strict validator rejects ``click`` (it
matches both branches). Its description says the standard names are defaults and any
name may be passed, which is ``anyOf``: the schema is read so (:func:`anyof_names`),
and only there (``position``'s ``oneOf`` of ordinal or x,y is kept strict).
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

import jsonschema

SCHEMAS = Path(__file__).resolve().parent / "data" / "ubi-1.3.0"
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def anyof_names(schema: dict) -> dict:
    """The schema with each ``oneOf`` of [an enum of names, any string] read as
    ``anyOf`` (``action_name``, ``object_id_type``: see the module docstring)."""
    out = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            one = node.get("oneOf")
            if (isinstance(one, list) and len(one) == 2 and "enum" in one[0]
                    and one[1].get("type") == "string" and "enum" not in one[1]):
                node["anyOf"] = node.pop("oneOf")
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(out)
    return out


def validators(folder: Path) -> dict[str, jsonschema.protocols.Validator]:
    out = {}
    for index, name in (("ubi_queries", "query.request.schema.json"),
                        ("ubi_events", "event.schema.json")):
        schema = anyof_names(json.loads((folder / name).read_text()))
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        out[index] = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return out


def schema_sets() -> list[dict]:
    sets = [validators(SCHEMAS)]
    if os.environ.get("RANKDUEL_UBI_SCHEMAS"):  # the official files, when at hand
        sets.append(validators(Path(os.environ["RANKDUEL_UBI_SCHEMAS"])))
    return sets


def check_documents(docs: dict[str, list[dict]]) -> None:
    for vals in schema_sets():
        for index, items in docs.items():
            for doc in items:
                errors = sorted(vals[index].iter_errors(doc), key=str)
                assert not errors, (index, doc, [e.message for e in errors])
    for items in docs.values():
        for doc in items:
            assert ISO_Z.match(doc["timestamp"]), doc["timestamp"]


