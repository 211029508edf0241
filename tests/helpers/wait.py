"""Waiting for a condition, never for a fixed time: the tests poll what they expect until it
holds or a deadline passes, so that a busy machine makes them slower, not red.

:func:`wait_until` is the demo's own (``demo.stack``: it also notices a child process that
exited); :func:`wait_for` is the tests': it returns the condition's value and fails as an
assertion naming what it waited for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from demo.stack import ChildExited, wait_until

__all__ = ["ChildExited", "wait_for", "wait_until"]

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float = 45.0, what: str = "condition",
             interval: float = 0.1) -> T:
    """Call ``check`` every ``interval`` seconds until it returns a true value, and return
    that value; an ``AssertionError`` naming ``what`` after ``timeout`` seconds.

    >>> wait_for(lambda: 3, what="three")
    3
    >>> wait_for(lambda: 0, timeout=0.05, what="zero to be true")
    Traceback (most recent call last):
    ...
    AssertionError: timed out waiting for zero to be true
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)
