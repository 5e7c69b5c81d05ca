"""``report.md``: the same content as ``index.html``, with the figures as linked PNG files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from absorb.report import text
from absorb.report.figures import ZERO_LABEL, has_exact_zero


def _table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    cols = text.columns(rows)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(text.fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return [*out, ""]


def _badges(formal: str | None, numerical: str) -> str:
    parts = [] if formal is None else [f"**formal: {text.formal_label(formal)[0]}**"]
    return " · ".join([*parts, f"**numerical: {text.numerical_label(numerical)[0]}**"])


def _experiment(e: Mapping[str, Any], figures: Mapping[str, str], level: str) -> list[str]:
    name = str(e["name"])
    kind_label = text.KINDS[text.kind(e)][0]
    out = [f"{level} {name} ({kind_label}: {text.numerical_label(str(e['status']))[0]})", "",
           str(e["description"]), "", f"*{e['summary']}*", ""]
    if e.get("error"):
        out += [f"> **⚠ crashed:** `{e['error']}`", ""]
    control = e.get("positive_control")
    if control == name:
        out += ["Positive control: the planted rows of this table (same size, same code).", ""]
    elif control:
        status = text.numerical_label(str(e.get("positive_control_status", "error")))[0]
        out += [f"Positive control (same size, same code): `{control}` ({status}).", ""]
    if e["table"]:
        out += _table(e["table"])
    if e.get("table_note"):
        out += [f"Reading the table: {e['table_note']}", ""]
    if name in figures:
        figure: Mapping[str, Any] = e["figure"]
        caption = str(figure.get("caption", ""))
        if has_exact_zero(figure):
            caption += f" ({ZERO_LABEL}: no log axis can show a zero.)"
        out += [f"![{name}]({figures[name]})", "", f"*Figure: {caption}*", ""]
    return out


def _legend() -> list[str]:
    out = ["| group | badge | meaning |", "|---|---|---|"]
    for group, table in (("formal (Lean)", text.FORMAL), ("numerical", text.NUMERICAL),
                         ("kind of experiment", text.KINDS)):
        out += [f"| {group} | {label} | {meaning} |" for label, _, meaning in table.values()]
    return [*out, ""]


def render_markdown(report: Mapping[str, Any], figures: Mapping[str, str]) -> str:
    """Banner and legend first, then the summary, the Lean side, the theorems and the map."""
    _, headline, detail = text.banner(report)
    out = [f"# absorb cross-validation report (seed {report['seed']})", "",
           f"**{text.overview(report)}**", "", f"> **{headline}** {detail}", ""]
    crashed = text.errored_line(report)
    if crashed:
        out += [f"> **⚠ {crashed}**", ""]
    out += ["Paper: Mijoski & Karbevski, *Can an MLP Absorb Its Own Skip Connection?* "
            f"(arXiv 2604.23705). Lean tree read: `{report.get('lean_root') or 'none'}`.", "",
            "| theorem | formal (Lean) | numerical | paper |", "|---|---|---|---|"]
    theorems: Sequence[Mapping[str, Any]] = report["theorems"]
    for t in theorems:
        out.append(f"| `{t['id']}` | {text.formal_label(str(t['formal']['status']))[0]} | "
                   f"{text.numerical_label(str(t['numerical']['status']))[0]} | {t['paper']} |")
    out += ["", "## How to read the badges", "", *_legend()]
    summary, problems = text.lean_rows(report)
    out += ["## Lean library", "", summary, ""]
    if problems:
        out += _table(problems)
    for t in theorems:
        out += [f"## `{t['id']}` — {t['title']}", "",
                _badges(str(t["formal"]["status"]), str(t["numerical"]["status"]))
                + f" · {t['paper']}", "", str(t["statement"]), "",
                "Lean: " + (", ".join(f"`{n}`" for n in t["lean"])
                            or str(t["lean_note"])), ""]
        if t["lean_scope"]:
            out += [f"*Formal scope:* {t['lean_scope']}", ""]
        for e in t["numerical"]["experiments"]:
            if text.in_map(e):
                out += [f"{text.pointer_to_map(e)}: `{e['name']}` "
                        f"({text.numerical_label(str(e['status']))[0]}): shown in the map of the "
                        "open problem below.", ""]
            else:
                out += _experiment(e, figures, "###")
    out += ["## Deep stacks: what is proved, constructed and open", ""]
    for region_kind, heading, blurb, thms, evidence in text.open_problem_map(report):
        out += [f"### [{text.MAP_KIND_LABEL[region_kind][0]}] {heading}", "", blurb, ""]
        out += [f"- `{t['id']}`: " + _badges(str(t["formal"]["status"]),
                                             str(t["numerical"]["status"]))
                for t in thms]
        out += [f"- `{e['name']}` ({text.numerical_label(str(e['status']))[0]}): {e['summary']}"
                for e in evidence if not text.in_map(e)]
        out.append("")
        for e in evidence:
            if text.in_map(e):
                out += _experiment(e, figures, "####")
        if not thms and not evidence:
            out += ["*No computed evidence in this report yet.*", ""]
    return "\n".join(out) + "\n"
