"""Server-rendered HTML of the view. Every piece of judged text goes through `esc` (html.escape with quotes);
pages carry no inline script or style: behaviour comes from /static/view.js, which reads the page's `data-*`
attributes and fills tables from the JSON API with `textContent` only."""

from __future__ import annotations

import json
from html import escape
from typing import TYPE_CHECKING, Any

from ..store.results import ResultRow

if TYPE_CHECKING:
    from ..report.controls import StoredControls


def esc(x: Any) -> str:
    """Text made safe for HTML element content and quoted attribute values."""
    return escape("" if x is None else str(x), quote=True)


def layout(title: str, body: str, csrf: str, page: str, data: dict[str, Any] | None = None) -> str:
    """A whole page: the CSRF token in a meta tag, the app's own CSS and JS, `data-*` for the script."""
    attrs = " ".join(f'data-{esc(k)}="{esc(v)}"' for k, v in {"page": page, **(data or {})}.items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="{esc(csrf)}"><title>{esc(title)} · localjudge view</title>
<link rel="stylesheet" href="/static/view.css"><link rel="icon" href="data:,">
<script src="/static/view.js" defer></script></head>
<body {attrs}><header><nav><a href="/">runs</a></nav><h1>{esc(title)}</h1></header>
<main>{body}</main></body></html>"""


def runs_page(csrf: str, runs: list[dict[str, Any]]) -> str:
    """The list of runs (the script refreshes status and progress every 2 s)."""
    rows = "".join(
        (
            f'<tr data-rid="{esc(r["rid"])}"><td><a href="/runs/{esc(r["rid"])}">{esc(r["rid"])}</a><div class="note">{esc(r["path"])}</div></td>'
            if r["status"] != "unreadable"  # no page to open: the reason instead of a link
            else f'<tr data-rid="{esc(r["rid"])}"><td>{esc(r["rid"])}<div class="note">{esc(r["path"])}</div>'
            f'<div class="note unreadable">{esc(r.get("error") or "")}</div></td>'
        )
        + f"<td>{esc(', '.join(r['judges']))}</td><td>{esc(r['model'])}</td><td>{r['rows_total'] or ''}</td>"
        f'<td class="cells">{r["cells_done"]} / {r["cells_total"]}</td><td class="status st-{esc(r["status"])}">{esc(r["status"])}</td>'
        f'<td class="labels">{r["labels"]}</td></tr>'
        for r in runs
    )
    opts = "".join(f'<option value="{esc(r["rid"])}">{esc(r["rid"])}</option>' for r in runs if r["status"] != "unreadable")
    body = (
        '<table class="runs" id="runs"><thead><tr><th>run</th><th>judges</th><th>model</th><th>rows</th><th>results</th><th>status</th>'
        f"<th>labels</th></tr></thead><tbody>{rows or '<tr><td colspan=7>no runs found</td></tr>'}</tbody></table>"
        '<h2>Compare two runs</h2><form action="/compare" method="get" class="filters">'
        f'<label>base <select name="a">{opts}</select></label><label>new <select name="b">{opts}</select></label>'
        '<button type="submit">compare</button></form>'
    )
    return layout("Runs", body, csrf, "runs")


def _pct3(x: Any) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def figures_section(fig: dict[str, Any] | None) -> str:
    """The panel's figures (per judge: decided, ties, Fleiss' kappa among members, each member's agreement with
    the panel) or the cascade's (escalated, the first model's agreement with the strong one, time saved), as the
    run recorded them in its summary."""
    if not fig:
        return ""
    f = fig["figures"]
    out = []
    if fig["kind"] == "panel":
        out.append(
            f"<h2>Panel</h2><p class='sub'>{len(f['members'])} members ({esc(', '.join(f['members']))}), "
            f"{esc(f['aggregation'])}</p>"
        )
        for judge, s in f["judges"].items():
            k = s.get("fleiss_kappa")
            rows = "".join(
                f'<tr data-member="{esc(lab)}"><td>{esc(lab)}</td><td class="agreement">{esc(_pct3(a["agreement"]))}</td>'
                f"<td>{a['n']}</td></tr>"
                for lab, a in s["member_agreement"].items()
            )
            out.append(
                f'<section class="panel-judge" data-judge="{esc(judge)}"><h3>{esc(judge)}</h3>'
                + _kv(
                    [
                        ("decided", f"{s['decided']} of {s['n']}"),
                        ("ties", s["ties"]),
                        ("Fleiss' kappa among members", "n/a" if k is None else f"{k:.3f} (n={s['n_kappa']})"),
                    ]
                )
                + f"<table class='members'><thead><tr><th>member</th><th>agrees with the panel ({esc(s['agreement_basis'])})"
                f"</th><th>n</th></tr></thead><tbody>{rows}</tbody></table></section>"
            )
        out += [f"<p class='note'>warning: {esc(w)}</p>" for w in f.get("warnings") or []]
    else:
        out.append(
            f"<h2>Cascade</h2><p class='sub'>{esc(f['first'])} → {esc(f['escalate_to'])} below confidence "
            f"{esc(f['threshold'])} ({esc(f['confidence'])})</p>"
        )
        for judge, s in f["judges"].items():
            saved = s.get("time_saved_ms_estimated")
            out.append(
                f'<section class="panel-judge" data-judge="{esc(judge)}"><h3>{esc(judge)}</h3>'
                + _kv(
                    [
                        ("escalated", f"{s['escalated']} of {s['n']} ({_pct3(s['fraction_escalated'])})"),
                        (
                            f"{f['first']} agrees with {f['escalate_to']} on escalated rows",
                            f"{_pct3(s['first_agrees_with_strong_on_escalated'])} of {s['n_compared']}",
                        ),
                        ("time saved (estimated)", "n/a" if saved is None else f"{saved / 1000:.1f} s"),
                    ]
                )
                + "</section>"
            )
    return '<div id="trust-figures">' + "".join(out) + "</div>"


def controls_section(controls: dict[str, StoredControls] | None) -> str:
    """The run's judges with their negative controls (summary.json's `controls`): per judge the verdict in a word or
    two, the AUC with its 95 % interval, the pairs judged and the verdict as a sentence; "" without controls."""
    if not controls:
        return ""
    from ..report.controls import WHAT, verdict_sentence, verdict_word

    rows = []
    for judge, first in controls.items():
        for kind, c in first.shown():
            ci = c.ci
            auc = "—" if c.auc is None else f"{c.auc:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci is not None else "")
            word = verdict_word(c.verdict)
            name = judge if kind == "answer" else f"{judge} ({WHAT.get(kind, kind)})"
            attrs = f'data-judge="{esc(judge)}"' + ("" if kind == "answer" else f' data-kind="{esc(kind)}"')
            rows.append(
                f'<tr {attrs}><td>{esc(name)}</td><td class="controls-verdict {esc(word.replace(" ", "-"))}">'
                f"{esc(word)}</td><td>{esc(auc)}</td><td>{esc(c.n_real or 0)}</td><td>{esc(verdict_sentence(c.verdict))}</td></tr>"
            )
    return (
        '<section id="controls"><h2>Negative controls</h2><p class="sub">Does each judge score its rows above the same rows '
        "given another row's answer? (no labels; <code>localjudge controls RUN_DIR</code>)</p>"
        "<table class='controls'><thead><tr><th>judge</th><th>controls</th><th>AUC [95 %]</th><th>pairs</th><th>verdict</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def run_page(
    csrf: str, st: dict[str, Any], figures: dict[str, Any] | None = None, controls: dict[str, StoredControls] | None = None
) -> str:
    """A run: live progress, the panel's or cascade's figures, its judges' negative controls when it has them, then
    the rows table with filters (filled and paged by the script; a panel's rows carry its members' verdicts)."""
    rid = st["rid"]
    judges = "".join(f'<option value="{esc(j)}">{esc(j)}</option>' for j in st["judges"])
    body = f"""
