// localjudge view: the app's only script (served by the app, CSP script-src 'self').
// Judged text is only ever put into the page with textContent, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const PAGE = document.body.dataset.page;
const RID = document.body.dataset.rid;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function fmt(x, digits) {
  if (x === null || x === undefined) return "";
  if (typeof x === "number") return Number.isInteger(x) ? String(x) : x.toFixed(digits === undefined ? 3 : digits);
  if (typeof x === "object") return JSON.stringify(x);
  return String(x);
}

async function getJSON(url) {
  const r = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

async function postJSON(url, data) {
  const r = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": CSRF },
    body: JSON.stringify(data),
  });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function labeller() {
  const box = $("labeller");
  const name = (box && box.value.trim()) || localStorage.getItem("lj-labeller") || "";
  if (box && !box.value) box.value = name;
  return name;
}

function rememberLabeller() {
  const box = $("labeller");
  if (!box) return;
  box.value = localStorage.getItem("lj-labeller") || "";
  box.addEventListener("change", () => localStorage.setItem("lj-labeller", box.value.trim()));
}

function eta(s) {
  if (s === null || s === undefined) return "";
  if (s < 60) return `ETA ${Math.round(s)} s`;
  if (s < 3600) return `ETA ${Math.round(s / 60)} min`;
  return `ETA ${(s / 3600).toFixed(1)} h`;
}

// ------------------------------------------------------------------------------------------- runs

function initRuns() {
  setInterval(async () => {
    try {
      const runs = await getJSON("/api/runs");
      for (const r of runs) {
        const tr = document.querySelector(`tr[data-rid="${CSS.escape(r.rid)}"]`);
        if (!tr) continue;
        tr.querySelector(".cells").textContent = `${r.cells_done} / ${r.cells_total}`;
        const st = tr.querySelector(".status");
        st.textContent = r.status;
        st.className = `status st-${r.status}`;
        tr.querySelector(".labels").textContent = String(r.labels);
      }
    } catch (e) {
      /* the server went away: keep the last figures */
    }
  }, 2000);
}

// -------------------------------------------------------------------------------------------- run

// a panel's members' verdicts beside its own (a marker when they disagree); a cascade's escalation
function membersText(it) {
  const parts = [];
  if (it.members) {
    if (it.members_disagree) parts.push("≠");
    for (const m of it.members) parts.push(`${m.member}: ${m.scored ? fmt(m.value) : "—"}`);
  }
  if (it.cascade) parts.push(it.cascade.escalated ? `escalated (first said ${fmt(it.cascade.first)})` : "not escalated");
  return parts.join(" · ");
}

function membersCell(it) {
  const td = el("td", membersText(it), "members");
  if (it.members_disagree) td.classList.add("disagree");
  return td;
}

