"""Rate limits in Redis: a fixed window per client address."""

from __future__ import annotations

from service.store.base import StorePart
from service.store.keys import (
    rate_key,
)


class LimitStore(StorePart):
    """Requests per client and window."""

    def count_client_request(self, client: str, limit: int, window_s: int = 60) -> float:
        """Count one request of client address ``client`` in the current window of
        ``window_s`` seconds; returns 0 while within ``limit``, else the seconds until the
        window ends (the ``Retry-After``). A fixed window: a burst can reach twice the
        limit across a boundary, which bounds what a client can do just as well."""
        now = self.clock()
        window = int(now // window_s)
        key = rate_key(client, window)
        pipe = self.r.pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, 2 * window_s)
        n = int(pipe.execute()[0])
        if n <= limit:
            return 0.0
        return max(1.0, (window + 1) * window_s - now)