<p class="sub">{esc(st["path"])} · model {esc(st["model"])} · data {esc(st["data"])}</p>
<nav class="tabs"><a href="/runs/{esc(rid)}/label">label</a><a href="/runs/{esc(rid)}/agreement">agreement</a></nav>
<div id="progress" class="progress"><div class="bar"><span id="bar"></span></div>
<span id="status" class="status">{esc(st["status"])}</span> <span id="cells"></span> <span id="eta"></span></div>
{figures_section(figures)}{controls_section(controls)}
<div class="filters">
<label>judge <select id="f-judge"><option value="">all</option>{judges}</select></label>
<label>status <select id="f-status"><option value="">all</option><option>pass</option><option>fail</option>
<option>unscored</option><option>labelled</option><option>unlabelled</option></select></label>
<label>sort <select id="f-sort"><option value="row">row</option><option value="score">score ↑</option>
<option value="-score">score ↓</option><option value="expected">expected ↑</option><option value="-expected">expected ↓</option>
<option value="judge">judge</option></select></label>
<label>search <input id="f-q" type="search" placeholder="text in inputs, id or output"></label>
<span id="row-count"></span></div>
<table class="rows" id="row-table"><thead><tr><th>row</th><th>id</th><th>judge</th><th>value</th><th>score</th>
<th>expected</th><th>members</th><th>rationale</th><th>inputs</th><th>label</th></tr></thead><tbody></tbody></table>
<div class="pager"><button id="prev" type="button">← previous</button> <span id="page"></span>
<button id="next" type="button">next →</button></div>"""
    return layout(f"Run {rid}", body, csrf, "run", {"rid": rid})


_STALE_TAG = ' <span class="tag stale">stale: the row changed since</span>'


def _num(x: float) -> str:
    """A number as the script's fmt() writes it: integers bare, else three decimals."""
    return str(int(x)) if float(x).is_integer() else f"{x:.3f}"


