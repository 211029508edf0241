/* rankduel.js: report a search page's clicks to rankduel. No build step, no dependencies.
 * Guide: docs/frontend.md (docs/pagination.md: next pages; docs/conversions.md: track).
 *
 *   <script src="https://rankduel.example/static/rankduel.js"></script>
 *   RankDuel.attach(document.getElementById("results"),
 *                   {api: "https://rankduel.example", impression_id: ID, token: TOKEN});
 *
 * Links in the container with data-rd-doc (document id) and data-rd-rank (1-based rank)
 * report their click when followed: fetch with keepalive, else sendBeacon; links to the
 * API's redirect /r are recorded by it. Coming back reports the time away as dwell_ms.
 * pagehide ends the impression once, with its clicks again (counted once); a page that
 * never fires it is closed after RANKDUEL_INACTIVITY_S.
 *
 * A control answer has no impression: attach {api, page_token}; its clicks go to POST
 * /clicks {page_token, clicks}; no end, no next page. Bodies are text/plain JSON (no
 * preflight); the page's origin must be in RANKDUEL_CORS_ORIGINS.
 *
 * Next page: attach {experiment, q, k, next, onPage}; a click on `next` or on a
 * [data-rd-next] element calls nextPage(), whose answer goes to onPage(answer, page, more)
 * (absolute ranks). Do not navigate to it: leaving the page ends the impression.
 * track(action, {id, value, event_id}) reports an outcome (a purchase) to POST /outcomes.
 */
