"""A scan's output folder (``--out DIR``): the JSON, a summary table and figure, the cache.

``DIR/inspect.json`` holds the ``--json`` object; ``DIR/summary.html`` the table of every
layer (layer, d, n, verdict, distance r/‖A‖_F, margin, time) and the figure
``DIR/summary.png`` (distance and dual-certificate margin per layer, the verdict as a coloured
strip); ``DIR/cache/`` the per-layer results a rerun resumes from. The page has the report's
stylesheet (:mod:`absorb.html_style`).
A folder is used only when it is new, empty or an earlier scan's (marked by
``.absorb-scan``): a user's other files are never overwritten. Files are replaced
atomically, the three together (Ctrl-C leaves the old set or the new one).
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from absorb.atomic_files import ensure_writable_folder, interrupts_deferred, write_atomic
from absorb.errors import AbsorbError
from absorb.html_style import CSS
from absorb.verdicts import (
    AbsorbableUpToRounding,
    Absorbed,
    Impossible,
    NotAbsorbed,
    Undetermined,
)

MARKER = ".absorb-scan"
FILES = ("inspect.json", "summary.html", "summary.png")
# one colour per verdict, the same in the figure and the table
COLOURS = {Absorbed.kind: "#1b9e77", AbsorbableUpToRounding.kind: "#66a61e",
           NotAbsorbed.kind: "#d95f02", Impossible.kind: "#7570b3",
           Undetermined.kind: "#999999", "error": "#e7298a"}
#: A panel whose values span at least this factor (largest / smallest) gets a log axis; a
#: narrower one a linear axis from 0 with the values' range written on it (a log axis over a
#: fraction of a decade has no labelled tick to read a value from).
LOG_SPAN = 10.0


def check_out(folder: str | Path) -> Path:
    """``folder`` when a scan may write there (AbsorbError when it cannot be written or holds
    something else: :func:`~absorb.atomic_files.ensure_writable_folder`); nothing is written
    yet."""
    try:
        out = ensure_writable_folder(folder)
    except AbsorbError as exc:
        raise AbsorbError(f"--out {exc}") from None
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise AbsorbError(f"--out {out}: the folder holds other files and no earlier scan "
                          f"({MARKER}); choose a new or empty folder (nothing was written)")
    for name in FILES:  # a file cannot replace a folder: refused now, not after the scan
        if (out / name).is_dir():
            raise AbsorbError(f"--out {out / name} is a folder where the scan writes a file; "
                              "move it away (nothing was computed or written)")
    return out


def prepare_out(out: Path) -> None:
    """Create the scan folder and mark it as a scan's (before its first file)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).touch()


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def series(res: Mapping[str, Any]) -> tuple[list[str], list[str], list[float | None],
                                            list[float | None]]:
    """Per layer: label, verdict, distance r/‖A‖_F and dual-certificate margin (None where
    the verdict has none)."""
    labels, verdicts, dist, margin = [], [], [], []
    for row in res["layers"]:
        cert = row.get("certificate") or {}
        labels.append(str(row["label"]))
        verdicts.append(str(row["verdict"]))
        dist.append(_number(cert.get("distance")))
        margin.append(_number((cert.get("dual") or {}).get("margin_float")))
    return labels, verdicts, dist, margin


def _panel(ax: Any, values: Sequence[float | None], verdicts: Sequence[str], name: str) -> None:
    """One panel of the figure: a value per layer (the positive ones; none for a verdict
    without it), coloured by verdict, on a log axis when they span LOG_SPAN or more, else on a
    linear axis from 0 (no offset: the tick labels are the values) with their range written."""
    from matplotlib.ticker import ScalarFormatter

    pts = [(i, v, verdicts[i]) for i, v in enumerate(values) if v is not None and v > 0]
    ax.scatter([p[0] for p in pts], [p[1] for p in pts],
               c=[COLOURS.get(p[2], "black") for p in pts], s=24, zorder=3)
    ax.set_ylabel(name)
    ax.grid(True, alpha=0.3)
    if not pts:  # no axis to read: say so instead of matplotlib's default -0.04 to 0.04
        ax.set_yticks([])
        ax.text(0.5, 0.5, f"no layer has a {name} above 0", ha="center", va="center",
                fontsize=9, transform=ax.transAxes)
        return
    low, high = min(p[1] for p in pts), max(p[1] for p in pts)
    if high >= LOG_SPAN * low:
        ax.set_yscale("log")
        return
    ax.yaxis.set_major_formatter(ScalarFormatter(useOffset=False))
    ax.set_ylim(0.0, 1.25 * high)
    spread = "" if len(pts) < 2 else f" (spread {100 * (high - low) / high:.2g} %)"
    ax.text(0.01, 0.96, f"{len(pts)} layers: {low:.6g} to {high:.6g}{spread}", fontsize=8,
            transform=ax.transAxes, va="top")


