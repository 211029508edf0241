"""The workers' Redis transport: a broker restart is a connection error, not a crash.

With celery 5.7 / kombu 5.7, a worker that lost its Redis broker while holding
unacknowledged messages (``acks_late`` + prefetch: the normal state under load) died
with ``Unrecoverable error: AttributeError("'NoneType' object has no attribute
'hostname'")`` instead of reconnecting (2 runs in 3 with Redis restarted under load).
The sequence, from ``Consumer.on_connection_error_after_connected``:

1. ``Connection.collect()`` closes the default channel. The Redis channel first reads
   the reply of its outstanding ``BRPOP``, which raises ``ConnectionError`` (the broker
   is gone), so the channel is left *not closed*; ``collect`` then detaches the transport
   from the connection (``transport.client = None``).
2. Anything that touches that channel again needs a Redis client, built from
   ``transport.client.hostname``: Celery's ``connection.close()`` right after (which
   requeues the unacknowledged messages), or, after the reconnect, the late ack of a task
   that was running during the outage. Each raises ``AttributeError``, which neither
   ``kombu.common.ignore_errors`` nor ``Message.ack_log_error`` expects (they handle the
   transport's connection errors), so it escapes the worker's event loop.

:class:`Channel` raises a connection error instead, the error those callers handle: the
close is skipped, the late ack is logged as failed. Nothing is lost: an unacknowledged
message stays in the broker's ``unacked`` hash and is delivered again after
``visibility_timeout``, the tasks are idempotent, and Redis, not the broker, is the
source of truth for what remains to credit (the sweep queues a drain for anything still
due). :mod:`workers.celery_app` selects this transport with Celery's
``broker_transport`` setting for ``redis://`` and ``rediss://`` brokers.
"""

from __future__ import annotations

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    """kombu's Redis channel; once detached from its connection, a connection error."""

    def _connparams(self, asynchronous: bool = False):
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection was closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    """kombu's Redis transport with :class:`Channel`."""

    Channel = Channel


#: the ``broker_transport`` setting that selects :class:`Transport`
TRANSPORT = f"{__name__}:Transport"
