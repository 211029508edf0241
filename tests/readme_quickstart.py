"""The README's quick start as its commands, shared by tests/unit/test_docs_text.py (the
blocks stay short) and tests/service/test_quickstart.py (they run as written)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def quickstart_blocks() -> list[str]:
    """The ```bash blocks of the README's ``## Quick start`` section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Quick start\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert section, "README.md has no '## Quick start'"
    return re.findall(r"^```bash\n(.*?)^```", section.group(1), re.M | re.S)
