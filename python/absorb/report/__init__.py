"""The cross-validation report: formal status beside numerical evidence, for every theorem.

:func:`write_report` runs the Lean side (``verify`` when a toolchain exists: the proofs are
*compiled*; the static ``audit`` otherwise: the files are only *read*) and every experiment of
:mod:`absorb.experiments`, and writes ``report.json``, ``report.md``, a self-contained
``index.html`` (figures embedded as base64 PNG) and the PNG files.

Modules: :mod:`~absorb.report.build` gathers the JSON (evidence states ``agrees``, ``disagrees``,
``open``, ``error``), :mod:`~absorb.report.figures` draws, :mod:`~absorb.report.text` holds the
words both renderings share (badges, legend, banner, the map of the open problem),
:mod:`~absorb.report.render_html` and :mod:`~absorb.report.render_markdown` render, and
:mod:`~absorb.report.write` writes the folder safely.
"""

from absorb.report.build import build_report, errored
from absorb.report.write import MARKER, write_report

__all__ = ["MARKER", "build_report", "errored", "write_report"]
