"""Sending work to the Celery workers, by task name: the API never imports ``workers/``.

The queue's name and the broker settings a producer and a consumer must agree on live
here; :mod:`workers.celery_app` builds the consuming app from the same settings.
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from service.config import Config

QUEUE = "rankduel"
DRAIN = "rankduel.drain"
CREDIT_IMPRESSION = "rankduel.credit_impression"
SWEEP = "rankduel.sweep"


def broker_settings(config: Config) -> dict[str, Any]:
    """Celery settings shared by the API's producer and the workers."""
    return {
        "broker_url": config.broker_url,
        "task_default_queue": QUEUE,
        "task_ignore_result": True,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {"visibility_timeout": config.visibility_timeout_s},
    }


class TaskQueue:
    """A producer of rankduel's tasks (one per API process)."""

    def __init__(self, config: Config) -> None:
        self.app = Celery("rankduel-producer", set_as_current=False)
        self.app.conf.update(broker_settings(config))
        self.broker_url = config.broker_url
        self._broker = None

    def broker(self):
        """A Redis client of the broker (the metrics read queue lengths from it); None
        when the broker is not a Redis."""
        if self._broker is None and self.broker_url.startswith(("redis://", "rediss://",
                                                                 "unix://")):
            import redis

            self._broker = redis.Redis.from_url(self.broker_url, socket_timeout=2,
                                                socket_connect_timeout=2)
        return self._broker

    def send(self, name: str, *args: Any) -> None:
        """Queue task ``name`` with positional ``args``."""
        self.app.send_task(name, args=list(args))

    def drain(self, exp_id: str, token: str) -> None:
        """Credit the due impressions of ``exp_id`` under the drain lease ``token``
        (:func:`workers.tasks.drain`)."""
        self.send(DRAIN, exp_id, token)

    def credit_impression(self, imp_id: str) -> None:
        """Credit one impression (replays, manual re-queues)."""
        self.send(CREDIT_IMPRESSION, imp_id)