function initRun() {
  const state = { page: 1, pages: 1, lastCount: -1 };
  const params = () => {
    const p = new URLSearchParams();
    for (const [k, id] of [["judge", "f-judge"], ["status", "f-status"], ["sort", "f-sort"], ["q", "f-q"]]) {
      if ($(id).value) p.set(k, $(id).value);
    }
    p.set("page", String(state.page));
    return p;
  };
  async function load() {
    const data = await getJSON(`/api/runs/${encodeURIComponent(RID)}/rows?${params()}`);
    state.pages = data.pages;
    const tbody = document.querySelector("#row-table tbody");
    const rows = data.items.map((it) => {
      const tr = el("tr");
      tr.dataset.row = String(it.row_index);
      tr.className = it.passed === true ? "pass" : it.passed === false ? "fail" : it.scored ? "" : "unscored";
      const a = el("a", it.row_index);
      a.href = `/runs/${encodeURIComponent(RID)}/rows/${it.row_index}#judge-${encodeURIComponent(it.judge)}`;
      const td0 = el("td");
      td0.appendChild(a);
      tr.appendChild(td0);
      tr.appendChild(el("td", it.row_id));
      tr.appendChild(el("td", it.judge));
      tr.appendChild(el("td", it.scored ? fmt(it.value) : it.unscored_reason));
      tr.appendChild(el("td", fmt(it.score)));
      tr.appendChild(el("td", fmt(it.expected_score)));
      tr.appendChild(membersCell(it));
      tr.appendChild(el("td", it.rationale, "text"));
      tr.appendChild(el("td", it.inputs, "text"));
      tr.appendChild(el("td", it.label_stale ? `${fmt(it.label)} (stale)` : fmt(it.label), "label"));
      return tr;
    });
    tbody.replaceChildren(...rows);
    $("row-count").textContent = `${data.total} results`;
    $("page").textContent = `page ${data.page} of ${data.pages}`;
  }
  async function poll() {
    try {
      const st = await getJSON(`/api/runs/${encodeURIComponent(RID)}/status`);
      $("bar").style.width = `${Math.round(100 * st.progress)}%`;
      $("status").textContent = st.status;
      $("status").className = `status st-${st.status}`;
      $("cells").textContent = `${st.cells_done} / ${st.cells_total} results`;
      $("eta").textContent = eta(st.eta_s);
      if (st.cells_done !== state.lastCount) {
        state.lastCount = st.cells_done;
        await load();
      }
    } catch (e) {
      /* keep polling */
    }
  }
  for (const id of ["f-judge", "f-status", "f-sort"]) {
    $(id).addEventListener("change", () => {
      state.page = 1;
      load();
    });
  }
  let timer = null;
  $("f-q").addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      state.page = 1;
      load();
    }, 250);
  });
  $("prev").addEventListener("click", () => {
    if (state.page > 1) {
      state.page -= 1;
      load();
    }
  });
  $("next").addEventListener("click", () => {
    if (state.page < state.pages) {
      state.page += 1;
      load();
    }
  });
  poll();
  setInterval(poll, 1500);
}

// -------------------------------------------------------------------------------------------- row

function initRow() {
  rememberLabeller();
  for (const b of document.querySelectorAll(".label-btn")) {
    b.addEventListener("click", async () => {
      try {
        await postJSON(`/api/runs/${encodeURIComponent(RID)}/labels`, {
          row_index: Number(b.dataset.row),
          judge: b.dataset.judge,
          value: JSON.parse(b.dataset.value),
          labeller: labeller(),
          sample: "browse",
        });
        location.reload();
      } catch (e) {
        alert(e.message);
      }
    });
  }
}

// ------------------------------------------------------------------------------------------ label

// a conversation's chat transcript (view/transcript.py's JSON): the judged turn or tool call highlighted, the
// window the judge saw marked, the hidden turns counted (the row page expands them)
function renderTranscript(t, rowHref) {
  const box = el("section", null, "transcript");
  box.id = "transcript";
  box.dataset.granularity = t.granularity;
  box.dataset.conversation = t.conversation_id;
  const what = t.granularity === "session" ? "the whole conversation" : t.granularity === "turn" ? "turn" : "tool call";
  box.appendChild(
    el("p", `conversation ${t.conversation_id} · ${t.total_turns} turns · judged: ${what} · the judge saw turns ${t.window[0]}–${Math.max(t.window[0], t.window[1] - 1)} (marked)`, "sub"),
  );
  const hidden = (n, where) => {
    if (!n) return;
    const p = el("p", `${n} turn${n === 1 ? "" : "s"} hidden ${where} · `, "hidden-turns");
    p.dataset.hidden = where;
    const a = el("a", "show them on the row page");
    a.href = `${rowHref}?expand=60#transcript`;
    p.appendChild(a);
    box.appendChild(p);
  };
  hidden(t.hidden_before, "before");
  for (const turn of t.turns) {
    const d = el("div", null, `turn${turn.in_window ? " in-window" : ""}${turn.judged ? " judged" : ""}`);
    d.dataset.turn = String(turn.index);
    const head = el("div", null, "turn-head");
    head.appendChild(el("span", turn.role, `tag role-${turn.role}`));
    head.appendChild(el("span", ` #${turn.index}`, "note"));
    if (turn.role === "tool") head.appendChild(el("span", ` ${turn.name || ""} (result of ${turn.tool_call_id})`, "tool-name"));
    d.appendChild(head);
    d.appendChild(el("pre", turn.content, "turn-text"));
    if (turn.cut_chars) d.appendChild(el("p", `(${turn.cut_chars} more characters not shown)`, "note"));
    for (const c of turn.tool_calls) {
      const cd = el("div", null, `tool-call${c.judged ? " judged" : ""}`);
      cd.dataset.call = String(c.index);
      cd.appendChild(el("span", `call ${c.index}`, "tag"));
      cd.appendChild(el("code", c.name, "tool-name"));
      cd.appendChild(el("pre", c.arguments, "args"));
      d.appendChild(cd);
    }
    if (turn.error) d.appendChild(el("pre", `error: ${turn.error}`, "tool-error"));
    box.appendChild(d);
  }
  hidden(t.hidden_after, "after");
  return box;
}

