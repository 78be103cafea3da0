/* localjudge report: filter and sort the tables. No network, no dependencies.
   Filters live in the URL hash (#judge=NAME&verdict=no&status=fail&q=text) so a view can be shared
   or opened directly. */
(function () {
  "use strict";
  var table = document.getElementById("row-table");
  var ctl = {
    judge: document.getElementById("f-judge"),
    verdict: document.getElementById("f-verdict"),
    status: document.getElementById("f-status"),
    q: document.getElementById("f-q")
  };
  var counter = document.getElementById("row-count");
  var rows = table ? Array.prototype.slice.call(table.tBodies[0].rows) : [];
  var haystack = null;

  function text(row) { return (row.textContent || "").toLowerCase(); }

  function readHash() {
    var h = (window.location.hash || "").replace(/^#/, "");
    var out = {};
    if (h.indexOf("=") < 0) { return out; }
    h.split("&").forEach(function (part) {
      var i = part.indexOf("=");
      if (i > 0) {
        try { out[decodeURIComponent(part.slice(0, i))] = decodeURIComponent(part.slice(i + 1).replace(/\+/g, " ")); }
        catch (e) { /* a malformed escape: ignore that part */ }
      }
    });
    return out;
  }

  function writeHash() {
    var parts = [];
    Object.keys(ctl).forEach(function (k) {
      if (ctl[k] && ctl[k].value) { parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(ctl[k].value)); }
    });
    var h = parts.length ? "#" + parts.join("&") : window.location.pathname + window.location.search;
    try { window.history.replaceState(null, "", h); } catch (e) { /* some file:// contexts forbid it */ }
  }

  function setSelect(sel, value) {
    if (!sel || value === undefined) { return; }
    var ok = Array.prototype.some.call(sel.options, function (o) { return o.value === value; });
    if (!ok) {
      var opt = document.createElement("option");
      opt.value = value; opt.textContent = value + " (no rows)";
      sel.appendChild(opt);
    }
    sel.value = value;
  }

  function apply() {
    var j = ctl.judge ? ctl.judge.value : "", v = ctl.verdict ? ctl.verdict.value : "";
    var s = ctl.status ? ctl.status.value : "", q = ctl.q ? ctl.q.value.trim().toLowerCase() : "";
    if (q && haystack === null) { haystack = rows.map(text); }
    var shown = 0;
    rows.forEach(function (row, i) {
      var ok = (!j || row.getAttribute("data-judge") === j) && (!v || row.getAttribute("data-verdict") === v) &&
               (!s || row.getAttribute("data-status") === s) && (!q || haystack[i].indexOf(q) >= 0);
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    if (counter) { counter.textContent = shown + " of " + rows.length + " rows"; }
    document.body.setAttribute("data-filtered", (j || v || s || q) ? "yes" : "no");
    return shown;
  }

  function fromHash() {
    var p = readHash();
    if (!Object.keys(p).length) { return; }
    setSelect(ctl.judge, p.judge || "");
    setSelect(ctl.verdict, p.verdict || "");
    setSelect(ctl.status, p.status || "");
    if (ctl.q) { ctl.q.value = p.q || ""; }
  }

  function sortBy(th) {
    var tbl = th.closest("table"), body = tbl.tBodies[0];
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.getAttribute("data-sort") === "num";
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    var list = Array.prototype.slice.call(body.rows).filter(function (r) { return r.cells.length > col; });
    function key(r) {
      var c = r.cells[col], raw = c.hasAttribute("data-v") ? c.getAttribute("data-v") : c.textContent.trim();
      return numeric ? parseFloat(raw) : raw.toLowerCase();
    }
    list.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (numeric) { x = isNaN(x) ? -Infinity : x; y = isNaN(y) ? -Infinity : y; }
      return x < y ? -dir : x > y ? dir : 0;
    });
    list.forEach(function (r) { body.appendChild(r); });
    if (tbl === table) { rows = Array.prototype.slice.call(body.rows); haystack = null; apply(); }
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable thead th"), function (th) {
    th.classList.add("sort");
    th.tabIndex = 0;
    th.addEventListener("click", function () { sortBy(th); });
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(th); } });
  });
  Object.keys(ctl).forEach(function (k) {
    if (!ctl[k]) { return; }
    ctl[k].addEventListener(k === "q" ? "input" : "change", function () { apply(); writeHash(); });
  });
  window.addEventListener("hashchange", function () { fromHash(); apply(); });
  fromHash();
  apply();
  window.localjudgeReport = { apply: apply, sortBy: sortBy };
  document.body.setAttribute("data-ready", "yes");
}());
