"""The designs by name, each resolved once from an experiment's meta (:func:`design_of`).

Each design is one line of :data:`INSTALLED`: its name and the module that defines it.
That module is imported the first time the design is asked for (or its part of the
store, ``store.ab``), so every layer may ask an experiment's design while this folder
stays below the designs' own folders (which sit on the placements, the search and the
reports: :data:`service.LAYERS`). The one import
the layers' check does not see is this table's, and ``tests/unit/test_architecture.py``
checks it: each module defines exactly the design it is listed for.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from typing import Any

from service.designs.base import Design

#: the default design: an experiment whose meta names none
DEFAULT = "interleaving"
#: every design: its name -> the module that defines it (as ``DESIGN``, an instance)
INSTALLED: dict[str, str] = {
    "interleaving": "service.interleaving.design",
    "ab": "service.ab.design",
}

_lock = threading.Lock()


class _Loaded(dict):
    """The designs loaded so far; a design not yet loaded is imported on first use."""

    def __missing__(self, name: str) -> Design:
        if name not in INSTALLED:
            raise KeyError(f"no design {name!r} (the designs: {', '.join(INSTALLED)})")
        with _lock:
            design = importlib.import_module(INSTALLED[name]).DESIGN
            if design.name != name:
                raise TypeError(f"{INSTALLED[name]} defines design {design.name!r}, "
                                f"not {name!r}")
            self[name] = design
        return design


_LOADED = _Loaded()


def design_of(meta: Mapping[str, Any]) -> Design:
    """The design of the experiment whose meta is ``meta``."""
    return _LOADED[meta.get("design") or DEFAULT]


def design_named(name: str | None) -> Design:
    """The design called ``name`` (None: the default); KeyError for an unknown name."""
    return _LOADED[name or DEFAULT]


def design_for_body(body: Any) -> Design:
    """The design a ``POST /experiments`` body names; the default for a body that names
    none or no installed design (whose model then says what is wrong)."""
    name = body.get("design") if isinstance(body, dict) else None
    return _LOADED[name if isinstance(name, str) and name in INSTALLED else DEFAULT]


def confirmer() -> Design:
    """The design whose experiments confirm another's verdict and keep the confirmed
    pairs (:attr:`Design.confirms`)."""
    return next(d for d in designs() if d.confirms)


def designs() -> list[Design]:
    """Every installed design, in :data:`INSTALLED`'s order."""
    return [_LOADED[name] for name in INSTALLED]


__all__ = ["DEFAULT", "INSTALLED", "Design", "confirmer", "design_for_body", "design_named",
           "design_of", "designs"]
