"""rankduel.js sends a click, an end or an outcome again when rankduel answers 503 (its
state store down, issue 49), with backoff, within the token's life, and never after a
rejection (a report that may have been delivered). Run by node against a stub
``fetch`` with a fast clock (no browser needed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.starts_process

HARNESS = r"""
const fs = require("fs");
let now = 1e12; const timers = [];
global.Date = class extends Date { static now() { return now; } };
global.setTimeout = (fn, ms) => { timers.push([now + ms, fn]); };
const calls = []; const answers = JSON.parse(process.argv[3]);
global.fetch = (url, opts) => {
  calls.push({url, at: now, body: JSON.parse(opts.body)});
  const a = answers.length ? answers.shift() : 200;
  return a === "reject" ? Promise.reject(new Error("network")) : Promise.resolve({status: a});
};
const listeners = {};
global.window = global; global.addEventListener = (t, f) => { listeners[t] = f; };
global.document = {addEventListener() {}, visibilityState: "visible"};
eval(fs.readFileSync(process.argv[2], "utf8"));
const c = {addEventListener() {}};
const life = Number(process.argv[4]);
const token = String(Math.floor((now + life) / 1000)) + ".mac";
const rd = RankDuel.attach(c, {api: "https://rd", impression_id: "e.i", token});
rd.track("purchase", {id: "d1", value: 3});
(async () => {
  for (let n = 0; n < 50; n++) {
    await new Promise(r => setImmediate(r));
    timers.sort((a, b) => a[0] - b[0]);
    const t = timers.shift();
    if (!t) continue;
    now = t[0]; t[1]();
  }
  console.log(JSON.stringify(calls.map(x => ({at: x.at - 1e12, url: x.url}))));
})();
"""


def _run(tmp_path: Path, answers: list, life_ms: int) -> list[dict]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    harness = tmp_path / "harness.js"
    harness.write_text(HARNESS)
    out = subprocess.run([node, str(harness), str(ROOT / "service/static/rankduel.js"),
                          json.dumps(answers), str(life_ms)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_503_is_sent_again_with_backoff(tmp_path):
    calls = _run(tmp_path, [503, 503, 503, 202], 3_600_000)
    assert [c["at"] for c in calls] == [0, 1000, 3000, 7000]  # 1, 2, 4 s apart
    assert {c["url"] for c in calls} == {"https://rd/outcomes"}


def test_not_beyond_the_token_life_nor_after_a_rejection(tmp_path):
    calls = _run(tmp_path, [503] * 20, 10_000)  # the token lives 10 s
    assert [c["at"] for c in calls] == [0, 1000, 3000, 7000]  # the next, at 15 s: too late
    assert len(_run(tmp_path, ["reject"], 3_600_000)) == 1
    assert len(_run(tmp_path, [200], 3_600_000)) == 1