def verdict_text(res: Any) -> str:
    """What the judge said, in one line for the labelling card: `yes (score 1, expected 0.930)`, saying nothing of a
    score or an expected score the result does not have."""
    if res.unscored_reason:
        return f"unscored: {res.unscored_reason}"
    value = res.value if isinstance(res.value, str) else json.dumps(res.value, ensure_ascii=False)
    if isinstance(res.value, (int, float)) and not isinstance(res.value, bool):
        value = _num(res.value)
    extra = [f"score {_num(res.score)}"] if res.score is not None else []
    extra += [f"expected {_num(res.expected_score)}"] if res.expected_score is not None else []
    return f"{value} ({', '.join(extra)})" if extra else value


def _kv(pairs: list[tuple[str, Any]]) -> str:
    return '<table class="kv">' + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in pairs) + "</table>"


def _members_table(judge: str, members: list[ResultRow]) -> str:
    """A panel's or cascade's members for one row: verdict, score, expected score, pass, rationale."""
    from .panels import member_label

    rows = "".join(
        f'<tr data-member="{esc(member_label(judge, m.judge))}"><td><a href="#judge-{esc(m.judge)}">{esc(member_label(judge, m.judge))}</a></td>'
        f"<td>{esc(json.dumps(m.result.value, ensure_ascii=False) if m.result.scored else m.result.unscored_reason)}</td>"
        f"<td>{esc(m.result.score)}</td><td>{esc(m.result.expected_score)}</td><td>{esc(m.result.passed)}</td>"
        f"<td class='text'>{esc(m.result.rationale or '')}</td></tr>"
        for m in members
    )
    return (
        '<h3>Members</h3><table class="members"><thead><tr><th>member</th><th>verdict</th><th>score</th>'
        f"<th>expected</th><th>passed</th><th>rationale</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _judge_article(
    r: ResultRow, prompts: dict[str, Any], dom: Any, row_index: int, members: list[ResultRow], member_of: str | None
) -> str:
    """One judge's result on a row; a member's (`member_of` = its panel's judge) carries no label buttons."""
    from ..formats.base import think_text

    res = r.result
    p = prompts.get(r.judge) or {}
    buttons = ""
    if dom is not None and member_of is None:
        buttons = (
            '<div class="label-buttons">'
            + "".join(
                f'<button type="button" class="label-btn" data-judge="{esc(r.judge)}" data-row="{row_index}" '
                f'data-value="{esc(json.dumps(v))}">{esc(v)} <kbd>{esc(k)}</kbd></button>'
                for v, k in zip(dom.values, dom.keys, strict=True)
            )
            + "</div>"
        )
    prompt = (
        "".join(
            f'<div class="msg"><span class="tag">{esc(m["role"])}</span><pre>{esc(m["content"])}</pre></div>'
            for m in p.get("messages", [])
        )
        or "<p class='note'>not available</p>"
    )
    casc = res.details.get("cascade") if isinstance(res.details, dict) else None
    cascade = ""
    if isinstance(casc, dict):
        cascade = "<h3>Cascade</h3>" + _kv(
            [
                ("escalated", "yes" if casc.get("escalated") else "no"),
                ("confidence", casc.get("confidence")),
                ("threshold", casc.get("threshold")),
                ("first model said", json.dumps(casc.get("first"), ensure_ascii=False)),
                ("strong model said", json.dumps(casc.get("strong"), ensure_ascii=False)),
                ("decided by", casc.get("decided_by")),
            ]
        )
    think = think_text(res.raw_text or "")
    head = (
        f"<h2>{esc(r.judge)}</h2>"
        if member_of is None
        else f"<h2>{esc(r.judge)} <span class='tag'>member of {esc(member_of)}</span></h2>"
    )
    return (
        f'<article class="judge{" member" if member_of else ""}" id="judge-{esc(r.judge)}">{head}'
        + _kv(
            [
                ("value", json.dumps(res.value, ensure_ascii=False)),
                ("score", res.score),
                *([("expected score", res.expected_score)] if res.expected_score is not None else []),
                ("passed", res.passed),
                ("unscored", res.unscored_reason or ""),
                ("error", res.error or r.error or ""),
                ("fields_cut", res.usage.fields_cut),
                (
                    "tokens",
                    f"prompt {res.usage.prompt_tokens} (cached {res.usage.cached_prompt_tokens}), output "
                    f"{res.usage.output_tokens} (forced {res.usage.forced_tokens}), calls {res.usage.calls}",
                ),
                (
                    "timings",
                    f"prompt {res.timings.prompt_ms:.1f} ms, decode {res.timings.decode_ms:.1f} ms, total {res.timings.total_ms:.1f} ms",
                ),
            ]
        )
        + buttons
        + (_members_table(r.judge, members) if members else "")
        + cascade
        + f"<h3>Rationale</h3><pre class='rationale'>{esc(res.rationale or '')}</pre>"
        + (f"<h3>Think</h3><pre class='think'>{esc(think)}</pre>" if think is not None else "")
        + f"<h3>Raw output</h3><pre class='raw'>{esc(res.raw_text)}</pre>"
        + f"<h3>Prompt as sent</h3><p class='note'>{esc(p.get('note', ''))}</p>{prompt}"
        + "<h3>Reproducibility record</h3>"
        + (
            _kv(list(r.record_fields().items()) + [("cache_key", r.cache_key)])
            if r.record
            else "<p class='note'>none (failed before its prompt)</p>"
        )
        + (
            f"<h3>Details</h3><pre>{esc(json.dumps(res.details, ensure_ascii=False, indent=1, default=str))}</pre>"
            if res.details
            else ""
        )
        + "</article>"
    )


