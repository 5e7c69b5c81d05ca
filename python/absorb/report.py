"""The cross-validation report: formal status beside numerical evidence, for every theorem.

:func:`write_report` runs the Lean side (``verify`` when a toolchain exists, the static ``audit``
otherwise) and every experiment of :mod:`absorb.experiments`, and writes ``report.json``,
``report.md``, a self-contained ``index.html`` (figures embedded as base64 PNG) and the PNG files.

Badges.  Formal: ``proved`` (verify: the declarations depend only on the standard axioms),
``audited`` (static audit: every declaration present, none of them containing ``sorry``/
``admit``/``native_decide``; the toolchain was not run), ``missing``, ``sorry``/``native_decide``
/``error`` (problems found), ``not formalized`` (the manifest says why), ``not checked`` (no Lean
sources at hand).  Numerical: ``agrees`` when every experiment of the theorem (controls included;
an *open* exploration is shown but not counted) behaves as the theory predicts, ``disagrees``
otherwise.

Safety of the output folder: everything is written into a fresh temporary folder beside ``out``
and then moved into place, so an interrupted run leaves nothing half-written.  An existing
``out`` must be empty or a previous report (it carries the marker file ``.absorb-report``, which
lists the files the report wrote); only those files are replaced or removed.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from absorb import __version__
from absorb.errors import AbsorbError
from absorb.experiments import EXPERIMENTS, experiment_rng
from absorb.lean import audit, find_lake, verify
from absorb.manifest import THEOREMS, Theorem

MARKER = ".absorb-report"
_REPO_ROOT = Path(__file__).resolve().parents[2]


def default_root() -> Path | None:
    """The repository root holding ``Absorb/`` when running from a checkout, else None."""
    return _REPO_ROOT if (_REPO_ROOT / "Absorb").is_dir() else None


# --------------------------------------------------------------------------------------------
# gathering


def _jsonable(value: object) -> object:
    """Plain JSON: NaN and infinities become None (JSON has no NaN), tuples become lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _formal(root: Path | None, progress: bool) -> tuple[str, dict[str, object] | None]:
    """Lean results: ("verify", …) with a toolchain, ("audit", …) without, ("none", None)."""
    if root is None:
        return "none", None
    if find_lake() is not None:
        if progress:
            print("absorb report: running lake build and the axiom audit …", file=sys.stderr)
        return "verify", verify(root)
    return "audit", audit(root)


def _formal_status(thm: Theorem, source: str, lean: dict[str, object] | None) -> dict[str, object]:
    if not thm.lean:
        return {"status": "not formalized", "detail": thm.lean_note}
    if lean is None:
        return {"status": "not checked", "detail": "no Lean sources found beside the package"}
    entry = next(t for t in lean["theorems"] if t["id"] == thm.id)  # type: ignore[attr-defined]
    if source == "verify":
        return {"status": entry["status"], "detail": "lake build + #print axioms",
                "declarations": entry["declarations"]}
    if entry["status"] == "missing":
        return {"status": "missing", "detail": "static audit: a declaration is missing",
                "declarations": entry["declarations"]}
    own = [f for f in lean["findings"] if f["declaration"] in thm.lean]  # type: ignore[attr-defined]
    if own:
        kinds = sorted({str(f["kind"]) for f in own})
        return {"status": kinds[0], "detail": "static audit found " + ", ".join(kinds),
                "declarations": entry["declarations"], "findings": own}
    return {"status": "audited",
            "detail": "static audit: declarations present, no sorry/admit/native_decide in them "
                      "(the toolchain was not run)",
            "declarations": entry["declarations"]}


def _run_experiments(seed: int, progress: bool) -> dict[str, dict[str, object]]:
    from tqdm import tqdm

    names = [name for thm in THEOREMS for name in thm.experiments]
    results: dict[str, dict[str, object]] = {}
    for name in tqdm(names, desc="experiments", disable=not progress, file=sys.stderr):
        try:
            results[name] = EXPERIMENTS[name](experiment_rng(name, seed)).to_json()
        except Exception as exc:  # a failing experiment is shown in the report, not hidden
            results[name] = {"name": name, "description": "the experiment raised an error",
                             "summary": f"{type(exc).__name__}: {exc}", "agrees": False,
                             "control": False, "open": False, "table": [], "figure": None,
                             "error": f"{type(exc).__name__}: {exc}"}
    return results


