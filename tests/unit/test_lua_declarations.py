"""Each Lua script's KEYS and ARGV are declared once, in :mod:`service.store.scripts`: the
script's header (``-- @keys ...``, ``-- @argv ...``) says the same names in the same order,
the indices the script reads fit the declaration, and each argument's encoder and decoder
are each other's inverse."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.store import scripts
from service.store.base import lua, script_file
from service.store.scripts import (
    CREDIT,
    METRIC_CREDIT,
    SCRIPTS,
    CreditSpec,
    Guard,
    MetricSpec,
)

SERVICE = Path(__file__).resolve().parents[2] / "service"
#: the scripts other scripts include: functions, no KEYS or ARGV of their own
INCLUDES = {"guard", "ab_moments", "outcome_write"}
#: every script file: the store's, and a design's beside its code (service/ab/)
FILES = sorted(p.stem for p in SERVICE.rglob("*.lua"))


def test_each_script_is_found_where_it_sits():
    # script_file() resolves each script and include to its one file
    found = {p.stem: p for p in SERVICE.rglob("*.lua")}
    assert len(found) == len(FILES)
    for name, path in found.items():
        assert script_file(name).read_text() == path.read_text(), name


def test_every_script_is_declared_and_every_declaration_is_a_script():
    assert set(SCRIPTS) == set(FILES) - INCLUDES
    for name in INCLUDES:
        assert "-- @keys" not in script_file(name).read_text(), name


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_scripts_header_is_its_declaration(name):
    own = script_file(name).read_text()
    header = (re.findall(r"^-- @keys.*$", own, re.M), re.findall(r"^-- @argv.*$", own, re.M))
    keys, argv = SCRIPTS[name].header()
    assert header == ([keys], [argv])


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_indices_the_script_reads_fit_its_declaration(name):
    s = SCRIPTS[name]
    code = re.sub(r"--.*", "", script_file(name).read_text())
    for table, fixed, opt, each in (("KEYS", s.keys, s.optional_keys, s.each_keys),
                                    ("ARGV", s.argv, s.optional_argv, s.each_argv)):
        literal = [int(x) for x in re.findall(rf"\b{table}\[(\d+)\]", code)]
        assert max(literal, default=0) <= len(fixed) + len(opt), (table, literal)
        if not each:  # every argument is read where it is declared
            assert set(literal) == set(range(1, len(fixed) + len(opt) + 1)), (table, literal)
            continue
        # a group: read at a stride of its size, from just after the fixed ones
        strided = re.findall(rf"\b{table}\[(\d+) \+ (?:(\d+) \* )?k\]", code)
        loops = re.findall(rf"for \w+ = (\d+), #{table}(?:, (\d+))? do", code)
        unpacked = re.findall(rf"unpack\({table}, (\d+)\)", code)
        starts = ([int(b) for b, _ in strided] + [int(b) for b, _ in loops]
                  + [int(b) for b in unpacked])
        strides = [int(x or 1) for _, x in [*strided, *loops]]
        assert starts, f"{table}: no read of the group {each}"
        assert {b - len(fixed) - 1 for b in starts} <= set(range(len(each))), (table, starts)
        assert all(x == len(each) for x in strides), (table, strides)


def test_the_credit_scripts_call_reads_back_as_built():
    entries = [({"imp": "rd:{e}:imp:e.1", "clicks": "rd:{e}:imp:e.1:clicks"},
                {"id": "e.1", "mark": '{"status": "credited"}',
                 "spec": CreditSpec(2, ("credited", "duels"), ((0, 1, 1.0, 0), (2, 1, 0.25, 3)))}),
               ({"imp": "rd:{e}:imp:e.2", "clicks": "rd:{e}:imp:e.2:clicks"},
                {"id": "e.2", "mark": "{}", "spec": CreditSpec(0)})]
    named = {n: f"rd:{{e}}:{n}" for n in CREDIT.keys}
    for guard in (None, Guard(8.25), Guard(8.25, 16), Guard(4.5, 0, True),
                  Guard(7.17, 1000, True, 8.59, 11.09), Guard(1.0, 0, False, 3.0, 5.0)):
        keys, args = CREDIT.build(named, {"sv": 3, "guard": guard, "target": "click"}, entries)
        assert len(keys) == 7 + 2 * 2 and len(args) == 3 + 3 * 2
        got = CREDIT.read(keys, args)
        assert got.keys == named and got.args == {"sv": 3, "guard": guard, "target": "click"}
        assert got.each == entries
    # the wire format the script parses: reports|counters|i,j,s,watched;...
    assert args[5] == "2|credited,duels|0,1,1.0,0;2,1,0.25,3" and args[8] == "0||"


def test_the_metrics_scripts_call_reads_back_as_built():
    spec = MetricSpec(("device=pc", "market=de"), {"orders": [[0, 1, 1.0]],
                                                   "revenue": [[0, 1, 0.75], [1, 2, 0.5]]},
                      {"revenue": {0: 12.5}}, ("outcome_events", "outcome_credited"))
    named = {n: f"rd:{{e}}:{n}" for n in METRIC_CREDIT.keys}
    each = [({"event": "rd:{e}:oe:ab"}, {"member": "~ab", "mark": "{}", "spec": spec}),
            ({"event": "rd:{e}:oe:cd"}, {"member": "~cd", "mark": "{}", "spec": MetricSpec()})]
    keys, args = METRIC_CREDIT.build(named, {}, each)
    got = METRIC_CREDIT.read(keys, args)
    assert got.keys == named and got.args == {} and got.each == each
    assert args[5] == "|||"


@pytest.mark.parametrize(("arg", "value"), [
    (scripts.counters("c"), {"impressions": 1, "duels": 3}),
    (scripts.names("a"), ["0", "2", "5"]),
    (scripts.number("x"), 1733574000.125),
    (scripts.json_arg("j"), {"a": [1, "b"]}),
    (scripts.optional("o"), None),
    (scripts.optional("o"), "click"),
    (scripts.integer("i"), 42),
    (scripts.Arg("d", scripts.encode_dwell, scripts.decode_dwell), {0: 1500, 3: 20}),
])
def test_each_encoding_reads_back(arg, value):
    assert arg.decode(arg.encode(value)) == value
    assert arg.decode(str(arg.encode(value)).encode()) == value  # as Redis hands it back


def test_a_call_with_an_item_cut_short_is_refused():
    keys, args = METRIC_CREDIT.build({n: n for n in METRIC_CREDIT.keys}, {},
                                     [({"event": "e"}, {"member": "m", "mark": "{}",
                                                        "spec": MetricSpec()})])
    with pytest.raises(ValueError, match="not a whole item"):
        METRIC_CREDIT.read(keys, args[:-1])


def test_the_credit_scripts_include_their_shared_functions_once():
    script = lua("credit")
    assert script.count("local function outcome_cells(") == 1
    assert script.count("local METRIC_F = ") == 1
