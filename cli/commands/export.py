"""``rankduel export EXP --api URL --token TOKEN --format jsonl|parquet --out FILE``: an
experiment's event log, every event (impressions, clicks, outcomes), written to FILE.
``--format ubi --out DIR`` writes it as OpenSearch User Behavior Insights documents,
``DIR/ubi_queries.ndjson`` and ``DIR/ubi_events.ndjson`` (:mod:`service.events.ubi`);
``--format ubi-bulk`` (or ``ubi --bulk``) the same documents in OpenSearch's ``_bulk``
format, ``DIR/ubi_queries.bulk.ndjson`` and ``DIR/ubi_events.bulk.ndjson``, loadable as
written: ``curl -H 'Content-Type: application/x-ndjson' --data-binary
@DIR/ubi_queries.bulk.ndjson http://localhost:9200/_bulk`` (docs/ubi.md).

Pages ``GET /experiments/EXP/events`` from the start to the end of the log (each page
after the last page's cursor: nothing skipped or repeated, even while the experiment
runs), with a progress line on stderr. ``jsonl``: one JSON object a line, as the API
serves them. ``parquet`` (needs the ``export`` extra: ``pip install 'rankduel[export]'``):
one row per event, columns ``cursor``, ``type``, ``id`` and ``event`` (the event's JSON).
``rankduel replay FILE`` recomputes W from either. The token may also come from
``RANKDUEL_ADMIN_TOKEN``.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from cli.api_args import add_api_args, admin_token
from service.events import ubi
from service.events.export import FORMATS, line, writer

#: events per page
PAGE = 5000


def pages(api: str, token: str, exp_id: str, page: int = PAGE
          ) -> Iterator[tuple[list[dict[str, Any]], int]]:
    """Every page of the log, with the log's size when it was read; ``ValueError`` (exit
    code 2) with the API's message."""
    after = "0"
    while True:
        url = (f"{api.rstrip('/')}/experiments/{quote(exp_id)}/events?"
               + urlencode({"after": after, "limit": page}))
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                body = resp.read().decode()
                after = resp.headers["X-Next-Cursor"]
                total = int(resp.headers.get("X-Events-Total", "0"))
        except urllib.error.HTTPError as exc:
            try:
                msg = json.loads(exc.read()).get("error")
            except ValueError:
                msg = exc.reason
            raise ValueError(f"the API answered {exc.code}: {msg}") from None
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot reach the API at {api}: {exc}") from None
        events = [json.loads(line) for line in body.splitlines() if line]
        if not events:
            return
        yield events, total


def export(api: str, token: str, exp_id: str, fmt: str, out: Path, *,
           progress=sys.stderr) -> int:
    """Write the log to ``out`` in the format ``fmt`` (:mod:`service.events.export`); the
    number of events written."""
    try:
        write, close = writer(fmt, out)
    except ImportError:
        raise ValueError("--format parquet needs pyarrow: pip install 'rankduel[export]' "
                         "(or use --format jsonl)") from None
    n = 0
    try:
        for events, total in pages(api, token, exp_id):
            write(events)
            n += len(events)
            if progress is not None:
                pct = f" ({100 * n / total:.0f} %)" if total >= n and total else ""
                progress.write(f"\rexported {n:,} events{pct}")
                progress.flush()
    finally:
        close()
    if progress is not None:
        progress.write(f"\rexported {n:,} events to {out}\n")
    return n


#: the UBI formats: plain documents, or with OpenSearch's bulk action lines
UBI_FORMATS = ("ubi", "ubi-bulk")


def ubi_files(out: Path, bulk: bool) -> dict[str, Path]:
    """The file of each UBI index in the folder ``out``."""
    suffix = ".bulk.ndjson" if bulk else ".ndjson"
    return {index: out / f"{index}{suffix}" for index in (ubi.QUERIES, ubi.EVENTS)}


def _get_json(api: str, token: str, path: str) -> dict[str, Any]:
    req = urllib.request.Request(f"{api.rstrip('/')}{path}",
                                 headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raise ValueError(f"the API answered {exc.code} to GET {path}") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot reach the API at {api}: {exc}") from None


def export_ubi(api: str, token: str, exp_id: str, out: Path, *, bulk: bool = False,
               progress=sys.stderr) -> dict[str, int]:
    """Write the log as UBI documents into the folder ``out`` (created if need be), one
    file per index (:func:`ubi_files`); the documents written per index."""
    meta = _get_json(api, token, f"/experiments/{quote(exp_id)}")
    convert = ubi.Converter(exp_id, meta.get("interleaving"))
    out.mkdir(parents=True, exist_ok=True)
    files = {index: path.open("w") for index, path in ubi_files(out, bulk).items()}
    counts = dict.fromkeys(files, 0)
    try:
        for events, _ in pages(api, token, exp_id):
            for doc in convert.feed(events):
                index = doc[0]
                lines = list(ubi.bulk_lines([doc])) if bulk else [line(doc[2])]
                files[index].writelines(x + "\n" for x in lines)
                counts[index] += 1
    finally:
        for fh in files.values():
            fh.close()
    if progress is not None:
        progress.write(f"exported {counts[ubi.QUERIES]:,} queries and "
                       f"{counts[ubi.EVENTS]:,} events to {out}\n")
    return counts


def _run(args: argparse.Namespace) -> int:
    token = admin_token(args)
    if args.format in UBI_FORMATS:
        export_ubi(args.api, token, args.experiment, Path(args.out),
                   bulk=args.bulk or args.format == "ubi-bulk", progress=sys.stderr)
        return 0
    if args.bulk:
        raise ValueError("--bulk goes with --format ubi")
    export(args.api, token, args.experiment, args.format, Path(args.out))
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("export", help="write an experiment's event log to a file",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", metavar="EXP", help="experiment id")
    add_api_args(p)
    p.add_argument("--format", choices=(*FORMATS, *UBI_FORMATS), default="jsonl",
                   help="jsonl (default), parquet (needs the export extra), ubi or "
                        "ubi-bulk (OpenSearch User Behavior Insights, into a folder)")
    p.add_argument("--bulk", action="store_true",
                   help="with --format ubi: OpenSearch _bulk files (as --format ubi-bulk)")
    p.add_argument("--out", required=True, metavar="FILE|DIR",
                   help="the file to write (the folder, for ubi)")
    p.set_defaults(func=_run)
