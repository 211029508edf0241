"""The Redis key layout: every key rankduel reads or writes is built here.

The layout of every key, by hash tag (an experiment's, a placement's, a campaign's, a
webhook's, and the few global keys), is drawn in docs/operations/redis-keys.md: a new
key goes there too.
"""

from __future__ import annotations

import secrets

PREFIX = "rd:"
EXPERIMENTS = PREFIX + "experiments"
WORKERS_READY = PREFIX + "workers:ready"
SWEEP_HEARTBEAT = PREFIX + "sweep:last"
DUE = PREFIX + "due"
SWEEP_FULL = PREFIX + "sweep:full"
#: taken by the worker trimming the streams by time (service.store.retention)
RETENTION_TRIM = PREFIX + "retention:trim"
#: separates the experiment id from the random part of an impression id
IMP_SEP = "."


def _tag(exp_id: str) -> str:
    return f"{PREFIX}{{{exp_id}}}"


def exp_key(exp_id: str) -> str:
    return _tag(exp_id)


def w_key(exp_id: str) -> str:
    return f"{_tag(exp_id)}:W"


def ties_key(exp_id: str) -> str:
    """The per-pair tie counts of experiment ``exp_id`` (see :func:`tie_field`)."""
    return f"{_tag(exp_id)}:ties"


def tie_field(i: int, j: int) -> str:
    """The field of pair ``(i, j)`` in :func:`ties_key`, either order.

    >>> tie_field(3, 1), tie_field(1, 3)
    ('1:3', '1:3')
    """
    a, b = sorted((int(i), int(j)))
    return f"{a}:{b}"


# ---------------------------------------------------------------------- counts' fields
#: The fields of the hashes that keep outcome counts, by kind: the per-segment hash
#: (:func:`segments_key`: ``<kind>:<label>[:i:j]``) and the metrics hash
#: (:func:`metrics_key`: ``<kind>:<metric>[:<label>][:i:j | :arm]``). The only spelling of
#: these names: the Lua scripts get them as the generated include ``fields``
#: (:func:`lua_fields`), the readers parse with :func:`parse_field`.
SEGMENT_FIELDS = {"W": "w", "ties": "t", "n": "n"}
METRIC_FIELDS = {
    "W": "w",  # w:<metric>:i:j, a double (text)
    "ties": "t",  # t:<metric>:i:j, i < j
    "n": "n",  # n:<metric>, the events with any outcome
    "values": "v",  # v:<metric>:<arm>, a sum metric's values won
    "events": "c",  # c:<metric>:<arm>, the events won
    "segment_W": "s",  # s:<metric>:<label>:i:j
    "segment_ties": "st",  # st:<metric>:<label>:i:j, i < j
    "segment_n": "sn",  # sn:<metric>:<label>
}


def segment_field(kind: str, label: str, *pair: int) -> str:
    """A field of the per-segment hash (:func:`segments_key`).

    >>> segment_field("W", "device=mobile", 0, 1), segment_field("n", "market=de")
    ('w:device=mobile:0:1', 'n:market=de')
    """
    return ":".join((SEGMENT_FIELDS[kind], label, *(str(int(x)) for x in pair)))


def metric_field(kind: str, metric: str, *rest: str | int) -> str:
    """A field of the metrics hash (:func:`metrics_key`): ``rest`` is the label and/or
    the pair or arm its kind takes.

    >>> metric_field("W", "revenue", 0, 1), metric_field("segment_n", "click", "device=pc")
    ('w:revenue:0:1', 'sn:click:device=pc')
    """
    return ":".join((METRIC_FIELDS[kind], metric, *(str(x) for x in rest)))


def parse_metric_field(field: str) -> tuple[str | None, list[str]]:
    """A field of the metrics hash as ``(kind, parts)`` (kind None: not a kind of
    :data:`METRIC_FIELDS`).

    >>> parse_metric_field("st:click:device=pc:0:2")
    ('segment_ties', ['click', 'device=pc', '0', '2'])
    """
    prefix, _, rest = field.partition(":")
    return _METRIC_KIND.get(prefix), rest.split(":")


