/* rankduel operator page: plain JS, inline SVG, no library, no CDN.
 * A key is asked once, kept in sessionStorage and sent as a Bearer header. GET /keys/me
 * says whose it is: a key without write (a read key) sees everything with the controls
 * disabled (docs/operations/security.md).
 * A self-contained copy (rankduel report --html) sets window.RANKDUEL_REPORT instead. */
"use strict";
(function () {
  const KEY = "rankduel.token";
  const REFRESH_MS = 5000;
  let timer = null;
  let me = null;  // GET /keys/me: who and the scopes of the key in use
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...kids) {
    const ns = ["svg", "rect", "line", "polyline", "text", "g", "title"].includes(tag)
      ? "http://www.w3.org/2000/svg" : null;
    const e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== null && v !== undefined) e.setAttribute(k, v);
    }
    for (const kid of kids) {
      if (kid === null || kid === undefined) continue;
      e.appendChild(typeof kid === "string" || typeof kid === "number"
        ? document.createTextNode(String(kid)) : kid);
    }
    return e;
  }

  async function api(path, method) {
    const token = sessionStorage.getItem(KEY);
    const r = await fetch(path, { method: method || "GET",
                                  headers: { Authorization: "Bearer " + token } });
    if (r.status === 401) {
      sessionStorage.removeItem(KEY);
      me = null;
      showLogin("The key was refused; enter it again.");
      throw new Error("unauthorized");
    }
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  }

  function show(id) {
    for (const s of ["login", "list", "experiment", "placement"]) $(s).hidden = s !== id;
  }

  const pct = (x) => `${(100 * x).toFixed(2)} %`;
  // epoch seconds as "2026-11-27 10:42:05 UTC"
  const when = (ts) => new Date(ts * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";

  function showLogin(msg) {
    show("login");
    $("login-error").textContent = msg || "";
  }

  // whether the key may change an experiment on this placement (null: none)
  function canWrite(placement) {
    const s = (me && me.scopes) || [];
    return s.includes("admin") || s.includes("write") ||
      (placement ? s.includes("write:placement:" + placement) : false);
  }

  function whoText() {
    if (!me) return "";
    const w = me.who.key ? `key ${me.who.name} (${me.who.key})` : `${me.who.bootstrap} token`;
    return `${w} · ${me.scopes.join(", ")}`;
  }

  // pause, resume, stop: disabled (with the reason) for a key that may not change it
  function controls(id, rep) {
    const placement = rep.rollout ? rep.rollout.placement : null;
    const allowed = canWrite(placement);
    const why = allowed ? null : "this key may not change experiments: it needs write" +
      (placement ? ` or write:placement:${placement}` : "");
    const box = el("p", { id: "controls" });
    const can = { pause: rep.lifecycle === "running", resume: rep.lifecycle === "paused",
                  stop: rep.lifecycle !== "stopped" };
    for (const action of ["pause", "resume", "stop"]) {
      const b = el("button", { type: "button", id: "control-" + action, title: why,
                               disabled: allowed && can[action] ? null : "disabled" }, action);
      b.addEventListener("click", async () => {
        try {
          await api(`/experiments/${encodeURIComponent(id)}/${action}`, "POST");
          route();
        } catch (err) {
          if (err.message !== "unauthorized") $("error").textContent = String(err.message);
        }
      });
      box.appendChild(b);
      box.appendChild(document.createTextNode(" "));
    }
    if (why) box.appendChild(el("span", { class: "muted", id: "controls-why" }, why));
    return box;
  }

  async function route() {
    clearTimeout(timer);
    $("error").textContent = "";
    if (!sessionStorage.getItem(KEY)) return showLogin();
    if (!me) {
      try {
        me = await api("/keys/me");
      } catch (err) {
        if (err.message === "unauthorized") return;
        $("error").textContent = String(err.message);
        return;
      }
      $("who").textContent = whoText();
    }
    const m = location.hash.match(/^#exp=([A-Za-z0-9_-]+)$/);
    const p = location.hash.match(/^#placement=([A-Za-z0-9][A-Za-z0-9_.-]{0,63})$/);
    try {
      if (m) await showExperiment(m[1]);
      else if (p) await showPlacement(p[1]);
      else await showList();
    } catch (err) {
      if (err.message === "unauthorized") return;
      $("error").textContent = String(err.message);
      // signed in, a page that cannot be shown (an unknown name): the error alone, the
      // header's link home; a failed refresh keeps the page it had
      if (!$("login").hidden) show(null);
    }
  }

  async function showList() {
    const data = await api("/experiments");
    const body = $("experiments");
    body.replaceChildren();
    for (const e of data.experiments) {
      body.appendChild(el("tr", {},
        el("td", {}, el("a", { href: "#exp=" + e.id }, e.name)),
        el("td", {}, e.algorithm), el("td", {}, e.rankers),
        el("td", {}, e.champion || "–"), el("td", {}, e.lifecycle),
        el("td", {}, e.comparisons.toLocaleString("en"))));
    }
    await showPlacements(new Map(data.experiments.map((e) => [e.id, e.name])));
    await showAgreements();
    show("list");
    timer = setTimeout(route, REFRESH_MS);
  }

  // placements: the control's share and each experiment's share now, status, guardrail;
  // a placement's name opens its own page (showPlacement)
  async function showPlacements(names) {
    const data = await api("/placements");
    const body = $("placements");
    body.replaceChildren();
    $("placements-section").hidden = data.placements.length === 0;
    for (const p of data.placements) {
      const exps = el("ul", { class: "plain" });
      for (const e of p.experiments) {
        exps.appendChild(el("li", {}, el("a", { href: "#exp=" + e.experiment },
          names.get(e.experiment) || e.experiment),
          ` ${pct(e.share)} · ${e.status}`,
          e.guardrail ? el("span", { class: "error" },
            ` · paused by guardrail ${e.guardrail.rule}: ${e.guardrail.reason}`) : null));
      }
      body.appendChild(el("tr", {}, el("td", {}, el("a", { href: "#placement=" + p.name }, p.name)),
        el("td", {}, p.control.name), el("td", {}, pct(p.control_share)), el("td", {}, exps)));
    }
  }

  // a speed-up as a reader says it: 34×, 2.5× (service/reports/speedup.py, times)
  function times(x) {
    return x >= 10 ? `${Math.round(x).toLocaleString("en")}×` : `${x.toFixed(1)}×`;
  }

  // confirmed verdicts (GET /agreements): each pair, and the running agreement rate
  async function showAgreements() {
    const data = await api("/agreements");
    const body = $("agreements");
    body.replaceChildren();
    $("agreements-section").hidden = data.pairs.length === 0;
    const r = data.rate;
    $("agreement-rate").textContent = r.rate === null
      ? `${data.pairs.length} confirmed, no A/B test decided yet.`
      : `${r.agree} of ${r.pairs} decided pairs agree (${pct(r.rate)}, 95 % interval ` +
        `${pct(r.interval[0])} to ${pct(r.interval[1])}).`;
    // what interleaving saved on this team's own traffic: the median speed-up
    const s = data.speedup;
    $("speedup-median").textContent = s.median === null
      ? "No speed-up measured yet: it needs an A/B test that decided as interleaving did."
      : `Interleaving decided with ${times(s.median)} fewer searches than its A/B ` +
        `confirmation (median over ${s.pairs} pair${s.pairs === 1 ? "" : "s"}).`;
    for (const p of data.pairs) {
      const lift = p.lift === null ? "–" : `${pct(p.lift)} [${p.lift_interval.map(
        (x) => (x === null ? "?" : pct(x))).join(", ")}]`;
      body.appendChild(el("tr", {},
        el("td", {}, el("a", { href: "#exp=" + p.interleaving }, p.interleaving)),
        el("td", {}, el("a", { href: "#exp=" + p.ab }, `${p.winner} vs ${p.control}`)),
        el("td", {}, p.preference === null ? "–" : pct(p.preference)),
        el("td", {}, p.decided ? lift : "not decided"),
        el("td", {}, p.agree === null ? "–" : (p.agree ? "yes" : "no")),
        el("td", { title: p.speedup_statement || "" },
          p.speedup === null ? "–" : times(p.speedup))));
    }
  }

  // an A/B test's report: its arms, each treatment against the control, its split
  function renderAB(rep) {
    const root = $("experiment");
    root.replaceChildren();
    const users = rep.arms.reduce((n, a) => n + a.users, 0);
    root.appendChild(el("h1", {}, `${rep.name} `, el("span", { class: "muted" },
      `A/B · ${rep.lifecycle} · ${users.toLocaleString("en")} users`)));
    root.appendChild(el("p", { id: "verdict", class: "verdict " +
      (!rep.trusted ? "error" : rep.decided ? "certified" : "undecided") }, rep.verdict));
    if (rep.rollout) {
      root.appendChild(el("p", { id: "rollout" }, "Placement ",
        el("a", { href: "#placement=" + rep.rollout.placement },
          el("strong", {}, rep.rollout.placement)),
        ` · share now ${pct(rep.rollout.share)} · traffic ${rep.rollout.status}`));
    }
    if (rep.confirms) {
      root.appendChild(el("p", {}, "Confirms the interleaving verdict of ",
        el("a", { href: "#exp=" + rep.confirms }, rep.confirms), "."));
    }
    const srm = rep.srm;
    root.appendChild(el("p", { id: "srm", class: srm && srm.flagged ? "error" : "muted" },
      "Split: ", srm ? srm.message : "no users yet",
      rep.split && rep.split.flagged ? ` · placement: ${rep.split.message}` : ""));
    const arms = el("tbody");
    for (const a of rep.arms) {
      arms.appendChild(el("tr", {}, el("td", {}, a.name), el("td", {}, a.role),
        el("td", {}, pct(a.assigned_share)),
        el("td", {}, a.observed_share === null ? "–" : pct(a.observed_share)),
        el("td", {}, a.users.toLocaleString("en")), el("td", {}, a.searches.toLocaleString("en")),
        el("td", {}, a.clicked_searches.toLocaleString("en")),
        el("td", {}, a.ctr === null ? "–" : a.ctr.toFixed(4))));
    }
    root.appendChild(el("h2", {}, "Arms"));
    root.appendChild(el("table", { id: "ab-arms" }, el("thead", {}, el("tr", {},
      el("th", {}, "arm"), el("th", {}, "role"), el("th", {}, "assigned"),
      el("th", {}, "observed"), el("th", {}, "users"), el("th", {}, "searches"),
      el("th", {}, "clicked"), el("th", {}, "CTR (per user)"))), arms));
    const rows = el("tbody");
    for (const [metric, byTreatment] of Object.entries(rep.metrics)) {
      for (const [t, c] of Object.entries(byTreatment)) {
        rows.appendChild(el("tr", {}, el("td", {}, metric), el("td", {}, t),
          el("td", {}, c.sentence), el("td", {}, c.decided ? "decided"
            : (c.users_needed ? `≈ ${c.users_needed.toLocaleString("en")} more users` : "–"))));
      }
    }
    root.appendChild(el("h2", {}, "Each treatment against the control"));
    root.appendChild(el("table", { id: "ab-comparisons" }, el("thead", {}, el("tr", {},
      el("th", {}, "metric"), el("th", {}, "treatment"), el("th", {}, "difference, lift, interval"),
      el("th", {}, "decision"))), rows));
    root.appendChild(el("p", { class: "muted" }, rep.method));
    root.appendChild(el("p", { class: "muted" }, "Generated " +
      new Date(rep.generated_at * 1000).toISOString()));
  }

  // a placement's page (#placement=NAME): GET /placements/NAME, the experiments' names
  // and lifecycles (GET /experiments) and the guardrail thresholds each one overrides
  // (GET /experiments/ID, its rollout), nothing else
  async function showPlacement(name) {
    const [pl, list] = await Promise.all([
      api("/placements/" + encodeURIComponent(name)), api("/experiments")]);
    const byId = new Map(list.experiments.map((e) => [e.id, e]));
    const states = await Promise.all(pl.experiments.map((e) =>
      api("/experiments/" + encodeURIComponent(e.experiment)).catch((err) => {
        if (err.message === "unauthorized") throw err;
        return null;  // deleted meanwhile: the row still shows what the placement says
      })));
    renderPlacement(pl, byId, states, Date.now() / 1000);
    show("placement");
    timer = setTimeout(route, REFRESH_MS);
  }

  // a ramp's "after" in seconds (rollout/ramps.py, parse_duration): 30s, 30m, 2h, 1d or 0
  function seconds(after) {
    const m = String(after).match(/^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$/);
    return m ? Number(m[1]) * ({ s: 1, m: 60, h: 3600, d: 86400 }[m[2]] || 1) : NaN;
  }

  function fmtIn(s) {
    if (s < 90) return `${Math.max(0, Math.round(s))} s`;
    if (s < 5400) return `${Math.round(s / 60)} min`;
    if (s < 172800) return `${(s / 3600).toFixed(1)} h`;
    return `${(s / 86400).toFixed(1)} d`;
  }

  // traffic: a share, or a ramp's steps with the one in force marked
  function trafficCell(e, now) {
    if (!Array.isArray(e.traffic)) return el("td", {}, pct(e.traffic));
    const age = now - e.since;
    let current = -1;
    e.traffic.forEach((step, i) => { if (seconds(step.after) <= age) current = i; });
    const ol = el("ol", { class: "ramp" });
    e.traffic.forEach((step, i) => ol.appendChild(el("li",
      { class: i === current && e.status === "running" ? "now" : null },
      `after ${step.after}: ${pct(step.share)}`)));
    return el("td", {}, ol);
  }

  // the ramp's next step: its share, when, and in how long (running experiments only)
  function nextStep(e, now) {
    if (e.status !== "running") return `– (${e.status})`;
    if (!Array.isArray(e.traffic)) return "– (fixed share)";
    const age = now - e.since;
    const next = e.traffic.find((step) => seconds(step.after) > age);
    if (!next) return "– (last step reached)";
    const at = e.since + seconds(next.after);
    return `${pct(next.share)} at ${when(at)} (in ${fmtIn(at - now)})`;
  }

  // tripped: rule, ranker, reason, when; otherwise "ok" and the thresholds it overrides
  function guardrailCell(e, state) {
    const g = e.guardrail;
    if (g) {
      return el("td", { class: "guardrail tripped" },
        el("strong", {}, `tripped: ${g.rule}`), g.ranker ? ` on ranker ${g.ranker}` : "",
        ` at ${when(g.ts)}`, el("div", { class: "reason" }, g.reason));
    }
    const own = (state && state.rollout && state.rollout.guardrails) || {};
    if (own.enabled === false) return el("td", { class: "guardrail" }, "off (disabled)");
    const set = Object.entries(own).filter(([k]) => k !== "enabled");
    return el("td", { class: "guardrail" }, el("strong", {}, "ok"), set.length
      ? ` · ${set.map(([k, v]) => `${k} ${v}`).join(", ")}; the others at their defaults`
      : " · default thresholds");
  }

  function renderPlacement(pl, byId, states, now) {
    const root = $("placement");
    root.replaceChildren();
    root.appendChild(el("h1", {}, "Placement ", el("span", { id: "placement-name" }, pl.name),
      " ", el("span", { class: "muted" }, `salt ${pl.salt} · version ${pl.version}`)));
    root.appendChild(el("p", { id: "placement-control" }, "Control ranker ",
      el("strong", {}, pl.control.name), ` answers ${pct(pl.control_share)} of the searches ` +
      "(its list unchanged, no impression)."));
    if (pl.next_change !== null && pl.next_change !== undefined) {
      root.appendChild(el("p", { class: "muted" },
        `A ramp's next step: ${when(pl.next_change)} (in ${fmtIn(pl.next_change - now)}).`));
    }
    const tbody = el("tbody");
    pl.experiments.forEach((e, i) => {
      const head = byId.get(e.experiment);
      tbody.appendChild(el("tr", { "data-experiment": e.experiment },
        el("td", {}, el("a", { href: "#exp=" + e.experiment }, head ? head.name : e.experiment),
          el("div", { class: "muted" }, e.experiment)),
        el("td", {}, el("span", { class: "badge " + e.status }, e.status),
          head && head.lifecycle !== e.status ? ` (${head.lifecycle})` : ""),
        el("td", { class: "share" }, pct(e.share)),
        trafficCell(e, now),
        el("td", {}, nextStep(e, now)),
        guardrailCell(e, states[i]),
        el("td", {}, el("a", { href: "#exp=" + e.experiment }, "report"))));
    });
    tbody.appendChild(el("tr", { class: "control" }, el("td", {}, "control: ", pl.control.name),
      el("td", {}, ""), el("td", { class: "share" }, pct(pl.control_share)),
      el("td", { colspan: 4 }, "every search no experiment takes")));
    root.appendChild(el("h2", {}, "Experiments"));
    root.appendChild(el("table", { id: "placement-experiments" }, el("thead", {}, el("tr", {},
      el("th", {}, "experiment"), el("th", {}, "status"), el("th", {}, "share now"),
      el("th", {}, "traffic"), el("th", {}, "next step"), el("th", {}, "guardrail"),
      el("th", {}, ""))), tbody));
    if (!pl.experiments.length) {
      root.appendChild(el("p", { class: "muted" }, "No experiment on this placement yet: " +
        "create one with \"placement\": \"" + pl.name + "\"."));
    }
    root.appendChild(el("p", { class: "muted" }, "Generated " + when(now)));
  }

  async function showExperiment(id) {
    const rep = await api("/experiments/" + encodeURIComponent(id) + "/report");
    render(rep);
    const heading = $("experiment").querySelector("h1");
    if (heading) heading.after(controls(id, rep));
    show("experiment");
    if (rep.lifecycle !== "stopped") timer = setTimeout(route, REFRESH_MS);
  }

  function color(p) {
    // red (row loses) -> white (½) -> green (row wins), as #rrggbb (bgcolor needs hex)
    const t = Math.max(-1, Math.min(1, (p - 0.5) * 2));
    const mix = (a, b) => Math.round(a + (b - a) * Math.abs(t));
    const rgb = t >= 0 ? [mix(255, 46), mix(255, 160), mix(255, 80)]
      : [mix(255, 215), mix(255, 48), mix(255, 48)];
    return "#" + rgb.map((v) => v.toString(16).padStart(2, "0")).join("");
  }

  function heatmap(rep) {
    const K = rep.arms.length;
    const head = el("tr", {}, el("th", {}, "row beats column"));
    for (const a of rep.arms) head.appendChild(el("th", {}, a));
    const table = el("table", {}, el("thead", {}, head));
    const body = el("tbody");
    for (let i = 0; i < K; i++) {
      const tr = el("tr", {}, el("th", {}, rep.arms[i]));
      for (let j = 0; j < K; j++) {
        const n = rep.comparisons_by_pair[i][j];
        const p = rep.preferences[i][j];
        const td = el("td", { class: "cell", bgcolor: i === j ? "#eeeeee" : color(p),
          title: i === j ? rep.arms[i] : `${rep.arms[i]} vs ${rep.arms[j]}: p = ${p} over ${n}` },
          i === j || n === 0 ? "" : Math.round(p * 100));
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    table.appendChild(body);
    return table;
  }

  function lineChart(points, key, label) {
    const w = 420, h = 160, pad = 36;
    const svg = el("svg", { width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: "img",
      "aria-label": label });
    svg.appendChild(el("text", { x: pad, y: 12 }, label));
    if (!points || points.length < 1) {
      svg.appendChild(el("text", { x: pad, y: h / 2 }, "no samples yet"));
      return svg;
    }
    const t0 = points[0].ts, t1 = Math.max(points[points.length - 1].ts, t0 + 1);
    const ys = points.map((p) => p[key]);
    const y0 = Math.min(0, ...ys), y1 = Math.max(...ys, y0 + 1e-9);
    const X = (t) => pad + (w - pad - 8) * (t - t0) / (t1 - t0);
    const Y = (v) => h - 20 - (h - 40) * (v - y0) / (y1 - y0);
    svg.appendChild(el("line", { x1: pad, y1: h - 20, x2: w - 8, y2: h - 20, stroke: "#999" }));
    svg.appendChild(el("line", { x1: pad, y1: 18, x2: pad, y2: h - 20, stroke: "#999" }));
    svg.appendChild(el("text", { x: 2, y: 24 }, Number(y1.toPrecision(3)).toLocaleString("en")));
    svg.appendChild(el("text", { x: pad, y: h - 4 }, `${Math.round(t1 - t0)} s`));
    svg.appendChild(el("polyline", { fill: "none", stroke: "#1f5fa8", "stroke-width": 2,
      points: points.map((p) => `${X(p.ts).toFixed(1)},${Y(p[key]).toFixed(1)}`).join(" ") }));
    return svg;
  }

  function traffic(rep) {
    const w = 420, row = 18, pad = 90;
    const svg = el("svg", { width: w, height: row * rep.arms.length + 20, role: "img",
      "aria-label": "traffic share per ranker" });
    rep.arms.forEach((a, i) => {
      const share = rep.traffic_share[i] || 0;
      svg.appendChild(el("text", { x: 0, y: 14 + i * row }, a));
      svg.appendChild(el("rect", { x: pad, y: 3 + i * row, height: row - 5,
        width: Math.max(1, (w - pad - 50) * share), fill: "#1f5fa8" }));
      svg.appendChild(el("text", { x: pad + (w - pad - 50) * share + 4, y: 14 + i * row },
        (share * 100).toFixed(1) + "%"));
    });
    return svg;
  }

  function fmtWhen(item) {
    const n = item.comparison === null ? "?" : (item.approx ? "≈" : "") +
      item.comparison.toLocaleString("en");
    const ts = item.ts ? new Date(item.ts * 1000).toISOString().replace("T", " ").slice(0, 19)
      : "";
    return `comparison ${n}${ts ? " · " + ts : ""}`;
  }

  function describe(item) {
    switch (item.event) {
      case "eliminated": return `${item.ranker} eliminated by ${item.by}`;
      case "stage_changed": return `stage ${item.from ? item.from.stage : "?"} → ${item.to ? item.to.stage : "?"}`;
      case "ranker_added": return `${item.ranker} added`;
      case "ranker_retired": return `${item.ranker} retired`;
      case "ranker_quarantined": return `${item.ranker} quarantined`;
      case "ranker_recovered": return `${item.ranker} recovered`;
      case "ranker_degraded": return `${item.ranker} degraded (${item.reason})`;
      case "ranker_restored": return `${item.ranker} restored`;
      case "non_condorcet_flagged": return "flagged: no Condorcet winner";
      default: return item.event;
    }
  }

  // the report per segment: one small table per dimension, a row per value and ranker,
  // the flagged rows (the heterogeneity flag) in bold and listed under the heading
  function segments(root, seg) {
    const champion = seg.champion || "the champion";
    const box = el("div", { id: "segments" }, el("h2", {}, "Segments"));
    box.appendChild(el("p", { class: "muted" }, `Each ranker against ${champion} ` +
      `within each value; bounds anytime-valid, Bonferroni over ${seg.tests} tests ` +
      `(δ = ${seg.delta}); a flagged row's users prefer that ranker.`));
    const flags = seg.heterogeneous || [];
    box.appendChild(el("p", { id: "segment-flags", class: flags.length ? "flagged" : "muted" },
      flags.length ? "Flagged: " + flags.map((f) => `${f.value} (${f.dimension}) prefers ` +
        `${f.ranker} to ${champion}, p ${f.p} (lower bound ${f.lower})`).join("; ") + "."
        : `No segment prefers another ranker to ${champion}.`));
    for (const [dim, rows] of Object.entries(seg.dimensions)) {
      const tbody = el("tbody");
      for (const row of rows) {
        row.rankers.forEach((r, i) => {
          tbody.appendChild(el("tr", { class: r.preferred ? "flagged" : null,
            "data-value": row.value },
            i === 0 ? el("td", { rowspan: row.rankers.length }, row.value) : null,
            el("td", {}, r.name),
            el("td", {}, `${r.wins}–${r.losses}–${r.ties}`),
            el("td", {}, `${r.p} [${r.lower}, ${r.upper}]`),
            el("td", {}, r.preferred ? `preferred to ${champion}` : "")));
        });
      }
      box.appendChild(el("h3", {}, dim));
      box.appendChild(el("table", { class: "segment", "data-dimension": dim }, el("thead", {},
        el("tr", {}, el("th", {}, dim), el("th", {}, `ranker (vs ${champion})`),
          el("th", {}, "wins–losses–ties"), el("th", {}, "p [bounds]"),
          el("th", {}, "flag"))), tbody));
    }
    root.appendChild(box);
  }

  // the verdict per declared metric (docs/conversions.md): a row per metric, the primary
  // marked, and the sentence saying the metrics disagree; nothing without metrics
  function metrics(root, rep) {
    const list = rep.metrics || [];
    if (!list.length) return;
    const box = el("div", { id: "metrics" }, el("h2", {}, "Metrics"));
    box.appendChild(el("p", { class: "muted" }, "Each metric's verdict at δ / " +
      `${list.length}; the policy learns from the primary.`));
    const tbody = el("tbody");
    for (const m of list) {
      const what = m.name === "click" ? "clicks"
        : `${m.action}, ${m.value}` + (m.window_s ? `, within ${m.window_s} s` : "");
      tbody.appendChild(el("tr", { "data-metric": m.name,
        class: m.primary ? "primary" : null },
        el("td", {}, el("strong", {}, m.name), m.primary ? " (primary)" : ""),
        el("td", {}, what),
        el("td", {}, m.comparisons.toLocaleString("en")),
        el("td", {}, m.champion || "–", m.certified ? " (certified)" : ""),
        el("td", { class: "metric-verdict" }, m.verdict)));
    }
    box.appendChild(el("table", { id: "metrics-table" }, el("thead", {}, el("tr", {},
      el("th", {}, "metric"), el("th", {}, "counts"), el("th", {}, "comparisons"),
      el("th", {}, "champion"), el("th", {}, "verdict"))), tbody));
    if (rep.metrics_disagree) {
      box.appendChild(el("p", { id: "metrics-disagree", class: "flagged" },
        rep.metrics_disagree));
    }
    root.appendChild(box);
  }

  function render(rep) {
    if (rep.design === "ab") return renderAB(rep);
    const root = $("experiment");
    root.replaceChildren();
    root.appendChild(el("h1", {}, `${rep.name} `, el("span", { class: "muted" },
      `${rep.algorithm} · ${rep.lifecycle} · ${rep.comparisons.toLocaleString("en")} comparisons`)));
    root.appendChild(el("p", { id: "verdict", class: "verdict " +
      (rep.certified ? "certified" : "undecided") }, rep.verdict));
    if (rep.split && rep.split.flagged) {  // a sample ratio mismatch: said beside the verdict
      root.appendChild(el("p", { id: "split", class: "error" }, "Split: ", rep.split.message));
    }
    root.appendChild(el("p", {}, "Champion: ", el("strong", { id: "champion" }, rep.champion || "–"),
      rep.certified ? " (certified)" : " (not certified)"));
    const ro = rep.rollout;
    if (ro) {  // its placement, share now and guardrail state (docs/operations/rollout.md)
      root.appendChild(el("p", { id: "rollout" }, "Placement ",
        el("a", { href: "#placement=" + ro.placement }, el("strong", {}, ro.placement)),
        ` · share now ${(100 * ro.share).toFixed(2)} % · traffic ${ro.status}` +
        (Object.keys(ro.guardrails || {}).length ? ` · guardrails ${JSON.stringify(ro.guardrails)}` : "")));
      root.appendChild(el("p", { id: "guardrail", class: ro.guardrail ? "error" : "muted" },
        ro.guardrail ? `Paused by the guardrail ${ro.guardrail.rule}: ${ro.guardrail.reason}`
          : "Guardrails: none tripped."));
    }
    const estimate = rep.estimated_comparisons_to_decide;
    root.appendChild(el("p", { class: "muted", id: "estimate" },
      (estimate === null ? "No estimate. " : `Estimate: ${estimate.toLocaleString("en")} more comparisons` +
        (rep.estimated_seconds_to_decide !== null ? ` (≈ ${Math.round(rep.estimated_seconds_to_decide)} s)` : "") + ". ") +
      rep.estimate_basis));
    const tbody = el("tbody");
    const degraded = rep.degraded || [];
    if (degraded.length) {  // apart: out of the comparisons, neither winners nor losers
      root.appendChild(el("h2", {}, "Degraded rankers"));
      root.appendChild(el("ul", { id: "degraded" }, ...degraded.map((d) => el("li", {},
        el("strong", {}, d.name), ` — ${d.reason}: out of the comparisons, neither winner ` +
        "nor loser; probed again until it answers results."))));
    }
    for (const r of rep.rankers) {
      if (r.degraded) continue;  // listed apart above
      const vs = r.vs_champion;
      tbody.appendChild(el("tr", {}, el("td", {}, r.name),
        el("td", {}, el("span", { class: "badge " + (r.name === rep.champion ? "champion" : r.status) },
          r.name === rep.champion ? "champion" : r.status)),
        el("td", {}, r.impressions.toLocaleString("en")),
        el("td", {}, vs ? `${vs.wins}–${vs.losses}–${vs.ties}` : "–"),
        el("td", {}, vs ? `${vs.p} [${vs.lower}, ${vs.upper}]` : "–"),
        el("td", {}, r.eliminated_by || ""),
        el("td", {}, r.eliminated_at_comparison === null ? "" : r.eliminated_at_comparison.toLocaleString("en"))));
    }
    root.appendChild(el("h2", {}, "Rankers"));
    root.appendChild(el("table", { id: "rankers" }, el("thead", {}, el("tr", {},
      el("th", {}, "ranker"), el("th", {}, "status"), el("th", {}, "impressions"),
      el("th", {}, "vs champion (wins–losses–ties)"), el("th", {}, "p [95% interval]"),
      el("th", {}, "eliminated by"), el("th", {}, "at comparison"))), tbody));
    metrics(root, rep);
    if (rep.segments) segments(root, rep.segments);
    const grid = el("div", { class: "grid" });
    grid.appendChild(el("div", {}, el("h2", {}, "Pairwise preferences"),
      el("div", { id: "heatmap" }, heatmap(rep)),
      el("p", { class: "muted" }, "Cell: % of comparisons the row ranker won against the column ranker.")));
    const tl = el("ul", { class: "timeline", id: "timeline" });
    for (const item of rep.timeline) {
      tl.appendChild(el("li", {}, el("strong", {}, describe(item)), " ",
        item.who ? el("span", { class: "who" }, `by ${item.actor} `) : null,
        el("span", { class: "muted" }, fmtWhen(item))));
    }
    grid.appendChild(el("div", {}, el("h2", {}, "Timeline"), tl));
    root.appendChild(grid);
    const charts = el("div", { class: "grid" });
    charts.appendChild(el("div", { id: "comparisons-chart" }, lineChart(rep.comparisons_over_time, "n", "cumulative comparisons")));
    charts.appendChild(el("div", { id: "regret-chart" }, lineChart(rep.history, "regret", "estimated regret")));
    charts.appendChild(el("div", { id: "traffic" }, el("h2", {}, "Traffic share"), traffic(rep)));
    root.appendChild(charts);
    root.appendChild(el("p", { class: "muted" }, "Generated " +
      new Date(rep.generated_at * 1000).toISOString()));
  }

  function init() {
    if (window.RANKDUEL_REPORT) {  // a self-contained copy: no API, no token
      document.querySelector("header").hidden = true;
      render(window.RANKDUEL_REPORT);
      show("experiment");
      return;
    }
    $("login").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const token = new FormData(ev.target).get("token").trim();
      if (!token) return;
      sessionStorage.setItem(KEY, token);
      me = null;
      ev.target.reset();
      route();
    });
    $("home").addEventListener("click", (ev) => { ev.preventDefault(); location.hash = ""; route(); });
    window.addEventListener("hashchange", route);
    route();
  }

  init();
})();
