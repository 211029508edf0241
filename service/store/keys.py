"""The Redis key layout: every key rankduel reads or writes is built here.

Every key of one experiment carries the experiment's **hash tag** ``{e}``, its
impressions and their clicks included, so on Redis Cluster all of them live in one slot:
each experiment's transactions and Lua scripts run on one shard, and experiments spread
over the shards. ``{e}`` below is the experiment id written between braces (the braces
are part of the key), ``<i>`` an impression id::

    rd:{e}                  HASH  meta (JSON: name, algorithm, params, interleaving, seed),
                                  lifecycle, rankers (JSON list by arm index), truth
                                  (optional, JSON); the policy: state (its state_dict
                                  without W, JSON: the *structure*, see service.store.snapshot),
                                  K, n (comparisons recorded = n_updates), sv (structure
                                  version, +1 on each change of state), version (+1 on any
                                  change of the policy: the API re-reads on a move), hold
                                  (an impression whose credit may change the structure:
                                  credits wait until it is decided, see service.store)
    rd:{e}:W                STR   W, K*K float64 little-endian, row-major; incremented in
                                  place by the credit script (SETRANGE)
    rd:{e}:ties             HASH  "i:j" (arms, i < j) -> outcomes of exactly ½ between
                                  them (W holds each as ½ a win to both sides; the report
                                  splits them out); written beside W by the same writes
    rd:{e}:segments         HASH  W per segment (service.segments.dimensions), beside W by the same
                                  writes: w:<dim>=<value>:<i>:<j> -> W_ij of the impressions
                                  of that value, t:<dim>=<value>:<i>:<j> (i < j) -> their
                                  ties, n:<dim>=<value> -> their comparisons
    rd:{e}:events           STREAM the event log: every impression saved, click report
                                  recorded and impression credited, appended by the
                                  script or transaction that writes it (service.store.events)
    rd:{e}:t                STR   selection counter t, INCR'd by every /search
    rd:{e}:counters         HASH  impressions, duels, decisive, ties, no_clicks, ...
    rd:{e}:audit            LIST  operator actions, eliminations, stage changes, ranker
                                  health changes (JSON), capped at AUDIT_MAX entries
    rd:{e}:shown            HASH  per arm: n:{arm} impressions that showed it, share:{arm}
                                  the same weighted 1/(rankers in the impression)
    rd:{e}:health           HASH  per arm: f:{arm} consecutive failures, q:{arm} end of its
                                  quarantine (epoch seconds); only failing rankers appear;
                                  w:{arm} its last answers (codes o/e/u), d:{arm} why it is
                                  degraded, u:{arm} its next probe (service.search.degraded)
    rd:{e}:probe:<a>        STR   (TTL) taken by the one request that probes quarantined arm a
    rd:{e}:pending          ZSET  impressions not yet credited, by the time they are due (a
                                  drain that claims one pushes it forward by its lease)
    rd:{e}:drains           ZSET  drain tasks queued or running, by the expiry of their lease
    rd:{e}:follow           STR   (TTL) a drain is scheduled for the next impression due soon
    rd:{e}:history          LIST  (ts, comparisons, estimated regret) points sampled when a
                                  report is read (service.store.history), capped at MAX_POINTS
    rd:{e}:imp:<i>          HASH  exp, t (the selection's step), arms, record, shown,
                                  duel, forfeits, closed, credited (JSON result, with
                                  the step t it was credited at), seg (its segment
                                  labels, "dim=value,..."), ...                    (TTL)
    rd:{e}:imp:<i>:clicks   SET   clicked positions (0-based)                      (TTL)
    rd:{e}:ab:users         HASH  an A/B experiment's per-user counts (service.store.ab)
    rd:{e}:ab:m             HASH  an A/B experiment's per-arm moments of its metrics
    rd:{e}:ab:decided       HASH  its decisions, kept: treatment -> JSON (first decided)

and keys outside any experiment, never read inside a per-experiment transaction or
script (on a cluster they live wherever their own name hashes)::

    rd:experiments          ZSET  experiment ids by creation time
    rd:due                  ZSET  experiments that may have impressions due, scored no later
                                  than their earliest due impression (the sweep's index;
                                  a hint kept early, never late: see Store.experiments_with_due)
    rd:sweep:full           STR   (TTL) taken by the sweep that reads every experiment, once
                                  per credit_retry_s
    rd:{rl:<client>}:<w>    STR   (TTL) /clicks requests of one client address in minute w
    rd:workers:ready        SET   pids of Celery workers that are consuming
    rd:sweep:last           STR   (TTL) epoch seconds of the last completed sweep (workers'
                                  /healthz)
    rd:legacy-imp:<i>       STR   (TTL) the experiment of an impression id issued before
                                  this layout (written by ``rankduel migrate-keys``)
    rd:idem:create:<h>      STR   (TTL) a POST /experiments' Idempotency-Key (h: its
                                  SHA-256): JSON {body digest, experiment id once created}
                                  (service.store.idempotency)

Placements (one hash tag per placement, ``{pl-<p>}``, so a placement's transactions run
on one shard; :mod:`service.placements.operations`)::

    rd:{pl-<p>}             HASH  def (JSON: name, salt, control ranker, created_at),
                                  experiments (JSON: [{experiment, traffic, status,
                                  since}]), ranges (JSON: experiment -> [[start, end), ...]
                                  of buckets, rollout.allocation), next_change (epoch
                                  seconds of the next ramp step, or empty), tripped (JSON:
                                  experiment -> the guardrail that paused it), version (+1
                                  on every change: API processes re-read on a move)
    rd:{pl-<p>}:control     HASH  the control ranker's guardrail counters on the
                                  placement's control searches: calls, failures, empty,
                                  lat:<i> (answered calls per latency bucket); and its
                                  pages per time bucket until settled: p:<end> served,
                                  c:<end> clicked (rollout.control_pages)
    rd:{pl-<p>}:page:<id>   STRING a control page's first click seen (dedupe; expires
                                  after the page's click window)
    rd:{pl-<p>}:split:periods HASH the shares in force per period (placement version ->
                                  JSON arm -> share; service.store.splits)
    rd:{pl-<p>}:split:s     HASH  searches per period and arm ("<version>|<arm>")
    rd:{pl-<p>}:split:u     HASH  users first seen per period and arm ("<version>|<arm>")
    rd:{pl-<p>}:split:seen  SET   every user the placement has seen (keyed hashes)
    rd:placements           SET   placement names
    rd:agreements           HASH  confirmed pairs: the A/B experiment's id -> JSON (the
                                  interleaving experiment it confirms, both verdicts)

An experiment's own guardrail counters on its placement searches are ``g:``-prefixed
fields of ``rd:{e}:counters`` (``g:<ranker>:calls``, ``:failures``, ``:empty``,
``:lat:<i>``), counted by the script that saves the impression (no extra round trip);
its pages (``g:pages``, ``g:abandoned``: credited impressions, and those without a click)
are counted when credited, the control's pages over its period (``g:control_pages``,
``g:control_clicked``) when the worker's sweep folds them, and ``g:since`` is when its
counts last started (a resume).

Judging campaigns (one hash tag per campaign, ``{jc-<c>}``, so each campaign's
transactions run on one shard; :mod:`service.campaigns.operations`)::

    rd:{jc-<c>}                  HASH  meta (JSON: name, created_at, task_ttl_s), state
                                       (JSON: judging.campaign's state)
    rd:{jc-<c>}:tasks            HASH  task id -> JSON {assessor, pairs, status: open |
                                       submitted | applied | abandoned, created, answers,
                                       result}
    rd:{jc-<c>}:judged:<a>       SET   "query:i:j" pairs assessor a has judged
    rd:{jc-<c>}:submitted        LIST  submitted task ids, in order, until applied
    rd:judging:campaigns         ZSET  campaign ids by creation time
    rd:judging:assessor:<a>      STR   the campaign of assessor a

**Impression ids** name their experiment: ``<e>.<24 hex digits>``, so ``/clicks`` and
``/impressions/ID/end``, which receive only the impression id (and its token), find the
experiment's keys from the id alone (:func:`experiment_of`). Experiment ids never contain
a dot. Ids of the previous layout (24 hex digits, no dot) are found through
``rd:legacy-imp:<i>``.

The previous layout (``rd:exp:{e}…``, ``rd:imp:{i}…``, one Redis) is converted by
``rankduel migrate-keys`` (:mod:`cli.commands.migrate_keys`).

Which code writes which key: :mod:`service.store` (all of them, through its transactions
and Lua scripts, one module per concept); the request path only INCRs ``t``, writes
impressions, exposure, counters and ranker health.
"""