def parse_segment_field(field: str) -> tuple[str | None, list[str]]:
    """A field of the per-segment hash as ``(kind, parts)``.

    >>> parse_segment_field("w:device=pc:0:2")
    ('W', ['device=pc', '0', '2'])
    """
    prefix, _, rest = field.partition(":")
    return _SEGMENT_KIND.get(prefix), rest.split(":")


_METRIC_KIND = {v: k for k, v in METRIC_FIELDS.items()}
_SEGMENT_KIND = {v: k for k, v in SEGMENT_FIELDS.items()}


def lua_fields() -> str:
    """The Lua include ``fields`` (:func:`service.store.base.lua`): the prefixes above as
    the tables ``SEGMENT_F`` and ``METRIC_F`` (kind -> prefix with its ``:``).

    >>> print(lua_fields().splitlines()[1])
    local SEGMENT_F = {W = 'w:', ties = 't:', n = 'n:'}
    """
    def table(kinds: dict[str, str]) -> str:
        return "{" + ", ".join(f"{k} = '{v}:'" for k, v in kinds.items()) + "}"

    return ("-- generated from service/store/keys.py (SEGMENT_FIELDS, METRIC_FIELDS)\n"
            f"local SEGMENT_F = {table(SEGMENT_FIELDS)}\n"
            f"local METRIC_F = {table(METRIC_FIELDS)}\n")


def segments_key(exp_id: str) -> str:
    """The per-segment ``W``, ties and comparisons of experiment ``exp_id`` (see
    :mod:`service.segments.dimensions`)."""
    return f"{_tag(exp_id)}:segments"


def events_key(exp_id: str) -> str:
    """The event log of experiment ``exp_id`` (:mod:`service.store.event_log`)."""
    return f"{_tag(exp_id)}:events"


def t_key(exp_id: str) -> str:
    return f"{_tag(exp_id)}:t"


def counters_key(exp_id: str) -> str:
    return f"{_tag(exp_id)}:counters"


def shown_key(exp_id: str) -> str:
    return f"{_tag(exp_id)}:shown"


def health_key(exp_id: str) -> str:
    return f"{_tag(exp_id)}:health"


def probe_key(exp_id: str, arm: int) -> str:
    return f"{_tag(exp_id)}:probe:{int(arm)}"


def pending_key(exp_id: str) -> str:
    return f"{_tag(exp_id)}:pending"


def drains_key(exp_id: str) -> str:
    return f"{_tag(exp_id)}:drains"


def follow_key(exp_id: str) -> str:
    return f"{_tag(exp_id)}:follow"


def audit_key(exp_id: str) -> str:
    return f"{_tag(exp_id)}:audit"


def history_key(exp_id: str) -> str:
    """The report's time series of experiment ``exp_id`` (:mod:`service.store.history`)."""
    return f"{_tag(exp_id)}:history"


def ab_users_key(exp_id: str) -> str:
    """An A/B experiment's per-user counts (:mod:`service.ab.store`): ``<arm>:<user>:s``
    searches and ``<arm>:<user>:c`` clicked searches, the user a keyed hash."""
    return f"{_tag(exp_id)}:ab:users"


def ab_moments_key(exp_id: str) -> str:
    """An A/B experiment's per-arm moments of each per-user metric (:mod:`service.store.
    ab`): ``<arm>:<metric>:n``, ``:total``, ``:squares``."""
    return f"{_tag(exp_id)}:ab:m"


def ab_decisions_key(exp_id: str) -> str:
    """An A/B experiment's decisions, kept: treatment -> JSON of its comparison when the
    interval first excluded 0 (:mod:`service.ab.report`)."""
    return f"{_tag(exp_id)}:ab:decided"


def imp_key(exp_id: str, imp_id: str) -> str:
    return f"{_tag(exp_id)}:imp:{imp_id}"


