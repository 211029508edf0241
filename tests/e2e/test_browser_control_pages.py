"""rankduel.js on a control answer, in a real headless Chromium: a page of a placement's
control (no impression) attached with its ``page_token`` reports a followed link's click,
which counts the page as clicked once (service/placements/control_pages.py, docs/frontend.md)."""

from __future__ import annotations

import html
import json
import secrets

import pytest
from conftest import ADMIN

from demo.client import Client
from demo.stack import wait_until
from demo.wsgi_server import ThreadedServer
from service.app import create_app
from service.store.keys import placement_page_key

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>control</title></head>
<body><ol id="results">{items}</ol>
<script src="{api}/static/rankduel.js"></script>
<script>RankDuel.attach(document.getElementById("results"), {options});</script>
</body></html>"""


def create_page_app():
    """A front end that renders the control answer it is given (``config["ANSWER"]``)
    and serves the documents its links lead to."""
    from flask import Flask

    app = Flask("control-page")

    @app.get("/")
    def page():
        answer, api = app.config["ANSWER"], app.config["API"]
        items = "".join(
            f'<li><a class="result" href="/doc/{html.escape(str(r["id"]))}" '
            f'data-rd-doc="{html.escape(str(r["id"]))}" data-rd-rank="{r["rank"]}">'
            f'{html.escape(str(r["id"]))}</a></li>' for r in answer["results"])
        options = json.dumps({"api": api, "page_token": answer["page_token"]})
        return PAGE.format(items=items, api=api, options=options)

    @app.get("/doc/<doc>")
    def doc(doc: str):
        return f"<p>document {html.escape(doc)}</p>"

    return app


@pytest.fixture(scope="module")
def browser():
    from demo.browser import chromium

    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def control_site(api, ranker_server):
    web = ThreadedServer(create_page_app())
    # a click window longer than the test (the session's is 1.5 s)
    server = ThreadedServer(create_app(api.config.replace(cors_origins=web.url,
                                                          inactivity_s=120)))
    client = Client(server.url, ADMIN)
    name = f"ctl-{secrets.token_hex(3)}"
    status, body = client.request("POST", "/placements", {"name": name, "control": {
        "name": "prod", "url": f"{ranker_server.url}/r/good", "timeout_ms": 2000}},
        admin=True)
    assert status == 201, body
    yield type("Site", (), {"web": web, "api": server, "client": client, "name": name})
    server.close()
    web.close()


def test_a_control_pages_click_is_reported_by_rankduel_js(browser, control_site, rd):
    status, answer = control_site.client.request(
        "GET", f"/search?placement={control_site.name}&q=shoes&k=5&user=b1")
    assert status == 200 and answer["experiment"] is None and answer["page_token"], answer
    control_site.web.server.app.config.update(ANSWER=answer, API=control_site.api.url)
    page_id = answer["page_token"].split(".")[1]
    mark = placement_page_key(control_site.name, page_id)
    page = browser.new_page()
    page.goto(control_site.web.url + "/")
    first = page.locator("a.result").first
    doc = first.get_attribute("data-rd-doc")
    with page.expect_navigation():
        first.click()
    assert page.url.endswith(f"/doc/{doc}")
    # the page's first click is marked (the counts themselves are the worker's to fold,
    # with its own, shorter, click window)
    wait_until(lambda: rd.exists(mark), 30, "the page's click")
    # the same page again (back, another click): still one clicked page
    page.go_back()
    with page.expect_navigation():
        page.locator("a.result").nth(1).click()
    page.close(run_before_unload=True)
    status, out = control_site.client.request("POST", "/clicks", {
        "page_token": answer["page_token"], "clicks": [{"id": doc, "rank": 1}]})
    assert status == 202 and out == {"impression_id": None, "accepted": 0,
                                     "duplicates": 1}, out
