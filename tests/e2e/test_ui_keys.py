"""``/ui/`` with a key (issue 48), in a real headless Chromium against the session's API:
the page asks for a key and keeps it in the tab's session; it says whose key it is; a
``read`` key sees the experiment with its controls disabled (and the reason); a
``write`` key pauses it, and the report's timeline names that key."""

from __future__ import annotations

import pytest
from conftest import ADMIN

from demo.client import Client


@pytest.fixture(scope="module")
def browser():
    from demo.browser import chromium

    with chromium() as b:
        yield b


def _key(admin: Client, name: str, scopes: list[str]) -> dict:
    status, body = admin.request("POST", "/keys", {"name": name, "scopes": scopes},
                                 admin=True)
    assert status == 201, body
    return body


def _sign_in(browser, url: str, key: str):
    page = browser.new_page()
    page.goto(url)
    page.fill("input[name=token]", key)
    page.click("form#login button[type=submit]")
    return page


def test_a_read_key_sees_the_controls_disabled_and_a_write_key_acts(
        api, browser, ranker_server):
    admin = Client(api.url, ADMIN)
    exp = admin.create_experiment(
        name="ui-keys", algorithm="uniform", interleaving="team_draft", probe=False,
        rankers=[{"name": n, "url": f"{ranker_server.url}/r/{n}"} for n in ("good", "mid")])
    reader, writer = _key(admin, "ui-reader", ["read"]), _key(admin, "ui-writer", ["write"])

    page = _sign_in(browser, f"{api.url}/ui/#exp={exp['id']}", reader["key"])
    page.wait_for_selector("#controls")
    assert page.locator("#who").inner_text() == f"key ui-reader ({reader['id']}) · read"
    for action in ("pause", "resume", "stop"):
        assert page.locator(f"#control-{action}").is_disabled()
    assert "needs write" in page.locator("#controls-why").inner_text()
    assert page.locator("#verdict").is_visible()  # it still sees everything
    # the key lives in the tab's session storage, never in the URL
    assert page.evaluate("sessionStorage.getItem('rankduel.token')") == reader["key"]
    assert reader["key"] not in page.url
    page.close()

    page = _sign_in(browser, f"{api.url}/ui/#exp={exp['id']}", writer["key"])
    page.wait_for_selector("#control-pause:not([disabled])")
    assert page.locator("#control-resume").is_disabled()  # running: nothing to resume
    page.click("#control-pause")
    page.wait_for_selector("#control-resume:not([disabled])")
    assert admin.experiment(exp["id"])["lifecycle"] == "paused"
    page.wait_for_function(
        "document.querySelector('#timeline').innerText.includes('ui-writer')")
    assert f"by key ui-writer ({writer['id']})" in page.locator("#timeline").inner_text()
    page.close()
