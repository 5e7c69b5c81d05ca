"""The report's figures: PNG line plots from the plain figure dicts of the experiments.

A figure dict is ``{"title", "xlabel", "ylabel", "xscale", "yscale", "series", "caption"}``,
optionally ``"xticks"`` (and ``"xticklabels"``): ticks at the instances a figure compares;
each series is ``{"label", "x", "y"}`` with optional ``"panel"`` (series sharing a panel share a
subplot; panels sit side by side) and ``"style"`` (``"line"``, ``"markers"`` or ``"both"``, the
default).  Every series gets its own marker and line style, so curves that coincide stay visible
(a measured curve drawn as a line with its prediction as hollow markers on top reads as "they
agree").  On a log axis an exact zero has no place: it is drawn as a ▼ on the bottom edge of
the axes, and the legend says so, never as a made-up tiny value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*")
_LINESTYLES = ("-", "--", ":", "-.")
ZERO_LABEL = "▼ on the bottom edge: exactly 0"


def _points(s: Mapping[str, Any]) -> list[tuple[float, float]]:
    """The plottable points of a series (JSON null = NaN/∞ is left out)."""
    return [(float(x), float(y)) for x, y in zip(s["x"], s["y"], strict=True)
            if x is not None and y is not None]


def log_floor(series: Sequence[Mapping[str, Any]]) -> float:
    """The bottom of a log axis: one decade below the smallest nonzero |y| (a power of ten)."""
    nonzero = [abs(y) for s in series for _, y in _points(s) if y != 0]
    return 10.0 ** (math.floor(math.log10(min(nonzero))) - 1) if nonzero else 1.0


def has_exact_zero(figure: Mapping[str, Any]) -> bool:
    return figure.get("yscale") == "log" and any(
        y == 0 for s in figure["series"] for _, y in _points(s))


def plot(figure: Mapping[str, Any], path: Path) -> None:
    """One figure (one or more side-by-side panels), PNG, byte-stable (no timestamp or version
    in the metadata)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    series: Sequence[Mapping[str, Any]] = figure["series"]
    panels = list(dict.fromkeys(str(s.get("panel", "")) for s in series))
    log = figure.get("yscale") == "log"
    floor = log_floor(series) if log else 0.0
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 2.6, 4.0), dpi=100,
                             sharey=True, squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        members = [s for s in series if str(s.get("panel", "")) == panel]
        for i, s in enumerate(members):
            pts = _points(s)
            # a zero breaks the line (NaN) instead of being bridged or faked as a tiny value
            shown = [(x, math.nan if log and y == 0 else abs(y) if log else y) for x, y in pts]
            zeros = [x for x, y in pts if log and y == 0]
            style = str(s.get("style", "both"))
            # Hollow markers of shrinking size nest inside each other where curves coincide;
            # on dense curves they are staggered between series so each one shows.
            step = max(1, len(shown) // 10)
            (line,) = ax.plot(
                [p[0] for p in shown], [p[1] for p in shown], label=str(s["label"]),
                linestyle="none" if style == "markers" else _LINESTYLES[i % len(_LINESTYLES)],
                marker="" if style == "line" else _MARKERS[i % len(_MARKERS)],
                markersize=max(4.0, 9.0 - 1.5 * i), fillstyle="none", markeredgewidth=1.4,
                markevery=(i * step // len(members), step) if len(shown) > 25 else None,
                linewidth=2.2 if style == "line" else 1.3, zorder=3 + i,
            )
            if zeros:
                ax.plot(zeros, [floor] * len(zeros), linestyle="none", marker="v", markersize=8,
                        color=line.get_color(), clip_on=False, zorder=10)
        ax.set_xscale(str(figure.get("xscale", "linear")))
        ax.set_yscale(str(figure.get("yscale", "linear")))
        if "xticks" in figure:
            ax.set_xticks([float(t) for t in figure["xticks"]])
            if "xticklabels" in figure:
                ax.set_xticklabels([str(t) for t in figure["xticklabels"]], fontsize=7)
        if log:
            ax.set_ylim(bottom=floor)
        ax.set_xlabel(str(figure["xlabel"]))
        if panel:
            ax.set_title(panel, fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if has_exact_zero({"yscale": figure.get("yscale"), "series": members}):
            handles.append(Line2D([], [], linestyle="none", marker="v", color="0.3"))
            labels.append(ZERO_LABEL)
        ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0)
                  if len(panels) == 1 else (0.0, -0.18), borderaxespad=0.0)
    axes[0][0].set_ylabel(str(figure["ylabel"]))
    fig.suptitle(str(figure["title"]), fontsize=11)
    fig.savefig(path, format="png", metadata={"Software": None}, bbox_inches="tight")
    plt.close(fig)
