"""A real headless Chromium for the browser tests and the demo's screenshots.

Debian's ``chromium`` package (``/usr/bin/chromium``, installed by ``scripts/test``) driven
by Playwright for Python with ``executable_path``: Playwright's own browser downloads are
never used (this machine reaches only package registries). The flags keep Chromium off
the network it cannot reach (background networking, component updates, sync, QUIC) and
let it run as root in a container (``--no-sandbox``).

    with chromium() as browser:
        page = browser.new_page()
        page.goto("http://127.0.0.1:8000/demo")
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: flags every launch passes (see the module docstring)
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_executable() -> str | None:
    """The Chromium binary to drive: ``RANKDUEL_CHROMIUM`` when set, else the first of
    ``chromium`` / ``chromium-browser`` on PATH; None when there is none."""
    explicit = os.environ.get("RANKDUEL_CHROMIUM")
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@contextmanager
def chromium(**launch: Any) -> Iterator[Any]:
    """A headless Chromium (a Playwright ``Browser``) for the length of the block.

    Raises RuntimeError naming the fix when Chromium or Playwright is missing.
    """
    exe = chromium_executable()
    if exe is None:
        raise RuntimeError("no Chromium on PATH: as root, apt-get install chromium "
                           "(scripts/test does this), or set RANKDUEL_CHROMIUM")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:  # pragma: no cover - the dev extra installs it
        raise RuntimeError("Playwright is missing: pip install -e '.[dev]'") from e
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True,
                                    args=list(CHROMIUM_ARGS), **launch)
        try:
            yield browser
        finally:
            browser.close()
