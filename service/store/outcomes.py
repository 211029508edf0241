"""Outcome events in Redis (:mod:`service.outcomes`): the experiments' declarations read
for the request path's cache, an event attributed and recorded (one call per candidate
experiment, each built by its design's part of the store: ``outcome.lua`` here, an A/B
experiment's in :mod:`service.ab.store`; sent pipelined), the workers' reads and the
metrics' credit script (``metric_credit.lua``), and the metrics' counts. Plain values in
and out: nothing here decides anything (the keys: :mod:`service.store.keys`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from redis.exceptions import NoScriptError

from bandits import outcomes as rule
from service.store.base import StorePart
from service.store.keys import (
    attribution_key,
    counters_key,
    events_key,
    exp_key,
    metrics_key,
    outcome_event_key,
    parse_metric_field,
    pending_key,
    tie_field,
    ties_key,
    touches_key,
    w_key,
)
from service.store.scripts import METRIC_CREDIT, SCRIPTS, MetricSpec
from service.store.snapshot import text


@dataclass(frozen=True)
class OutcomeCall:
    """One candidate experiment's outcome event, as its design's outcome script takes it
    (:meth:`service.designs.base.Design.outcome_call`): by user (``user_hash`` set) or
    by impression (``imp_id`` set)."""

    exp_id: str
    digest: str
    doc: str
    #: the action's metrics of the experiment: ``(name, window_s, kind)`` each
    windows: tuple[tuple[str, int, str], ...]
    value: str
    action: str
    ttl_s: int
    user_hash: str | None = None
    imp_id: str | None = None

    def named(self, now: float) -> tuple[dict[str, str], dict[str, Any]]:
        """The keys and arguments every design's outcome script takes, by the names of
        the scripts' declarations (:data:`service.store.scripts.SCRIPTS`); each design's
        part adds its own, and ``windows`` in its script's form."""
        if self.user_hash is not None:
            source, form, tail = (touches_key(self.exp_id, self.user_hash), "u",
                                  f"{self.exp_id}.")
        else:
            source, form, tail = attribution_key(self.exp_id, self.imp_id), "i", self.imp_id
        keys = {"exp": exp_key(self.exp_id), "event": outcome_event_key(self.exp_id,
                                                                        self.digest),
                "source": source}
        args = {"now": now, "form": form, "doc": self.doc, "value": self.value,
                "ttl": self.ttl_s, "action": self.action, "tail": tail}
        return keys, args


class ScriptRun(NamedTuple):
    """One script call ready to send: the registered script, its KEYS and ARGV (what a
    part of the store builds for :meth:`OutcomeStore.record_outcomes` to send)."""

    script: Any
    keys: list[str]
    args: list[Any]


@dataclass
class MetricCounts:
    """What one metric has counted: ``W`` per pair ``(i, j)``, ties per pair (``i < j``),
    comparisons ``n``, values summed and events won per arm, and per segment label its
    ``W``, ties and ``n`` (the fields: :data:`service.store.keys.METRIC_FIELDS`)."""

    W: dict[tuple[int, int], float] = field(default_factory=dict)
    ties: dict[tuple[int, int], int] = field(default_factory=dict)
    n: int = 0
    values: dict[int, float] = field(default_factory=dict)
    events: dict[int, int] = field(default_factory=dict)
    segments: dict[str, dict[tuple[int, int], float]] = field(default_factory=dict)
    segment_ties: dict[str, dict[tuple[int, int], int]] = field(default_factory=dict)
    segment_n: dict[str, int] = field(default_factory=dict)