def figure(res: Mapping[str, Any]) -> Any:
    """The summary figure (a matplotlib Figure; the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    labels, verdicts, dist, margin = series(res)
    x = list(range(len(labels)))
    fig, axes = plt.subplots(3, 1, figsize=(max(6.0, 0.18 * len(x) + 3.0), 6.4), dpi=100,
                             sharex=True, gridspec_kw={"height_ratios": [3, 3, 1]})
    _panel(axes[0], dist, verdicts, "distance r/|A|_F")
    _panel(axes[1], margin, verdicts, "certificate margin")
    axes[2].bar(x, [1] * len(x), width=1.0, color=[COLOURS.get(v, "black") for v in verdicts])
    axes[2].set_yticks([])
    axes[2].set_ylabel("verdict")
    step = max(1, len(x) // 30)
    axes[2].set_xticks(x[::step], labels[::step], rotation=90, fontsize=7)
    axes[2].set_xlabel("layer")
    present = list(dict.fromkeys(verdicts))
    fig.legend([Patch(color=COLOURS.get(v, "black")) for v in present], present,
               loc="upper right", fontsize=7)
    fig.suptitle(f"{res['checkpoint']}: {len(x)} layers", fontsize=10)
    return fig


def figure_png(res: Mapping[str, Any]) -> bytes:
    """The summary figure as PNG bytes (no timestamp in the metadata: byte-stable)."""
    import matplotlib.pyplot as plt

    fig = figure(res)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None}, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def table_html(res: Mapping[str, Any], rows: Sequence[Sequence[str]]) -> str:
    """The summary page: what was scanned, the table (``rows``, header first), the figure."""
    head, *body = rows
    arch = res.get("architecture") or {}
    verdict_col = list(head).index("verdict")
    cells = "\n".join(
        "<tr>" + "".join(
            f'<td class="word" style="color:{COLOURS.get(r[verdict_col], "black")}">'
            f"{html.escape(c)}</td>"
            if k == verdict_col else f"<td>{html.escape(c)}</td>" for k, c in enumerate(r))
        + "</tr>" for r in body)
    scan = res.get("scan") or {}
    plan = scan.get("plan") or {}
    name = html.escape(str(res["checkpoint"]))
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>\n"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
            f"<title>absorb inspect: {name}</title>\n<style>{CSS}</style></head><body>\n"
            f"<h1>absorb inspect: {name}</h1>\n"
            f"<p class='overview'>{len(body)} layers; "
            f"{html.escape(str(arch.get('name', 'explicit patterns')))}; "
            f"activation {html.escape(str(res['activation']))}; decided by "
            f"{html.escape(str(scan.get('runner')))}; {scan.get('cached_layers', 0)} from the "
            f"cache, {scan.get('computed_layers', len(body))} computed; predicted "
            f"{plan.get('predicted_seconds', 0):.3g} s.</p>\n"
            f"<p class='note'>{html.escape(str(res['note']))}</p>\n"
            "<table>\n<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head)
            + f"</tr></thead>\n<tbody>\n{cells}\n</tbody></table>\n"
            "<figure><img src='summary.png' alt='distance, margin and verdict per layer'>"
            "</figure>\n</body></html>\n")


def write_outputs(out: Path, res: dict[str, Any], json_text: str,
                  rows: Callable[[dict[str, Any]], list[list[str]]]) -> list[str]:
    """Write inspect.json, summary.html and summary.png into ``out``; their paths."""
    png = figure_png(res)
    page = table_html(res, rows(res))
    with interrupts_deferred():
        write_atomic(out / "inspect.json", json_text)
        write_atomic(out / "summary.png", png)
        write_atomic(out / "summary.html", page)
    return [str(out / f) for f in FILES]
