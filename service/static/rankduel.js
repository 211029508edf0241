/* rankduel.js — report a search page's clicks to rankduel. No build step, no dependencies.
 *
 *   <script src="https://rankduel.example/static/rankduel.js"></script>
 *   RankDuel.attach(document.getElementById("results"),
 *                   {api: "https://rankduel.example", impression_id: ID, token: TOKEN});
 *
 * Every link inside the container with data-rd-doc (document id) and data-rd-rank (1-based
 * rank) reports its click when followed, in the same tab or a new one (fetch with
 * keepalive, else navigator.sendBeacon); the click's dwell time is reported when the user
 * comes back to the page; the impression is ended once, on pagehide. Bodies are sent as
 * text/plain JSON, which needs no CORS preflight (the API must still list the page's
 * origin in RANKDUEL_CORS_ORIGINS). Links to the API's click redirect /r are left alone:
 * the redirect records them.
 */
(function (global) {
  "use strict";

  function post(url, body) {
    var data = JSON.stringify(body);
    try {
      if (global.fetch) {
        // a promise that rejects while the page unloads may still have been delivered:
        // no second send then (a click is reported once)
        return global.fetch(url, {
          method: "POST", body: data, keepalive: true, mode: "cors", credentials: "omit",
          headers: {"Content-Type": "text/plain;charset=UTF-8"}
        }).catch(function () { return null; });
      }
    } catch (e) { /* no keepalive fetch here (an old browser, a full quota): beacon */ }
    return beacon(url, data);
  }

  function beacon(url, data) {
    if (global.navigator && global.navigator.sendBeacon) {
      global.navigator.sendBeacon(url, new Blob([data], {type: "text/plain;charset=UTF-8"}));
    }
  }

  function attach(container, options) {
    if (!container || !options || !options.api || !options.impression_id || !options.token) {
      throw new Error("RankDuel.attach(container, {api, impression_id, token})");
    }
    var api = String(options.api).replace(/\/+$/, "");
    var imp = options.impression_id, token = options.token;
    var ended = false, away = null;

    function report(doc, rank, dwell) {
      var click = {id: doc, rank: rank};
      if (dwell !== undefined) { click.dwell_ms = dwell; }
      return post(api + "/clicks", {impression_id: imp, token: token, clicks: [click]});
    }

    function onClick(event) {
      if (event.type === "auxclick" && event.button !== 1) { return; }
      var el = event.target;
      while (el && el !== container && !(el.getAttribute && el.getAttribute("data-rd-doc") !== null)) {
        el = el.parentNode;
      }
      if (!el || el === container) { return; }
      var doc = el.getAttribute("data-rd-doc");
      var rank = parseInt(el.getAttribute("data-rd-rank"), 10);
      if (!doc || !(rank >= 1)) { return; }
      away = {doc: doc, rank: rank, at: Date.now()};
      var href = el.getAttribute("href") || "";
      if (href.indexOf(api + "/r?") === 0) { return; }  // the redirect records it
      report(doc, rank);
    }

    function end() {
      if (ended) { return; }
      ended = true;
      post(api + "/impressions/" + encodeURIComponent(imp) + "/end", {token: token});
    }

    function onVisibility() {
      if (global.document.visibilityState === "visible" && away) {
        var back = away;
        away = null;
        report(back.doc, back.rank, Date.now() - back.at);  // the dwell, on return
      }
    }

    container.addEventListener("click", onClick, true);
    container.addEventListener("auxclick", onClick, true);
    global.addEventListener("pagehide", end);
    global.document.addEventListener("visibilitychange", onVisibility);
    return {
      end: end,
      detach: function () {
        container.removeEventListener("click", onClick, true);
        container.removeEventListener("auxclick", onClick, true);
        global.removeEventListener("pagehide", end);
        global.document.removeEventListener("visibilitychange", onVisibility);
      }
    };
  }

  global.RankDuel = {attach: attach, version: "1"};
})(window);
