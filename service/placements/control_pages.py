"""A placement's control pages on the service side: the page token a control answer
carries, a click reported with it, and the fold that gives each running experiment the
control's pages of its own period (what is counted and when: :mod:`rollout.control_pages`).

**The page token.** A control answer has no impression (``"impression_id": null``,
``"token": null``) and costs no Redis call: it carries a ``page_token``,
``<bucket end>.<page id>.<MAC>.<placement>``, a MAC over the placement, a random page id
and the page's bucket: keyed BLAKE2b (128 bits) with a key derived from the service's
token secret (the impression tokens', :mod:`service.tokens`), half the CPU of an
HMAC-SHA256, which matters on a control search (a few microseconds in all). The page
is counted in the process's in-memory control counts (``p:<end>``), written at most
every second with the control ranker's calls (:mod:`service.placements.search`).

**A click** (``POST /clicks`` with ``page_token`` instead of ``impression_id`` and
``token``): the token is checked (403 when forged or malformed), the click refused after
the page's click window (409), and the page's first click counted (``c:<end>``; a
``SET NX`` per page, living past the window, makes a repeated click count once). Nothing
of the document or rank is checked: rankduel keeps no record of what a control page showed.

**The fold** (:func:`fold`, at each sweep of the workers with the guardrails,
:func:`service.placements.guardrails.check_all`): settled buckets are taken off the placement
atomically and added to each running experiment whose period they overlap
(``g:control_pages``, ``g:control_clicked``); :func:`service.placements.guardrails.check` reads them
with the experiment's own pages.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import time
from collections.abc import Sequence

from rollout import control_pages as cp
from service.errors import Conflict, Forbidden
from service.store import Store

#: the longest page token accepted (a placement name is at most 64 characters)
MAX_PAGE_TOKEN_CHARS = 200


@functools.lru_cache(maxsize=4)
def _key(secret: bytes) -> bytes:
    """The page tokens' own key, derived from the service's token secret (any length)."""
    return hashlib.sha256(b"rankduel page token|" + secret).digest()


def _mac(secret: bytes, placement: str, page_id: str, end: int) -> str:
    return hashlib.blake2b(f"{placement}|{page_id}|{end}".encode(), key=_key(secret),
                           digest_size=16).hexdigest()


def new_page(secret: bytes, placement: str, inactivity_s: float,
             now: float | None = None) -> tuple[str, str]:
    """A control page's ``(page_token, counter field)``: one MAC, no Redis call."""
    end = cp.bucket_end(time.time() if now is None else now, cp.bucket_s(inactivity_s))
    page_id = os.urandom(8).hex()
    return (f"{end}.{page_id}.{_mac(secret, placement, page_id, end)}.{placement}",
            f"{cp.PAGES}{end}")


def verify(secret: bytes, token: object) -> tuple[str, str, int]:
    """``(placement, page id, bucket end)`` of a genuine page token; 403 otherwise."""
    if not isinstance(token, str) or not token:
        raise Forbidden("missing page_token")
    parts = token.split(".", 3)
    if len(parts) != 4 or not parts[0].isascii() or not parts[0].isdigit() or \
            len(parts[0]) > 12 or len(parts[1]) != 16 or len(parts[2]) != 32 or not parts[3]:
        raise Forbidden("malformed page_token: send it as the control answer gave it "
                        "(END.PAGE.MAC.PLACEMENT)")
    end, page_id, mac, placement = int(parts[0]), parts[1], parts[2], parts[3]
    if not hmac.compare_digest(_mac(secret, placement, page_id, end), mac):
        raise Forbidden("invalid page_token: it was not issued by this service (or the "
                        "secret key changed)")
    return placement, page_id, end


def record_click(store: Store, secret: bytes, token: object, inactivity_s: float,
                 clicks: int, now: float | None = None) -> dict[str, object]:
    """A control page's click report of ``clicks`` clicks: the page counts as clicked
    once (module docstring). 403 forged, 409 after the page's click window."""
    placement, page_id, end = verify(secret, token)
    now = time.time() if now is None else now
    deadline = cp.click_deadline(end, inactivity_s)
    if now > deadline:
        raise Conflict(f"the click window of this control page closed "
                       f"{now - deadline:.0f} s ago (clicks are counted until "
                       f"RANKDUEL_INACTIVITY_S after the page)")
    ttl = int(deadline + cp.SETTLE_GRACE_S - now) + 1
    first = store.control_pages.click_page(placement, page_id, f"{cp.CLICKED}{end}", ttl)
    accepted = 1 if first else 0
    return {"impression_id": None, "accepted": accepted, "duplicates": clicks - accepted}


def fold(store: Store, name: str, control: dict[str, int], running: Sequence[str],
         inactivity_s: float, now: float | None = None) -> dict[str, tuple[int, int]]:
    """Take placement ``name``'s settled buckets (``control``: its control counters, as
    read) and add them to the ``running`` experiments whose period they overlap; the
    counts added per experiment. Dropped when nothing runs. A process that dies between
    the take and the add loses those buckets (the rule then waits for more pages)."""
    settled = cp.settled_fields(control, now=time.time() if now is None else now,
                                inactivity_s=inactivity_s)
    if not settled:
        return {}
    taken = cp.buckets(store.control_pages.take_control_fields(name, cp.fields_of(settled)))
    if not running or not taken:
        return {}
    since = store.control_pages.experiments_since(running)
    added = {e: cp.in_window(taken, since[e]) for e in running}
    store.control_pages.add_control_pages(added)
    return added


__all__ = ["MAX_PAGE_TOKEN_CHARS", "fold", "new_page", "record_click", "verify"]
