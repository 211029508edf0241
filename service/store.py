"""Experiment state in Redis: reads, the credit script, one optimistic-transaction helper,
and the atomic writes of the request path. The key layout is documented once, in
:mod:`service.keys`; every call here touches the keys of one experiment (one hash tag,
so one shard of a Redis Cluster), except the experiment list.

Crediting (the design is argued in :mod:`service.credit`):

* **The credit script** (:meth:`Store.commit_credit`), one per batch: for each impression
  in order, unless it is already credited, gone, or got a click since the worker read it,
  add its outcomes to ``W`` in place, count the comparison in ``n``, write its
  ``credited`` mark (which closes it), add its counters and take it off the pending set.
  Atomic, so each impression changes ``W`` exactly once whatever the retries, duplicate
  deliveries or worker crashes (a crash before the script writes nothing; the impression
  stays pending and is credited later). Additions commute, so scripts of many workers on
  one experiment interleave freely. The script refuses the whole batch if the policy's
  structure changed since the worker read it (``sv``), and stops at an outcome the
  :class:`~service.credit.Guard` flags: it records it as the experiment's ``hold`` and
  returns; while a hold is set, every credit script refuses.
* **A hold is resolved** (:meth:`Store.resolve_hold`, by whichever worker meets it) in
  one optimistic transaction that runs the policy's own ``update()`` on the current
  state for that impression and writes ``W``, ``n``, the new structure if it changed
  (``sv`` + 1), the mark and the audit events, and clears the hold.
* **Drains** claim due impressions from the pending set with a lease (their due time is
  pushed forward; a crashed drain's impressions come due again when it expires), so
  several drains credit one experiment without overlapping; the experiment's drain set
  holds one lease per drain queued or running, at most ``credit_parallelism``.

Every other change to an experiment's snapshot (operators) goes through
:meth:`Store.transact`: WATCH the keys the change depends on, read them, compute with the
pure code, then MULTI/EXEC the writes, retrying on ``WatchError``.

The store raises storage errors (:class:`~service.snapshot.ExperimentMissing`,
:class:`ImpressionMissing`, :class:`ImpressionClosed`, :class:`Contention`); the API maps
them to HTTP statuses in one place (:mod:`service.app`).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import redis

from bandits.base import DuelingBandit
from service import credit as credit_step
from service.keys import (
    DUE,
    EXPERIMENTS,
    SWEEP_FULL,
    audit_key,
    clicks_key,
    counters_key,
    drains_key,
    exp_key,
    experiment_keys,
    experiment_of,
    experiment_pattern,
    health_key,
    imp_key,
    legacy_imp_key,
    pending_key,
    probe_key,
    rate_key,
    shown_key,
    t_key,
    w_key,
)
from service.snapshot import (
    SNAPSHOT_FIELDS,
    ExperimentMissing,
    Snapshot,
    encode_structure,
    encode_w,
    parse_snapshot,
    text,
)

LIFECYCLES = ("running", "paused", "stopped")
AUDIT_MAX = 10_000
#: how often one process re-marks an experiment in the sweep's index (Store.mark_due)
DUE_MARK_EVERY_S = 1.0
#: attempts of one optimistic transaction before giving up (:class:`Contention`)
MAX_ATTEMPTS = 1000

T = TypeVar("T")
R = TypeVar("R")


class ImpressionMissing(LookupError):
    """No impression with this id (unknown or expired)."""


class ImpressionClosed(Exception):
    """The impression no longer accepts clicks."""


class TooManyClicks(Exception):
    """The impression has recorded as many click reports as it may."""


class Contention(RuntimeError):
    """An optimistic transaction lost every one of its attempts."""


@dataclass
class Committed:
    """What the credit script did with a batch.

    ``status``: ``ok`` (every impression handled), ``held`` (stopped at ``held``, which
    now holds the experiment; the impressions before it are handled), ``hold`` (another
    impression holds the experiment: nothing done), ``sv`` (the structure changed since
    the batch was computed: nothing done), ``missing`` (no such experiment).
    ``codes``: per handled impression ``ok``, ``already``, ``missing`` or ``changed``
    (a click arrived since it was read: left pending).
    """

    status: str
    codes: dict[str, str] = field(default_factory=dict)
    held: str | None = None


def audit_entry(ts: float, action: str, *, actor: str, **detail: Any) -> str:
    """One audit-list entry (JSON)."""
    return json.dumps({"ts": ts, "action": action, "actor": actor, **detail})


class Store:
    """Experiments, impressions and their transactions on one Redis or a Redis Cluster.

    Parameters
    ----------
    client
        A ``redis.Redis`` or ``redis.cluster.RedisCluster`` with ``decode_responses=False``
        (``W`` is binary); see :mod:`service.redis_client`.
    clock
        Seconds since the epoch; injectable for tests.
    """

    def __init__(self, client, *, clock: Callable[[], float] = time.time) -> None:
        self.r = client
        self.clock = clock
        self._click_script = client.register_script(_CLICK_LUA)
        self._end_script = client.register_script(_END_LUA)
        self._extend_script = client.register_script(_EXTEND_LUA)
        self._select_script = client.register_script(_SELECT_LUA)
        self._fail_script = client.register_script(_FAIL_LUA)
        self._credit_script = client.register_script(_CREDIT_LUA)
        self._claim_script = client.register_script(_CLAIM_LUA)
        self._read_script = client.register_script(_READ_LUA)
        self._save_script = client.register_script(_SAVE_LUA)
        self._take_drain_script = client.register_script(_TAKE_DRAIN_LUA)
        self._audit_script = client.register_script(_AUDIT_LUA)
        self._due_marked: dict[str, tuple[float, float]] = {}

    # ------------------------------------------------------------------ reads
    def _queue_snapshot(self, pipe, exp_id: str, *, full: bool, extra: Sequence[str] = ()):
        pipe.hmget(exp_key(exp_id), (*SNAPSHOT_FIELDS, *extra))
        pipe.get(w_key(exp_id))
        if full:
            pipe.hgetall(counters_key(exp_id))
            pipe.get(t_key(exp_id))
            pipe.hgetall(health_key(exp_id))

    @staticmethod
    def _parse(exp_id: str, values: list[Any], *, full: bool, extra: int = 0) -> Snapshot:
        fields = values[0]
        snap = parse_snapshot(exp_id, fields[:len(fields) - extra], values[1])
        if full:
            counters, t, health = values[2:5]
            snap.counters = {text(k): int(v) for k, v in counters.items()}
            snap.selections = int(t or 0)
            snap.health = parse_health(health)
        return snap

    def snapshot(self, exp_id: str, *, full: bool = False) -> Snapshot:
        """The experiment's snapshot, read in one MULTI; with ``full``, also its counters,
        selection count and ranker health, so that they agree with ``W`` (a credit
        commits ``W`` and its counters together)."""
        pipe = self.r.pipeline(transaction=True)
        self._queue_snapshot(pipe, exp_id, full=full)
        return self._parse(exp_id, pipe.execute(), full=full)

    def scrape(self, ids: Sequence[str]) -> Iterable[tuple[str, Any]]:
        """What the metrics collector exports of experiments ``ids``, read in one pipeline
        (one round trip per shard): per id ``(id, (snapshot, shown, truth, pending))`` —
        the full snapshot, ``{arm: (impressions that showed it, its share of them)}``,
        the optional ``truth`` given at creation and the pending count — or
        ``(id, exception)`` for an experiment that could not be read."""
        pipe = self.r.pipeline(transaction=False)
        for e in ids:
            self._queue_snapshot(pipe, e, full=True, extra=("truth",))
            pipe.hgetall(shown_key(e))
            pipe.zcard(pending_key(e))
        values = pipe.execute(raise_on_error=False)
        per = 7
        for n, e in enumerate(ids):
            chunk = values[n * per:(n + 1) * per]
            try:
                for v in chunk:
                    if isinstance(v, Exception):
                        raise v
                snap = self._parse(e, chunk[:5], full=True, extra=1)
                truth_raw = chunk[0][-1]
                per_arm: dict[int, list[float]] = {}
                for key, value in chunk[5].items():
                    kind, _, arm = text(key).partition(":")
                    slot = per_arm.setdefault(int(arm), [0, 0.0])
                    slot[0 if kind == "n" else 1] = float(value)
                arms = {a: (int(c), share) for a, (c, share) in per_arm.items()}
                truth = json.loads(truth_raw) if truth_raw else None
                yield e, (snap, arms, truth, int(chunk[6]))
            except Exception as exc:  # one unreadable experiment must not hide the others
                yield e, exc

    def exists(self, exp_id: str) -> bool:
        return bool(self.r.exists(exp_key(exp_id)))

    def list_ids(self) -> list[str]:
        return [text(x) for x in self.r.zrange(EXPERIMENTS, 0, -1)]

    def counters(self, exp_id: str) -> dict[str, int]:
        raw = self.r.hgetall(counters_key(exp_id))
        return {text(k): int(v) for k, v in raw.items()}

    def audit(self, exp_id: str, start: int = 0, stop: int = -1) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.r.lrange(audit_key(exp_id), start, stop)]

    def next_t(self, exp_id: str) -> tuple[int, int, dict[int, dict[str, Any]]]:
        """INCR the selection counter; return ``(t, version, ranker health)``. One round
        trip. Raises :class:`ExperimentMissing` (and creates nothing) for an unknown id."""
        out = self._select_script(keys=[exp_key(exp_id), t_key(exp_id), health_key(exp_id)])
        if out is None:
            raise ExperimentMissing(f"no experiment {exp_id!r}")
        return int(out[0]), int(out[1]), parse_health(_pairs(out[2]))

    # ------------------------------------------------------------------ writes
    def create_experiment(self, exp_id: str, *, meta: dict[str, Any],
                          rankers: list[dict[str, Any]], bandit: DuelingBandit,
                          truth: dict[str, Any] | None, audit: str) -> None:
        """Store a new experiment (validated and built by the caller). The experiment
        list is written after the experiment's own keys (another shard on a cluster)."""
        pipe = self.r.pipeline(transaction=True)
        pipe.set(w_key(exp_id), encode_w(bandit))
        pipe.hset(exp_key(exp_id), mapping={
            "meta": json.dumps(meta),
            "lifecycle": "running",
            "rankers": json.dumps(rankers),
            "version": 1,
            "sv": 1,
            "n": bandit.n_updates,
            **encode_structure(bandit),
            **({"truth": json.dumps(truth)} if truth else {}),
        })
        pipe.rpush(audit_key(exp_id), audit)
        pipe.execute()
        self.r.zadd(EXPERIMENTS, {exp_id: meta["created_at"]})

    def transact(self, watch: Sequence[str], read: Callable[[], T],
                 write: Callable[[T, redis.client.Pipeline], R], *,
                 on_conflict: Callable[[], None] | None = None) -> R:
        """One optimistic transaction: WATCH ``watch`` (keys of one experiment), ``read()``
        (any reads, e.g. one pipelined round trip), then ``write(data, pipe)`` queues the
        writes on ``pipe`` (already in MULTI) and returns the result; EXEC. Retried from
        the WATCH, after ``on_conflict()``, when a watched key changed meanwhile. An
        exception from ``read``/``write`` aborts with nothing written."""
        with self.r.pipeline(transaction=True) as pipe:
            for _attempt in range(MAX_ATTEMPTS):
                try:
                    pipe.watch(*watch)
                    data = read()
                    pipe.multi()
                    result = write(data, pipe)
                    pipe.execute()
                    return result
                except redis.WatchError:
                    pipe.reset()
                    if on_conflict is not None:
                        on_conflict()
                    continue
        raise Contention(f"gave up after {MAX_ATTEMPTS} conflicting attempts on {watch[0]}")

    def update_experiment(self, exp_id: str,
                          write: Callable[[Snapshot, redis.client.Pipeline], R]) -> R:
        """:meth:`transact` on the experiment's snapshot and ``W`` (read in full: the
        policy decoded at the global ``t``)."""
        return self.transact([exp_key(exp_id), w_key(exp_id)],
                             lambda: self.snapshot(exp_id, full=True), write)

    def write_state(self, pipe, exp_id: str, bandit: DuelingBandit, *,
                    rankers: list[dict] | None = None, **fields: Any) -> None:
        """Queue the policy's new state — structure (``sv`` + 1), ``W`` and ``n`` — and
        optionally the rankers or other snapshot fields, with ``version`` + 1. Only
        inside a transaction that WATCHes ``W`` (credits add to it)."""
        mapping: dict[str, Any] = dict(encode_structure(bandit), n=bandit.n_updates, **fields)
        if rankers is not None:
            mapping["rankers"] = json.dumps(rankers)
        pipe.set(w_key(exp_id), encode_w(bandit))
        pipe.hset(exp_key(exp_id), mapping=mapping)
        pipe.hincrby(exp_key(exp_id), "sv", 1)
        pipe.hincrby(exp_key(exp_id), "version", 1)

    def write_fields(self, pipe, exp_id: str, **fields: Any) -> None:
        """Queue snapshot fields other than the policy state, with ``version`` + 1."""
        pipe.hset(exp_key(exp_id), mapping=fields)
        pipe.hincrby(exp_key(exp_id), "version", 1)

    def add_audit(self, exp_id: str, *entries: str, pipe=None) -> None:
        """Append audit entries (from :func:`audit_entry`), keeping the last AUDIT_MAX.

        Into ``pipe`` (a transaction that WATCHes the experiment), or else by a script
        that appends only while the experiment exists: a request that was running when
        its experiment was deleted must not leave an audit list behind."""
        if not entries:
            return
        if pipe is None:
            self._audit_script(keys=[exp_key(exp_id), audit_key(exp_id)],
                               args=[AUDIT_MAX, *entries])
            return
        pipe.rpush(audit_key(exp_id), *entries)
        pipe.ltrim(audit_key(exp_id), -AUDIT_MAX, -1)

    # ------------------------------------------------------------------ impressions
    def save_impression(
        self,
        imp_id: str,
        *,
        exp_id: str,
        t: int,
        arms: list[int],
        shown: list[str],
        record: Any,
        duel: bool,
        forfeits: list[tuple[int, int]],
        token_expires: int,
        ttl_s: int,
        inactivity_s: float,
        counters: dict[str, int],
        urls: list[str | None] | None = None,
    ) -> None:
        """Store an impression (with TTL), count it and its rankers' exposure, and
        schedule its credit for when it goes idle: one script, so a client that retries
        it after a lost reply (a shard restarting) stores and counts it once.

        Raises :class:`ExperimentMissing` (and writes nothing) when the experiment is gone:
        a search that was waiting for its rankers while the experiment was deleted must
        not leave a pending set, counters or an impression behind."""
        now = self.clock()
        fields = {
            "exp": exp_id,
            "t": t,
            "arms": json.dumps(arms),
            "shown": json.dumps(shown),
            "record": json.dumps(record),
            "duel": int(duel),
            "forfeits": json.dumps(forfeits),
            "created": repr(now),
            "expires": token_expires,
            "closed": 0,
        }
        if urls and any(urls):  # the result URLs, for the click redirect /r
            fields["urls"] = json.dumps(urls)
        out = self._save_script(
            keys=[imp_key(exp_id, imp_id), pending_key(exp_id), counters_key(exp_id),
                  shown_key(exp_id), exp_key(exp_id)],
            args=[imp_id, int(ttl_s), repr(now + inactivity_s),
                  ",".join(f"{name}:{int(n)}" for name, n in counters.items()),
                  ",".join(str(int(a)) for a in arms), repr(1.0 / len(arms)),
                  *(x for kv in fields.items() for x in kv)])
        if out == -1:
            raise ExperimentMissing(f"no experiment {exp_id!r} (deleted during the search)")
        self.mark_due(exp_id, now + inactivity_s)

    def mark_due(self, exp_id: str, due: float) -> None:
        """Tell the sweep's index that ``exp_id`` has an impression due at ``due``.

        Written at most once per :data:`DUE_MARK_EVERY_S` per experiment by one process
        unless ``due`` is earlier than the last mark (a mark covers every impression due
        after it); ``LT`` keeps the index's score the earliest.
        """
        now = self.clock()
        at, marked = self._due_marked.get(exp_id, (-DUE_MARK_EVERY_S, due))
        if now - at < DUE_MARK_EVERY_S and marked <= due:
            return
        self.r.zadd(DUE, {exp_id: due}, lt=True)
        self._due_marked[exp_id] = (now, due)
        if len(self._due_marked) > 10_000:  # experiments come and go: a bounded memory
            self._due_marked.clear()

    def experiment_of(self, imp_id: str) -> str | None:
        """The experiment of an impression id (its prefix; for an id issued before the
        current key layout, the index written by ``rankduel migrate-keys``)."""
        exp_id = experiment_of(imp_id)
        if exp_id is None:
            exp_id = text(self.r.get(legacy_imp_key(imp_id)))
        return exp_id

    def impression(self, imp_id: str) -> dict[str, Any] | None:
        """The impression's fields, or None when unknown or expired."""
        exp_id = self.experiment_of(imp_id)
        if exp_id is None:
            return None
        raw = self.r.hgetall(imp_key(exp_id, imp_id))
        if not raw:
            return None
        d = {text(k): text(v) for k, v in raw.items()}
        d["exp"] = exp_id
        d["shown"] = json.loads(d["shown"])
        d["arms"] = json.loads(d["arms"])
        d["record"] = json.loads(d["record"])
        d["closed"] = d.get("closed") == "1"
        d["duel"] = d.get("duel") == "1"
        d["expires"] = int(d["expires"])
        d["urls"] = json.loads(d["urls"]) if d.get("urls") else []
        return d

    def add_clicks(self, imp_id: str, exp_id: str, positions: list[int], *,
                   inactivity_s: float, ttl_s: int, max_reports: int = 100,
                   dwell_ms: dict[int, int] | None = None) -> int:
        """Record clicked positions (a set: repeats count once) unless the impression is
        closed; push back its inactivity deadline. Returns how many positions were new.
        Atomic (Lua), so a click can never slip in after the impression was credited.

        ``dwell_ms`` (position -> ms, what a browser reports when its user comes back)
        is kept per position as ``dwell:<position>`` in the impression, the longest of
        the reports, in the same script: a dwell is never recorded after the credit.

        An impression takes at most ``max_reports`` reports (:class:`TooManyClicks`
        beyond): each pushes its deadline back, so a storm of reports could otherwise
        keep it from being credited until it expires."""
        now = self.clock()
        out = self._click_script(
            keys=[imp_key(exp_id, imp_id), clicks_key(exp_id, imp_id), pending_key(exp_id)],
            args=[now + inactivity_s, imp_id, ttl_s, int(max_reports),
                  ",".join(f"{int(p)}:{int(ms)}" for p, ms in (dwell_ms or {}).items()),
                  *positions],
        )
        if out == -3:
            raise TooManyClicks(f"impression {imp_id!r} has reached its limit of "
                                f"{max_reports} click reports")
        if out == -1:
            raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
        if out == -2:
            raise ImpressionClosed(f"impression {imp_id!r} is closed; clicks are no longer "
                                   "accepted")
        return int(out)

    def extend_impression(self, imp_id: str, exp_id: str, *, expect: list[str],
                          shown: list[str], record: Any, urls: list[str | None],
                          inactivity_s: float) -> bool:
        """Replace an open impression's shown list, record and URLs by longer ones (its
        next result page, :mod:`service.paging`) unless it changed since it was read as
        ``expect`` (False then: another page came first). One script: it counts as a
        report (a credit read before it is read again, so it credits the longer record)
        and pushes back the inactivity deadline, like a click. Raises
        :class:`ImpressionMissing` or :class:`ImpressionClosed`."""
        out = self._extend_script(
            keys=[imp_key(exp_id, imp_id), pending_key(exp_id)],
            args=[self.clock() + inactivity_s, imp_id, json.dumps(expect), json.dumps(shown),
                  json.dumps(record), json.dumps(urls) if any(urls) else ""])
        if out == -1:
            raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
        if out == -2:
            raise ImpressionClosed(f"impression {imp_id!r} is closed: its clicks are being "
                                   "credited, so it cannot grow; start a new search (page 1)")
        return out == 1

    def end_impression(self, imp_id: str, exp_id: str, *,
                       drain_ttl_s: float) -> tuple[bool, str | None]:
        """Close the impression to new clicks and make it due now.

        Returns ``(closed now, drain token)``: the token is set when no drain is queued or
        running for the experiment and this call took a drain lease for one, i.e. the
        caller must queue a drain task with it.
        """
        token = secrets.token_hex(8)
        now = self.clock()
        out = self._end_script(
            keys=[imp_key(exp_id, imp_id), pending_key(exp_id), drains_key(exp_id)],
            args=[now, imp_id, token, now + max(1.0, drain_ttl_s)])
        if out == -1:
            raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
        if out >= 1:
            self.mark_due(exp_id, now)  # due now: found by the sweep if its drain is lost
        return out >= 1, (token if out == 2 else None)

    # ------------------------------------------------------------------ ranker health
    def ranker_failed(self, exp_id: str, arm: int, *, threshold: int,
                      quarantine_s: float) -> tuple[int, bool]:
        """Count a failure of ``arm``; returns ``(consecutive failures, quarantined now)``:
        the second is True when this failure opened (or, after a failed probe, re-opened)
        its quarantine for ``quarantine_s``."""
        n, opened = self._fail_script(keys=[health_key(exp_id), exp_key(exp_id)],
                                      args=[int(arm), self.clock(), threshold, quarantine_s])
        return int(n), bool(opened)

    def ranker_recovered(self, exp_id: str, arm: int) -> bool:
        """Forget the failures of ``arm``; True if it was quarantined."""
        pipe = self.r.pipeline(transaction=True)
        pipe.hexists(health_key(exp_id), f"q:{int(arm)}")
        pipe.hdel(health_key(exp_id), f"f:{int(arm)}", f"q:{int(arm)}")
        was_quarantined, _ = pipe.execute()
        return bool(was_quarantined)

    def take_probe(self, exp_id: str, arm: int, ttl_s: float) -> bool:
        """Take the right to call a quarantined ranker once (one request per ``ttl_s``)."""
        return bool(self.r.set(probe_key(exp_id, arm), 1, nx=True,
                               px=max(1, int(ttl_s * 1000))))

    # ------------------------------------------------------------------ drains
    def due(self, exp_id: str, limit: int) -> list[str]:
        """Impressions of ``exp_id`` whose credit is due (closed, idle too long, or
        claimed by a drain whose lease ran out)."""
        ids = self.r.zrangebyscore(pending_key(exp_id), "-inf", self.clock(), start=0,
                                   num=limit)
        return [text(i) for i in ids]

    def claim(self, exp_id: str, limit: int, lease_s: float) -> tuple[int, list[str]]:
        """Claim up to ``limit`` due impressions for ``lease_s`` (no other drain sees them
        until then); returns the experiment's selection count ``t`` and their ids."""
        now = self.clock()
        t, ids = self._claim_script(keys=[pending_key(exp_id), t_key(exp_id)],
                                    args=[now, now + lease_s, int(limit)])
        return int(t or 0), [text(i) for i in ids]

    def selections(self, exp_id: str) -> int:
        """The experiment's selection count ``t``."""
        return int(self.r.get(t_key(exp_id)) or 0)

    def pending_count(self, exp_id: str) -> int:
        """Impressions of ``exp_id`` not yet credited (open, closed or idle)."""
        return int(self.r.zcard(pending_key(exp_id)))

    def take_drain(self, exp_id: str, ttl_s: float, *, limit: int = 1,
                   token: str | None = None) -> str | None:
        """Take a drain lease for ``ttl_s`` if fewer than ``limit`` drains hold one (expired
        leases do not count); the lease's token, or None."""
        token = token or secrets.token_hex(8)
        now = self.clock()
        ok = self._take_drain_script(keys=[drains_key(exp_id)],
                                     args=[now, token, now + max(1.0, ttl_s), int(limit)])
        return token if ok else None

    def refresh_drain(self, exp_id: str, token: str, ttl_s: float) -> None:
        """Extend (or take again) the lease ``token``."""
        self.r.zadd(drains_key(exp_id), {token: self.clock() + max(1.0, ttl_s)})

    def release_drain(self, exp_id: str, token: str) -> None:
        self.r.zrem(drains_key(exp_id), token)

    def drains(self, exp_id: str) -> int:
        """Drain leases held now (queued or running drains)."""
        return int(self.r.zcount(drains_key(exp_id), self.clock(), "+inf"))

    def experiments_with_due(self, *, full: bool = False) -> list[str]:
        """Experiments that have at least one impression due and no drain lease held: the
        sweep's scan, one pipelined round trip per shard.

        Reads only the experiments the index ``rd:due`` lists as due by now, and puts
        each back at its earliest pending impression (or drops it when none is
        pending); ``full`` reads every experiment instead and rebuilds the index — the
        sweep does that now and then (and at its first run), which also repairs what a
        crash between an impression's write and its mark left out.
        """
        now = self.clock()
        ids = self.list_ids() if full else [
            text(e) for e in self.r.zrangebyscore(DUE, "-inf", now)]
        if not ids:
            return []
        pipe = self.r.pipeline(transaction=False)
        for e in ids:
            pipe.zrange(pending_key(e), 0, 0, withscores=True)
            pipe.zcount(drains_key(e), now, "+inf")
        out = pipe.execute()
        due, index, gone = [], {}, []
        for n, e in enumerate(ids):
            first, draining = out[2 * n], out[2 * n + 1]
            if not first:
                gone.append(e)
                continue
            score = float(first[0][1])
            index[e] = score
            if score <= now and not draining:
                due.append(e)
        if index:
            # a due experiment stays due in the index until its drain has credited it; a
            # drain holding the lease pushes its impressions forward, so it reappears then
            self.r.zadd(DUE, index)
        if gone:
            self.r.zrem(DUE, *gone)
        return due

    def delete_experiment(self, exp_id: str) -> int:
        """Remove experiment ``exp_id`` and every key it owns; returns the keys deleted.

        Off the experiment list and the sweep's index first (nothing new starts on it),
        then every key with its hash tag, found by SCAN (impressions included, credited
        or not); a drain still running finds the experiment missing and stops.
        Raises :class:`ExperimentMissing` for an unknown id.
        """
        if not self.exists(exp_id):
            raise ExperimentMissing(f"no experiment {exp_id!r}")
        self.r.zrem(EXPERIMENTS, exp_id)
        self.r.zrem(DUE, exp_id)
        self._due_marked.pop(exp_id, None)
        deleted = int(self.r.delete(exp_key(exp_id)))  # the experiment is gone from here on
        batch: list[str] = []
        for key in self.r.scan_iter(match=experiment_pattern(exp_id), count=1000):
            batch.append(key)
            if len(batch) >= 500:
                deleted += self._unlink(batch)
                batch = []
        if batch:
            deleted += self._unlink(batch)
        return deleted

    def purge_orphan(self, exp_id: str) -> int | None:
        """Delete what is left of a deleted experiment, if ``exp_id`` is one: None when the
        experiment exists, else the keys deleted (0 when nothing was left).

        The leftovers of a request that was running during ``DELETE`` (its keys written
        after the SCAN passed them), or of a drain lease: the fixed keys of
        :func:`~service.keys.experiment_keys` and the impressions its pending set names,
        without a SCAN; the experiment leaves the sweep's index. Impressions not pending
        carry a TTL and expire on their own. Called by a drain (:mod:`workers.tasks`), so
        that a deleted experiment's leftovers are credited by no one and swept no more.
        """
        if self.exists(exp_id):
            return None
        keys: list[str] = list(experiment_keys(exp_id))
        for imp_id in self.r.zrange(pending_key(exp_id), 0, -1):
            keys += [imp_key(exp_id, text(imp_id)), clicks_key(exp_id, text(imp_id))]
        self.r.zrem(DUE, exp_id)
        self._due_marked.pop(exp_id, None)
        return self._unlink(keys)

    def _unlink(self, keys: list[Any]) -> int:
        # one key per command: a cluster pipeline's rule, and a Redis without UNLINK's
        # batching still answers one small reply each
        pipe = self.r.pipeline(transaction=False)
        for k in keys:
            pipe.unlink(k)
        return sum(int(x) for x in pipe.execute())

    # ------------------------------------------------------------------ abuse limits
    def take_full_sweep(self, every_s: float) -> bool:
        """Whether this sweep should read every experiment: True once per ``every_s``
        across all workers (a key with that TTL)."""
        return bool(self.r.set(SWEEP_FULL, 1, nx=True, px=max(1, int(every_s * 1000))))

    def count_client_request(self, client: str, limit: int, window_s: int = 60) -> float:
        """Count one request of client address ``client`` in the current window of
        ``window_s`` seconds; returns 0 while within ``limit``, else the seconds until the
        window ends (the ``Retry-After``). A fixed window: a burst can reach twice the
        limit across a boundary, which bounds what a client can do just as well."""
        now = self.clock()
        window = int(now // window_s)
        key = rate_key(client, window)
        pipe = self.r.pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, 2 * window_s)
        n = int(pipe.execute()[0])
        if n <= limit:
            return 0.0
        return max(1.0, (window + 1) * window_s - now)

    # ------------------------------------------------------------------ crediting
    def read_impressions(self, exp_id: str, imp_ids: Sequence[str]
                         ) -> list[credit_step.Impression | None]:
        """Every impression of ``imp_ids`` with its clicks, in one script call that
        returns one JSON array per impression (None where unknown or expired)."""
        if not imp_ids:
            return []
        keys = []
        for i in imp_ids:
            keys += [imp_key(exp_id, i), clicks_key(exp_id, i)]
        rows = self._read_script(keys=keys)
        return [_impression(i, row) for i, row in zip(imp_ids, rows, strict=True)]

    def commit_credit(self, exp_id: str, *, sv: int, guard: credit_step.Guard | None,
                      ids: Sequence[str],
                      impressions: Sequence[credit_step.Impression | None],
                      result: credit_step.Credit) -> Committed:
        """Run the credit script for what :func:`service.credit.apply` (``update=False``)
        decided about ``impressions`` (named ``ids``), computed at structure version ``sv``
        (see the module docstring)."""
        keys = [exp_key(exp_id), w_key(exp_id), counters_key(exp_id), pending_key(exp_id)]
        args: list[Any] = [sv, "" if guard is None else repr(guard.q)]
        sent, gone = [], {}
        for imp_id, imp in zip(ids, impressions, strict=True):
            res = result.results[imp_id]
            if imp is None or res["status"] in ("missing", "already"):
                gone[imp_id] = res["status"]
                continue
            sent.append(imp_id)
            keys += [imp_key(exp_id, imp_id), clicks_key(exp_id, imp_id)]
            outcomes = ";".join(
                f"{int(i)},{int(j)},{float(s)!r},{int(guard is not None and guard.watches(i, j))}"
                for i, j, s in res.get("outcomes", ()))
            counted = ",".join(result.counted.get(imp_id, ()))
            args += [imp_id, json.dumps(res), f"{imp.reports}|{counted}|{outcomes}"]
        if gone:  # nothing to credit: off the pending set (idempotent, outside the script)
            self.r.zrem(pending_key(exp_id), *gone)
        if not sent:
            return Committed("ok", gone)
        out = self._credit_script(keys=keys, args=args)
        status = text(out[0])
        if status in ("sv", "hold", "missing"):
            return Committed(status, {}, text(out[1]) if len(out) > 1 else None)
        codes = {i: text(c) for i, c in zip(sent, out[2:], strict=False)}
        codes.update(gone)
        return Committed(status, codes, text(out[1]) or None)

    def resolve_hold(self, exp_id: str,
                     decide: Callable[[Snapshot, list[str],
                                       list[credit_step.Impression | None]],
                                      credit_step.Credit],
                     more: Sequence[str] = ()) -> dict[str, dict] | None:
        """Decide the impression that holds ``exp_id``, if any, then the impressions
        ``more`` (the rest of the caller's batch), in order: ``decide(snapshot, ids,
        impressions)`` (the pure credit step with ``update=True`` on the snapshot's policy
        at the global ``t``) in one optimistic transaction that commits ``W``, ``n``, the
        structure, the marks, counters and audit and clears the hold. While the hold is
        set no credit script runs, so applying the rest here too is as exact as the
        script, and saves a round per held outcome (every outcome is held for a policy
        whose ``update()`` advances selection state). Returns the results, or None when
        nothing was held."""
        held = text(self.r.hget(exp_key(exp_id), "hold"))
        if not held:
            return None
        ids = [held, *(i for i in dict.fromkeys(more) if i != held)]
        watch = [exp_key(exp_id), w_key(exp_id)]
        for i in ids:
            watch += [imp_key(exp_id, i), clicks_key(exp_id, i)]

        def read() -> tuple[Snapshot, list[credit_step.Impression | None]]:
            snap = self.snapshot(exp_id, full=True)
            imps = self.read_impressions(exp_id, ids) if snap.hold == held else []
            return snap, imps

        def write(data, pipe) -> dict[str, dict] | None:
            snap, imps = data
            if snap.hold != held:
                return None  # resolved by another worker meanwhile
            bandit = snap.bandit
            before = encode_structure(bandit)["state"]
            result = decide(snap, ids, imps)
            if result.changed:
                structure = encode_structure(bandit)
                pipe.set(w_key(exp_id), encode_w(bandit))
                fields: dict[str, Any] = {"n": bandit.n_updates}
                if structure["state"] != before:
                    fields.update(structure)
                    pipe.hincrby(exp_key(exp_id), "sv", 1)
                pipe.hset(exp_key(exp_id), mapping=fields)
                self.add_audit(exp_id, *(audit_entry(self.clock(), **e)
                                         for e in result.audit), pipe=pipe)
            counts: dict[str, int] = {}
            for i in ids:
                res = result.results[i]
                if res["status"] in ("missing", "already"):
                    continue
                pipe.hset(imp_key(exp_id, i), mapping={"closed": 1, "credited": json.dumps(res)})
                for name in result.counted.get(i, []):
                    counts[name] = counts.get(name, 0) + 1
            for name, n in counts.items():
                pipe.hincrby(counters_key(exp_id), name, n)
            pipe.zrem(pending_key(exp_id), *ids)
            pipe.hdel(exp_key(exp_id), "hold")
            pipe.hincrby(exp_key(exp_id), "version", 1)
            return result.results

        return self.transact(watch, read, write, on_conflict=lambda: self.count_conflict(exp_id))

    def count_conflict(self, exp_id: str) -> None:
        self.r.hincrby(counters_key(exp_id), "credit_conflicts", 1)


