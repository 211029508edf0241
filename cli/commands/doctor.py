"""``rankduel doctor``: a deployment's health in one screen.

Reads the configuration (the environment, as ``rankduel serve`` does) and the Redis it
names, and prints one line per check, each ``ok``, ``RISK`` or ``info``:

* **redis**: the server's version (each primary of a cluster);
* **persistence**: AOF and its fsync, the RDB schedule (``--save ''`` and no AOF is a
  risk: a restart loses every experiment; docs/operations/backup.md);
* **eviction**: ``maxmemory-policy`` (anything but ``noeviction`` is a risk, and
  ``rankduel serve`` refuses it without ``RANKDUEL_ALLOW_EVICTION=1``) and the keys Redis
  has already evicted;
* **memory**: used memory against ``maxmemory`` (a risk above 80 %);
* **clock**: this host's clock against Redis's (``TIME``), and the workers' (their last
  sweep's heartbeat against the time Redis stored it): crediting and tokens read times
  written by other processes;
* **allow-list**: where rankers may live (``RANKDUEL_RANKER_ALLOW``);
* **tokens**: which of the admin token, secret key, metrics token and front-end keys are
  set (never their values);
* **retention**: ``RANKDUEL_RETENTION_S``.

Exit code 0 when no check is a risk, 1 otherwise (2: the configuration is invalid).
"""

from __future__ import annotations

import argparse
import time

from cli.help_text import plain

#: used memory above this share of maxmemory is a risk
MEMORY_RISK = 0.8
#: a clock further than this from Redis's is a risk (seconds)
SKEW_RISK_S = 1.0


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def checks(config) -> list[tuple[str, str, str]]:
    """``(check, verdict, words)`` for every line of the screen."""
    import redis

    from service.store.client import connect_state
    from service.store.keys import SWEEP_HEARTBEAT
    from service.store.server_checks import eviction_problem, facts, nodes, persistence_problem

    out: list[tuple[str, str, str]] = []
    client = connect_state(config, socket_timeout=2, socket_connect_timeout=2)
    try:
        t0 = time.time()
        servers = [facts(s) for s in nodes(client)]
        here = (t0 + time.time()) / 2
        beat, pttl = client.get(SWEEP_HEARTBEAT), client.pttl(SWEEP_HEARTBEAT)
    except redis.RedisError as exc:
        return [("redis", "RISK", f"unreachable ({type(exc).__name__}: {exc})")]
    finally:
        client.close()
    versions = sorted({f.version for f in servers})
    out.append(("redis", "info", f"{', '.join(versions)} ({len(servers)} "
                                  f"server{'s' * (len(servers) > 1)})"))
    for f in servers[:1] if len(servers) == 1 else servers:
        p = persistence_problem(f)
        aof = f"AOF {'on, fsync ' + (f.aof_fsync or '?') if f.aof else 'off'}"
        rdb = f"RDB save {f.save!r}" if f.save is not None else "RDB unknown (CONFIG refused)"
        out.append(("persistence", "RISK" if p else "ok", f"{aof}; {rdb}" + (
            f": {p}" if p else "")))
        e = eviction_problem(f)
        policy = f.policy or "unknown (CONFIG refused)"
        out.append(("eviction", "RISK" if e else "ok", f"maxmemory-policy {policy}" + (
            f" evicts rankduel's keys{'' if config.allow_eviction else '; serve refuses it'}"
            if e else "")))
        out.append(("evicted", "RISK" if f.evicted_keys else "ok",
                    f"{f.evicted_keys} keys evicted since Redis started"))
        if f.maxmemory:
            share = f.used_memory / f.maxmemory
            out.append(("memory", "RISK" if share > MEMORY_RISK else "ok",
                        f"{_mb(f.used_memory)} used of maxmemory {_mb(f.maxmemory)} "
                        f"({share:.0%}); headroom {_mb(f.maxmemory - f.used_memory)}"))
        else:
            out.append(("memory", "info", f"{_mb(f.used_memory)} used; no maxmemory "
                                          f"(the machine's memory is the limit)"))
    skew = here - servers[0].time_s
    words = f"this host {skew:+.3f} s from Redis"
    risk = abs(skew) > SKEW_RISK_S
    if beat and pttl and pttl > 0:
        ttl_ms = max(int(config.sweep_stale_s * 10), 60) * 1000  # workers.health
        stored_at = servers[0].time_s - (ttl_ms - pttl) / 1000
        worker_skew = float(beat) - stored_at
        words += f"; workers {worker_skew:+.3f} s (their last sweep's heartbeat)"
        risk = risk or abs(worker_skew) > SKEW_RISK_S
    else:
        words += "; workers: no sweep heartbeat (is a worker with the sweep running?)"
    out.append(("clock", "RISK" if risk else "ok", words))
    allow = config.ranker_allow or "(public addresses only)"
    out.append(("allow-list", "info", f"rankers may live on: {allow}"))
    names = {"admin_token": "admin token", "secret_key": "secret key",
             "metrics_token": "metrics token"}
    tokens = [f"{w} {'set' if getattr(config, n) else 'UNSET'}" for n, w in names.items()]
    tokens.append(f"front-end keys: {len(config.frontend_keys)}")
    unset = not (config.admin_token and config.secret_key)
    out.append(("tokens", "RISK" if unset else "ok", ", ".join(tokens)))
    out.append(("retention", "info", f"{config.retention_s} s "
                                      f"({config.retention_s / 86400:g} days)"))
    return out


def run(args: argparse.Namespace) -> int:
    from service.config import load_config

    config = load_config()
    lines = checks(config)
    url = config.public()["redis_url"]
    print(f"rankduel doctor: {url}")
    for name, verdict, words in lines:
        print(f"  {name:<12} {verdict:<5} {words}")
    return 1 if any(v == "RISK" for _, v, _ in lines) else 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("doctor", help="check a deployment's Redis, clocks and settings",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=run)
