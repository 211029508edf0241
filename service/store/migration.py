"""From the previous key layout (one Redis: ``rd:exp:{e}…``, ``rd:imp:{i}…``) to the
current one (:mod:`service.store.keys`: every key of an experiment under its hash tag).

``rankduel migrate-keys`` runs :func:`migrate`. Stop the API processes and the workers
first (nothing may write the old keys meanwhile), then start the new version. In place
(source = the configured ``REDIS_URL``) the old keys are deleted once each experiment and
impression is copied; from another Redis (``--from URL``, e.g. onto a new cluster) the
source is left as it is. Re-running it is safe: what is already migrated has no old keys
left (in place), or is written again identically.

Per experiment: the hash becomes ``rd:{e}`` with the policy split as the current codec
stores it (structure JSON, ``W`` in ``rd:{e}:W``, ``n``), the selection counter is the
larger of ``rd:exp:{e}:t`` and the stored policy's ``t``; counters, audit, exposure,
ranker health and the pending set are copied as they are. Impressions keep their ids and
their remaining TTL under ``rd:{e}:imp:<i>``, and ``rd:legacy-imp:<i>`` records their
experiment (same TTL), so clicks and ends for ids issued before the migration still find
them. Drain flags and probe keys (short-lived) are dropped: the workers' sweep queues
drains for what is pending.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import bandits
from service.store.keys import (
    EXPERIMENTS,
    audit_key,
    clicks_key,
    counters_key,
    exp_key,
    health_key,
    imp_key,
    legacy_imp_key,
    pending_key,
    shown_key,
    t_key,
    w_key,
)
from service.store.snapshot import encode_structure, encode_w, text

OLD_EXP = "rd:exp:{}"
OLD_IMP = "rd:imp:{}"
#: per-experiment keys copied as they are: old suffix -> new key builder
_COPIED: dict[str, Callable[[str], str]] = {
    ":counters": counters_key,
    ":audit": audit_key,
    ":shown": shown_key,
    ":health": health_key,
    ":pending": pending_key,
}


@dataclass
class Report:
    """What a migration did (or, dry, would do)."""

    experiments: list[str] = field(default_factory=list)
    impressions: int = 0
    deleted: int = 0
    skipped: list[str] = field(default_factory=list)


def _copy(src, dst_pipe, old: str, new: str) -> bool:
    """Copy one hash, list, set or sorted set (no TTL on these); False when absent."""
    kind = text(src.type(old))
    if kind == "hash":
        data = src.hgetall(old)
        if data:
            dst_pipe.hset(new, mapping=data)
    elif kind == "list":
        data = src.lrange(old, 0, -1)
        if data:
            dst_pipe.rpush(new, *data)
    elif kind == "set":
        data = src.smembers(old)
        if data:
            dst_pipe.sadd(new, *data)
    elif kind == "zset":
        data = src.zrange(old, 0, -1, withscores=True)
        if data:
            dst_pipe.zadd(new, dict(data))
    else:
        return False
    return True


def _policy_fields(old: dict[str, bytes]) -> tuple[dict[str, Any], bytes, int]:
    """The new hash's policy fields, ``W`` and the old stored ``t`` of an old hash."""
    state = json.loads(old[b"state"])
    K = int(state["K"])
    state["W"] = np.frombuffer(old[b"W"], dtype="<f8").reshape(K, K).copy()
    bandit = bandits.bandit_from_state(state)
    fields = {**encode_structure(bandit), "n": bandit.n_updates, "sv": 1}
    return fields, encode_w(bandit), int(state.get("t", 0))


