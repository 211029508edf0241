"""``rankduel audit``: who changed what, from the API's audit trail (``GET /audit``;
docs/operations/security.md).

    rankduel audit --api URL                          # every entry, oldest first
    rankduel audit --api URL --key ci-bot --since 2026-12-01
    rankduel audit --api URL --experiment 3fa2c1 --ndjson > trail.ndjson   # for a SIEM

The token (``--token``, or ``RANKDUEL_ADMIN_TOKEN``) may be any key with ``read``. A
refusal of the API exits with code 2 and its message.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from cli.api_args import add_api_args
from cli.commands.placement import _call


def parse_since(text: str) -> int:
    """Unix seconds, or an ISO 8601 date or time (UTC unless it says otherwise).

    >>> parse_since("1765100000"), parse_since("2026-12-07")
    (1765100000, 1796601600)
    """
    if text.isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--since: give unix seconds or an ISO date (2026-12-07), "
                         f"got {text!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp())


def line(e: dict[str, Any]) -> str:
    """One entry as text: when, who, the operation, its target, the result."""
    when = datetime.fromtimestamp(e["ts"], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    who = e["who"]
    by = f"key {who['name']} ({who['key']})" if "key" in who else f"{who['bootstrap']} token"
    target = " ".join(f"{k}={v}" for k, v in e["target"].items()) or "-"
    change = json.dumps(e["change"], separators=(",", ":")) if e["change"] else ""
    return f"{when}  {by}  {e['op']} {e['action']}  {target}  {e['result']}  " \
           f"from {e['addr']}  {change}".rstrip()


def _run(args: argparse.Namespace) -> int:
    query: dict[str, Any] = {k: getattr(args, k) for k in ("key", "experiment", "placement")
                             if getattr(args, k)}
    if args.since:
        query["since"] = parse_since(args.since)
    after = None
    while True:
        page = _call(args, "GET", "/audit?" + urlencode(
            {**query, "limit": 500, **({"after": after} if after else {})}))
        for e in page["entries"]:
            print(json.dumps(e, separators=(",", ":")) if args.ndjson else line(e))
        if len(page["entries"]) < 500:
            break
        after = page["next"]
    sys.stdout.flush()
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("audit", help="who changed what: the API's audit trail",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_api_args(p)
    p.add_argument("--key", default=None, help="entries by this key (its name or id)")
    p.add_argument("--experiment", default=None, help="entries on this experiment")
    p.add_argument("--placement", default=None, help="entries on this placement")
    p.add_argument("--since", default=None, help="from this time (unix seconds or ISO date)")
    p.add_argument("--ndjson", action="store_true", help="one JSON entry a line (export)")
    p.set_defaults(func=_run)
