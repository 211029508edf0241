"""``rankduel placement create|list|show|set-traffic``: placements (search boxes) and the
traffic shares of their experiments, through the operator API (docs/operations/rollout.md).

    rankduel placement create web --control-url http://search.internal/bm25 --api URL
    rankduel placement list --api URL
    rankduel placement show web --api URL
    rankduel placement set-traffic EXP 0.2 --api URL
    rankduel placement set-traffic EXP '[{"after": "0m", "share": 0.01},
                                         {"after": "30m", "share": 0.1}]' --api URL

An experiment joins a placement when it is created (``"placement"`` and ``"traffic"`` in
``POST /experiments``). The token may also come from ``RANKDUEL_ADMIN_TOKEN``. A refusal
of the API (a share over 1, an unknown placement) exits with code 2 and its message.
"""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import quote

from cli.api_args import add_api_args, admin_token


def _call(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    """One request to the operator API; ``ValueError`` (exit code 2) with its message."""
    from demo.client import check_http_url, http_json

    token = admin_token(args)
    try:
        check_http_url(args.api)
    except ValueError as exc:
        raise ValueError(f"--api: {exc}") from None
    try:
        status, out = http_json(method, f"{args.api.rstrip('/')}{path}", body,
                                headers={"Authorization": f"Bearer {token}"}, timeout=30)
    except OSError as exc:
        raise ValueError(f"cannot reach the API at {args.api}: {exc}") from None
    if status >= 400:
        msg = out.get("error") if isinstance(out, dict) else str(out)[:200]
        raise ValueError(f"the API answered {status}: {msg}")
    return out


def parse_traffic_arg(text: str) -> Any:
    """A share (``0.2``) or a JSON schedule, as given on the command line.

    >>> parse_traffic_arg("0.2"), parse_traffic_arg('[{"after": "0m", "share": 0.1}]')
    (0.2, [{'after': '0m', 'share': 0.1}])
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, bool) or not isinstance(value, int | float | list):
        raise ValueError(f"TRAFFIC must be a share (0.2) or a JSON schedule "
                         f"('[{{\"after\": \"0m\", \"share\": 0.01}}, ...]'), got {text!r}")
    return value


def summary(p: dict[str, Any]) -> str:
    """A placement as text: its control and each experiment's share."""
    lines = [f"{p['name']}: control {p['control']['name']} ({p['control']['url']}) takes "
             f"{100 * p['control_share']:.2f} %"]
    for e in p["experiments"]:
        why = f" - paused by guardrail {e['guardrail']['rule']}: {e['guardrail']['reason']}" \
            if e.get("guardrail") else ""
        lines.append(f"  {e['experiment']}: {100 * e['share']:.2f} % now, {e['status']}, "
                     f"traffic {json.dumps(e['traffic'])}{why}")
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    if args.action == "create":
        control = {"name": args.control_name, "url": args.control_url}
        if args.control_timeout_ms is not None:
            control["timeout_ms"] = args.control_timeout_ms
        body: dict[str, Any] = {"name": args.name, "control": control}
        if args.salt:
            body["salt"] = args.salt
        if args.no_probe:
            body["probe"] = False
        out = _call(args, "POST", "/placements", body)
    elif args.action == "list":
        out = _call(args, "GET", "/placements")
        if not args.json:
            print("\n".join(summary(p) for p in out["placements"]) or "no placement")
            return 0
    elif args.action == "show":
        out = _call(args, "GET", f"/placements/{quote(args.name)}")
    else:
        traffic = parse_traffic_arg(args.traffic)
        exp = _call(args, "PATCH", f"/experiments/{quote(args.experiment)}",
                    {"traffic": traffic})
        out = _call(args, "GET", f"/placements/{quote(exp['rollout']['placement'])}")
    print(json.dumps(out, indent=2) if args.json else summary(out))
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    add_api_args(p)
    p.add_argument("--json", action="store_true", help="print the API's JSON")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("placement", help="placements: a search box's control and "
                              "the traffic shares of its experiments", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = sub.add_parser("create", help="create a placement with its control ranker")
    c.add_argument("name", metavar="NAME", help="the placement's name (e.g. web)")
    c.add_argument("--control-url", required=True, help="the control (production) ranker's URL")
    c.add_argument("--control-name", default="control", help="its name (default: control)")
    c.add_argument("--control-timeout-ms", type=int, default=None,
                   help="its timeout (default: the service's)")
    c.add_argument("--salt", default=None, help="hash salt (default: the name)")
    c.add_argument("--no-probe", action="store_true",
                   help="create it without sending the control the test query first")
    _common(c)
    _common(sub.add_parser("list", help="every placement and its shares"))
    s = sub.add_parser("show", help="one placement: control, experiments, shares")
    s.add_argument("name", metavar="NAME")
    _common(s)
    t = sub.add_parser("set-traffic", help="an experiment's share (or ramp) from now")
    t.add_argument("experiment", metavar="EXP", help="experiment id")
    t.add_argument("traffic", metavar="TRAFFIC", help="a share (0.2) or a JSON schedule")
    _common(t)
    p.set_defaults(func=_run)