def _pairs(flat: list[Any]) -> dict[Any, Any]:
    """A Lua HGETALL reply (flat list) as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def parse_health(raw: dict[Any, Any]) -> dict[int, dict[str, Any]]:
    """``{arm: {"failures": n, "quarantined_until": ts | None}}`` from the health hash."""
    out: dict[int, dict[str, Any]] = {}
    for key, value in raw.items():
        kind, _, arm = text(key).partition(":")
        slot = out.setdefault(int(arm), {"failures": 0, "quarantined_until": None})
        if kind == "f":
            slot["failures"] = int(value)
        else:
            slot["quarantined_until"] = float(value)
    return out


def _impression(imp_id: str, row: bytes) -> credit_step.Impression | None:
    """An impression from its row of :data:`_READ_LUA`."""
    if not row:
        return None
    try:
        record, arms, forfeits, duel, created, credited, clicks, dwell, reports = (
            json.loads(row))
        forfeits = [tuple(f) for f in forfeits]
        dwell = {int(p): int(ms) for p, ms in dwell}
    except (ValueError, TypeError):
        # a record this code cannot read: the credit step reports it as an error
        return credit_step.Impression(id=imp_id, arms=[], duel=True, record=None)
    return credit_step.Impression(
        id=imp_id,
        arms=arms,
        duel=duel == 1,
        record=record,
        clicks=sorted(int(x) for x in clicks),
        forfeits=forfeits,
        created=float(created),
        credited=credited == 1,
        dwell_ms=dwell,
        reports=int(reports),
    )


# KEYS: imp, clicks per impression -> per impression '' (unknown or expired) or the JSON
# array [record, arms, forfeits, duel, created, credited, [clicked positions],
# [[position, dwell ms], ...], reports] (the stored fields are JSON already: one string to
# decode per impression, not a dozen replies)
_READ_LUA = """
local out = {}
for k = 1, #KEYS, 2 do
  local v = redis.call('HMGET', KEYS[k], 'record', 'arms', 'forfeits', 'duel', 'created',
                       'credited', 'reports')
  if not v[2] then
    out[#out + 1] = ''
  else
    local c = redis.call('SMEMBERS', KEYS[k + 1])
    local dwell = {}
    for _, p in ipairs(c) do
      local ms = redis.call('HGET', KEYS[k], 'dwell:' .. p)
      if ms then dwell[#dwell + 1] = '[' .. p .. ',' .. ms .. ']' end
    end
    out[#out + 1] = '[' .. (v[1] or 'null') .. ',' .. v[2] .. ',' .. (v[3] or '[]') .. ','
      .. (v[4] or '0') .. ',' .. (v[5] or '0') .. ',' .. (v[6] and '1' or '0') .. ',['
      .. table.concat(c, ',') .. '],[' .. table.concat(dwell, ',') .. '],'
      .. (v[7] or '0') .. ']'
  end
end
return out
"""

# KEYS: imp, pending, counters, shown, exp; ARGV: imp_id, ttl, due, "name:n,...",
# "arm,...", exposure share per arm, then the impression's field/value pairs -> 1 stored,
# 0 already there (a retried call), -1 the experiment is gone (nothing written)
_SAVE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[5]) == 0 then return -1 end
redis.call('HSET', KEYS[1], unpack(ARGV, 7))
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
for name, n in string.gmatch(ARGV[4], '([^:,]+):(%d+)') do
  redis.call('HINCRBY', KEYS[3], name, n)
end
for arm in string.gmatch(ARGV[5], '%d+') do
  redis.call('HINCRBY', KEYS[4], 'n:' .. arm, 1)
  redis.call('HINCRBYFLOAT', KEYS[4], 'share:' .. arm, ARGV[6])
end
return 1
"""

# KEYS: exp, audit; ARGV: the most entries kept, then entries (only to an experiment
# that exists)
_AUDIT_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('RPUSH', KEYS[2], unpack(ARGV, 2))
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[1]), -1)
return 1
"""

# KEYS: imp, clicks, pending; ARGV: due, imp_id, ttl, max reports, "position:dwell_ms,...",
# positions... -> positions new, or -1 unknown, -2 closed, -3 over its reports
_CLICK_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'closed') == '1' then return -2 end
if tonumber(redis.call('HGET', KEYS[1], 'reports') or '0') >= tonumber(ARGV[4]) then
  return -3
end
redis.call('HINCRBY', KEYS[1], 'reports', 1)
for p, ms in string.gmatch(ARGV[5], '(%d+):(%d+)') do
  local had = tonumber(redis.call('HGET', KEYS[1], 'dwell:' .. p) or '-1')
  if tonumber(ms) > had then redis.call('HSET', KEYS[1], 'dwell:' .. p, ms) end
end
local added = 0
for i = 6, #ARGV do added = added + redis.call('SADD', KEYS[2], ARGV[i]) end
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], 'XX', ARGV[1], ARGV[2])
return added
"""

# KEYS: imp, pending; ARGV: due, imp_id, expected shown (JSON), shown, record, urls ("" none)
# -> 1 extended, 0 changed since read, -1 unknown, -2 closed
_EXTEND_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'closed') == '1' then return -2 end
if redis.call('HGET', KEYS[1], 'shown') ~= ARGV[3] then return 0 end
redis.call('HINCRBY', KEYS[1], 'reports', 1)
redis.call('HSET', KEYS[1], 'shown', ARGV[4], 'record', ARGV[5])
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'urls', ARGV[6]) end
redis.call('ZADD', KEYS[2], 'XX', ARGV[1], ARGV[2])
return 1
"""

# KEYS: imp, pending, drains; ARGV: now, imp_id, drain token, drain lease expiry
# returns -1 unknown, 0 already closed, 1 closed, 2 closed and a drain lease taken (no
# drain was queued or running)
_END_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'closed') == '1' then return 0 end
redis.call('HSET', KEYS[1], 'closed', '1')
redis.call('ZADD', KEYS[2], 'XX', ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[3]) == 0 then
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
  return 2
end
return 1
"""