def clicks_key(exp_id: str, imp_id: str) -> str:
    return f"{_tag(exp_id)}:imp:{imp_id}:clicks"


def attribution_key(exp_id: str, imp_id: str) -> str:
    """Impression ``imp_id``'s attribution entry (:mod:`service.outcomes`)."""
    return f"{_tag(exp_id)}:ax:{imp_id}"


def touches_key(exp_id: str, user_hash: str) -> str:
    """A user's last touch per document in experiment ``exp_id`` (:mod:`service.outcomes`)."""
    return f"{_tag(exp_id)}:au:{user_hash}"


def outcome_event_key(exp_id: str, digest: str) -> str:
    """An outcome event of experiment ``exp_id`` by its digest (:mod:`service.outcomes`)."""
    return f"{_tag(exp_id)}:oe:{digest}"


#: the first character of an outcome event's member in the pending set (impression ids
#: start with the experiment id, hex)
OUTCOME_MEMBER = "~"


def metrics_key(exp_id: str) -> str:
    """The counts of experiment ``exp_id``'s declared metrics (:mod:`service.outcomes`)."""
    return f"{_tag(exp_id)}:metrics"


def experiment_pattern(exp_id: str) -> str:
    """A SCAN pattern matching every key of experiment ``exp_id`` (ids are hex: no glob
    character to escape).

    >>> experiment_pattern("3fa2")
    'rd:{3fa2}*'
    """
    return f"{_tag(exp_id)}*"


def experiment_keys(exp_id: str) -> list[str]:
    """The keys of experiment ``exp_id`` with fixed names (all but its impressions, their
    clicks and its TTL'd probe keys): what :meth:`service.store.Store.purge_orphan`
    deletes without a SCAN.

    >>> experiment_keys("3fa2")[:2]
    ['rd:{3fa2}', 'rd:{3fa2}:W']
    """
    return [exp_key(exp_id), w_key(exp_id), t_key(exp_id), counters_key(exp_id),
            shown_key(exp_id), health_key(exp_id), pending_key(exp_id), drains_key(exp_id),
            audit_key(exp_id), history_key(exp_id), ties_key(exp_id), segments_key(exp_id),
            events_key(exp_id), metrics_key(exp_id), outbox_key(exp_id),
            hooks_state_key(exp_id)]


def rate_key(client: str, window: int) -> str:
    """The request counter of client address ``client`` in time window ``window``."""
    return f"{PREFIX}{{rl:{client}}}:{int(window)}"


def legacy_imp_key(imp_id: str) -> str:
    return f"{PREFIX}legacy-imp:{imp_id}"


def idempotency_key(scope: str, digest: str) -> str:
    """An ``Idempotency-Key`` of operation ``scope``, by the key's digest
    (:mod:`service.store.idempotency`).

    >>> idempotency_key("create", "ab12")
    'rd:idem:create:ab12'
    """
    return f"{PREFIX}idem:{scope}:{digest}"


def new_impression_id(exp_id: str) -> str:
    """A fresh impression id of experiment ``exp_id``.

    >>> experiment_of(new_impression_id("3fa2c1d0e9b8"))
    '3fa2c1d0e9b8'
    """
    return f"{exp_id}{IMP_SEP}{secrets.token_hex(12)}"


def experiment_of(imp_id: str) -> str | None:
    """The experiment named by an impression id; None for an id of the previous layout
    (look it up in ``rd:legacy-imp:<i>``) or a malformed one.

    Impression ids are ``<e>.<24 hex digits>``, so ``/clicks`` and
    ``/impressions/ID/end``, which receive only the impression id (and its token), find
    the experiment's keys from the id alone; experiment ids never contain a dot. Ids of
    the previous layout (24 hex digits, no dot) are found through ``rd:legacy-imp:<i>``.

    >>> experiment_of("3fa2c1d0e9b8.00ff"), experiment_of("00ff")
    ('3fa2c1d0e9b8', None)
    """
    exp_id, sep, rest = imp_id.rpartition(IMP_SEP)
    if not sep or not exp_id or not rest:
        return None
    return exp_id


