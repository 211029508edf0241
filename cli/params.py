"""``--param KEY=VALUE``: the one parser of algorithm parameters on the command line.

``rankduel simulate``, ``rankduel judge simulate`` and ``rankduel demo`` read their
``--param`` items here. An item is ``KEY=VALUE`` (for every algorithm named) or
``NAME.KEY=VALUE`` (for algorithm ``NAME`` only; it wins over an unscoped one). Each
value is parsed as the type the algorithm declares for ``KEY`` (``PARAMS``,
:func:`bandits.params.parse_text`); a key the algorithm does not declare is refused with
the valid ones. Bounds are checked afterwards with the other parameters, by the
declaration's own :func:`bandits.params.check`. Every error is a ``ValueError`` naming
the item, which the command line turns into one line and exit code 2.

Examples
--------
>>> from bandits import get_algorithm
>>> declared = lambda name: get_algorithm(name).PARAMS
>>> parse_params(["alpha=0.5", "mergedts.batch_size=8"], ["mergedts", "rucb"], declared)
{'mergedts': {'alpha': 0.5, 'batch_size': 8}, 'rucb': {'alpha': 0.5}}
>>> parse_params(["beta=1"], ["rucb"], declared)
Traceback (most recent call last):
...
ValueError: --param beta: rucb does not take parameter 'beta'; valid: alpha
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from bandits.params import Param, parse_text

#: an algorithm's name -> its declared parameters (``PARAMS``)
Declared = Callable[[str], Mapping[str, Param]]


def parse_params(items: list[str], algorithms: list[str],
                 declared: Declared) -> dict[str, dict[str, Any]]:
    """``--param`` items -> the parameters of each of ``algorithms`` (unscoped items go
    to all of them), each value of its declared type; ``declared(name)`` gives an
    algorithm's ``PARAMS``. A ``ValueError`` names a malformed item, a scope that is not
    one of ``algorithms``, an undeclared key (with the valid ones) or a value of the
    wrong type."""
    out: dict[str, dict[str, Any]] = {a: {} for a in algorithms}
    scoped: list[tuple[str, str, Any]] = []
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--param {item!r}: expected key=value (KEY=VALUE, or "
                             f"NAME.KEY=VALUE for one algorithm)")
        scope, dot, name = key.rpartition(".")
        if dot:
            if scope not in out:
                raise ValueError(f"--param {item!r}: {scope!r} is not one of --algorithm "
                                 f"{','.join(algorithms)}")
            scoped.append((scope, name, _typed(scope, key, name, text, declared)))
        else:
            hint = (" (scope a setting to one algorithm with --param NAME.KEY=VALUE)"
                    if len(algorithms) > 1 else "")
            for a in algorithms:
                out[a][name] = _typed(a, key, name, text, declared, hint)
    for scope, name, value in scoped:  # scoped settings win over unscoped ones
        out[scope][name] = value
    return out


def _typed(algorithm: str, key: str, name: str, text: str, declared: Declared,
           hint: str = "") -> Any:
    params = declared(algorithm)
    if name not in params:
        valid = ", ".join(sorted(params)) or "none"
        raise ValueError(f"--param {key}: {algorithm} does not take parameter {name!r}; "
                         f"valid: {valid}{hint}")
    return parse_text(key, params[name], text)


__all__ = ["Declared", "parse_params"]


def parse_steps(text: str) -> int:
    """A positive count of steps or searches; ``1e6`` is accepted and must be whole
    (``rankduel simulate``'s ``--steps``, ``--design ab``'s ``--searches``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value.is_integer() or value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text}")
    return int(value)