function initLabel() {
  rememberLabeller();
  const domains = JSON.parse($("domain").dataset.domains);
  // session: after key s, the next value key labels the turn's whole conversation (store/session_labels.py)
  const st = { pos: 0, n: 0, item: null, undo: [], chain: Promise.resolve(), session: false };
  // keys are handled one after another: a key pressed while a label is being saved acts on the next row
  const enqueue = (fn) => {
    st.chain = st.chain.then(fn).catch((e) => {
      $("c-saved").textContent = e.message;
    });
  };
  const judge = () => $("l-judge").value;
  const order = () => $("l-order").value;
  const base = () => `/api/runs/${encodeURIComponent(RID)}`;

  function showKeys() {
    const d = domains[judge()];
    const box = $("c-keys");
    box.replaceChildren();
    if (!d) return;
    d.values.forEach((v, i) => {
      const b = el("button", `${v} `, "label-btn");
      b.type = "button";
      b.appendChild(el("kbd", d.keys[i]));
      b.addEventListener("click", () => give(v));
      box.appendChild(b);
    });
  }

  async function show(pos) {
    const p = new URLSearchParams({ judge: judge(), order: order(), seed: $("l-seed").value || "0" });
    if (pos !== undefined) p.set("pos", String(pos));
    const q = await getJSON(`${base()}/queue?${p}`);
    st.pos = q.pos;
    st.n = q.n;
    st.item = q.item;
    $("active-order").textContent =
      q.order === "random"
        ? `random sample (seed ${$("l-seed").value || 0})`
        : q.order === "active"
          ? `active: drawn rows, most uncertain first (seed ${$("l-seed").value || 0})`
          : "uncertain first";
    $("l-pos").textContent = `${q.n ? q.pos + 1 : 0} of ${q.n} · ${q.n_labelled} labelled`;
    const it = q.item;
    if (!it) {
      $("c-head").textContent = "no rows for this judge yet";
      return;
    }
    const a = el("a", `row ${it.row_index}`);
    a.href = `/runs/${encodeURIComponent(RID)}/rows/${it.row_index}`;
    $("c-head").replaceChildren(a, document.createTextNode(` · id ${it.row_id}`));
    $("c-transcript").replaceChildren(...(it.transcript ? [renderTranscript(it.transcript, a.href)] : []));
    const dl = el("dl");
    for (const [k, v] of Object.entries(it.inputs)) {
      dl.appendChild(el("dt", k));
      dl.appendChild(el("dd", typeof v === "string" ? v : JSON.stringify(v)));
    }
    $("c-inputs").replaceChildren(dl);
    $("c-verdict").textContent = it.verdict;
    $("c-rationale").textContent = it.rationale || "";
    $("c-members").textContent = membersText(it);
    $("c-label").textContent =
      it.label === null ? "—" : it.stale_label ? `${fmt(it.label)} (stale: the row changed since; label it again)` : fmt(it.label);
    $("comment").value = it.comment || "";
    $("c-saved").textContent = "";
    showSession(it);
    await showTrust();
  }

  function showSession(it) {
    const has = it && it.conversation_id !== undefined;
    $("c-session").hidden = !has;
    if (!has) return;
    $("c-conv").textContent = it.conversation_id;
    $("c-slabel").textContent =
      it.session_label === null ? "—" : it.session_stale ? `${fmt(it.session_label)} (stale: the conversation changed since)` : fmt(it.session_label);
  }

  async function giveSession(value) {
    const it = st.item;
    st.session = false;
    if (!it || it.conversation_id === undefined) return;
    const name = labeller();
    if (!name) {
      $("c-saved").textContent = "type your name first (key l)";
      $("labeller").focus();
      return;
    }
    try {
      await postJSON(`${base()}/labels`, {
        row_index: it.row_index,
        judge: judge(),
        value: value,
        comment: null,
        labeller: name,
        sample: "browse",
        scope: "session",
      });
      it.session_label = value;
      it.session_stale = false;
      showSession(it);
      $("c-saved").textContent = `session ${it.conversation_id} labelled`;
    } catch (e) {
      $("c-saved").textContent = e.message;
    }
  }

  // the judge's pass rate by PPI++ and the labels to reach ±W, re-read after each label (view/trust.py)
  async function showTrust() {
    const p = new URLSearchParams({ judge: judge(), width: $("l-width").value || "0.05" });
    const t = await getJSON(`${base()}/trust?${p}`);
    const lines = t.lines || [];
    $("t-ppi").textContent = lines.find((x) => x.startsWith("pass rate by PPI++") || x.startsWith("no PPI++")) || "";
    $("t-lines").replaceChildren(...lines.filter((x) => x !== $("t-ppi").textContent && !x.startsWith("label budget")).map((x) => el("li", x)));
    $("t-budget").textContent = t.budget ? t.budget.text : "";
  }

  async function save(item, value, comment) {
    const name = labeller();
    if (!name) {
      $("c-saved").textContent = "type your name first (key l)";
      $("labeller").focus();
      return false;
    }
    await postJSON(`${base()}/labels`, {
      row_index: item.row_index,
      judge: judge(),
      value: value,
      comment: comment || null,
      labeller: name,
      sample: order(),
      probability: order() === "active" ? item.probability : null,
    });
    return true;
  }

  async function give(value) {
    const it = st.item;
    if (!it) return;
    try {
      if (!(await save(it, value, $("comment").value.trim()))) return;
      st.undo.push({ pos: st.pos, item: it, prev: it.label, prevComment: it.comment });
      await show(st.pos + 1 < st.n ? st.pos + 1 : st.pos);
    } catch (e) {
      $("c-saved").textContent = e.message;
    }
  }

  async function undo() {
    const u = st.undo.pop();
    if (!u) return;
    try {
      await save(u.item, u.prev, u.prevComment);
      await show(u.pos);
      $("c-saved").textContent = "undone";
    } catch (e) {
      $("c-saved").textContent = e.message;
    }
  }

  async function saveComment() {
    const it = st.item;
    if (!it || it.label === null) {
      $("c-saved").textContent = "label the row first; the comment goes with the label";
      return;
    }
    if (await save(it, it.label, $("comment").value.trim())) {
      $("c-saved").textContent = "comment saved";
      it.comment = $("comment").value.trim();
    }
  }

  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    const typing = t instanceof HTMLInputElement || t instanceof HTMLSelectElement;
    if (typing) {
      if (ev.key === "Escape") t.blur();
      if (ev.key === "Enter" && t.id === "comment") {
        ev.preventDefault();
        saveComment();
        t.blur();
      }
      if (ev.key === "Enter" && t.id === "labeller") {
        localStorage.setItem("lj-labeller", t.value.trim());
        t.blur();
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const d = domains[judge()];
    const k = ev.key.toLowerCase();
    if (st.session && (k === "s" || ev.key === "Escape")) {
      ev.preventDefault();
      st.session = false;
      $("c-saved").textContent = "";
    } else if (st.session && d && d.keys.includes(k)) {
      ev.preventDefault();
      const v = d.values[d.keys.indexOf(k)];
      enqueue(() => giveSession(v));
    } else if (k === "s") {
      ev.preventDefault();
      if (!st.item || st.item.conversation_id === undefined) {
        $("c-saved").textContent = "this row is not a turn of a conversation: no session to label";
      } else {
        st.session = true;
        $("c-saved").textContent = `session ${st.item.conversation_id}: press a value key (s or Esc cancels)`;
      }
    } else if (d && d.keys.includes(k)) {
      ev.preventDefault();
      const v = d.values[d.keys.indexOf(k)];
      enqueue(() => give(v));
    } else if (k === "j" || ev.key === "ArrowRight") {
      ev.preventDefault();
      enqueue(() => (st.pos + 1 < st.n ? show(st.pos + 1) : null));
    } else if (k === "k" || ev.key === "ArrowLeft") {
      ev.preventDefault();
      enqueue(() => (st.pos > 0 ? show(st.pos - 1) : null));
    } else if (k === "u") {
      ev.preventDefault();
      enqueue(undo);
    } else if (k === "c") {
      ev.preventDefault();
      $("comment").focus();
    } else if (k === "l") {
      ev.preventDefault();
      $("labeller").focus();
    } else if (k === "g") {
      ev.preventDefault();
      const sel = $("l-judge");
      sel.selectedIndex = (sel.selectedIndex + 1) % sel.options.length;
      showKeys();
      enqueue(() => show());
    } else if (k === "o") {
      ev.preventDefault();
      $("l-order").value = order() === "random" ? "uncertain" : "random";
      enqueue(() => show());
    }
  });
  for (const id of ["l-judge", "l-order", "l-seed", "l-width"]) {
    $(id).addEventListener("change", () => {
      showKeys();
      enqueue(() => show());
    });
  }
  showKeys();
  enqueue(() => show());
}

