"""The Grafana dashboards (deploy/grafana/dashboards/*.json) and every PromQL query in
them, shared by tests/unit/test_dashboards.py (the dashboards checked statically) and
tests/e2e/test_dashboards_prometheus.py (every query evaluated by a real Prometheus)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DASHBOARDS = sorted((ROOT / "deploy/grafana/dashboards").glob("*.json"))


def panels(dashboard: dict) -> list[dict]:
    out = []
    for p in dashboard.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []))  # collapsed rows keep their panels inside
    return out


def queries(dashboard: dict) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and query variable."""
    out = []
    for p in panels(dashboard):
        for t in p.get("targets", []):
            out.append((f"{dashboard['uid']}: {p['title']} [{t['refId']}]", t["expr"]))
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            out.append((f"{dashboard['uid']}: variable {v['name']}", q))
    return out


#: (where, PromQL) of every query of every dashboard
ALL_QUERIES = [q for d in DASHBOARDS for q in queries(json.loads(d.read_text()))]
