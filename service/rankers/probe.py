"""The test query a ranker must answer when it is added (``POST /experiments``,
``POST /experiments/ID/rankers``; skipped with ``"probe": false``).

A ranker is refused (422) when its answer to the probe query (``RANKDUEL_PROBE_QUERY``)

* fails: refused by the allow-list, no connection, a timeout, a secret not set, a
  non-200 status, a body over the size limit;
* is not a result list (an unparseable body, a mapping that does not fit);
* or holds **no results**, unless the ranker says ``"allow_empty": true``: a results path
  with a typo (``"response.documents"``) reads as "no results" live, so a ranker that
  would answer nothing in every search is stopped here rather than sent into duels.

Each refusal says why, in the operator's terms: for a non-200 or an unparseable answer,
the first few hundred bytes of the engine's body (what says why: "invalid api key",
"index not found"), secrets redacted (:mod:`service.rankers.redact`); for no results,
the results path and what the answer held instead (its keys, or the type found there).

The probe makes its own call (one per ranker, concurrently) with the client's transport
(:meth:`~service.rankers.client.RankerClient.prepare`,
:meth:`~service.rankers.client.RankerClient.connect`: the same request, the same
allow-list check), because it needs the body that a search never keeps.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from service.rankers.allow_list import RankerRefused
from service.rankers.client import RankerClient
from service.rankers.parsing import parse_results
from service.rankers.redact import excerpt, header_secrets
from service.rankers.template import MissingSecret
from service.store.records import Ranker

#: results asked of a ranker by the probe
PROBE_K = 10
#: the most keys named when saying what an answer held
SHOWN_KEYS = 12


def _held(node: Any) -> str:
    """What a JSON value is, in a few words."""
    if isinstance(node, dict):
        keys = list(node)[:SHOWN_KEYS]
        more = ", ..." if len(node) > SHOWN_KEYS else ""
        return ("an object with keys " + ", ".join(json.dumps(k) for k in keys) + more
                if node else "an empty object")
    if isinstance(node, list):
        return f"a list of {len(node)}" if node else "an empty list"
    return "null" if node is None else f"a {type(node).__name__}"


def describe_empty(data: Any, response: dict[str, Any] | None) -> str:
    """Why an answer read as no results: where its results path stops, and what the
    answer held there instead.

    >>> describe_empty({"response": {"docs": []}}, {"results": "response.documents", "id": "id"})
    'results path "response.documents" is absent: "response" is an object with keys "docs"'
    >>> describe_empty({"results": []}, None)
    'results path "results" is an empty list'
    """
    path = "results" if response is None else response["results"]
    node, walked = data, []
    for seg in path.split("."):
        key: str | int = int(seg) if seg.isdigit() else seg
        where = json.dumps(".".join(walked)) if walked else "the answer"
        if isinstance(node, dict) and str(key) in node:
            node = node[str(key)]
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return f"results path {json.dumps(path)} is absent: {where} is {_held(node)}"
        walked.append(seg)
    return f"results path {json.dumps(path)} is {_held(node)}"


def probe_one(client: RankerClient, ranker: Ranker, query: str, *,
              allow_empty: bool = False) -> str | None:
    """Why ``ranker`` fails the probe, as ``"reason: detail"``; None when it passes."""
    secrets = header_secrets(ranker.request)
    deadline = time.monotonic() + ranker.timeout_s
    try:
        req = client.prepare(ranker, query, PROBE_K)
        conn = client.connect(req, ranker.timeout_s)
        try:
            conn.sock.settimeout(max(0.001, deadline - time.monotonic()))
            conn.request(req.method, req.target, body=req.body, headers=req.headers)
            resp = conn.getresponse()
            body = resp.read(client.max_bytes + 1)
        finally:
            conn.close()
    except RankerRefused as exc:
        return f"refused: {exc}"
    except MissingSecret as exc:
        return f"missing_secret: {exc}"
    except TimeoutError:
        return f"timeout: no answer within {ranker.timeout_ms} ms"
    except OSError as exc:
        return f"connection: {exc or type(exc).__name__}"
    except Exception as exc:  # an engine's fault must never fail the request
        return f"error: {type(exc).__name__}: {exc}"
    if time.monotonic() > deadline:
        return f"timeout: no answer within {ranker.timeout_ms} ms"
    if len(body) > client.max_bytes:
        return f"too_large: body over {client.max_bytes} bytes"
    answered = f"; the engine answered: {excerpt(body, secrets)}" if body else ""
    if resp.status != 200:
        return f"http_{resp.status}: HTTP {resp.status}{answered}"
    try:
        results = parse_results(body, client.max_results, ranker.response)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"bad_response: {exc}{answered}"
    if results or allow_empty:
        return None
    why = describe_empty(json.loads(body), ranker.response)
    fix = ("fix the response mapping's \"results\" path" if " is absent: " in why else
           f"the engine found nothing for {query!r}: set RANKDUEL_PROBE_QUERY to a query "
           "it answers")
    return f'no_results: {why} ({fix}, or say "allow_empty": true)'



def probe_all(client: RankerClient, rankers: list[Ranker], query: str, *,
              allow_empty: Collection[str] = ()) -> list[tuple[Ranker, str]]:
    """The rankers that fail the probe, each with why (:func:`probe_one`), probed
    concurrently; ``allow_empty``: the names of the rankers that may answer nothing."""
    if not rankers:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(rankers)),
                            thread_name_prefix="probe") as pool:
        why = list(pool.map(lambda r: probe_one(client, r, query,
                                                allow_empty=r.name in allow_empty), rankers))
    return [(r, w) for r, w in zip(rankers, why, strict=True) if w is not None]
