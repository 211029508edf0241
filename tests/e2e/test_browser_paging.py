"""The next-page link of ``rankduel.js`` in a real headless Chromium (the demo search
page's "more results", :mod:`demo.web`): page 2 comes from the same impression, its
results are ranks 11-20, and a click on one of them is recorded at its rank and credited
once, from the impression's record extended to 20 results.
"""

from __future__ import annotations

import json

from test_browser import _credited_once, _recorded, _search, browser, site  # noqa: F401

from service.store.keys import imp_key


def test_next_page_link_continues_the_impression(browser, site, rd):  # noqa: F811
    page = browser.new_page()
    found = _search(page, site.web, site.queries[1])
    imp = found["impression_id"]
    assert len(found["results"]) == 10
    page.click("#next")
    page.wait_for_function("window.lastMore !== undefined")
    more = page.evaluate("window.lastMore")
    assert more["page"] == 2 and more["answer"]["impression_id"] == imp
    assert [r["rank"] for r in more["answer"]["results"]] == list(range(11, 21))
    links = page.locator("a.result")
    assert links.count() == 20
    ids = [links.nth(i).get_attribute("data-rd-doc") for i in range(20)]
    assert len(set(ids)) == 20  # nothing of page 1 again
    stored = json.loads(rd.hget(imp_key(site.exp, imp), "shown"))
    assert stored == ids  # the impression shows ranks 1-20 now
    target = links.nth(13)  # rank 14, on page 2
    assert target.get_attribute("data-rd-rank") == "14"
    with page.expect_navigation():
        target.click()
    _recorded(rd, site.exp, imp, {13})  # the page left: pagehide ended it
    result = _credited_once(rd, site.client, site.exp, imp)
    assert json.loads(rd.hget(imp_key(site.exp, imp), "record"))["len"] == 20
    assert result.get("outcomes")  # a click on a drafted document decides the duel
    page.close()
