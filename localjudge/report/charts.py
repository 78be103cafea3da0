"""Inline SVG charts for the HTML report: no scripts, no fonts, no network.

Each function returns `markupsafe.Markup`; every piece of text inside is escaped here, so the
template can insert the SVG as is while autoescaping everything else.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

W = 640  # viewBox width; the SVG scales to its container


def _t(x: float, y: float, text: str, anchor: str = "start", cls: str = "lbl") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" class="{cls}">{escape(text)}</text>'


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def pass_rate_chart(items: Sequence[tuple[str, float | None, tuple[float, float] | None, int]]) -> Markup:
    """Horizontal bars of pass rates with 95 % interval whiskers: (judge, rate, (lo, hi), n) per judge."""
    left, right, row_h, top = 160, 190, 26, 22
    plot = W - left - right
    h = top + row_h * len(items) + 10
    out = [
        f'<svg class="chart pass-rate" viewBox="0 0 {W} {h}" role="img" aria-label="pass rate per judge with 95% intervals">',
        "<title>Pass rate per judge (bars) with 95% Wilson intervals (whiskers)</title>",
    ]
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        x = left + t * plot
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{h - 8}" class="grid"/>')
        out.append(_t(x, top - 8, f"{int(t * 100)}%", "middle", "tick"))
    for i, (judge, rate, ci, n) in enumerate(items):
        y = top + i * row_h
        label = judge if len(judge) <= 24 else judge[:23] + "…"
        out.append(_t(left - 8, y + 16, label, "end"))
        if rate is None:
            out.append(_t(left + 4, y + 16, f"no pass/fail verdicts (n={n})", "start", "note"))
            continue
        tip = f"{judge}: {_pct(rate)}" + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "") + f", n={n}"
        out.append(
            f'<g class="bar-group"><title>{escape(tip)}</title>'
            f'<rect class="bar" x="{left}" y="{y + 5}" width="{max(rate * plot, 0.5):.1f}" height="{row_h - 10}"/>'
        )
        if ci:
            x0, x1 = left + ci[0] * plot, left + ci[1] * plot
            ym = y + row_h / 2
            out.append(
                f'<path class="whisker" d="M{x0:.1f},{ym:.1f}H{x1:.1f}M{x0:.1f},{ym - 6:.1f}V{ym + 6:.1f}'
                f'M{x1:.1f},{ym - 6:.1f}V{ym + 6:.1f}"/>'
            )
        out.append("</g>")
        text = _pct(rate) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")
        out.append(_t(left + plot + 8, y + 16, text, "start", "val"))
    out.append("</svg>")
    return Markup("".join(out))


def distribution_chart(judge: str, counts: Sequence[tuple[str, int]], unscored: int) -> Markup:
    """Vertical bars: how often each value was given, plus one bar for unscored results."""
    bars = [(k, c, "bar") for k, c in counts] + ([("unscored", unscored, "bar unscored")] if unscored else [])
    h, top, bottom, left = 170, 18, 34, 36
    plot_h = h - top - bottom
    n = max(len(bars), 1)
    slot = min(70.0, (W - left - 10) / n)
    peak = max([c for _, c, _ in bars] + [1])
    out = [
        f'<svg class="chart distribution" viewBox="0 0 {W} {h}" role="img" aria-label="{escape(judge)} value distribution">',
        f"<title>{escape(judge)}: how often each value was given</title>",
        f'<line x1="{left}" y1="{h - bottom}" x2="{W - 10}" y2="{h - bottom}" class="axis"/>',
    ]
    if not bars:
        out.append(_t(W / 2, h / 2, "no results", "middle", "note"))
    for i, (key, c, cls) in enumerate(bars):
        bh = plot_h * c / peak
        x = left + i * slot + slot * 0.15
        y = h - bottom - bh
        label = key if len(key) <= 10 else key[:9] + "…"
        out.append(
            f'<g class="bar-group"><title>{escape(key)}: {c}</title>'
            f'<rect class="{cls}" x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{max(bh, 0.5):.1f}"/></g>'
        )
        out.append(_t(x + slot * 0.35, y - 4, str(c), "middle", "val"))
        out.append(_t(x + slot * 0.35, h - bottom + 14, label, "middle", "tick"))
    out.append("</svg>")
    return Markup("".join(out))


def outcome_bar(parts: Sequence[tuple[str, int, str]]) -> Markup:
    """One stacked horizontal bar (label, count, css class), e.g. answer 1 wins / ties / answer 2 wins."""
    total = sum(c for _, c, _ in parts)
    h = 46
    out = [
        f'<svg class="chart outcome" viewBox="0 0 {W} {h}" role="img" aria-label="outcomes">',
        "<title>" + escape(", ".join(f"{lab}: {c}" for lab, c, _ in parts)) + "</title>",
    ]
    x = 0.0
    for lab, c, cls in parts:
        if total == 0 or c == 0:
            continue
        w = W * c / total
        out.append(
            f'<g class="bar-group"><title>{escape(lab)}: {c} ({_pct(c / total)})</title>'
            f'<rect class="{escape(cls)}" x="{x:.1f}" y="4" width="{w:.1f}" height="20"/></g>'
        )
        if w > 60:
            out.append(_t(x + w / 2, 40, f"{lab} {c}", "middle", "tick"))
        x += w
    if total == 0:
        out.append(_t(W / 2, 18, "no scored results", "middle", "note"))
    out.append("</svg>")
    return Markup("".join(out))
