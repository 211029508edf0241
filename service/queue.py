"""Sending work to the Celery workers, by task name: the API never imports ``workers/``.

The queue's name and the broker settings a producer and a consumer must agree on live
here; :mod:`workers.celery_app` builds the consuming app from the same settings.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from kombu.exceptions import OperationalError

from service.config import Config

log = logging.getLogger("rankduel.api")

QUEUE = "rankduel"
DRAIN = "rankduel.drain"
CREDIT_IMPRESSION = "rankduel.credit_impression"
SWEEP = "rankduel.sweep"
JUDGING_APPLY = "rankduel.judging_apply"
WEBHOOKS_DELIVER = "rankduel.webhooks_deliver"


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

    def __init__(self, config: Config, app: Celery | None = None) -> None:
        """``app``: an existing Celery app to send with (a worker's own, whose broker
        connection and transport it shares); None: a producer of this process's own."""
        if app is None:
            app = Celery("rankduel-producer", set_as_current=False)
            app.conf.update(broker_settings(config))
        self.app = app
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

    def send(self, name: str, *args: Any, countdown: float | None = None) -> bool:
        """Queue task ``name`` with positional ``args`` (to run ``countdown`` seconds from
        now, if given); False when the broker cannot be reached (logged: what the task
        would have done is in Redis, and the sweep queues it again)."""
        try:
            self.app.send_task(name, args=list(args), countdown=countdown)
        except OperationalError as exc:
            log.warning("could not queue %s: %s (the sweep will)", name, exc)
            return False
        return True

    def drain(self, exp_id: str, token: str) -> bool:
        """Credit the due impressions of ``exp_id`` under the drain lease ``token``
        (:func:`workers.tasks.drain`); False when it could not be queued."""
        return self.send(DRAIN, exp_id, token)

    def drain_later(self, exp_id: str, delay_s: float) -> bool:
        """Credit the due impressions of ``exp_id`` in ``delay_s`` seconds (the drain takes
        its own lease then)."""
        return self.send(DRAIN, exp_id, None, countdown=delay_s)

    def judging_apply(self, campaign_id: str) -> bool:
        """Apply the submitted tasks of a judging campaign."""
        return self.send(JUDGING_APPLY, campaign_id)

    def credit_impression(self, imp_id: str) -> bool:
        """Credit one impression (replays, manual re-queues)."""
        return self.send(CREDIT_IMPRESSION, imp_id)

    def webhooks(self, exp_id: str, countdown: float | None = None) -> bool:
        """Deliver the due webhook events of ``exp_id`` (:mod:`service.webhooks.delivery`)."""
        return self.send(WEBHOOKS_DELIVER, exp_id, countdown=countdown)