# KEYS: drains; ARGV: now, token, lease expiry, limit -> 1 taken, 0 not
_TAKE_DRAIN_LUA = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
return 1
"""

# KEYS: pending, t; ARGV: now, lease expiry, limit -> {t, ids}
_CLAIM_LUA = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id) end
return {redis.call('GET', KEYS[2]) or '0', ids}
"""

# KEYS: exp, t, health -> {t, version, health as a flat list}
_SELECT_LUA = """
local v = redis.call('HGET', KEYS[1], 'version')
if not v then return nil end
return {redis.call('INCR', KEYS[2]), tonumber(v), redis.call('HGETALL', KEYS[3])}
"""

# KEYS: health, exp; ARGV: arm, now, threshold, quarantine seconds -> {failures, opened}
# ({0, 0} when the experiment is gone: nothing written)
_FAIL_LUA = """
if redis.call('EXISTS', KEYS[2]) == 0 then return {0, 0} end
local n = redis.call('HINCRBY', KEYS[1], 'f:' .. ARGV[1], 1)
local q = tonumber(redis.call('HGET', KEYS[1], 'q:' .. ARGV[1]) or '0')
local now = tonumber(ARGV[2])
if n >= tonumber(ARGV[3]) and q <= now then
  redis.call('HSET', KEYS[1], 'q:' .. ARGV[1], tostring(now + tonumber(ARGV[4])))
  return {n, 1}
end
return {n, 0}
"""

