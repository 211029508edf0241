"""What outlives its use is kept ``RANKDUEL_RETENTION_S`` (30 days by default), then freed.

rankduel runs for a year: nothing it keeps may grow with everything it ever saw
(docs/operations/redis-keys.md gives every key family its bound). What this module bounds:

* **the event log** (``rd:{e}:events``) and **the webhook outbox** (``rd:{e}:outbox``) are
  trimmed by time: a stream id is the millisecond it was written, so ``XTRIM MINID
  <now - retention>`` drops what is older (:meth:`RetentionStore.trim_streams`, run by the
  worker's sweep at most every :data:`TRIM_EVERY_S` or a quarter of the retention, one
  worker at a time). A replay
  (``rankduel replay``) is exact over what the log still holds; back it up (an export)
  to keep more;
* **the split check's users** (``rd:{pl-<p>}:split:seen:<g>``) are kept per generation
  ``g = floor(now / retention)``: a user is new when neither the current generation's
  set nor the previous one holds them, and each sighting adds them to the current one,
  so any user seen within the last ``retention`` seconds is known (the SRM counts are
  exact within that window) and a generation's set expires two generations after it
  began (:func:`seen_keys`). The layout before it (one set, ``split:seen``) is read as a
  previous generation and given the same expiry;
* **outcome events** (``rd:{e}:oe:<d>``) already expire (their window and a day),
  **audit** lists and webhook delivery logs are capped: their bounds are stated on the
  keys page.

An A/B test's per-user hash and an experiment's per-impression data go when the
experiment is archived (:mod:`service.reports.archive`).
"""

from __future__ import annotations

from service.store.base import StorePart
from service.store.keys import RETENTION_TRIM, events_key, outbox_key, split_seen_key

#: how often the sweep trims the streams (seconds; one worker at a time)
TRIM_EVERY_S = 60.0


def generation(now: float, retention_s: float) -> int:
    """The generation of ``now``: ``floor(now / retention_s)``.

    >>> generation(95.0, 30), generation(120.0, 30)
    (3, 4)
    """
    return int(now // retention_s)


def seen_keys(name: str, now: float, retention_s: float) -> tuple[str, str, str, int]:
    """The current and previous generations' users of placement ``name``, the layout
    before generations (``split:seen``), and the seconds the current set is kept (to
    the end of the next generation, plus a minute).

    >>> seen_keys("web", 95.0, 30)
    ('rd:{pl-web}:split:seen:3', 'rd:{pl-web}:split:seen:2', 'rd:{pl-web}:split:seen', 115)
    """
    g = generation(now, retention_s)
    ttl = int((g + 2) * retention_s - now) + 60
    return split_seen_key(name, g), split_seen_key(name, g - 1), split_seen_key(name), ttl


class RetentionStore(StorePart):
    """Trims what outlives its use (module docstring)."""

    def trim_due(self, retention_s: float, every_s: float = TRIM_EVERY_S) -> int:
        """:meth:`trim_streams` if no worker did in the last ``every_s`` (a lease), for
        the sweep; the entries removed."""
        every_s = min(every_s, retention_s / 4)  # a short retention is trimmed as often
        if not self.r.set(RETENTION_TRIM, "1", nx=True, ex=max(1, int(every_s))):
            return 0
        return self.trim_streams(retention_s)

    def trim_streams(self, retention_s: float, now: float | None = None) -> int:
        """``XTRIM MINID`` the event log and the outbox of every experiment to the last
        ``retention_s`` seconds; returns the entries removed."""
        now = self.clock() if now is None else now
        min_id = f"{int((now - retention_s) * 1000)}-0"
        removed = 0
        for exp_id in self.base.list_ids():
            for key in (events_key(exp_id), outbox_key(exp_id)):
                removed += int(self.r.execute_command("XTRIM", key, "MINID", min_id))
        return removed


__all__ = ["TRIM_EVERY_S", "RetentionStore", "generation", "seen_keys"]
