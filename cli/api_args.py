"""The options of the commands that talk to a running API as an operator (``report``,
``export``, ``placement``): ``--api`` and ``--token``, declared and resolved here once."""

from __future__ import annotations

import argparse
import os

#: where the admin token comes from when ``--token`` is not given
TOKEN_ENV = "RANKDUEL_ADMIN_TOKEN"


def add_api_args(p: argparse.ArgumentParser) -> None:
    """``--api URL`` (required) and ``--token TOKEN`` (default ``$RANKDUEL_ADMIN_TOKEN``)."""
    p.add_argument("--api", required=True, help="base URL of the rankduel API")
    p.add_argument("--token", default=None, help=f"admin token (default: ${TOKEN_ENV})")


def admin_token(args: argparse.Namespace) -> str:
    """The admin token of ``--token`` or ``$RANKDUEL_ADMIN_TOKEN``; a ``ValueError`` (the
    command exits 2 with it) when neither is set."""
    token = args.token or os.environ.get(TOKEN_ENV, "")
    if not token:
        raise ValueError(f"give the admin token with --token or {TOKEN_ENV}")
    return token
