"""Every Lua script's KEYS and ARGV, declared once: their names and order, and one encoder
and one decoder per argument.

A script's first lines say the same in a form a test reads (``tests/unit/
test_lua_declarations.py`` checks each declaration against its script)::

    -- @keys exp W counters pending ties segments events | imp clicks
    -- @argv sv guard target | id mark spec

Names in order; ``[a b]`` an optional tail (sent as far as the caller has it: ``save.lua``
takes the attribution entry without the user's touches); ``| a b`` a group repeated once
per item (an impression, an event, a position).

A caller builds a call with :meth:`Script.build` from named keys and values (each
argument encoded by its declaration: the formats the Lua parses, such as the credit
script's ``"reports|counters|i,j,s,w;..."``, are written here and nowhere else), and
:meth:`Script.read` decodes a call's lists back into names and values (the tests; a
look at a call in ``MONITOR``). The search's own scripts (``select.lua``, ``save.lua``,
``ab_search.lua``: :mod:`service.store.script_call`) and ``extend.lua`` (a next page)
build their lists by hand, for the Python calls a search costs (``bench/search_calls.py``);
``tests/service/test_script_calls.py`` reads what every script is sent through its
declaration.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple


def _text(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


@dataclass(frozen=True)
class Arg:
    """One argument: its name, how a value becomes what the script gets (``encode``) and
    how that reads back as the value (``decode``)."""

    name: str
    encode: Callable[[Any], Any] = _text
    decode: Callable[[Any], Any] = _text


# ---------------------------------------------------------------------- encodings
def _int(x: Any) -> int:
    return int(x)


def _float(x: Any) -> str:
    """A double as the shortest text that reads back the same (Lua's ``tonumber``)."""
    return repr(float(x))


def _float_of(x: Any) -> float:
    return float(_text(x))


def _json(x: Any) -> str:
    return json.dumps(x)


def _json_of(x: Any) -> Any:
    return json.loads(_text(x))


def _optional(x: Any) -> str:
    """``""`` for None."""
    return "" if x is None else _text(x)


def encode_counters(counts: Mapping[str, int]) -> str:
    """Counter increments as ``name:n,...``.

    >>> encode_counters({"impressions": 1, "duels": 2})
    'impressions:1,duels:2'
    """
    return ",".join(f"{name}:{int(n)}" for name, n in counts.items())


def decode_counters(raw: Any) -> dict[str, int]:
    return {name: int(n) for name, _, n in (x.rpartition(":") for x in _text(raw).split(",")
                                           if x)}


def encode_names(names: Iterable[Any]) -> str:
    """Names (or numbers) as ``a,b,...`` (none: ``""``)."""
    return ",".join(str(x) for x in names)


def decode_names(raw: Any) -> list[str]:
    return [x for x in _text(raw).split(",") if x]


class Guard(NamedTuple):
    """The credit script's guard (:class:`service.credit.guard.Guard`): ``q``, period (0:
    none), MergeMED's divergence test or not, the edge test's bounds (0: none)."""

    q: float
    period: int = 0
    kl: bool = False
    edge_big: float = 0.0
    edge_floor: float = 0.0


def encode_guard(guard: Guard | None) -> str:
    """``""`` (none: None, or ``""`` as callers of old passed), ``q``, ``q:period``,
    ``q:period:kl`` or, with an edge, ``q:period:kl:big:floor`` (``kl`` empty when not).

    >>> encode_guard(Guard(2.5)), encode_guard(Guard(2.5, 4)), encode_guard(Guard(1.0, 0, True))
    ('2.5', '2.5:4', '1.0:0:kl')
    >>> encode_guard(Guard(7.5, 100, True, 8.5, 11.0)), encode_guard(None)
    ('7.5:100:kl:8.5:11.0', '')
    """
    if not guard:
        return ""
    q, period, kl, big, floor = guard
    if big:
        return f"{float(q)!r}:{int(period)}:{'kl' if kl else ''}:{float(big)!r}:{float(floor)!r}"
    return repr(float(q)) + (f":{int(period)}" if period or kl else "") + (":kl" if kl else "")


def decode_guard(raw: Any) -> Guard | None:
    text = _text(raw)
    if not text:
        return None
    q, period, kl, big, floor = [*text.split(":"), "", "", "", ""][:5]
    return Guard(float(q), int(period or 0), kl == "kl", float(big or 0), float(floor or 0))


class CreditSpec(NamedTuple):
    """One impression's spec in the credit script: the click reports it was read with,
    the counters it adds and its outcomes ``(i, j, s, watched)`` (watched: the guard's
    code, :meth:`service.credit.guard.Guard.watches`)."""

    reports: int
    counted: Sequence[str] = ()
    outcomes: Sequence[tuple[int, int, float, int]] = ()


def encode_credit_spec(spec: CreditSpec) -> str:
    """``reports|counter,...|i,j,s,watched;...``.

    >>> encode_credit_spec(CreditSpec(2, ("credited",), [(0, 1, 1.0, 0), (1, 2, 0.5, 3)]))
    '2|credited|0,1,1.0,0;1,2,0.5,3'
    """
    outcomes = ";".join(f"{int(i)},{int(j)},{float(s)!r},{int(w)}"
                        for i, j, s, w in spec.outcomes)
    return f"{int(spec.reports)}|{','.join(spec.counted)}|{outcomes}"


def decode_credit_spec(raw: Any) -> CreditSpec:
    reports, counted, outcomes = _text(raw).split("|")
    return CreditSpec(int(reports), tuple(decode_names(counted)),
                      tuple((int(i), int(j), float(s), int(w))
                            for i, j, s, w in (o.split(",") for o in outcomes.split(";")
                                               if o)))


class MetricSpec(NamedTuple):
    """One outcome event's spec in the metrics' credit script: its segment labels, its
    outcomes per metric (``[i, j, s]`` each), the values it adds per metric and arm, and
    the counters it adds."""

    seg: Sequence[str] = ()
    outcomes: Mapping[str, Sequence[Sequence[float]]] = {}
    values: Mapping[str, Mapping[Any, float]] = {}
    counted: Sequence[str] = ()


def encode_metric_spec(spec: MetricSpec) -> str:
    """``seg,...|m,i,j,s;...|m:arm:value;...|counter,...``.

    >>> encode_metric_spec(MetricSpec(["device=pc"], {"orders": [[0, 1, 1.0]]},
    ...                               {"revenue": {"0": 2.5}}, ["outcome_events"]))
    'device=pc|orders,0,1,1.0|revenue:0:2.5|outcome_events'
    """
    outs = ";".join(f"{m},{int(i)},{int(j)},{float(s)!r}"
                    for m, rows in spec.outcomes.items() for i, j, s in rows)
    vals = ";".join(f"{m}:{int(a)}:{float(v)!r}"
                    for m, by_arm in spec.values.items() for a, v in by_arm.items())
    return f"{','.join(spec.seg)}|{outs}|{vals}|{','.join(spec.counted)}"


def decode_metric_spec(raw: Any) -> MetricSpec:
    seg, outs, vals, counted = _text(raw).split("|")
    outcomes: dict[str, list[list[float]]] = {}
    for o in (x for x in outs.split(";") if x):
        m, i, j, s = o.rsplit(",", 3)
        outcomes.setdefault(m, []).append([int(i), int(j), float(s)])
    values: dict[str, dict[int, float]] = {}
    for v in (x for x in vals.split(";") if x):
        m, a, x = v.rsplit(":", 2)
        values.setdefault(m, {})[int(a)] = float(x)
    return MetricSpec(tuple(decode_names(seg)), outcomes, values, tuple(decode_names(counted)))


def encode_dwell(dwell: Mapping[int, int]) -> str:
    """Dwell times per position, ``position:ms,...``."""
    return ",".join(f"{int(p)}:{int(ms)}" for p, ms in dwell.items())


def decode_dwell(raw: Any) -> dict[int, int]:
    return {int(p): int(ms) for p, _, ms in (x.partition(":") for x in _text(raw).split(",")
                                            if x)}


# ---------------------------------------------------------------------- arguments
def text(name: str) -> Arg:
    """A plain string (an id, a name, a mark already in JSON)."""
    return Arg(name)


def integer(name: str) -> Arg:
    return Arg(name, _int, _int)


def number(name: str) -> Arg:
    """A double, sent as the shortest text that reads back the same."""
    return Arg(name, _float, _float_of)


def json_arg(name: str) -> Arg:
    return Arg(name, _json, _json_of)


def optional(name: str) -> Arg:
    """A string or None (sent as ``""``)."""
    return Arg(name, _optional, lambda raw: _text(raw) or None)


def counters(name: str) -> Arg:
    return Arg(name, encode_counters, decode_counters)


def names(name: str) -> Arg:
    return Arg(name, encode_names, decode_names)


# ---------------------------------------------------------------------- scripts
class Call(NamedTuple):
    """A call read back: keys and arguments by name, and each repeated item's."""

    keys: dict[str, str]
    args: dict[str, Any]
    each: list[tuple[dict[str, str], dict[str, Any]]]


@dataclass(frozen=True)
class Script:
    """One script's KEYS and ARGV: the fixed ones, an optional tail of each, and a group
    of each repeated per item (see the module docstring)."""

    name: str
    keys: tuple[str, ...] = ()
    argv: tuple[Arg, ...] = ()
    optional_keys: tuple[str, ...] = ()
    optional_argv: tuple[Arg, ...] = ()
    each_keys: tuple[str, ...] = ()
    each_argv: tuple[Arg, ...] = ()
    _by_name: dict[str, Arg] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for a in (*self.argv, *self.optional_argv, *self.each_argv):
            self._by_name[a.name] = a

    def arg(self, name: str) -> Arg:
        """The declaration of argument ``name``."""
        return self._by_name[name]

    def header(self) -> tuple[str, str]:
        """The two lines that open the script (``-- @keys ...``, ``-- @argv ...``)."""
        def line(kind: str, fixed: Sequence[str], opt: Sequence[str],
                 each: Sequence[str]) -> str:
            out = f"-- @{kind}" + "".join(f" {n}" for n in fixed)
            if opt:
                out += " [" + " ".join(opt) + "]"
            if each:
                out += " |" + "".join(f" {n}" for n in each)
            return out

        return (line("keys", self.keys, self.optional_keys, self.each_keys),
                line("argv", [a.name for a in self.argv],
                     [a.name for a in self.optional_argv], [a.name for a in self.each_argv]))

    def build(self, keys: Mapping[str, str] | None = None,
              args: Mapping[str, Any] | None = None,
              each: Iterable[tuple[Mapping[str, str], Mapping[str, Any]]] = ()
              ) -> tuple[list[str], list[Any]]:
        """The script's KEYS and ARGV lists from named keys and values, each value
        encoded by its declaration. An optional tail is sent when its first name is
        given (then all of it must be); a missing name is a ``KeyError``."""
        keys, args = keys or {}, args or {}
        out_keys = [keys[n] for n in self.keys]
        out_args = [a.encode(args[a.name]) for a in self.argv]
        if self.optional_keys and self.optional_keys[0] in keys:
            out_keys += [keys[n] for n in self.optional_keys if n in keys]
        if self.optional_argv and self.optional_argv[0].name in args:
            out_args += [a.encode(args[a.name]) for a in self.optional_argv]
        for item_keys, item_args in each:
            out_keys += [item_keys[n] for n in self.each_keys]
            out_args += [a.encode(item_args[a.name]) for a in self.each_argv]
        return out_keys, out_args

    def read(self, keys: Sequence[Any], args: Sequence[Any]) -> Call:
        """A call's lists as names and decoded values (the inverse of :meth:`build`)."""
        keys, args = [_text(k) for k in keys], list(args)
        nk, na = len(self.keys), len(self.argv)
        got_keys = dict(zip(self.keys, keys[:nk], strict=True))
        got_args = {a.name: a.decode(v) for a, v in zip(self.argv, args[:na], strict=True)}
        keys, args = keys[nk:], args[na:]
        if self.optional_keys and not self.each_keys:
            got_keys.update(zip(self.optional_keys, keys, strict=False))
            keys = keys[len(self.optional_keys):]
        if self.optional_argv and not self.each_argv:
            got_args.update((a.name, a.decode(v))
                            for a, v in zip(self.optional_argv, args, strict=False))
            args = args[len(self.optional_argv):]
        items: list[tuple[dict[str, str], dict[str, Any]]] = []
        while keys or args:
            k = len(self.each_keys)
            n = len(self.each_argv)
            if (k == 0 and n == 0) or len(keys) < k or len(args) < n:
                raise ValueError(f"{self.name}: {len(keys)} keys and {len(args)} arguments "
                                 "left over, not a whole item")
            items.append((dict(zip(self.each_keys, keys[:k], strict=True)),
                          {a.name: a.decode(v) for a, v in zip(self.each_argv, args[:n],
                                                               strict=True)}))
            keys, args = keys[k:], args[n:]
        return Call(got_keys, got_args, items)


def _declare(*scripts: Script) -> dict[str, Script]:
    return {s.name: s for s in scripts}


#: every script by name (a ``.lua`` file of this package; the includes, ``guard``,
#: ``ab_moments`` and ``outcome_write``, take no KEYS or ARGV of their own)
SCRIPTS = _declare(
    Script("credit",
           keys=("exp", "W", "counters", "pending", "ties", "segments", "events"),
           argv=(integer("sv"), Arg("guard", encode_guard, decode_guard), optional("target")),
           each_keys=("imp", "clicks"),
           each_argv=(text("id"), text("mark"),
                      Arg("spec", encode_credit_spec, decode_credit_spec))),
    Script("metric_credit",
           keys=("exp", "metrics", "pending", "events", "counters"),
           each_keys=("event",),
           each_argv=(text("member"), text("mark"),
                      Arg("spec", encode_metric_spec, decode_metric_spec))),
    Script("read", each_keys=("imp", "clicks")),
    Script("select", keys=("exp", "t", "health")),
    Script("save",
           keys=("imp", "pending", "counters", "shown", "exp", "events"),
           argv=(text("imp_id"), integer("ttl"), number("due"), counters("counters"),
                 names("arms"), number("share"), json_arg("fields"), json_arg("event"),
                 integer("events_maxlen")),
           optional_keys=("attribution", "touches"),
           optional_argv=(integer("attribution_ttl"), json_arg("entry"),
                          json_arg("touches"))),
    Script("click",
           keys=("imp", "clicks", "pending", "events"),
           argv=(number("due"), text("imp_id"), integer("ttl"), integer("max_reports"),
                 Arg("dwell", encode_dwell, decode_dwell)),
           each_argv=(integer("position"),)),
    Script("extend",
           keys=("imp", "pending"),
           argv=(number("due"), text("imp_id"), json_arg("expect"), json_arg("shown"),
                 json_arg("record"), text("urls")),
           optional_keys=("attribution", "touches"),
           optional_argv=(json_arg("entry"), text("touches"), integer("attribution_ttl"))),
    Script("end",
           keys=("imp", "pending", "drains"),
           argv=(number("now"), text("imp_id"), text("token"), number("lease_expires"))),
    Script("claim",
           keys=("pending", "t"),
           argv=(number("now"), number("lease_expires"), integer("limit"))),
    Script("take_drain",
           keys=("drains",),
           argv=(number("now"), text("token"), number("lease_expires"), integer("limit"))),
    Script("audit", keys=("exp", "audit"), argv=(integer("max_entries"),),
           each_argv=(text("entry"),)),
    Script("outbox",
           keys=("exp", "audit", "outbox", "hooks"),
           argv=(integer("max_audit"), integer("maxlen"), text("audit_entry"), text("id"),
                 text("type"), text("payload"), text("once_field"), text("once_value"))),
    Script("fail",
           keys=("health", "exp"),
           argv=(integer("arm"), number("now"), integer("threshold"),
                 number("quarantine_s"))),
    Script("answers",
           keys=("health", "exp"),
           argv=(integer("window"), integer("least"), number("share"), number("now"),
                 number("reprobe_s")),
           each_argv=(integer("arm"), text("code"))),
    Script("outcome",
           keys=("exp", "event", "source", "pending"),
           argv=(number("now"), text("form"), text("doc"), text("windows"), text("value"),
                 text("member"), integer("ttl"), text("action"), text("tail"))),
    Script("ab_outcome",
           keys=("exp", "event", "source", "users", "moments", "counters"),
           argv=(number("now"), text("form"), text("doc"), text("windows"), text("value"),
                 integer("ttl"), text("action"), text("tail"), text("user"))),
    Script("ab_search",
           keys=("imp", "users", "moments", "counters", "exp"),
           argv=(json_arg("fields"), integer("ttl"), integer("arm"), text("user"),
                 json_arg("counters"), names("conversions"), integer("attribution_ttl")),
           optional_keys=("attribution", "touches"),
           optional_argv=(json_arg("entry"), json_arg("touches"))),
    Script("ab_click", keys=("imp", "users", "moments", "counters")),
    Script("split_count",
           keys=("seen", "seen_before", "legacy", "users", "searches"),
           argv=(json_arg("searches"), integer("ttl")),
           each_argv=(text("user"),)),
)

CREDIT = SCRIPTS["credit"]
METRIC_CREDIT = SCRIPTS["metric_credit"]
