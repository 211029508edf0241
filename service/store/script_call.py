"""The request path's Lua scripts, each one ``EVALSHA`` on a connection kept between calls.

A search runs two scripts (the selection's, ``select.lua``, and the impression's write,
``save.lua``). Through redis-py's ``Script.__call__`` each costs about 75 µs of the API's
CPU on this machine, half of it the client's own bookkeeping per command: taking a
connection from the pool and giving it back (a lock, a fork check, a ``poll`` for
unread data), the retry wrapper, argument filtering and observability attributes.
:class:`ScriptCall` sends the same ``EVALSHA`` on one of a few connections it took from
the same pool and keeps between calls (a connection is kept only after its reply was read
in full, so none has unread data): the same command, the same reply, the same
server-side effect, for about half the CPU.

Whenever that path is not plainly right, the call goes through the script object
unchanged, so behaviour under failure is redis-py's own: the script not in the server's
cache (``NOSCRIPT``, a restarted Redis: the script object loads it), the connection
broken or timed out (dropped, then redis-py's retry policy, as a call through the client
would have retried), a Redis Cluster (it routes each call by key), or a client without
a connection pool.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError


class ScriptCall:
    """Run registered scripts (``client.register_script``) of one client on a few
    connections of its pool kept between calls; see the module docstring.

    A connection is taken from the kept ones (or the pool, when all are busy) for one
    call and kept again once its reply was read in full; at most ``keep`` are kept (the
    rest go back to the pool), so the pool's limit still bounds them. Any failure closes
    the connection and gives it back to the pool."""

    def __init__(self, client: Any, keep: int = 16) -> None:
        pool = getattr(client, "connection_pool", None)
        self._pool = pool if isinstance(client, redis.Redis) and pool is not None else None
        self.keep = keep
        self._kept: list[Any] = []  # pop and append are atomic: no lock
        self._pid = os.getpid()

    def _take(self):
        if self._pid != os.getpid():  # a forked child never uses its parent's
            self._kept, self._pid = [], os.getpid()
        try:
            return self._kept.pop()
        except IndexError:
            return self._pool.get_connection()

    def _give(self, conn) -> None:
        if len(self._kept) < self.keep:
            self._kept.append(conn)
        else:
            self._pool.release(conn)

    def _drop(self, conn) -> None:
        conn.disconnect()
        self._pool.release(conn)

    def __call__(self, script: Any, keys: Sequence[Any] = (),
                 args: Sequence[Any] = ()) -> Any:
        """``script(keys=keys, args=args)``, answered the same."""
        if self._pool is None:
            return script(keys=keys, args=args)
        conn = self._take()
        try:
            conn.send_command("EVALSHA", script.sha, len(keys), *keys, *args)
            out = conn.read_response()
        except NoScriptError:
            self._give(conn)  # not run, the reply was read: the script object loads it
        except ResponseError:
            self._give(conn)  # the script's own error, the reply was read
            raise
        except (RedisConnectionError, RedisTimeoutError, OSError):
            self._drop(conn)  # then the client's own call, with its retry policy
        except BaseException:
            self._drop(conn)  # a reply may be left unread: never reuse the connection
            raise
        else:
            self._give(conn)
            return out
        return script(keys=keys, args=args)
