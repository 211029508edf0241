"""Crediting: how a click reaches ``W``. The protocol is told here, once; every other
place (the Celery tasks, the store, docs/architecture.md) links to this docstring.

The modules, in the order a click meets them:

* :mod:`service.credit.drains`: who credits what and when: the drain task's loop
  (:class:`~service.credit.drains.Crediting`), its lease and heartbeat
  (:class:`~service.credit.drains.Lease`), the sweep;
* :mod:`service.credit.protocol`: one batch: read, the pure step, commit, and a held
  outcome decided (:func:`~service.credit.protocol.credit_batch`,
  :func:`~service.credit.protocol.resolve_hold`);
* :mod:`service.credit.step`: the pure step: an impression's clicks become outcomes
  (:func:`~service.credit.step.apply`);
* :mod:`service.credit.outcome_events`: an outcome event of ``POST /outcomes`` (a
  purchase) credited to its metrics' ``W`` (docs/conversions.md), by the same protocol;
* :mod:`service.credit.primary`: when the policy learns from such a metric (the
  experiment's ``primary``), its events applied to the policy by its own ``update()``;
* :mod:`service.credit.guard`: which outcomes could change the policy's structure
  (:class:`~service.credit.guard.Guard`), checked in Python and, by the credit script, in
  Lua: both against one table of cases (``tests/cases/guard.json``).

Storage (:mod:`service.store`) only stores: plain reads, writes and Lua scripts, given
plain values; it never calls a policy, a guard or this package.

The protocol
------------
An impression is *pending* from its write (``/search``) until it is credited: it sits in
the experiment's pending set with a due time (``/impressions/ID/end`` makes it due now; an
idle one falls due after ``inactivity_s``).

1. **Drain.** ``/end`` queues a drain task (``rankduel.drain``) when no drain holds a
   lease on the experiment; the sweep (``rankduel.sweep``, every ``sweep_interval_s``)
   queues one for each experiment with due impressions and no live lease. A drain that
   claims a full batch queues one more, up to ``credit_parallelism`` per experiment.
2. **Lease.** A drain holds a lease in the experiment's drain set, a few seconds long
   (``drain_lease_s``) and renewed by a heartbeat while it works. A drain that was never
   queued, was rejected or died stops renewing; its lease lapses and the next sweep
   queues a new drain.
3. **Claim.** The drain claims up to ``credit_batch`` due impressions by pushing their
   due time forward by the lease (no other drain sees them until then; a crashed drain's
   claims come due again), with the experiment's selection count ``t``.
4. **Read** the impressions with their clicks, in one script call.
5. **Step.** The pure step (:func:`~service.credit.step.apply`, ``update=False``) turns
   each impression's clicks into outcomes against a cached view of the policy (which
   rankers are retired), without updating the policy.
6. **Commit.** One Lua script per chunk of the batch (64 impressions, in order:
   :data:`~service.credit.protocol.CHUNK`), on the experiment's shard (the credit script,
   ``service/store/credit.lua``): for each impression in order, unless it is already
   credited, gone, or got a click since it was read (left pending), add its outcomes to
   ``W`` in place, count the comparison in ``n``, write its ``credited`` mark (which
   closes it), add its counters and take it off the pending set. The script refuses the
   whole chunk if the policy's structure changed since the view was read (``sv``: the
   drain reads the view again), and stops at an outcome the guard flags: it records the
   impression as the experiment's **hold** and returns; while a hold is set every credit
   script refuses.
7. **Hold.** The held impression is decided by whichever worker meets the hold
   (:func:`~service.credit.protocol.resolve_hold`): in one optimistic transaction
   (WATCH the experiment, ``W`` and the impression; read the full snapshot; MULTI/EXEC),
   the policy's own ``update()`` on the current state at the global ``t``, writing ``W``,
   ``n``, the new structure if it changed (``sv`` + 1), the mark, the counters and audit
   events, and clearing the hold. The rest of the batch goes back to the credit script.

**Retry.** A task retries with backoff on a transient Redis error or a transaction that
kept losing (``Contention``), and the broker redelivers an unacknowledged task
(``acks_late``). **Idempotence.** Each step above is safe to run twice or to stop at any
point: a crash before the script writes nothing (the impression stays pending and is
claimed again when its claim lapses); the script skips an impression that has its
``credited`` mark; the hold's transaction writes the mark with ``W``. So each
impression changes ``W`` exactly once whatever the retries, duplicate deliveries or
worker crashes. Redis, not the broker, is the source of truth for what remains to
credit.

Why it is correct
-----------------
A policy's ``update()`` adds the outcome to ``W`` (and counts ``n_updates``); DTS,
Self-Sparring, MDB and Uniform change nothing else (their other fields are caches of
``W``); RUCB, RCS, CCB and RMED1 also advance selection state at every step (the
``_commit`` hook of :mod:`bandits.base`), so none of their outcomes commutes; the Merge
policies may also change their **structure**: eliminate an arm (MergeDTS Algorithm 1
lines 10–11, MergeRUCB Algorithm 4), and then merge batches and start a stage (lines
12–22). Additions to ``W`` commute, structural changes do not: an elimination depends on
``W`` and ``t`` at the comparison that causes it.

So the script adds outcomes commutatively (several workers credit one experiment without
conflicting), and stops at every outcome that could change the structure: the guard
(:class:`~service.credit.guard.Guard`) is a superset of those outcomes (for the policies
whose ``update()`` advances selection state, every outcome). A held outcome is applied by
the policy's own ``update()`` on the full current state while no other credit enters
``W``, so it is decided at exactly its place in the order in which the shard applied
every outcome, with the global ``t``: the same ``update()`` as the simulator's,
eliminations at the comparison count the pseudo-code gives. (For a policy with
``serial_updates``, whose outcomes never commute, the rest of the batch is applied in the
same transaction, in order.)

Before the first update the policy's step counter is moved to the experiment's global
selection count ``t`` (:meth:`~bandits.base.DuelingBandit.sync_step`), so confidence
bounds such as MergeDTS's ``log(t + C)`` (Li et al. 2020, Algorithm 1 lines 10–11) use the
number of selections made so far by every API process, exactly as in the simulator.
``tests/unit/test_credit_path.py`` checks these claims on every policy (the credit script's
run on a real Redis: ``tests/service/test_credit_on_redis.py``).

Outcome events (the metrics beyond the click)
---------------------------------------------
An outcome event of ``POST /outcomes`` is recorded, attributed, by one script that first
checks its key (a digest of its ``event_id`` in the experiment's slot): a retried event
finds it and records nothing. The same script adds the event to the experiment's pending
set as ``~<digest>``, due at once. From there it is an item like an impression: steps 1
to 3 (drain, lease, claim) are the same code, and a drain's batch goes to
:func:`~service.credit.outcome_events.credit_events` for its events: **read** the events
and their impressions' attribution entries; the pure **step**
(:func:`~service.credit.outcome_events.outcomes`); **commit** in one script
(``metric_credit.lua``) that, for each event in order, skips it if it has its
``credited`` mark or is gone, else adds its outcomes to each of its metrics' ``W`` (and
per segment, and the values per ranker), writes the mark and the log's ``metric`` event
and takes it off the pending set. The argument above holds unchanged: a crash before the
script writes nothing (the claim lapses, the event is claimed again); the script writes
the mark with the counts, atomically, and skips a marked event; so each event changes
each metric's ``W`` exactly once whatever the retries, duplicate deliveries or worker
crashes. No guard and no hold: the metrics' ``W`` feed no policy, and additions commute,
so two drains may credit events of one experiment at once.

When the policy learns from a metric of an action (``primary``), the events of that
metric are first applied to the policy (:mod:`service.credit.primary`): one optimistic
transaction per batch, the policy's own ``update()`` at the global ``t`` as for a held
click, writing ``W``, ``n``, the structure and each event's ``pc`` mark together; the
script above then counts the metrics and takes the events off the pending set. The
clicks of such an experiment go through steps 1 to 6 with the credit script's target
``click``: to the click metric's counts, with no guard and no hold, the policy's ``W``
untouched.
"""
