"""``rankduel report EXP --api URL --token TOKEN [--json] [--html FILE]``: what an
experiment has decided.

Prints the verdict and the ranker table (``GET /experiments/EXP/report``), then each
declared metric's verdict and whether the metrics disagree; ``--json``
prints the report's JSON instead; ``--html FILE`` writes a self-contained HTML copy of the
operator page (``/ui/``) for this experiment: the page's script and style inlined, the
report embedded, no token and no network needed to open it. The token may also come
from ``RANKDUEL_ADMIN_TOKEN``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cli.api_args import add_api_args, admin_token

STATIC = Path(__file__).resolve().parent.parent.parent / "service" / "static" / "ui"


def fetch(api: str, token: str, exp_id: str) -> dict[str, Any]:
    """The report from the API; ``ValueError`` (exit code 2) with the API's message."""
    from demo.client import check_http_url, http_json

    try:
        check_http_url(api)
    except ValueError as exc:
        raise ValueError(f"--api: {exc}") from None
    try:
        status, body = http_json("GET", f"{api.rstrip('/')}/experiments/{quote(exp_id)}/report",
                                 headers={"Authorization": f"Bearer {token}"}, timeout=30)
    except OSError as exc:
        raise ValueError(f"cannot reach the API at {api}: {exc}") from None
    if status != 200:
        msg = body.get("error") if isinstance(body, dict) else str(body)[:200]
        raise ValueError(f"the API answered {status}: {msg}")
    return body


def ab_table(rep: dict[str, Any]) -> str:
    """An A/B test's verdict, its arms and its split as text."""
    lines = [rep["verdict"], "",
             f"{'arm':<16} {'role':<10} {'assigned':>9} {'observed':>9} {'users':>9} "
             f"{'searches':>9} {'clicked':>9} {'CTR':>7}"]
    for a in rep["arms"]:
        seen = "-" if a["observed_share"] is None else f"{100 * a['observed_share']:.1f}%"
        ctr = "-" if a["ctr"] is None else f"{a['ctr']:.4f}"
        lines.append(f"{a['name']:<16} {a['role']:<10} {100 * a['assigned_share']:>8.1f}% "
                     f"{seen:>9} {a['users']:>9,} {a['searches']:>9,} "
                     f"{a['clicked_searches']:>9,} {ctr:>7}")
    lines.append("")
    for by_treatment in rep["metrics"].values():
        lines += [c["sentence"] for c in by_treatment.values()]
    srm = rep.get("srm")
    lines += ["", f"split: {srm['message'] if srm else 'no users yet'}"]
    if rep.get("split", {}).get("flagged"):
        lines.append(f"placement split: {rep['split']['message']}")
    return "\n".join(lines)


#: the table of a design's report other than interleaving's (:func:`table`), by the
#: report's ``design``
DESIGN_TABLES = {"ab": ab_table}


def table(rep: dict[str, Any]) -> str:
    """The verdict and the ranker table as text (an A/B test's: :func:`ab_table`)."""
    by_design = DESIGN_TABLES.get(rep.get("design"))
    if by_design is not None:
        return by_design(rep)
    lines = [rep["verdict"], ""]
    head = (f"{'ranker':<16} {'status':<10} {'impressions':>11} {'vs champion W-L-T':>17} "
            f"{'p [95% interval]':>22}  eliminated")
    lines.append(head)
    for r in rep["rankers"]:
        vs = r["vs_champion"]
        status = ("champion" if r["name"] == rep["champion"] else
                  "degraded" if r.get("degraded") else r["status"])
        wl = f"{vs['wins']:g}-{vs['losses']:g}-{vs['ties']}" if vs else "-"
        p = f"{vs['p']:.3f} [{vs['lower']:.3f}, {vs['upper']:.3f}]" if vs else "-"
        elim = (f"by {r['eliminated_by']} at {r['eliminated_at_comparison']:,}"
                if r["eliminated_by"] is not None else "")
        if r.get("verdict") == "shown worse":
            elim = f"shown worse by {r['shown_worse_by']}"
        elif r.get("verdict") == "no longer shown":
            elim = "no longer shown (not shown worse)"
        lines.append(f"{r['name']:<16} {status:<10} {r['impressions']:>11,} {wl:>17} "
                     f"{p:>22}  {elim}")
    for d in rep.get("degraded", []):  # apart: neither winner nor loser
        lines.append(f"{d['name']} is degraded ({d['reason']}): out of the comparisons, "
                     "neither winner nor loser")
    lines += metric_lines(rep)
    lines += segment_tables(rep.get("segments"))
    est = rep["estimated_comparisons_to_decide"]
    lines += ["", f"estimate: {'none' if est is None else f'{est:,} comparisons'}"
              f" ({rep['estimate_basis']})"]
    return "\n".join(lines)


