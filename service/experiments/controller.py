"""The request-path controller: which rankers meet on this search.

Each API process keeps the deserialized bandit of every experiment it serves, keyed by
the snapshot ``version``. A search costs one Redis round trip (a Lua script that INCRs the
experiment's selection counter ``t`` and returns the current ``version``); the full
snapshot is re-read only when the version moved **and** the cached copy is older than
``state_max_age_ms`` (default 100 ms). Between re-reads the process selects from a slightly
stale ``W``: to the bandit this is the same as feedback that arrives a little later, which
the live setting implies anyway (many selections are in flight before their clicks return)
and the algorithms tolerate.

Selection calls ``bandit.select_available(t, rng, quarantined)`` (``select_at`` when no
ranker is quarantined: :func:`quarantined`) with ``t`` from the shared counter (so the
round-robin over batches and the ``log t`` terms follow the global time step, not this
process's) and a generator seeded by ``(experiment seed, t)``: reproducible for a given
order of requests, and distinct across the processes (each ``t`` is handed out once).
``select_at`` changes nothing the policy persists: every policy's selection depends only
on its stored state and ``t`` (:mod:`bandits.base`), so a reload loses nothing.

The same round trip returns the health of the experiment's rankers (consecutive
failures, quarantines; :mod:`service.search.serve` uses it), so a search costs one Redis
call before the rankers are fetched.

The cache is bounded: beyond ``max_entries`` experiments (``RANKDUEL_STATE_CACHE_SIZE``)
the least recently searched one is dropped, and re-read on its next search, so a process
serving hundreds of experiments holds a fixed amount of policy state.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bandits.base import RETIRED, DuelingBandit
from service import metrics
from service.errors import Conflict
from service.store import Store
from service.store.records import Ranker
from service.store.snapshot import Snapshot

_M128 = (1 << 128) - 1


def reseed(gen: np.random.Generator, seed: int, t: int) -> np.random.Generator:
    """Put ``gen`` (a PCG64 generator) in a state that is a fixed function of
    ``(seed, t)``: distinct, well-mixed streams per step at ~2 µs, where building a new
    ``default_rng([seed, t])`` costs ~20 µs (SeedSequence hashing).

    Examples
    --------
    >>> g = np.random.Generator(np.random.PCG64())
    >>> a = reseed(g, 7, 1).random(); b = reseed(g, 7, 2).random()
    >>> a == reseed(g, 7, 1).random() and a != b
    True
    """
    x = (int(seed) * 0x9E3779B97F4A7C15F39CC0605CEDC835 + int(t) + 1) & _M128
    for mult in (0xBF58476D1CE4E5B9D1B54A32D192ED03, 0x94D049BB133111EBAEF1E5A5B9FD2F71):
        x ^= x >> 64
        x = (x * mult) & _M128
    x ^= x >> 64
    gen.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": x, "inc": 0xDA3E39CB94B95BDB1B3F2A7C4D5E6F71},
        "has_uint32": 0,
        "uinteger": 0,
    }
    return gen


def quarantined(health: dict[int, dict[str, Any]], now: float) -> frozenset[int]:
    """The arms whose quarantine is open at ``now``, that are degraded and not yet due
    for a probe (:mod:`service.search.degraded`), or whose probe is in flight:
    unavailable to selection, so the policy compares the healthy rankers
    (:meth:`bandits.base.DuelingBandit.select_available`). A ranker whose quarantine ended
    is available again: the search that chooses it probes it
    (:class:`service.search.ranker_health.RankerHealth`), and only a successful probe
    closes its quarantine. Until that probe answers, no other search chooses it (each
    would be served by its opponent alone: a hanging ranker's probe waits its whole
    timeout).

    Examples
    --------
    >>> sorted(quarantined({1: {"quarantined_until": 20.0}, 2: {"quarantined_until": 5.0},
    ...                     3: {"quarantined_until": None},
    ...                     4: {"quarantined_until": 5.0, "probing_until": 11.0}}, now=10.0))
    [1, 4]
    """
    return frozenset(arm for arm, h in health.items()
                     if max(h.get("quarantined_until") or 0.0,
                            h.get("degraded_until") or 0.0,
                            h.get("probing_until") or 0.0) > now)


@dataclass
class Entry:
    """A cached snapshot of one experiment, with what selection derives from it."""

    snapshot: Snapshot
    loaded_at: float
    bandit: DuelingBandit
    by_arm: dict[int, Ranker]
    champion: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    rng: np.random.Generator = field(
        default_factory=lambda: np.random.Generator(np.random.PCG64()))


@dataclass(frozen=True)
class Choice:
    """The comparison chosen for one search."""

    t: int
    arms: tuple[int, ...]
    rankers: tuple[Ranker, ...]
    duel: bool
    snapshot: Snapshot
    #: the current champion, served when the chosen rankers all fail
    champion: int
    by_arm: dict[int, Ranker]
    #: ``{arm: {"failures": n, "quarantined_until": ts | None}}`` of failing rankers
    health: dict[int, dict[str, Any]]


class Controller:
    """Choose comparisons from a per-process cache of experiment snapshots.

    Parameters
    ----------
    store
        The Redis store.
    max_age_ms
        Minimum interval between two re-reads of one experiment's snapshot.
    max_entries
        Experiments kept (least recently used dropped beyond).
    """

    def __init__(self, store: Store, *, max_age_ms: float = 100.0,
                 max_entries: int = 1000) -> None:
        self.store = store
        self.max_age = max_age_ms / 1000.0
        self.max_entries = max(1, int(max_entries))
        self._cache: OrderedDict[str, Entry] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cache)

    def _load(self, exp_id: str) -> Entry:
        snap = self.store.experiments.snapshot(exp_id)
        bandit = snap.bandit
        entry = Entry(
            snapshot=snap,
            loaded_at=time.monotonic(),
            bandit=bandit,
            by_arm={r.arm: r for r in snap.rankers},
            champion=bandit.best_arm(),
        )
        with self._lock:
            self._cache[exp_id] = entry
            self._cache.move_to_end(exp_id)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return entry

    def forget(self, exp_id: str) -> None:
        """Drop ``exp_id``'s entry (a deleted experiment)."""
        with self._lock:
            self._cache.pop(exp_id, None)

    def cached(self, exp_id: str) -> Entry | None:
        """The cached entry, however old, without reading Redis (None if none): what a
        search may fall back on while the store is down (:mod:`service.search.outage`)."""
        with self._lock:
            return self._cache.get(exp_id)

    def entry(self, exp_id: str, version: int) -> Entry:
        """The cached entry, refreshed if ``version`` moved and the cache is old enough."""
        with self._lock:
            entry = self._cache.get(exp_id)
            if entry is not None:
                self._cache.move_to_end(exp_id)
        if entry is None:
            return self._load(exp_id)
        if entry.snapshot.version != version and (
            time.monotonic() - entry.loaded_at >= self.max_age
        ):
            return self._load(exp_id)
        return entry

    def choose(self, exp_id: str) -> Choice:
        """Count a selection and pick the comparison for it.

        ``running``: the policy's ``select()``; ``paused`` or ``stopped``: the current
        champion alone, no duel. A pair ``(a, a)`` is one ranker served as is.
        """
        t, version, health = self.store.experiments.next_t(exp_id)
        cpu0 = time.thread_time()
        entry = self.entry(exp_id, version)
        snap = entry.snapshot
        if snap.lifecycle == "running":
            out = quarantined(health, time.time())
            with entry.lock:
                # reproducible and distinct per step: the experiment's seed and t
                rng = reseed(entry.rng, snap.meta["seed"], t)
                arms = tuple(int(a) for a in entry.bandit.select_available(t, rng, out))
        else:
            arms = (entry.champion,)
        unique = tuple(dict.fromkeys(arms))
        for a in unique:
            if a not in entry.by_arm:
                raise Conflict(f"experiment {exp_id!r}: arm {a} has no ranker")
        if len(unique) > 1 and any(entry.bandit.status[a] == RETIRED for a in unique):
            # a retired arm is served but never duels (its credit would be stale); an
            # eliminated one chosen on purpose (verification, certification) duels, as
            # offline
            unique = tuple(a for a in unique if entry.bandit.status[a] != RETIRED) or unique[:1]
        metrics.SELECTION_CPU.observe(time.thread_time() - cpu0)
        return Choice(
            t=t,
            arms=unique,
            rankers=tuple(entry.by_arm[a] for a in unique),
            duel=len(unique) > 1,
            snapshot=snap,
            champion=entry.champion,
            by_arm=entry.by_arm,
            health=health,
        )