from __future__ import annotations

import secrets

PREFIX = "rd:"
EXPERIMENTS = PREFIX + "experiments"
WORKERS_READY = PREFIX + "workers:ready"
SWEEP_HEARTBEAT = PREFIX + "sweep:last"
DUE = PREFIX + "due"
SWEEP_FULL = PREFIX + "sweep:full"
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


def segments_key(exp_id: str) -> str:
    """The per-segment ``W``, ties and comparisons of experiment ``exp_id`` (see
    :mod:`service.segments.dimensions`)."""
    return f"{_tag(exp_id)}:segments"


def events_key(exp_id: str) -> str:
    """The event log of experiment ``exp_id`` (:mod:`service.store.events`)."""
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
    """An A/B experiment's per-user counts (:mod:`service.store.ab`): ``<arm>:<user>:s``
    searches and ``<arm>:<user>:c`` clicked searches, the user a keyed hash."""
    return f"{_tag(exp_id)}:ab:users"


def ab_moments_key(exp_id: str) -> str:
    """An A/B experiment's per-arm moments of each per-user metric (:mod:`service.store.
    ab`): ``<arm>:<metric>:n``, ``:total``, ``:squares``."""
    return f"{_tag(exp_id)}:ab:m"


def ab_decisions_key(exp_id: str) -> str:
    """An A/B experiment's decisions, kept: treatment -> JSON of its comparison when the
    interval first excluded 0 (:mod:`service.reports.ab`)."""
    return f"{_tag(exp_id)}:ab:decided"


def imp_key(exp_id: str, imp_id: str) -> str:
    return f"{_tag(exp_id)}:imp:{imp_id}"


def clicks_key(exp_id: str, imp_id: str) -> str:
    return f"{_tag(exp_id)}:imp:{imp_id}:clicks"


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
            events_key(exp_id)]


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


def split_seen_key(name: str) -> str:
    """Every user placement ``name`` has seen (a short keyed hash each)."""
    return f"{placement_key(name)}:split:seen"


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
