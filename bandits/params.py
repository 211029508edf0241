"""Parameters declared once, on the class that takes them (the ir_measures way).

A policy (:class:`bandits.base.DuelingBandit`) or a judging algorithm
(:class:`judging.base.Judge`) lists its parameters in the class attribute ``PARAMS``:
``{name: Param(dtype, default, desc, bounds or choices)}``. Everything else reads that
declaration: the constructors (:func:`resolve`: defaults filled in, values checked), the
registry's :func:`bandits.check_params`, the HTTP API's request models and OpenAPI
document (:mod:`service.schemas`), the command line's ``--param`` parsing
(:func:`parse_text`) and the generated parameter reference (:mod:`cli.docs`). No other
table repeats a default or a bound, and nothing inspects a constructor's signature.

A parameter several policies take is declared once, here (:data:`ALPHA`) or on the class
that owns it (the Merge framework's ``c``, the non-Condorcet guard's ``GUARD_PARAMS``);
a class whose default, description or bounds differ takes it with
:meth:`Param.override`, so every name has one declaration and one type
(tests/unit/test_bandits_modules.py checks this).

Pure: no I/O, no third-party imports.

Examples
--------
>>> check("rucb", {"alpha": ALPHA}, {"alpha": 0.6})
{'alpha': 0.6}
>>> check("rucb", {"alpha": ALPHA}, {"alpha": 0})
Traceback (most recent call last):
...
ValueError: parameter 'alpha' of rucb must be greater than 0, got 0
>>> resolve("rucb", {"alpha": ALPHA}, {})
{'alpha': 0.51}
>>> parse_text("alpha", ALPHA, "abc")
Traceback (most recent call last):
...
ValueError: --param alpha: expected a number, got 'abc'
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: the value types a parameter can have
DTYPES = (float, int, str, bool)


@dataclass(frozen=True)
class Param:
    """One parameter: its type, default, one line of documentation and its bounds.

    ``dtype`` is ``float``, ``int``, ``str`` or ``bool``; ``ge``/``gt``/``le``/``lt`` bound
    a number, ``choices`` lists a string's values. ``default`` is what the class uses when
    the parameter is not given; ``None`` there means "computed" (``default_doc`` says
    how, for the docs). ``nullable``: ``None`` may also be given explicitly (``default_doc``
    or ``desc`` says what it means).
    """

    dtype: type
    default: Any
    desc: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple[str, ...] | None = None
    nullable: bool = False
    default_doc: str | None = None

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise TypeError(f"Param dtype must be one of {DTYPES}, got {self.dtype!r}")

    def override(self, **changes: Any) -> Param:
        """This parameter as a class that takes it declares it: the same name and type,
        with the fields in ``changes`` (default, description, bounds...) replaced. How a
        shared parameter keeps one declaration when a policy's default or words differ.

        >>> ALPHA.override(default=0.5).default, ALPHA.override(default=0.5).le
        (0.5, 1000)
        >>> ALPHA.override(dtype=int)
        Traceback (most recent call last):
        ...
        TypeError: a parameter keeps its declared type
        """
        if "dtype" in changes:
            raise TypeError("a parameter keeps its declared type")
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ reading
    @property
    def type_name(self) -> str:
        """``"number"``, ``"integer"``, ``"string"`` or ``"boolean"`` (as JSON says)."""
        return {float: "number", int: "integer", str: "string", bool: "boolean"}[self.dtype]

    def bounds_text(self) -> str:
        """The bounds in words, e.g. ``"> 0, <= 1000"`` or ``"one of tuned, theoretical"``."""
        if self.choices is not None:
            return "one of " + ", ".join(self.choices)
        parts = [f"{op} {_num(v)}" for op, v in
                 ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt))
                 if v is not None]
        return ", ".join(parts)

    # ------------------------------------------------------------------ checking
    def check_type(self, owner: str, key: str, value: Any) -> Any:
        """``value`` as this parameter's type (an integral float becomes an int), or a
        ``ValueError`` naming the parameter; bounds and choices are not checked here."""
        if value is None and self.nullable:
            return None
        where = f"parameter {key!r} of {owner}"
        if self.dtype is str:
            if not isinstance(value, str):
                raise ValueError(f"{where} must be a string, got {value!r}")
            return value
        if self.dtype is bool:
            if not isinstance(value, bool):
                raise ValueError(f"{where} must be true or false, got {value!r}")
            return value
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{where} must be a number, got {value!r}")
        if isinstance(value, numbers.Integral) and abs(int(value)) > sys.float_info.max:
            raise ValueError(f"{where} is out of range")
        if not math.isfinite(value):
            raise ValueError(f"{where} must be a finite number, got {value}")
        if self.dtype is int:
            if value != int(value):
                raise ValueError(f"{where} must be an integer, got {value}")
            return int(value)
        return value

    def check_range(self, owner: str, key: str, value: Any) -> None:
        """A ``ValueError`` when ``value`` (already of the right type) is outside the
        bounds or not one of the choices."""
        if value is None:
            return
        if self.choices is not None:
            if value not in self.choices:
                raise ValueError(f"unknown {key} {value!r} for {owner}; valid: "
                                 f"{', '.join(sorted(self.choices))}")
            return
        where = f"parameter {key!r} of {owner}"
        for bound, ok, words in ((self.ge, lambda b: value >= b, "at least"),
                                 (self.gt, lambda b: value > b, "greater than"),
                                 (self.le, lambda b: value <= b, "at most"),
                                 (self.lt, lambda b: value < b, "less than")):
            if bound is not None and not ok(bound):
                raise ValueError(f"{where} must be {words} {_num(bound)}, got {value}")


def _num(v: float) -> str:
    """A bound or default as people read it: ``0``, ``1000``, ``1,000,000``, ``1e-12``."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e16:
        v = int(v)
    if isinstance(v, float):
        return f"{v:g}"
    return f"{v:,}" if abs(v) >= 10_000 else str(v)


