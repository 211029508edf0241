"""The demo search page (``rankduel demo --web``): a query box, the result page
interleaved by the live experiment, and ``rankduel.js`` reporting the clicks.

Served from its own origin (another port than the API), so the page calls the API
cross-origin exactly as a real search front end would: ``/search`` by ``fetch``, the
clicks and the end of the impression by ``rankduel.js``, and a "new tab" link per result
through the API's click redirect ``/r``. The documents the rankers link to
(``/doc/<id>``) are served here too.

The page is built at request time from ``app.config["RANKDUEL"]``: ``api`` (the API's
base URL), ``experiment`` (its id) and ``queries`` (example queries for the box), which a
caller may fill in after the app was created.
"""

from __future__ import annotations

import html
import json

from flask import Flask, Response

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>rankduel demo search</title>
<style>
 body {{ font: 16px/1.45 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; color: #222; }}
 h1 {{ font-size: 1.3rem; }} h1 small {{ color: #777; font-weight: normal; }}
 form {{ display: flex; gap: .5rem; margin-bottom: 1rem; }}
 input {{ flex: 1; font-size: 1rem; padding: .4rem .6rem; }}
 button {{ font-size: 1rem; padding: .4rem 1rem; }}
 ol {{ padding-left: 1.5rem; }} li {{ margin: .45rem 0; }}
 .meta {{ color: #777; font-size: .85rem; }} .newtab {{ margin-left: .5rem; font-size: .85rem; }}
 #status {{ color: #a33; }}
</style></head>
<body>
<h1>rankduel <small>demo search — experiment <code id="exp">{experiment}</code></small></h1>
<form id="search"><input id="q" name="q" list="examples" autocomplete="off"
 placeholder="search…" value="{first}"><button>Search</button></form>
<datalist id="examples">{examples}</datalist>
<p id="status"></p>
<p class="meta" id="meta"></p>
<ol id="results"></ol>
<p><a id="next" href="#" hidden>more results</a></p>
<script src="{api}/static/rankduel.js"></script>
<script>
const API = {api_json}, EXPERIMENT = {experiment_json};
const results = document.getElementById("results");
let handle = null;
function esc(s) {{
  const d = document.createElement("div"); d.textContent = String(s); return d.innerHTML;
}}
async function search(q) {{
  if (handle) {{ handle.end(); handle.detach(); handle = null; }}
  document.getElementById("status").textContent = "";
  let page;
  try {{
    const r = await fetch(API + "/search?experiment=" + encodeURIComponent(EXPERIMENT) +
                          "&q=" + encodeURIComponent(q) + "&k=10");
    page = await r.json();
    if (!r.ok) throw new Error(page.error || ("HTTP " + r.status));
  }} catch (e) {{
    document.getElementById("status").textContent = "search failed: " + e.message;
    window.lastError = String(e.message);
    return;
  }}
  results.innerHTML = items(page);
  document.getElementById("meta").textContent = "interleaved from " +
    page.rankers.join(" and ") + " — impression " + page.impression_id;
  const next = document.getElementById("next");
  next.hidden = page.results.length < 10;
  // "more results": rankduel.js fetches page N+1 of the same impression (ranks 11-20...)
  handle = RankDuel.attach(results, {{api: API, impression_id: page.impression_id,
                                      token: page.token, experiment: EXPERIMENT, q: q, k: 10,
                                      next: next,
                                      onPage: (more, n) => {{
                                        results.insertAdjacentHTML("beforeend", items(more));
                                        window.lastMore = {{page: n, answer: more}};
                                      }},
                                      onError: e => {{
                                        document.getElementById("status").textContent =
                                          "next page failed: " + e.message;
                                      }}}});
  window.lastPage = page;
}}
function items(page) {{
  return page.results.map(r => {{
    const redirect = API + "/r?i=" + encodeURIComponent(page.impression_id) +
      "&t=" + encodeURIComponent(page.token) + "&d=" + encodeURIComponent(r.id) +
      "&p=" + r.rank + "&u=" + encodeURIComponent(r.url || "");
    return '<li value="' + r.rank + '"><a class="result" href="' + esc(r.url || "#") +
      '" data-rd-doc="' + esc(r.id) + '" data-rd-rank="' + r.rank + '">' +
      esc(r.title || r.id) + '</a>' +
      '<a class="newtab" target="_blank" rel="noopener" href="' + esc(redirect) +
      '" data-rd-doc="' + esc(r.id) + '" data-rd-rank="' + r.rank + '">new tab ↗</a></li>';
  }}).join("");
}}
document.getElementById("search").addEventListener("submit", e => {{
  e.preventDefault(); search(document.getElementById("q").value);
}});
</script>
</body></html>
"""

DOC = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{id}</title></head>
<body><h1>Document {id}</h1><p>A result page of the demo world.</p>
<p><a href="javascript:history.back()">back to the results</a></p></body></html>"""


def create_web_app(api: str = "", experiment: str = "", queries: list[str] | None = None
                   ) -> Flask:
    """The demo search page as a WSGI app (see the module docstring)."""
    app = Flask("rankduel-demo-web")
    app.config["RANKDUEL"] = {"api": api, "experiment": experiment, "queries": queries or []}

    @app.get("/")
    def page() -> Response:
        cfg = app.config["RANKDUEL"]
        queries = cfg["queries"]
        body = PAGE.format(
            api=html.escape(cfg["api"]), experiment=html.escape(cfg["experiment"]),
            api_json=json.dumps(cfg["api"]), experiment_json=json.dumps(cfg["experiment"]),
            first=html.escape(queries[0] if queries else ""),
            examples="".join(f'<option value="{html.escape(q)}">' for q in queries[:50]))
        return Response(body, content_type="text/html; charset=utf-8")

    @app.get("/doc/<doc_id>")
    def doc(doc_id: str) -> Response:
        return Response(DOC.format(id=html.escape(doc_id)),
                        content_type="text/html; charset=utf-8")

    @app.get("/healthz")
    def healthz():
        return {"status": "ok"}

    return app