# ---------------------------------------------------------------------- placements
PLACEMENTS = PREFIX + "placements"
#: confirmed pairs (interleaving verdict, A/B test): confirming experiment -> JSON
AGREEMENTS = PREFIX + "agreements"


def placement_key(name: str) -> str:
    """The hash of placement ``name`` (hash tag ``{pl-<name>}``).

    >>> placement_key("web")
    'rd:{pl-web}'
    """
    return f"{PREFIX}{{pl-{name}}}"


def placement_control_key(name: str) -> str:
    """The control ranker's guardrail counters of placement ``name``."""
    return f"{placement_key(name)}:control"


def split_periods_key(name: str) -> str:
    """The shares in force on placement ``name`` per period (:mod:`service.store.splits`):
    placement version -> JSON {arm: share}."""
    return f"{placement_key(name)}:split:periods"


def split_searches_key(name: str) -> str:
    """Searches per period and arm of placement ``name``: ``<version>|<arm>`` -> n."""
    return f"{placement_key(name)}:split:s"


def split_users_key(name: str) -> str:
    """Users first seen per period and arm of placement ``name``: ``<version>|<arm>`` ->
    n."""
    return f"{placement_key(name)}:split:u"


def split_seen_key(name: str, generation: int | None = None) -> str:
    """The users placement ``name`` has seen in ``generation`` (a short keyed hash each;
    :mod:`service.store.retention`); without one, the set before generations."""
    base = f"{placement_key(name)}:split:seen"
    return base if generation is None else f"{base}:{int(generation)}"


def placement_page_key(name: str, page_id: str) -> str:
    """A control page of placement ``name`` that got a click (its first click counts)."""
    return f"{placement_key(name)}:page:{page_id}"


# ---------------------------------------------------------------------- judging campaigns
JUDGING_CAMPAIGNS = PREFIX + "judging:campaigns"


def assessor_key(assessor: str) -> str:
    """The campaign of an assessor id (ids are unique across campaigns: the task route
    takes the assessor alone)."""
    return f"{PREFIX}judging:assessor:{assessor}"


def campaign_key(cid: str) -> str:
    return f"{PREFIX}{{jc-{cid}}}"


def campaign_tasks_key(cid: str) -> str:
    return f"{campaign_key(cid)}:tasks"


def campaign_judged_key(cid: str, assessor: str) -> str:
    return f"{campaign_key(cid)}:judged:{assessor}"


def campaign_submitted_key(cid: str) -> str:
    return f"{campaign_key(cid)}:submitted"


# ---------------------------------------------------------------------- webhooks
WEBHOOKS = PREFIX + "webhooks"
WEBHOOKS_DUE = PREFIX + "webhooks:due"
WEBHOOKS_FULL = PREFIX + "webhooks:full"


def outbox_key(exp_id: str) -> str:
    """The webhook events of experiment ``exp_id`` (:mod:`service.store.webhooks`)."""
    return f"{_tag(exp_id)}:outbox"


def hooks_state_key(exp_id: str) -> str:
    """Each webhook's cursor and retry state over experiment ``exp_id``'s events."""
    return f"{_tag(exp_id)}:hooks"


def hook_lease_key(exp_id: str, hook_id: str) -> str:
    """The lease of the task delivering ``exp_id``'s events to webhook ``hook_id``.

    >>> hook_lease_key("3fa2", "w1")
    'rd:{3fa2}:hooks:lease:w1'
    """
    return f"{_tag(exp_id)}:hooks:lease:{hook_id}"


def webhook_key(hook_id: str) -> str:
    """A webhook's hash (hash tag ``{wh-<id>}``).

    >>> webhook_key("w1")
    'rd:{wh-w1}'
    """
    return f"{PREFIX}{{wh-{hook_id}}}"


def webhook_deliveries_key(hook_id: str) -> str:
    """A webhook's last delivery attempts."""
    return f"{webhook_key(hook_id)}:deliveries"