def row_page(
    csrf: str,
    rid: str,
    row_index: int,
    results: list[ResultRow],
    prompts: dict[str, Any],
    history: list[Any],
    domains: dict[str, Any],
    members: dict[str, list[str]] | None = None,
    transcript: str = "",
) -> str:
    """One data row: a conversation's transcript (`transcript`, view/transcript.py) when it is one, its inputs, then per judge the prompt, raw output, rationale, think text, usage, record and
    the label buttons; a panel's or cascade's judge with its members' verdicts, each member's full result after."""
    if not results:
        return layout(f"Run {rid} · row {row_index}", "<p>no results for this row</p>", csrf, "row", {"rid": rid})
    members = members or {}
    parent = {m: j for j, ms in members.items() for m in ms}
    by_judge = {r.judge: r for r in results}
    first = results[0]
    parts = [
        f'<p class="sub">id <code>{esc(first.row_id)}</code> · source {esc(first.source)}</p>',
        transcript,
        "<h2>Inputs</h2>",
    ]
    parts.append("<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in first.inputs.items()) + "</dl>")
    for r in results:
        if r.judge in parent:
            continue
        mine = [by_judge[m] for m in members.get(r.judge, []) if m in by_judge]
        parts.append(_judge_article(r, prompts, domains.get(r.judge), row_index, mine, None))
        parts += [_judge_article(m, prompts, None, row_index, [], r.judge) for m in mine]
    for r in results:  # members whose panel's result is not there (a panel still running)
        if r.judge in parent and parent[r.judge] not in by_judge:
            parts.append(_judge_article(r, prompts, None, row_index, [], parent[r.judge]))
    hist = "".join(
        f"<tr><td>{esc(h.created)}</td><td>{esc(h.judge)}</td><td>{esc(json.dumps(h.value))}"
        f"{_STALE_TAG if h.stale else ''}</td><td>{esc(h.labeller)}</td>"
        f"<td>{esc(h.sample)}</td><td>{esc(h.comment or '')}</td></tr>"
        for h in history
    )
    parts.append(
        '<h2>Label history</h2><table class="history"><thead><tr><th>time</th><th>judge</th><th>label</th><th>labeller</th>'
        f"<th>sample</th><th>comment</th></tr></thead><tbody>{hist or '<tr><td colspan=6>no labels yet</td></tr>'}</tbody></table>"
        '<p><label>labeller <input id="labeller" autocomplete="name"></label></p>'
    )
    return layout(f"Run {rid} · row {row_index}", "".join(parts), csrf, "row", {"rid": rid, "row": row_index})


def label_page(csrf: str, rid: str, judges: list[str], domains: dict[str, Any]) -> str:
    """The keyboard labelling view (filled by the script; keys listed on the page)."""
    opts = "".join(f'<option value="{esc(j)}">{esc(j)}</option>' for j in judges)
    dom = esc(json.dumps({j: d.model_dump() for j, d in domains.items()}))
    body = f"""
<div class="filters"><label>judge <select id="l-judge">{opts}</select></label>
<label>order <select id="l-order"><option value="uncertain">uncertain first</option><option value="random">random sample</option><option value="active">active (weighted sample)</option></select></label>
<label>seed <input id="l-seed" type="number" value="0" min="0"></label>
<label>labeller <input id="labeller" autocomplete="name" placeholder="your name"></label>
<label>target ± <input id="l-width" type="number" value="0.05" min="0.001" max="0.999" step="0.01"></label>
<span id="active-order" class="tag"></span> <span id="l-pos"></span></div>
<div id="domain" data-domains="{dom}"></div>
<section id="card" class="card"><p class="sub" id="c-head"></p><div id="c-transcript"></div><div id="c-inputs"></div>
<h3>Judge said</h3><p id="c-verdict"></p><p id="c-members" class="members"></p><pre id="c-rationale"></pre>
<p>Your label: <strong id="c-label">—</strong> <span id="c-saved" class="note"></span></p>
<p id="c-session" hidden>Session label (the whole conversation <span id="c-conv"></span>): <strong id="c-slabel">—</strong></p>
<div id="c-keys" class="label-buttons"></div>
<p><label>comment <input id="comment" size="60" placeholder="press c, type, Enter"></label></p></section>
<section id="trust" class="card"><h3>Human pass rate (95% interval)</h3><p id="t-ppi"></p><ul id="t-lines"></ul>
<p><strong id="t-budget"></strong></p></section>
<p class="note" id="help">Keys: the value keys above label and move on · j / → next · k / ← previous · u undo ·
c comment (Enter saves, Esc leaves) · l labeller name · o switch order · g next judge · s then a value key labels the
whole conversation (a session label, in a per-turn run; Esc or s again cancels). Labels from the random order are the
unbiased sample: pass-rate estimates use only those. Labels from the active order store the probability their row
was drawn with, and the active estimate weights each by 1 / that probability.</p>"""
    return layout(f"Label {rid}", body, csrf, "label", {"rid": rid})


def agreement_page(csrf: str, rid: str, judges: list[str]) -> str:
    """The live agreement panel (refreshed by the script every 3 s)."""
    opts = "".join(f'<option value="{esc(j)}">{esc(j)}</option>' for j in judges)
    body = f"""
<div class="filters"><label>judge <select id="a-judge">{opts}</select></label>
<button id="align-btn" type="button">run align on these labels</button> <span id="align-status" class="note"></span></div>
<p class="note">Agreement uses every label, and the random sample alone beside it; the human pass rate uses the
random sample only (uncertainty-ordered labels over-represent borderline rows).</p>
<div id="a-counts"></div><div id="a-stats"></div><h3>Confusion matrix (rows: human, columns: judge)</h3>
<table class="confusion" id="a-confusion"></table>
<h3>Each member against your labels (a panel's or a cascade's models)</h3><table class="kv" id="a-members"></table>
<h3>Disagreements</h3>
<table class="disagree" id="a-disagree"><thead><tr><th>row</th><th>label</th><th>judge</th><th>score</th><th>rationale</th></tr></thead>
<tbody></tbody></table><h3>Align: held-out before / after</h3><pre id="align-report"></pre>"""
    return layout(f"Agreement {rid}", body, csrf, "agreement", {"rid": rid})


def compare_page(
    csrf: str, a: str, b: str, deltas: list[dict[str, Any]], changed: list[dict[str, Any]], n_changed: int, difference: str = ""
) -> str:
    """Two runs side by side: pass rate per judge, the `difference` section (HTML, view/compare_trust.py) and the rows
    whose verdict changed."""
    d = "".join(
        f"<tr><td>{esc(x['judge'])}</td><td>{esc(_pct(x['a']))}</td><td>{esc(_pct(x['b']))}</td><td>{esc(_delta(x))}</td>"
        f"<td>{x['n_a']}</td><td>{x['n_b']}</td></tr>"
        for x in deltas
    )
    c = "".join(
        f"<tr><td><a href='/runs/{esc(b)}/rows/{x['row_index']}'>{esc(x['row_id'])}</a></td><td>{esc(x['judge'])}</td>"
        f"<td>{esc(json.dumps(x['a']))}</td><td>{esc(json.dumps(x['b']))}</td></tr>"
        for x in changed
    )
    body = (
        f"<p class='sub'>base {esc(a)} → new {esc(b)}</p><h2>Pass rate per judge</h2><table><thead><tr><th>judge</th>"
        "<th>base</th><th>new</th><th>delta</th><th>n base</th><th>n new</th></tr></thead><tbody>"
        + d
        + "</tbody></table>"
        + difference
        + f"<h2>Rows whose verdict changed ({n_changed}{', first 500 shown' if n_changed > 500 else ''})</h2>"
        "<table class='changed'><thead><tr><th>row id</th><th>judge</th><th>base</th><th>new</th></tr></thead><tbody>"
        + c
        + "</tbody></table>"
    )
    return layout(f"Compare {a} / {b}", body, csrf, "compare")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _delta(x: dict[str, Any]) -> str:
    return "n/a" if x["a"] is None or x["b"] is None else f"{(x['b'] - x['a']) * 100:+.1f} pt"
