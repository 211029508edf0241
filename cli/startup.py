"""The checks ``rankduel serve`` and ``rankduel worker`` make of Redis before they start
(:mod:`service.store.server_checks`): an evicting ``maxmemory-policy`` is refused unless
``RANKDUEL_ALLOW_EVICTION=1`` (one line naming the policy and the fix, exit code 2), and
persistence that is off is a warning."""

from __future__ import annotations

import logging

from service.config import Config

log = logging.getLogger("rankduel.startup")


def check_redis(config: Config) -> None:
    """Log the warnings; raise ``ValueError`` (one line, exit 2) to refuse."""
    from service.store.client import connect_state
    from service.store.server_checks import start_checks

    client = connect_state(config, socket_timeout=2, socket_connect_timeout=2)
    try:
        warnings, refusal = start_checks(client, config.allow_eviction)
    finally:
        client.close()
    if refusal:
        raise ValueError(refusal)
    for line in warnings:
        log.warning("%s", line)


__all__ = ["check_redis"]