def metric_lines(rep: dict[str, Any]) -> list[str]:
    """Each declared metric's verdict, the primary marked, and the sentence saying the
    metrics disagree when they do (nothing for an experiment without metrics).

    >>> print("\\n".join(metric_lines({"metrics": [
    ...     {"name": "click", "primary": True, "comparisons": 90, "verdict": "r1 wins click."},
    ...     {"name": "revenue", "primary": False, "comparisons": 12,
    ...      "verdict": "r2 leads revenue."}],
    ...     "metrics_disagree": "r1 wins click, r2 leads revenue: the metrics disagree."})))
    <BLANKLINE>
    metrics: each verdict at delta / 2 (the policy learns from the primary)
      click (primary)             90 comparisons  r1 wins click.
      revenue                     12 comparisons  r2 leads revenue.
    r1 wins click, r2 leads revenue: the metrics disagree.
    >>> metric_lines({"verdict": "..."})
    []
    """
    metrics = rep.get("metrics")
    if not metrics:
        return []
    lines = ["", f"metrics: each verdict at delta / {len(metrics)} (the policy learns "
                 "from the primary)"]
    for m in metrics:
        name = m["name"] + (" (primary)" if m.get("primary") else "")
        lines.append(f"  {name:<20} {m['comparisons']:>9,} comparisons  {m['verdict']}")
    if rep.get("metrics_disagree"):
        lines.append(rep["metrics_disagree"])
    return lines


def segment_tables(seg: dict[str, Any] | None) -> list[str]:
    """The report per segment as text: a table per dimension (nothing without
    segments)."""
    if not seg:
        return []
    lines = ["", f"segments: each ranker against {seg['champion']} within each value "
                 f"(bounds anytime-valid, Bonferroni over {seg['tests']} tests, "
                 f"delta {seg['delta']}; * = that value prefers the ranker)"]
    for dim, rows in seg["dimensions"].items():
        lines += ["", f"{dim:<16} {'ranker':<16} {'W-L-T':>17} {'p [bounds]':>22}"]
        for row in rows:
            for r in row["rankers"]:
                wl = f"{r['wins']:g}-{r['losses']:g}-{r['ties']}"
                p = f"{r['p']:.3f} [{r['lower']:.3f}, {r['upper']:.3f}]"
                lines.append(f"{row['value']:<16} {r['name']:<16} {wl:>17} {p:>22}"
                             f"{'  *' if r['preferred'] else ''}")
    return lines


def html(rep: dict[str, Any]) -> str:
    """A self-contained copy of the operator page showing ``rep``."""
    page = (STATIC / "index.html").read_text()
    css = (STATIC / "ui.css").read_text()
    js = (STATIC / "ui.js").read_text()
    data = json.dumps(rep).replace("</", "<\\/")
    page = page.replace('<link rel="stylesheet" href="ui.css">', f"<style>\n{css}</style>")
    page = page.replace('<script src="ui.js"></script>',
                        f"<script>window.RANKDUEL_REPORT = {data};</script>\n"
                        f"<script>\n{js.replace('</', '<' + chr(92) + '/')}</script>")
    return page


def _run(args: argparse.Namespace) -> int:
    token = admin_token(args)
    rep = fetch(args.api, token, args.experiment)
    if args.html:
        Path(args.html).write_text(html(rep))
        print(f"wrote {args.html}", file=sys.stderr)
    if args.json:
        print(json.dumps(rep, indent=2))
    elif not args.html:
        print(table(rep))
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help="what an experiment has decided (verdict, table)",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", metavar="EXP", help="experiment id")
    add_api_args(p)
    p.add_argument("--json", action="store_true", help="print the report's JSON")
    p.add_argument("--html", metavar="FILE", default=None,
                   help="write a self-contained HTML page of the report to FILE")
    p.set_defaults(func=_run)
