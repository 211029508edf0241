"""Versions of a ranker: its definition never changes inside an experiment.

A ranker's definition (URL, ``timeout_ms``, ``request`` template, ``response`` mapping)
is what ``W`` compares: a ranker whose URL or template changed half-way would add the
comparisons of another system to its row. So no route edits a ranker in place:

* ``PATCH /experiments/ID`` with ``rankers`` and ``POST /experiments/ID/rankers`` with
  the name of a ranker the experiment has answer 409, saying to add a version;
* ``POST /experiments/ID/rankers/NAME/versions`` adds a **new version**: a new arm named
  ``NAME@vN`` (N = 2, 3, ...; the first version keeps its plain name, ``NAME`` is the
  version 1), whose definition is the latest version's with the fields the body gives
  replaced, probed like any new ranker, with zero counts (the policy places it), and
  audited (``ranker_version_added``: the previous version, the fields changed). The
  previous version is retired in the same transaction (``ranker_retired``, reason
  ``replaced by NAME@vN``; its comparisons stay in ``W`` under its own name) unless the
  body says ``"retire_previous": false``, which keeps both in play to compare them.

Every ranker entry carries its ``version`` and ``version_of`` (the plain name), so the
state, the report and the audit name exactly which definition was compared.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from service.errors import Conflict
from service.experiments.operations import Prober, ranker_entry
from service.rankers.allow_list import RankerPolicy
from service.schemas import RankerIn
from service.store import Store, audit_entry
from service.store.records import Ranker
from service.store.snapshot import Snapshot
from service.transaction import update_experiment

#: separates a ranker's name from its version (not a character ranker names may hold)
SEP = "@v"
#: the definition fields a version may change
DEFINITION = ("url", "timeout_ms", "request", "response")


def version_of(r: Ranker) -> tuple[str, int]:
    """``(plain name, version)`` of a stored ranker (version 1 for a ranker never
    versioned).

    >>> version_of(Ranker("bm25@v3", "http://s", 800, extra={"version": 3,
    ...                                                      "version_of": "bm25"}))
    ('bm25', 3)
    """
    return r.version_of, r.version


def versioned_name(name: str, version: int) -> str:
    """The name of version ``version`` of ranker ``name``.

    >>> versioned_name("bm25", 1), versioned_name("bm25", 2)
    ('bm25', 'bm25@v2')
    """
    return name if version == 1 else f"{name}{SEP}{version}"


def latest(snap: Snapshot, name: str) -> Ranker:
    """The newest version of ranker ``name`` (its plain or its versioned name); 404
    (:class:`~service.store.snapshot.RankerMissing`) when the experiment has none."""
    base = version_of(snap.ranker(name))[0]  # raises for an unknown name
    versions = [r for r in snap.rankers if version_of(r)[0] == base]
    return max(versions, key=lambda r: version_of(r)[1])


def add_version(store: Store, exp_id: str, name: str, change: dict[str, Any], *,
                retire_previous: bool, probe: bool, default_timeout_ms: int,
                prober: Prober | None = None, policy: RankerPolicy | None = None,
                actor: str = "operator") -> Ranker:
    """Add the next version of ranker ``name`` with the definition fields of ``change``
    replaced (see the module docstring); the new entry."""

    def draft(snap: Snapshot) -> tuple[Ranker, Ranker]:
        if snap.lifecycle == "stopped":
            raise Conflict(f"experiment {exp_id!r} is stopped")
        prev = latest(snap, name)
        base, n = version_of(prev)
        current = {k: getattr(prev, k) for k in DEFINITION}
        merged = {**current, **change}
        if merged == current:  # well formed, but nothing to do in this state
            raise Conflict(f"the body changes nothing of {prev.name!r}: give the "
                                f"definition fields to change ({', '.join(DEFINITION)})")
        spec = RankerIn.model_validate({"name": base, **{
            k: v for k, v in merged.items() if v is not None}})
        entry = ranker_entry(spec, default_timeout_ms=default_timeout_ms,
                             where="", policy=policy)
        entry = replace(entry, name=versioned_name(base, n + 1),
                        extra={"version": n + 1, "version_of": base})
        return prev, entry

    first = draft(store.experiments.snapshot(exp_id))  # refuse before probing; again in the write
    if probe and prober is not None:
        prober([first[1]])

    def write(snap: Snapshot, pipe) -> Ranker:
        prev, entry = draft(snap)
        bandit = snap.bandit
        arm = bandit.add_arm()
        now = time.time()
        entry = replace(entry, arm=arm, status="active", added_at=now, retired_at=None)
        table = [*snap.rankers, entry]
        changed = sorted(k for k in DEFINITION if getattr(prev, k) != getattr(entry, k))
        audits = [audit_entry(now, "ranker_version_added", actor=actor, ranker=entry.name,
                              arm=arm, version=version_of(entry)[1], previous=prev.name,
                              changed=changed)]
        if retire_previous and prev.status != "retired":
            bandit.retire_arm(prev.arm)
            table = [replace(r, status="retired", retired_at=now) if r.name == prev.name
                     else r for r in table]
            audits.append(audit_entry(now, "ranker_retired", actor=actor, ranker=prev.name,
                                      arm=prev.arm, reason=f"replaced by {entry.name}"))
        store.experiments.write_state(pipe, exp_id, bandit, rankers=table)
        for a in audits:
            store.experiments.add_audit(exp_id, a, pipe=pipe)
        return entry

    return update_experiment(store, exp_id, write)