(function (global) {
  "use strict";

  function post(url, body, until) {
    var data = JSON.stringify(body);
    try {
      if (global.fetch) { return send(url, data, until || 0, 1000); }
    } catch (e) { /* no keepalive fetch (an old browser, a full quota): beacon */ }
    return beacon(url, data);
  }

  // a 503 (store down) is sent again after 1, 2, 4... s within the token's life; a
  // rejection while the page unloads may have been delivered: not sent again
  function send(url, data, until, wait) {
    return global.fetch(url, {
      method: "POST", body: data, keepalive: true, mode: "cors", credentials: "omit",
      headers: {"Content-Type": "text/plain;charset=UTF-8"}
    }).then(function (r) {
      if (r.status !== 503 || Date.now() + wait > until) { return r; }
      return new Promise(function (ok) { setTimeout(ok, wait); })
        .then(function () { return send(url, data, until, wait * 2); });
    }).catch(function () { return null; });
  }

  function beacon(url, data) {
    if (global.navigator && global.navigator.sendBeacon) {
      global.navigator.sendBeacon(url, new Blob([data], {type: "text/plain;charset=UTF-8"}));
    }
  }

  function attach(container, options) {
    var control = !!(options && options.page_token && !options.impression_id);
    if (!container || !options || !options.api ||
        !(control || (options.impression_id && options.token))) {
      throw new Error("RankDuel.attach(container, {api, impression_id, token}) or, for " +
                      "a control answer, (container, {api, page_token})");
    }
    var api = String(options.api).replace(/\/+$/, "");
    var imp = options.impression_id, token = options.token;
    var life = parseInt(token, 10) * 1000 || 0;  // token expiry, ms
    var ended = false, away = null, clicks = {};  // rank -> {id, rank, dwell_ms}
    var page = 1, more = true, loading = null;

    function nextPage() {
      if (control) {
        return Promise.reject(new Error("a control answer has no next page of rankduel's"));
      }
      if (!options.experiment || !options.q) {
        return Promise.reject(new Error("RankDuel.attach: nextPage needs {experiment, q, k}"));
      }
      if (ended) { return Promise.reject(new Error("the impression has ended")); }
      if (loading) { return loading; }  // one fetch at a time: a double click loads once
      var k = options.k || 10;
      var url = api + "/search?experiment=" + encodeURIComponent(options.experiment) +
        "&q=" + encodeURIComponent(options.q) + "&k=" + encodeURIComponent(k) +
        "&page=" + (page + 1) + "&impression_id=" + encodeURIComponent(imp) +
        "&token=" + encodeURIComponent(token);
      loading = global.fetch(url, {mode: "cors", credentials: "omit"}).then(function (r) {
        return r.json().then(function (body) {
          if (!r.ok) {
            var err = new Error(body && body.error ? body.error : "HTTP " + r.status);
            err.status = r.status;
            throw err;
          }
          page += 1;
          more = body.results.length >= k;
          if (!more && options.next) { options.next.setAttribute("hidden", ""); }
          if (options.onPage) { options.onPage(body, page, more); }
          return body;
        });
      });
      var done = function () { loading = null; };
      loading.then(done, done);
      return loading;
    }

    function onNext(event) {
      event.preventDefault();
      nextPage().catch(function (e) {
        if (options.onError) { options.onError(e); }
      });
    }

    function click(doc, rank, dwell) {
      var c = clicks[rank] || (clicks[rank] = {id: doc, rank: rank});
      if (dwell !== undefined && !(c.dwell_ms >= dwell)) { c.dwell_ms = dwell; }
      var sent = {id: doc, rank: rank};
      if (dwell !== undefined) { sent.dwell_ms = dwell; }
      return sent;
    }

    function report(c) {
      if (ended) { return null; }
      if (control) {  // a control page: its first click counts
        return post(api + "/clicks", {page_token: options.page_token, clicks: [c]});
      }
      return post(api + "/clicks", {impression_id: imp, token: token, clicks: [c]}, life);
    }

    function onClick(event) {
      if (event.type === "auxclick" && event.button !== 1) { return; }
      var el = event.target;
      for (var n = el; n && n !== container; n = n.parentNode) {
        if (n.getAttribute && n.getAttribute("data-rd-next") !== null) {
          if (event.type === "click") { onNext(event); }
          return;
        }
      }
      while (el && el !== container && !(el.getAttribute && el.getAttribute("data-rd-doc") !== null)) {
        el = el.parentNode;
      }
      if (!el || el === container) { return; }
      var doc = el.getAttribute("data-rd-doc");
      var rank = parseInt(el.getAttribute("data-rd-rank"), 10);
      if (!doc || !(rank >= 1)) { return; }
      away = {doc: doc, rank: rank, at: Date.now()};
      var sent = click(doc, rank);
      var href = el.getAttribute("href") || "";
      if (!control && href.indexOf(api + "/r?") === 0) { return; }  // the redirect records it
      report(sent);
    }

    function end() {
      if (ended) { return; }
      ended = true;
      if (control) { return; }  // no impression to end
      var body = {token: token}, list = [];
      for (var rank in clicks) {
        if (Object.prototype.hasOwnProperty.call(clicks, rank)) { list.push(clicks[rank]); }
      }
      if (list.length) { body.clicks = list; }
      post(api + "/impressions/" + encodeURIComponent(imp) + "/end", body, life);
    }

    function onVisibility() {
      if (global.document.visibilityState === "visible" && away && !control) {
        var back = away;
        away = null;
        report(click(back.doc, back.rank, Date.now() - back.at));  // the dwell, on return
      }
    }

    container.addEventListener("click", onClick, true);
    container.addEventListener("auxclick", onClick, true);
    global.addEventListener("pagehide", end);
    global.document.addEventListener("visibilitychange", onVisibility);
    if (options.next) { options.next.addEventListener("click", onNext); }
    return {
      end: end,
      nextPage: nextPage,
      track: function (action, o) {  // counted once per event_id
        o = o || {};
        return control ? null : post(api + "/outcomes", {
          impression_id: imp, token: token, action: action, id: o.id, value: o.value,
          event_id: o.event_id || imp + "/" + action + "/" + o.id}, life);
      },
      page: function () { return page; },
      more: function () { return more; },
      detach: function () {
        if (options.next) { options.next.removeEventListener("click", onNext); }
        container.removeEventListener("click", onClick, true);
        container.removeEventListener("auxclick", onClick, true);
        global.removeEventListener("pagehide", end);
        global.document.removeEventListener("visibilitychange", onVisibility);
      }
    };
  }

  global.RankDuel = {attach: attach, version: "6"};
})(window);