def build_report(seed: int, progress: bool, root: Path | None) -> dict[str, object]:
    """The report as a JSON object (no files written)."""
    source, lean = _formal(root, progress)
    results = _run_experiments(seed, progress)
    theorems = []
    for thm in THEOREMS:
        exps = [results[name] for name in thm.experiments]
        counted = [e for e in exps if not e["open"]]
        theorems.append({
            "id": thm.id,
            "title": thm.title,
            "statement": thm.statement,
            "paper": thm.paper,
            "hypotheses": list(thm.hypotheses),
            "lean": list(thm.lean),
            "lean_note": thm.lean_note,
            "lean_scope": thm.lean_scope,
            "formal": _formal_status(thm, source, lean),
            "numerical": {
                "status": "agrees" if all(e["agrees"] for e in counted) else "disagrees",
                "experiments": exps,
            },
        })
    return {
        "tool": "absorb report",
        "version": __version__,
        "seed": seed,
        "formal_source": source,
        "theorems": theorems,
        "lean": lean,
    }


# --------------------------------------------------------------------------------------------
# figures


def _plot(figure: Mapping[str, object], path: Path) -> None:
    """One line plot, PNG, byte-stable (no timestamp or version in the metadata)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for s in figure["series"]:  # type: ignore[attr-defined]
        xs = [x for x, y in zip(s["x"], s["y"], strict=True) if y is not None]
        ys = [y for y in s["y"] if y is not None]
        if figure.get("yscale") == "log":
            # log axes cannot show exact zeros (round-off level agreement): clip at 1e-18
            ys = [max(abs(y), 1e-18) for y in ys]
        ax.plot(xs, ys, marker="o", markersize=3, label=s["label"])
    ax.set_xscale(str(figure.get("xscale", "linear")))
    ax.set_yscale(str(figure.get("yscale", "linear")))
    ax.set_xlabel(str(figure["xlabel"]))
    ax.set_ylabel(str(figure["ylabel"]))
    ax.set_title(str(figure["title"]))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# rendering


def _fmt(value: object) -> str:
    if isinstance(value, bool):
        return "✓" if value else "✗"
    if isinstance(value, float):
        return f"{value:.3g}"
    if value is None:
        return "—"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def _columns(rows: Sequence[Mapping[str, object]]) -> list[str]:
    return list(dict.fromkeys(k for r in rows for k in r))


def _experiment_kind(e: Mapping[str, object]) -> str:
    return "open" if e["open"] else "control" if e["control"] else "test"


def _outcome(e: Mapping[str, object]) -> str:
    if e.get("error"):
        return "error"
    if e["open"]:
        return "open (exploration, no theorem)"
    return "agrees" if e["agrees"] else "disagrees"


def lean_rows(report: Mapping[str, object]) -> tuple[str, list[dict[str, object]]]:
    """A one-line summary of the Lean side and the rows of its problems (findings of the audit;
    errors, sorries and checker disagreements of verify)."""
    lean = report.get("lean")
    if not isinstance(lean, dict):
        return "no Lean sources at hand: formal status not checked", []
    ok = "ok" if lean.get("ok") else "NOT ok"
    if report["formal_source"] == "audit":
        rows = [{"kind": f["kind"], "file": f["file"], "line": f["line"], "text": f["text"]}
                for f in lean["findings"]]
        return (f"static audit ({ok}): {lean['files']} files, {lean['declarations']} "
                f"declarations, {len(rows)} findings; the toolchain was not run"), rows
    build = lean["build"]
    rows = [{"kind": "error" if not d["sorry"] else "sorry", "file": d["file"],
             "line": d["line"], "text": str(d["message"]).splitlines()[0]}
            for d in [*build["errors"], *build["sorry"]]]
    rows += [{"kind": "checker", "file": c["input"], "line": None,
              "text": f"expected {c['expected']}, got {c['output']}"}
             for c in lean["checker"] if not c["agrees"]]
    return (f"lake build + axiom audit ({ok}): build {'passed' if build['ok'] else 'FAILED'} "
            f"in {build['seconds']} s, {len(lean['checker'])} checker runs"), rows


def render_markdown(report: Mapping[str, object], figures: Mapping[str, str]) -> str:
    """``report.md``: per theorem the badges, statement, Lean names and evidence tables."""
    out = [f"# absorb cross-validation report (seed {report['seed']})", "",
           "Paper: Mijoski & Karbevski, *Can an MLP Absorb Its Own Skip Connection?* "
           "(arXiv 2604.23705).", f"Formal status from: {report['formal_source']}.", ""]
    summary, problems = lean_rows(report)
    out += ["## Lean library", "", summary, ""]
    if problems:
        cols = _columns(problems)
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "---|" * len(cols))
        out += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in problems]
        out.append("")
    for t in report["theorems"]:  # type: ignore[attr-defined]
        out += [f"## `{t['id']}` — {t['title']}", "",
                f"**formal: {t['formal']['status']}** · **numerical: {t['numerical']['status']}**"
                f" · {t['paper']}", "", t["statement"], "",
                "Lean: " + (", ".join(f"`{n}`" for n in t["lean"]) or t["lean_note"]), ""]
        if t["lean_scope"]:
            out += [f"*Formal scope:* {t['lean_scope']}", ""]
        for e in t["numerical"]["experiments"]:
            out += [f"### {e['name']} ({_experiment_kind(e)}: {_outcome(e)})", "",
                    e["description"], "", f"*{e['summary']}*", ""]
            rows = e["table"]
            if rows:
                cols = _columns(rows)
                out.append("| " + " | ".join(cols) + " |")
                out.append("|" + "---|" * len(cols))
                out += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows]
                out.append("")
            if e["name"] in figures:
                out += [f"![{e['name']}]({figures[e['name']]})", ""]
    return "\n".join(out) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#1d1d1f;line-height:1.45}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
h3{font-size:1.05em;margin-bottom:.3em}
.badge{display:inline-block;padding:.1em .6em;border-radius:1em;font-size:.85em;
font-weight:600;margin-right:.4em;color:#fff}
.proved,.agrees{background:#1a7f37}.audited{background:#0969da}
.disagrees,.sorry,.missing,.error,.native_decide,.axiom,.admit{background:#cf222e}
.not-formalized,.not-checked,.open{background:#8250df}.control{background:#6e7781}
.test{background:#57606a}
table{border-collapse:collapse;font-size:.8em;margin:.5em 0 1em;display:block;overflow-x:auto}
th,td{border:1px solid #d0d7de;padding:.2em .5em;text-align:right;white-space:nowrap}
th{background:#f6f8fa}.summary td,td:first-child{text-align:left}
code{background:#f6f8fa;padding:0 .2em;border-radius:3px}
.statement{background:#f6f8fa;border-left:4px solid #0969da;padding:.5em 1em}
img{max-width:100%;border:1px solid #eee}nav a{margin-right:.8em}
"""


