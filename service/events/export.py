"""An export file of the event log, written page by page: ``jsonl`` (one event a line,
compact JSON, as the API serves them) or ``parquet`` (needs pyarrow, the ``export`` extra:
one row per event, columns ``cursor``, ``type``, ``id`` and ``event``, the event's JSON).
:mod:`service.events.replay` reads either back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: the export's formats
FORMATS = ("jsonl", "parquet")

Write = Callable[[list[dict[str, Any]]], None]


def line(event: dict[str, Any]) -> str:
    """One event as the export writes it: compact JSON (a line of ``jsonl``, the
    ``event`` column of ``parquet``).

    >>> line({"type": "click", "positions": [0, 2]})
    '{"type":"click","positions":[0,2]}'
    """
    return json.dumps(event, separators=(",", ":"))


def writer(fmt: str, out: Path) -> tuple[Write, Callable[[], None]]:
    """``(write, close)`` for the file ``out`` in the format ``fmt``: ``write`` appends a
    page of events. ``ImportError`` for ``parquet`` without pyarrow, before ``out`` is
    created."""
    if fmt == "parquet":
        return _parquet_writer(out)
    fh = out.open("w")

    def write(events: list[dict[str, Any]]) -> None:
        fh.writelines(line(e) + "\n" for e in events)

    return write, fh.close


def _parquet_writer(out: Path) -> tuple[Write, Callable[[], None]]:
    import pyarrow as pa  # deferred: the optional export extra
    import pyarrow.parquet as pq

    schema = pa.schema([("cursor", pa.string()), ("type", pa.string()), ("id", pa.string()),
                        ("event", pa.string())])
    pq_writer = pq.ParquetWriter(str(out), schema)

    def write(events: list[dict[str, Any]]) -> None:
        pq_writer.write_table(pa.table({
            "cursor": [e["cursor"] for e in events], "type": [e["type"] for e in events],
            "id": [e["id"] for e in events],
            "event": [line(e) for e in events]}, schema=schema))

    return write, pq_writer.close