class OutcomeStore(StorePart):
    """Outcome events and the metrics' counts."""

    SCRIPTS: ClassVar[dict[str, str]] = {"_outcome_script": "outcome",
                                         "_metric_credit_script": "metric_credit"}

    def declarations(self, exp_ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        """Each experiment's ``(meta JSON, lifecycle)`` in one pipeline (for the request
        path's cache of actions, :mod:`service.outcomes.actions`)."""
        pipe = self.r.pipeline(transaction=False)
        for e in exp_ids:
            pipe.hmget(exp_key(e), "meta", "lifecycle")
        return {e: (text(m), text(lc)) for e, (m, lc) in zip(exp_ids, pipe.execute(),
                                                             strict=True)}

    def meta(self, exp_id: str) -> dict[str, Any] | None:
        """The experiment's meta (None: no such experiment)."""
        raw = self.r.hget(exp_key(exp_id), "meta")
        return json.loads(raw) if raw else None

    def outcome_call(self, call: OutcomeCall, member: str) -> ScriptRun:
        """``outcome.lua``'s call for ``call`` (an interleaving experiment's: the event
        recorded as the pending item ``member``, for the workers to credit)."""
        keys, args = call.named(self.clock())
        windows = ",".join(f"{name}:{w}" for name, w, _ in call.windows)  # name:window_s
        return ScriptRun(self._outcome_script, *SCRIPTS["outcome"].build(
            {**keys, "pending": pending_key(call.exp_id)},
            {**args, "windows": windows, "member": member}))

    def record_outcomes(self, calls: Sequence[ScriptRun]) -> list[list[str]]:
        """Send the candidate experiments' outcome calls, each built by its design's part
        of the store (:meth:`outcome_call`, :meth:`service.ab.store.ABStore.outcome_call`):
        one call directly, several in one pipeline (one round trip either way); each
        reply as a list of strings."""
        if len(calls) == 1:
            script, keys, args = calls[0]
            return [[text(x) for x in self.call(script, keys=keys, args=args)]]
        pipe = self.r.pipeline(transaction=False)
        for script, keys, args in calls:
            # by name: a cluster pipeline refuses its evalsha() method, not the command
            pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        replies = pipe.execute(raise_on_error=False)
        for n, reply in enumerate(replies):
            if isinstance(reply, NoScriptError):  # a restarted node: the script loads it
                script, keys, args = calls[n]
                replies[n] = script(keys=keys, args=args)
            elif isinstance(reply, Exception):
                raise reply
        return [[text(x) for x in r] for r in replies]

    def read_outcome_events(self, exp_id: str, digests: Sequence[str]
                            ) -> list[dict[str, str] | None]:
        """The stored events (None where expired), in one pipeline."""
        pipe = self.r.pipeline(transaction=False)
        for d in digests:
            pipe.hgetall(outcome_event_key(exp_id, d))
        return [{text(k): text(v) for k, v in row.items()} or None
                for row in pipe.execute()]

    def read_attributions(self, exp_id: str, imp_ids: Sequence[str]
                          ) -> dict[str, list[Any] | None]:
        """The impressions' attribution entries (None where expired), in one pipeline."""
        ids = list(dict.fromkeys(imp_ids))
        pipe = self.r.pipeline(transaction=False)
        for i in ids:
            pipe.get(attribution_key(exp_id, i))
        return {i: (json.loads(raw) if raw else None) for i, raw in zip(ids, pipe.execute(),
                                                                       strict=True)}

    def commit_metric_credit(self, exp_id: str,
                             entries: Sequence[tuple[str, str, str, MetricSpec]]
                             ) -> dict[str, str]:
        """Run the metrics' credit script on ``entries`` ``(member, digest, mark, spec)``
        in order (``spec``: the event's :class:`~service.store.scripts.MetricSpec`);
        per member its code (``ok``, ``already``, ``missing``)."""
        keys, args = METRIC_CREDIT.build(
            {"exp": exp_key(exp_id), "metrics": metrics_key(exp_id),
             "pending": pending_key(exp_id), "events": events_key(exp_id),
             "counters": counters_key(exp_id)}, {},
            [({"event": outcome_event_key(exp_id, digest)},
              {"member": member, "mark": mark, "spec": spec})
             for member, digest, mark, spec in entries])
        out = [text(x) for x in self._metric_credit_script(keys=keys, args=args)]
        if out[0] == "missing":
            return {e[0]: "missing" for e in entries}
        return {e[0]: code for e, code in zip(entries, out[1:], strict=True)}

    def metric_counts(self, exp_id: str) -> dict[str, MetricCounts]:
        """Every metric's counts by name (a metric that counted nothing is absent)."""
        out: dict[str, MetricCounts] = {}
        for f, v in self.r.hgetall(metrics_key(exp_id)).items():
            kind, (name, *rest) = parse_metric_field(text(f))
            if kind is None:
                continue
            c = out.setdefault(name, MetricCounts())
            if kind == "W":
                c.W[int(rest[0]), int(rest[1])] = float(v)
            elif kind == "ties":
                c.ties[int(rest[0]), int(rest[1])] = int(v)
            elif kind == "n":
                c.n = int(v)
            elif kind == "values":
                c.values[int(rest[0])] = float(v)
            elif kind == "events":
                c.events[int(rest[0])] = int(v)
            elif kind == "segment_W":
                c.segments.setdefault(rest[0], {})[int(rest[1]), int(rest[2])] = float(v)
            elif kind == "segment_ties":
                c.segment_ties.setdefault(rest[0], {})[int(rest[1]), int(rest[2])] = int(v)
            elif kind == "segment_n":
                c.segment_n[rest[0]] = int(v)
        return out

    # ------------------------------------------------------------------ a primary metric
    def watch_primary(self, pipe, exp_id: str, digests: Sequence[str]) -> None:
        """WATCH on ``pipe`` what the policy's update of outcome events depends on: the
        experiment, ``W`` and the events (their ``pc`` mark)."""
        pipe.watch(exp_key(exp_id), w_key(exp_id),
                   *(outcome_event_key(exp_id, d) for d in digests))

    def write_primary_marks(self, pipe, exp_id: str,
                            marks: Sequence[tuple[str, str, dict[str, Any], Sequence[str]]],
                            *, state_written: bool) -> None:
        """Queue on ``pipe`` (in MULTI, after :meth:`watch_primary`) each event's ``pc``
        mark, its ``outcome`` event in the log (what replay adds to ``W``), its ties and
        per-segment counts (``marks``: ``(member, digest, mark, segment labels)``), and
        the counter ``primary_credited``. The events stay pending: the metrics' credit
        script takes them off once it has counted them too."""
        if not state_written:
            pipe.hincrby(exp_key(exp_id), "version", 1)
        from service.store.credits import _queue_segments

        for member, digest, mark, labels in marks:
            pipe.hset(outcome_event_key(exp_id, digest), "pc", 1)
            pipe.xadd(events_key(exp_id), {"type": "outcome", "id": member,
                                           "mark": json.dumps(mark), "seg": ",".join(labels)})
            for pair in rule.ties(mark.get("outcomes", ())):
                pipe.hincrby(ties_key(exp_id), tie_field(*pair), 1)
            if labels and mark.get("outcomes"):
                _queue_segments(pipe, exp_id, labels, mark["outcomes"])
        if marks:
            pipe.hincrby(counters_key(exp_id), "primary_credited", len(marks))
