"""What every part of the store shares: the client, the clock, the Lua scripts (each a
``.lua`` file next to the module that runs it, read once per process), the storage errors
and the constants."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, ClassVar

from service.designs.registry import INSTALLED, design_named
from service.store import trail
from service.store.keys import EXPERIMENTS, lua_fields
from service.store.script_call import ScriptCall

#: an experiment's lifecycles
LIFECYCLES = ("running", "paused", "stopped")
AUDIT_MAX = 10_000
#: how often one process re-marks an experiment in the sweep's index (store.drains.mark_due)
DUE_MARK_EVERY_S = 1.0
#: attempts of one optimistic transaction before giving up (:class:`Contention`)
MAX_ATTEMPTS = 1000


class ImpressionMissing(LookupError):
    """No impression with this id (unknown or expired)."""


class ImpressionClosed(Exception):
    """The impression no longer accepts clicks."""


class TooManyClicks(Exception):
    """The impression has recorded as many click reports as it may."""


class Contention(RuntimeError):
    """An optimistic transaction lost every one of its attempts."""


def audit_entry(ts: float, action: str, *, actor: str, **detail: Any) -> str:
    """One audit-list entry (JSON). An ``operator`` action taken inside an operator call
    (:mod:`service.store.trail`) names who took it: ``actor`` becomes the key (``key
    NAME (ID)``) or the bootstrap token, and ``who`` holds its id and name."""
    call = trail.current()
    if actor == "operator" and call is not None:
        actor = call.label
        detail["who"] = call.who
    return json.dumps({"ts": ts, "action": action, "actor": actor, **detail})


def pairs(flat: list[Any]) -> dict[Any, Any]:
    """A Lua HGETALL reply (flat list) as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


#: the folder of ``service/`` a script's file sits in when it is not ``store/``: a design's
#: scripts sit beside its code (``service/ab/``)
HOMES: dict[str, str] = {"ab_search": "ab", "ab_click": "ab", "ab_outcome": "ab",
                         "ab_moments": "ab"}


def script_file(name: str) -> Traversable:
    """The ``.lua`` file of script (or include) ``name``: ``service/<home>/<name>.lua``."""
    return resources.files("service").joinpath(HOMES.get(name, "store"), f"{name}.lua")


#: includes made from Python, not read from a file: name -> its source
GENERATED: dict[str, Callable[[], str]] = {"fields": lua_fields}


@cache
def lua(name: str) -> str:
    """The Lua script ``name`` (``service/store/<name>.lua``, or a design's beside its code:
    :func:`script_file`), read once per process, after
    the scripts it includes (a line ``-- include: other``: functions it shares, such as
    the guard's check, ``guard.lua``, or the outcome→W write, ``outcome_write.lua``), each
    included once, an include's own includes first. ``fields``, the counts' field names,
    is generated from :mod:`service.store.keys`."""
    parts: list[str] = []
    _gather(name, parts, set())
    return "\n".join(parts)


def _gather(name: str, parts: list[str], seen: set[str]) -> None:
    if name in seen:
        return
    seen.add(name)
    if name in GENERATED:
        parts.append(GENERATED[name]())
        return
    source = script_file(name).read_text(encoding="utf-8")
    for other in re.findall(r"^-- include: (\w+)$", source, flags=re.M):
        _gather(other, parts, seen)
    parts.append(source)


#: the designs' parts of the store by name (``ab``: :class:`service.ab.store.ABStore`),
#: each registered by its class (:attr:`StorePart.PART`)
PARTS: dict[str, type[StorePart]] = {}


class StoreBase:
    """What every part of the store shares: the client, the clock, the Lua scripts
    (registered once per store, :meth:`script`), the sweep's memo of due marks, and the two
    reads no one part owns (the experiment list, a pipeline).

    Parameters
    ----------
    client
        A ``redis.Redis`` or ``redis.cluster.RedisCluster`` with ``decode_responses=False``
        (``W`` is binary); see :mod:`service.store.client`.
    clock
        Seconds since the epoch; injectable for tests. Setting ``clock`` on a store sets
        it on every part (:meth:`__setattr__`).
    """

    def __init__(self, client, *, clock: Callable[[], float] = time.time) -> None:
        self._parts: list[StorePart] = []
        self.r = client
        self.clock = clock
        self._scripts: dict[str, Any] = {}
        #: per experiment, when this process last marked it in the sweep's index, and how
        #: early (:meth:`service.store.drains.DrainStore.mark_due`)
        self.due_marks: dict[str, tuple[float, float]] = {}
        #: the request path's scripts, run with less client work (service.store.script_call)
        self.call = ScriptCall(client)

    def __setattr__(self, name: str, value: Any) -> None:
        """Set an attribute; the clock also on every part (each keeps its own reference:
        an attribute read, not a call, on the request path)."""
        object.__setattr__(self, name, value)
        if name == "clock":
            for part in self._parts:
                part.clock = value

    def __getattr__(self, name: str) -> StorePart:
        """A design's part of the store (``store.ab``), made on first use: a part the store
        does not build itself (:attr:`StorePart.PART`, named as its design) is registered
        when its class is defined, in its design's folder; the designs' registry loads
        that design when it is not yet (:func:`service.designs.registry.design_named`), so
        the store never imports a design's folder."""
        if name.startswith("_"):
            raise AttributeError(name)
        part = PARTS.get(name)
        if part is None and name in INSTALLED:  # the design's module defines its part
            design_named(name)
            part = PARTS.get(name)
        if part is None:
            raise AttributeError(f"{type(self).__name__!r} has no attribute or part "
                                 f"{name!r} (the designs' parts: {sorted(PARTS)})")
        made = part(self)
        object.__setattr__(self, name, made)
        return made

    def script(self, name: str):
        """The Lua script ``name`` registered with the client, once per store."""
        found = self._scripts.get(name)
        if found is None:
            found = self._scripts[name] = self.r.register_script(lua(name))
        return found

    def list_ids(self) -> list[str]:
        """Every experiment's id, oldest first (the experiment list, ``rd:experiments``)."""
        return [x.decode() if isinstance(x, bytes) else x
                for x in self.r.zrange(EXPERIMENTS, 0, -1)]

    def pipeline(self, *, transaction: bool = True):
        """A pipeline on the store's client (an optimistic transaction's WATCH and
        MULTI/EXEC: :func:`service.transaction.transact`, :func:`service.credit.protocol.
        resolve_hold`)."""
        return self.r.pipeline(transaction=transaction)


class StorePart:
    """One concept's storage (``store.<part>``), on the shared :class:`StoreBase`.

    Each part declares its scripts in ``SCRIPTS`` (attribute name -> script name), found on
    the base; it keeps the base's client, clock and script runner as its own attributes.
    """

    SCRIPTS: ClassVar[dict[str, str]] = {}
    #: the name a design's part is reached by (``store.ab``): set, the class registers
    #: itself as it is defined and the store makes it on first use
    #: (:meth:`StoreBase.__getattr__`); the store's own parts are built by ``Store``
    PART: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("PART"):
            PARTS[cls.PART] = cls

    def __init__(self, base: StoreBase) -> None:
        self.base = base
        self.r = base.r
        self.clock = base.clock
        self.call = base.call
        for cls in type(self).__mro__:
            for attr, name in vars(cls).get("SCRIPTS", {}).items():
                setattr(self, attr, base.script(name))
        base._parts.append(self)