def check(owner: str, declared: Mapping[str, Param], given: Mapping[str, Any], *,
          ranges: bool = True) -> dict[str, Any]:
    """Check ``given`` against the declaration: every name declared, every value of its
    type (integral floats of ``int`` parameters become ints) and, with ``ranges``, within
    its bounds or choices. Returns the checked values (the given ones only); a
    ``ValueError`` names the first bad parameter and, for an unknown name, lists the
    valid ones."""
    out = {}
    for key, value in given.items():
        if key not in declared:
            valid = ", ".join(sorted(declared)) or "(none)"
            raise ValueError(f"unknown parameter {key!r} for {owner}; valid: {valid}")
        p = declared[key]
        value = p.check_type(owner, key, value)
        if ranges:
            p.check_range(owner, key, value)
        out[key] = value
    return out


def resolve(owner: str, declared: Mapping[str, Param], given: Mapping[str, Any]) -> dict[str, Any]:
    """Every declared parameter's value: the given one (checked by :func:`check`) or
    the declared default. What a constructor calls."""
    values = check(owner, declared, given)
    return {key: values.get(key, p.default) for key, p in declared.items()}


def parse_text(key: str, param: Param, text: str) -> Any:
    """A command-line value (``--param key=text``) as the parameter's type, or a
    ``ValueError`` saying what was expected (``--param alpha: expected a number, got
    'abc'``). Bounds are checked later, with the other parameters."""
    text = text.strip()
    if param.nullable and text.lower() in ("none", "null"):
        return None
    if param.dtype is str:
        return text
    if param.dtype is bool:
        flag = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
        if text.lower() in flag:
            return flag[text.lower()]
        raise ValueError(f"--param {key}: expected true or false, got {text!r}")
    try:
        number = float(text)
    except ValueError:
        kind = "an integer" if param.dtype is int else "a number"
        raise ValueError(f"--param {key}: expected {kind}, got {text!r}") from None
    if param.dtype is int:
        if not (math.isfinite(number) and number.is_integer()):
            raise ValueError(f"--param {key}: expected an integer, got {text!r}")
        try:
            return int(text)
        except ValueError:
            return int(number)
    try:
        return int(text)  # "16" stays 16 as before (a float parameter takes it)
    except ValueError:
        return number


def values_of(obj: Any, declared: Mapping[str, Param]) -> dict[str, Any]:
    """The effective value of each declared parameter, read from the attribute of the
    same name on ``obj`` (a value of ``None``, "not given and not computed", is left
    out): what a policy's ``params()`` returns, so that it is rebuilt from them."""
    out = {}
    for key in declared:
        value = getattr(obj, key)
        if value is not None:
            out[key] = value
    return out


def declared_default(param: Param) -> str:
    """The default as the docs show it."""
    if param.default_doc is not None:
        return param.default_doc
    if param.default is None:
        return "none"
    if isinstance(param.default, bool):
        return str(param.default).lower()
    if isinstance(param.default, float):
        return _num(param.default)
    return str(param.default)


# ---------------------------------------------------------------------- shared declarations
#: the exploration α of a confidence bound ``sqrt(α ln t / n)``: RUCB, RCS, CCB and DTS
#: take it as it is (their papers ask α > ½; 0.51 as in RUCB's and DTS's experiments);
#: MDB (0.5, Brost et al. 2016, §4.1.1), the Merge family (the preset's, in
#: ``sqrt(α log(t + C) / n)``) and the Sparring Certifier (MergeMED's, in a divergence
#: test) override its default and words
ALPHA = Param(float, 0.51, "exploration α of the confidence bounds: sqrt(α ln t / n)",
              gt=0, le=1000)


__all__ = ["ALPHA", "DTYPES", "Param", "check", "declared_default", "parse_text",
           "resolve", "values_of"]