# The credit script (see the module docstring and service.credit).
# KEYS: exp, W, counters, pending, then per impression: imp, clicks
# ARGV: sv, q (the guard; "" for none), then per impression: id, result (JSON mark),
#   "clicks seen|counter,counter...|i,j,s,watched;i,j,s,watched..."
# -> {'sv', current sv} | {'hold', held id} | {'missing'} |
#    {'ok' | 'held', held id or '', code per impression handled...}
_CREDIT_LUA = """
local exp, W = KEYS[1], KEYS[2]
local meta = redis.call('HMGET', exp, 'sv', 'hold', 'K')
if not meta[1] then return {'missing'} end
if meta[1] ~= ARGV[1] then return {'sv', meta[1]} end
if meta[2] then return {'hold', meta[2]} end
local K = tonumber(meta[3])
local q = tonumber(ARGV[2])
local counts, codes = {}, {}
local updates, applied, held = 0, 0, ''
for k = 0, (#KEYS - 4) / 2 - 1 do
  local imp, clicks = KEYS[5 + 2 * k], KEYS[6 + 2 * k]
  local id, mark, spec = ARGV[3 + 3 * k], ARGV[4 + 3 * k], ARGV[5 + 3 * k]
  local nreports, counted, outcomes = string.match(spec, '^(%d+)|([^|]*)|(.*)$')
  local code
  if redis.call('EXISTS', imp) == 0 then
    code = 'missing'
  elseif redis.call('HEXISTS', imp, 'credited') == 1 then
    code = 'already'
  elseif tonumber(redis.call('HGET', imp, 'reports') or '0') ~= tonumber(nreports) then
    code = 'changed'
  else
    local writes, trip, no = {}, false, 0
    for si, sj, ss, sw in string.gmatch(outcomes, '(%d+),(%d+),([^,;]+),(%d)') do
      local i, j, s = tonumber(si), tonumber(sj), tonumber(ss)
      no = no + 1
      if i ~= j then
        local oij, oji = 8 * (i * K + j), 8 * (j * K + i)
        local wij = struct.unpack('<d', redis.call('GETRANGE', W, oij, oij + 7)) + s
        local wji = struct.unpack('<d', redis.call('GETRANGE', W, oji, oji + 7)) + (1 - s)
        if q and sw == '1' then
          local d = wji - wij
          if d * d > q * (wij + wji) then trip = true end
        end
        writes[#writes + 1] = {oij, wij, oji, wji}
      end
    end
    if trip then
      held = id
      break
    end
    for _, w in ipairs(writes) do
      redis.call('SETRANGE', W, w[1], struct.pack('<d', w[2]))
      redis.call('SETRANGE', W, w[3], struct.pack('<d', w[4]))
    end
    if no > 0 then updates = updates + 1 end
    redis.call('HSET', imp, 'closed', '1', 'credited', mark)
    for name in string.gmatch(counted, '[^,]+') do counts[name] = (counts[name] or 0) + 1 end
    applied = applied + 1
    code = 'ok'
  end
  if code ~= 'changed' then redis.call('ZREM', KEYS[4], id) end
  codes[#codes + 1] = code
end
for name, n in pairs(counts) do redis.call('HINCRBY', KEYS[3], name, n) end
if updates > 0 then redis.call('HINCRBY', exp, 'n', updates) end
if applied > 0 then redis.call('HINCRBY', exp, 'version', 1) end
if held ~= '' then
  redis.call('HSET', exp, 'hold', held)
  return {'held', held, unpack(codes)}
end
return {'ok', '', unpack(codes)}
"""