def _badge(text: str, cls: str | None = None) -> str:
    css = (cls or text).replace(" ", "-")
    return f'<span class="badge {html.escape(css)}">{html.escape(text)}</span>'


def _html_table(rows: Sequence[Mapping[str, object]]) -> str:
    cols = _columns(rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in cols) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(report: Mapping[str, object], images: Mapping[str, bytes]) -> str:
    """``index.html``: self-contained (CSS inline, figures as base64 data URIs)."""
    esc = html.escape
    theorems = report["theorems"]
    nav = " ".join(f'<a href="#{t["id"]}">{esc(t["id"])}</a>' for t in theorems)  # type: ignore[attr-defined]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<title>absorb — cross-validation report</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>Can an MLP absorb its own skip connection? — cross-validation report</h1>",
        "<p>Mijoski &amp; Karbevski, arXiv 2604.23705. Formal status from "
        f"<b>{esc(str(report['formal_source']))}</b>; seed {esc(str(report['seed']))}; "
        f"absorb {esc(str(report['version']))}.</p>",
        "<table class='summary'><thead><tr><th>theorem</th><th>formal</th><th>numerical</th>"
        "<th>paper</th>"
        "</tr></thead><tbody>",
    ]
    for t in theorems:  # type: ignore[attr-defined]
        parts.append(
            f"<tr><td><a href='#{t['id']}'>{esc(t['id'])}</a></td>"
            f"<td>{_badge(t['formal']['status'])}</td><td>{_badge(t['numerical']['status'])}</td>"
            f"<td>{esc(t['paper'])}</td></tr>"
        )
    summary, problems = lean_rows(report)
    parts.append(f"</tbody></table><nav>{nav}</nav><h2 id='lean'>Lean library</h2>"
                 f"<p>{esc(summary)}</p>")
    if problems:
        parts.append(_html_table(problems))
    for t in theorems:  # type: ignore[attr-defined]
        lean = (", ".join(f"<code>{esc(n)}</code>" for n in t["lean"])
                or f"<i>{esc(t['lean_note'])}</i>")
        if t["lean_scope"]:
            lean += f"<br><i>Formal scope: {esc(t['lean_scope'])}</i>"
        hyps = "".join(f"<li>{esc(h)}</li>" for h in t["hypotheses"])
        parts += [
            f"<h2 id='{t['id']}'>{esc(t['title'])} <small><code>{esc(t['id'])}</code></small>"
            "</h2>",
            f"<p>{_badge('formal: ' + t['formal']['status'], t['formal']['status'])}"
            f"{_badge('numerical: ' + t['numerical']['status'], t['numerical']['status'])}"
            f" {esc(t['paper'])}</p>",
            f"<p class='statement'>{esc(t['statement'])}</p>",
            f"<p><b>Hypotheses</b></p><ul>{hyps}</ul>",
            f"<p><b>Lean</b>: {lean}<br><small>{esc(str(t['formal'].get('detail', '')))}"
            "</small></p>",
        ]
        for e in t["numerical"]["experiments"]:
            kind = _experiment_kind(e)
            outcome = _outcome(e)
            parts += [
                f"<h3>{esc(e['name'])} {_badge(kind)}"
                f"{_badge(outcome, 'open' if e['open'] else outcome)}</h3>",
                f"<p>{esc(e['description'])}<br><i>{esc(e['summary'])}</i></p>",
            ]
            if e["table"]:
                parts.append(_html_table(e["table"]))
            if e["name"] in images:
                data = base64.b64encode(images[e["name"]]).decode("ascii")
                parts.append(f"<img alt='{esc(e['name'])}' src='data:image/png;base64,{data}'>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------------------------
# writing


def _previous_files(out: Path) -> list[str]:
    """Files a previous report wrote into ``out``; AbsorbError if ``out`` holds anything else."""
    if not out.exists():
        return []
    if not out.is_dir():
        raise AbsorbError(f"{out} exists and is not a folder")
    marker = out / MARKER
    if marker.is_file():
        try:
            files = json.loads(marker.read_text(encoding="utf-8"))["files"]
        except (json.JSONDecodeError, KeyError, TypeError, OSError):
            raise AbsorbError(f"{marker}: unreadable report marker; move the folder away") from None
        return [str(f) for f in files if isinstance(f, str) and "/" not in f]
    if any(out.iterdir()):
        raise AbsorbError(f"{out} is not empty and holds no previous report; choose another --out")
    return []


def write_report(
    out: Path, *, seed: int = 0, progress: bool = True, root: Path | None = None
) -> dict[str, object]:
    """Run the Lean side and every experiment and write the report into ``out``.

    ``root`` is the repository holding ``Absorb/`` (default: the checkout this package lives
    in, if any).  Returns the report JSON (as in ``report.json``) with ``out`` and ``files``.
    """
    out = Path(out)
    previous = _previous_files(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = _jsonable(build_report(seed, progress, root if root is not None else default_root()))
    assert isinstance(report, dict)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the report is meant to be read and served
    try:
        figures: dict[str, str] = {}
        images: dict[str, bytes] = {}
        for t in report["theorems"]:
            for e in t["numerical"]["experiments"]:
                if e.get("figure"):
                    name = f"fig_{e['name']}.png"
                    _plot(e["figure"], tmp / name)
                    figures[e["name"]] = name
                    images[e["name"]] = (tmp / name).read_bytes()
        (tmp / "report.json").write_text(
            json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
            encoding="utf-8")
        (tmp / "report.md").write_text(render_markdown(report, figures), encoding="utf-8")
        (tmp / "index.html").write_text(render_html(report, images), encoding="utf-8")
        files = sorted(p.name for p in tmp.iterdir())
        (tmp / MARKER).write_text(json.dumps({"tool": "absorb report", "files": files}) + "\n",
                                  encoding="utf-8")
        _move_into_place(tmp, out, files, previous)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return {**report, "out": str(out), "files": files}


def _move_into_place(tmp: Path, out: Path, files: Sequence[str], previous: Sequence[str]) -> None:
    """Fresh ``out``: one rename.  Previous report: replace its files one by one (each an
    atomic rename), drop the files of the old report the new one no longer writes, and leave
    anything else alone; the marker goes last, so it always lists what is there."""
    if not out.exists():
        os.replace(tmp, out)
        return
    for name in files:
        os.replace(tmp / name, out / name)
    for name in set(previous) - set(files):
        (out / name).unlink(missing_ok=True)
    os.replace(tmp / MARKER, out / MARKER)
