"""The Redis key layout: every key rankduel reads or writes is built here.

``{e}`` is an experiment id, ``{i}`` an impression id; all keys start with ``rd:``::

    rd:experiments          ZSET  experiment ids by creation time (the only cross-experiment
                                  index; never read inside a per-experiment transaction)
    rd:exp:{e}              HASH  meta (JSON: name, algorithm, params, interleaving, seed),
                                  lifecycle, rankers (JSON list by arm index), W (float64
                                  bytes, row-major), state (the rest of the policy's
                                  state_dict, JSON), version, truth (optional, JSON)
    rd:exp:{e}:t            STR   selection counter t, INCR'd by every /search
    rd:exp:{e}:counters     HASH  impressions, duels, decisive, ties, no_clicks, ...
    rd:exp:{e}:audit        LIST  operator actions, eliminations, stage changes, ranker
                                  health changes (JSON), capped at AUDIT_MAX entries
    rd:exp:{e}:shown        HASH  per arm: n:{arm} impressions that showed it, share:{arm}
                                  the same weighted 1/(rankers in the impression)
    rd:exp:{e}:health       HASH  per arm: f:{arm} consecutive failures, q:{arm} end of its
                                  quarantine (epoch seconds); only failing rankers appear
    rd:exp:{e}:probe:{a}    STR   (TTL) taken by the one request that probes quarantined arm a
    rd:exp:{e}:pending      ZSET  impressions not yet credited, by the time they are due
    rd:exp:{e}:draining     STR   (TTL) a drain task is queued or running
    rd:imp:{i}              HASH  exp, t (the selection's step), arms, record, shown, duel,
                                  forfeits, closed, credited (JSON result, with the
                                  step t it was credited at), ...                  (TTL)
    rd:imp:{i}:clicks       SET   clicked positions (0-based)                      (TTL)
    rd:workers:ready        SET   pids of Celery workers that are consuming

Which code writes which key: :mod:`service.store` (all of them, through its
transactions and Lua scripts); the request path only INCRs ``t``, writes impressions,
exposure, counters and ranker health.
"""

from __future__ import annotations

PREFIX = "rd:"
EXPERIMENTS = PREFIX + "experiments"
WORKERS_READY = PREFIX + "workers:ready"


def exp_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}"


def t_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:t"


def counters_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:counters"


def shown_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:shown"


def health_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:health"


def probe_key(exp_id: str, arm: int) -> str:
    return f"{PREFIX}exp:{exp_id}:probe:{int(arm)}"


def pending_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:pending"


def drain_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:draining"


def audit_key(exp_id: str) -> str:
    return f"{PREFIX}exp:{exp_id}:audit"


def imp_key(imp_id: str) -> str:
    return f"{PREFIX}imp:{imp_id}"


def clicks_key(imp_id: str) -> str:
    return f"{PREFIX}imp:{imp_id}:clicks"