def migrate(src, dst, *, in_place: bool, dry_run: bool = False,
            say: Callable[[str], None] = lambda _msg: None) -> Report:
    """Copy every experiment and impression of the previous layout in ``src`` to the
    current layout in ``dst`` (a Redis or a Redis Cluster client); with ``in_place``
    (``src`` is ``dst``) delete each old key once copied."""
    report = Report()
    impressions: dict[str, list[str]] = {}
    for key in src.scan_iter(match=OLD_IMP.format("*"), count=1000):
        name = text(key)
        imp_id = name[len(OLD_IMP.format("")):]
        if imp_id.endswith(":clicks"):
            continue
        exp_id = text(src.hget(name, "exp"))
        if exp_id:
            impressions.setdefault(exp_id, []).append(imp_id)
    for raw_id, created in src.zrange(EXPERIMENTS, 0, -1, withscores=True):
        exp_id = text(raw_id)
        old_key = OLD_EXP.format(exp_id)
        old = src.hgetall(old_key)
        if not old:
            report.skipped.append(exp_id)  # migrated already (in place), or gone
            continue
        imps = impressions.get(exp_id, [])
        report.experiments.append(exp_id)
        report.impressions += len(imps)
        say(f"experiment {exp_id}: {len(imps)} impressions")
        if dry_run:
            continue
        policy, w_bytes, stored_t = _policy_fields(old)
        t = max(int(src.get(old_key + ":t") or 0), stored_t)
        pipe = dst.pipeline(transaction=True)  # every key of one experiment: one slot
        pipe.delete(exp_key(exp_id), w_key(exp_id), *(f(exp_id) for f in _COPIED.values()))
        keep = {k: v for k, v in old.items() if k not in (b"W", b"state")}
        pipe.hset(exp_key(exp_id), mapping={**keep, **policy})
        pipe.set(w_key(exp_id), w_bytes)
        pipe.set(t_key(exp_id), t)
        for suffix, new in _COPIED.items():
            _copy(src, pipe, old_key + suffix, new(exp_id))
        pipe.execute()
        for n in range(0, len(imps), 200):
            _impressions(src, dst, exp_id, imps[n:n + 200])
        dst.zadd(EXPERIMENTS, {exp_id: created})
        if in_place:
            old_keys = [old_key, old_key + ":t", old_key + ":draining",
                        *(old_key + s for s in _COPIED)]
            old_keys += [k for i in imps for k in (OLD_IMP.format(i),
                                                    OLD_IMP.format(i) + ":clicks")]
            probes = [text(k) for k in src.scan_iter(match=old_key + ":probe:*")]
            for n in range(0, len(old_keys), 500):
                report.deleted += src.delete(*old_keys[n:n + 500])
            if probes:
                report.deleted += src.delete(*probes)
    return report


def _impressions(src, dst, exp_id: str, imp_ids: list[str]) -> None:
    """Copy impressions (hash, clicks, remaining TTL) and index their experiment."""
    read = src.pipeline(transaction=False)
    for i in imp_ids:
        read.hgetall(OLD_IMP.format(i))
        read.pttl(OLD_IMP.format(i))
        read.smembers(OLD_IMP.format(i) + ":clicks")
        read.pttl(OLD_IMP.format(i) + ":clicks")
    out = read.execute()
    write = dst.pipeline(transaction=False)
    legacy = dst.pipeline(transaction=False)  # no hash tag: its own slot on a cluster
    for n, i in enumerate(imp_ids):
        fields, ttl, clicks, clicks_ttl = out[4 * n:4 * n + 4]
        if not fields:
            continue  # expired meanwhile
        write.delete(imp_key(exp_id, i))  # one key per DEL: a cluster pipeline's rule
        write.delete(clicks_key(exp_id, i))
        write.hset(imp_key(exp_id, i), mapping=fields)
        if ttl > 0:
            write.pexpire(imp_key(exp_id, i), ttl)
        if clicks:
            write.sadd(clicks_key(exp_id, i), *clicks)
            if clicks_ttl > 0:
                write.pexpire(clicks_key(exp_id, i), clicks_ttl)
        legacy.set(legacy_imp_key(i), exp_id, px=ttl if ttl > 0 else None)
    write.execute()
    legacy.execute()
