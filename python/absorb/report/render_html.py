"""``index.html``: self-contained (CSS inline, figures as base64 data URIs), readable at 700 px."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from absorb.html_style import CSS
from absorb.report import text
from absorb.report.figures import ZERO_LABEL, has_exact_zero

esc = html.escape


def _inline(words: str) -> str:
    """Escaped text with `backtick` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", esc(words))


def _badge(label: str, css: str) -> str:
    return f'<span class="badge {css}">{esc(label)}</span>'


def formal_badge(status: str) -> str:
    return _badge(*text.formal_label(status))


def numerical_badge(status: str) -> str:
    return _badge(*text.numerical_label(status))


def _cell(value: str, column: str) -> str:
    """A table cell: numbers (and ✓ ✗ —) right-aligned on one line, words left-aligned, and
    sentences wrapped (so no table needs a scrollbar to show its last columns at 1280 px);
    ``data-label`` names the column for the one-card-per-row layout of narrow screens."""
    try:
        float(value.split("/")[0])
        numeric = True
    except ValueError:
        numeric = value in ("✓", "✗", "—")
    css = "" if numeric else f" class='{'txt' if len(value) > 24 else 'word'}'"
    return f"<td{css} data-label='{esc(column)}'>{esc(value)}</td>"


def _table(rows: Sequence[Mapping[str, Any]]) -> str:
    cols = text.columns(rows)
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(_cell(text.fmt(r.get(c)), c) for c in cols) + "</tr>" for r in rows
    )
    return (f"<table class='data'><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            "</table>")


def _legend() -> str:
    columns = []
    for group, table in (("Formal (Lean)", text.FORMAL), ("Numerical", text.NUMERICAL),
                         ("Kind of experiment", text.KINDS)):
        items = "".join(f"<li>{_badge(label, css)} {esc(meaning)}</li>"
                        for label, css, meaning in table.values())
        columns.append(f"<div><b>{esc(group)}</b><ul>{items}</ul></div>")
    return ("<details open class='legend'><summary><b>How to read the badges</b></summary>"
            "<div class='legend-grid'>" + "".join(columns) + "</div></details>")


def _experiment(e: Mapping[str, Any], images: Mapping[str, bytes], level: int) -> list[str]:
    name = str(e["name"])
    kind_label, kind_css, _ = text.KINDS[text.kind(e)]
    parts = [f"<h{level} id='exp-{esc(name)}'>{esc(name)} {_badge(kind_label, kind_css)}"
             f"{numerical_badge(str(e['status']))}</h{level}>",
             f"<p>{esc(str(e['description']))}<br><i>{esc(str(e['summary']))}</i></p>"]
    if e.get("error"):
        parts.append(f"<p class='crash'>⚠ crashed: {esc(str(e['error']))}</p>")
    control = e.get("positive_control")
    if control == name:
        parts.append("<p class='control-link'>Positive control: the planted rows of this table "
                     "(same size, same code).</p>")
    elif control:
        parts.append(f"<p class='control-link'>Positive control (same size, same code): "
                     f"<a href='#exp-{esc(str(control))}'>{esc(str(control))}</a> "
                     f"{numerical_badge(str(e.get('positive_control_status', 'error')))}</p>")
    if e["table"]:
        parts.append(_table(e["table"]))
    if e.get("table_note"):
        parts.append(f"<p class='note'>Reading the table: {esc(str(e['table_note']))}</p>")
    if name in images:
        data = base64.b64encode(images[name]).decode("ascii")
        figure = e["figure"]
        caption = str(figure.get("caption", ""))
        if has_exact_zero(figure):
            caption += f" ({ZERO_LABEL}: no log axis can show a zero.)"
        parts.append(f"<figure><img alt='{esc(name)}' src='data:image/png;base64,{data}'>"
                     f"<figcaption>{esc(caption)}</figcaption></figure>")
    return parts


def _map(report: Mapping[str, Any], images: Mapping[str, bytes]) -> list[str]:
    parts = ["<h2 id='open-problem'>Deep stacks: what is proved, constructed and open</h2>",
             "<p>The paper asks whether deep ReLU/GELU residual stacks can equal residual-free "
             "stacks of the same widths. The map below separates what is proved, what is built "
             "explicitly, and what remains open, each with its computed evidence.</p>"]
    for region_kind, heading, blurb, thms, evidence in text.open_problem_map(report):
        label, css = text.MAP_KIND_LABEL[region_kind]
        parts += ["<div class='region'>", f"<h3>{_badge(label, css)}{esc(heading)}</h3>",
                  f"<p>{esc(blurb)}</p>"]
        if thms:
            parts.append("<p>" + "<br>".join(
                f"<a href='#{esc(str(t['id']))}'><code>{esc(str(t['id']))}</code></a> "
                f"{formal_badge(str(t['formal']['status']))}"
                f"{numerical_badge(str(t['numerical']['status']))}" for t in thms) + "</p>")
        listed = [e for e in evidence if not text.in_map(e)]
        if listed:
            parts.append("<ul>" + "".join(
                f"<li><a href='#exp-{esc(str(e['name']))}'>{esc(str(e['name']))}</a> "
                f"{numerical_badge(str(e['status']))} {esc(str(e['summary']))}</li>"
                for e in listed) + "</ul>")
        for e in evidence:
            if text.in_map(e):
                parts += _experiment(e, images, 4)
        if not thms and not evidence:
            parts.append("<p><i>No computed evidence in this report yet.</i></p>")
        parts.append("</div>")
    return parts


def render_html(report: Mapping[str, Any], images: Mapping[str, bytes]) -> str:
    """The page: banner and legend first, then the summary, the Lean side, one section per
    theorem, and the map of the open problem."""
    theorems: Sequence[Mapping[str, Any]] = report["theorems"]
    css, headline, detail = text.banner(report)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<title>absorb — cross-validation report</title>", f"<style>{CSS}</style></head><body>",
        "<h1>Can an MLP absorb its own skip connection? — cross-validation report</h1>",
        f"<p class='overview'>{esc(text.overview(report))}</p>",
        f"<div class='banner b-{css}'><p class='head'>{esc(headline)}</p>"
        f"<p>{_inline(detail)}</p></div>",
    ]
    crashed = text.errored_line(report)
    if crashed:
        parts.append(f"<div class='banner b-errored'><p class='head'>⚠ {esc(crashed)}</p></div>")
    parts += [
        "<p>Mijoski &amp; Karbevski, arXiv 2604.23705. Seed "
        f"{esc(str(report['seed']))}; absorb {esc(str(report['version']))}; Lean tree read: "
        f"<code>{esc(str(report.get('lean_root') or 'none'))}</code>.</p>",
        "<table class='summary'><thead><tr><th>theorem</th><th>formal (Lean)</th>"
        "<th>numerical</th><th>paper</th></tr></thead><tbody>",
    ]
    for t in theorems:
        parts.append(
            f"<tr><td><a href='#{esc(str(t['id']))}'>{esc(str(t['id']))}</a></td>"
            f"<td>{formal_badge(str(t['formal']['status']))}</td>"
            f"<td>{numerical_badge(str(t['numerical']['status']))}</td>"
            f"<td>{esc(str(t['paper']))}</td></tr>")
    parts += ["</tbody></table>", _legend()]
    nav = " ".join(f"<a href='#{esc(str(t['id']))}'>{esc(str(t['id']))}</a>" for t in theorems)
    summary, problems = text.lean_rows(report)
    parts.append(f"<nav>{nav} <a href='#open-problem'>open problem</a></nav>"
                 f"<h2 id='lean'>Lean library</h2><p>{esc(summary)}</p>")
    if problems:
        parts.append(_table(problems))
    for t in theorems:
        parts += _theorem(t, images)
    parts += _map(report, images)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _theorem(t: Mapping[str, Any], images: Mapping[str, bytes]) -> list[str]:
    formal: Mapping[str, Any] = t["formal"]
    lean = (", ".join(f"<code>{esc(n)}</code>" for n in t["lean"])
            or f"<i>{esc(str(t['lean_note']))}</i>")
    if t["lean_scope"]:
        lean += f"<br><i>Formal scope: {esc(str(t['lean_scope']))}</i>"
    if formal.get("detail") and t["lean"]:
        lean += f"<br><small>{esc(str(formal['detail']))}</small>"
    hyps = "".join(f"<li>{esc(h)}</li>" for h in t["hypotheses"])
    parts = [
        f"<h2 id='{esc(str(t['id']))}'>{esc(str(t['title']))} "
        f"<small><code>{esc(str(t['id']))}</code></small></h2>",
        f"<p>{formal_badge(str(formal['status']))}"
        f"{numerical_badge(str(t['numerical']['status']))} {esc(str(t['paper']))}</p>",
        f"<p class='statement'>{esc(str(t['statement']))}</p>",
        f"<p><b>Hypotheses</b></p><ul>{hyps}</ul>",
        f"<p><b>Lean</b>: {lean}</p>",
    ]
    for e in t["numerical"]["experiments"]:
        if text.in_map(e):
            parts.append(f"<p>{esc(text.pointer_to_map(e))}: <code>{esc(str(e['name']))}</code>"
                         f" {numerical_badge(str(e['status']))}: shown in "
                         f"<a href='#exp-{esc(str(e['name']))}'>the map of the open problem</a>."
                         "</p>")
        else:
            parts += _experiment(e, images, 3)
    return parts