// -------------------------------------------------------------------------------------- agreement

function statLine(name, value, ci, note) {
  const tr = el("tr");
  tr.appendChild(el("th", name));
  const f3 = (x) => (typeof x === "number" ? x.toFixed(3) : fmt(x));
  let text = value === null || value === undefined ? "n/a" : f3(value);
  if (ci) text += ` [${f3(ci[0])}, ${f3(ci[1])}]`;
  if (note) text += ` ${note}`;
  tr.appendChild(el("td", text));
  return tr;
}

function initAgreement() {
  const judge = () => $("a-judge").value;
  const base = () => `/api/runs/${encodeURIComponent(RID)}`;
  async function load() {
    let a;
    try {
      a = await getJSON(`${base()}/agreement?judge=${encodeURIComponent(judge())}`);
    } catch (e) {
      $("a-stats").textContent = e.message;
      return;
    }
    const parts = Object.entries(a.by_sample).map(([k, v]) => `${k} ${v}`);
    const stale = a.n_stale ? ` · ${a.n_stale} stale labels left out (their rows changed since)` : "";
    $("a-counts").textContent = `${a.n_labels} labels (${parts.join(", ") || "none"})${stale}${a.error ? " · " + a.error : ""}`;
    const table = el("table", null, "kv");
    table.id = "a-table";
    for (const [part, title] of [["all", "all labels"], ["random", "random sample only"]]) {
      const r = a[part];
      const head = el("tr");
      head.appendChild(el("th", title, "part"));
      head.appendChild(el("td", r ? `n = ${r.n_used}` : "no labels"));
      table.appendChild(head);
      if (!r) continue;
      const acc = statLine("accuracy", r.accuracy, r.accuracy_ci);
      acc.dataset.part = part;
      acc.dataset.stat = "accuracy";
      table.appendChild(acc);
      const kap = statLine("Cohen's kappa", r.cohen_kappa, r.cohen_kappa_ci);
      kap.dataset.part = part;
      kap.dataset.stat = "kappa";
      table.appendChild(kap);
      table.appendChild(statLine(`AUC (${r.auc_score || "score"})`, r.auc, r.auc_ci));
      if (r.spearman) table.appendChild(statLine("Spearman rho", r.spearman.statistic, null, `(n = ${r.spearman.n})`));
      if (r.kendall) table.appendChild(statLine("Kendall tau-b", r.kendall.statistic, null, `(n = ${r.kendall.n})`));
    }
    const hp = a.human_pass_rate;
    table.appendChild(statLine("human pass rate (random sample)", hp ? hp.value : null, hp ? hp.ci : null, hp ? `n = ${hp.n}` : ""));
    $("a-stats").replaceChildren(table);
    const mt = $("a-members");
    mt.replaceChildren();
    const members = Object.entries(a.members || {});
    if (members.length) {
      const head = el("tr");
      for (const h of ["member", "n", "accuracy", "Cohen's kappa"]) head.appendChild(el("th", h));
      mt.appendChild(head);
      const f3 = (x, ci) => (x === null || x === undefined ? "n/a" : x.toFixed(3) + (ci ? ` [${ci[0].toFixed(3)}, ${ci[1].toFixed(3)}]` : ""));
      for (const [name, r] of members) {
        const tr = el("tr");
        tr.dataset.member = name;
        tr.appendChild(el("td", name));
        if (!r || r.error) {
          tr.appendChild(el("td", r ? r.error : "no labelled rows"));
        } else {
          tr.appendChild(el("td", r.n_used));
          tr.appendChild(el("td", f3(r.accuracy, r.accuracy_ci), "accuracy"));
          tr.appendChild(el("td", f3(r.cohen_kappa, r.cohen_kappa_ci), "kappa"));
        }
        mt.appendChild(tr);
      }
    }
    const all = a.all;
    const conf = $("a-confusion");
    conf.replaceChildren();
    if (all && all.confusion) {
      const head = el("tr");
      head.appendChild(el("th", ""));
      for (const l of all.labels) head.appendChild(el("th", fmt(l)));
      conf.appendChild(head);
      all.confusion.forEach((row, i) => {
        const tr = el("tr");
        tr.appendChild(el("th", fmt(all.labels[i])));
        row.forEach((c, j) => tr.appendChild(el("td", c, i === j ? "diag" : "")));
        conf.appendChild(tr);
      });
    }
    const tbody = document.querySelector("#a-disagree tbody");
    tbody.replaceChildren(
      ...((all && all.disagreements) || []).map((d) => {
        const tr = el("tr");
        const link = el("a", d.row_id);
        link.href = `/runs/${encodeURIComponent(RID)}/rows/${d.row_index}#judge-${encodeURIComponent(judge())}`;
        const td = el("td");
        td.appendChild(link);
        tr.appendChild(td);
        tr.appendChild(el("td", fmt(d.label)));
        tr.appendChild(el("td", fmt(d.judge_value)));
        tr.appendChild(el("td", fmt(d.score)));
        tr.appendChild(el("td", d.rationale, "text"));
        return tr;
      }),
    );
  }
  async function alignStatus() {
    try {
      const s = await getJSON(`${base()}/align?judge=${encodeURIComponent(judge())}`);
      $("align-status").textContent = s.state === "none" ? "" : s.state === "failed" ? `failed: ${s.error}` : s.state;
      $("align-report").textContent = s.text || "";
      return s.state;
    } catch (e) {
      $("align-status").textContent = e.message;
      return "failed";
    }
  }
  $("align-btn").addEventListener("click", async () => {
    try {
      await postJSON(`${base()}/align?judge=${encodeURIComponent(judge())}`, {});
    } catch (e) {
      $("align-status").textContent = e.message;
    }
    alignStatus();
  });
  $("a-judge").addEventListener("change", () => {
    load();
    alignStatus();
  });
  load();
  alignStatus();
  setInterval(() => {
    load();
    alignStatus();
  }, 3000);
}

const INIT = { runs: initRuns, run: initRun, row: initRow, label: initLabel, agreement: initAgreement };
if (INIT[PAGE]) INIT[PAGE]();
