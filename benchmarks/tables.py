"""The result table every benchmark section returns: its markdown (results.md) and its text
(the terminal). A module of its own so that run.py and the section scripts it imports
(scale_bench.py, search_bench.py) share it without importing each other."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        lines = [
            f"### {self.title}",
            "",
            "| " + " | ".join(self.header) + " |",
            "|" + "---|" * len(self.header),
        ]
        lines += ["| " + " | ".join(r) + " |" for r in self.rows]
        lines += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def text(self) -> str:
        cols = [self.header, *self.rows]
        widths = [max(len(r[i]) for r in cols) for i in range(len(self.header))]
        fmt = "  ".join(f"{{:>{w}}}" for w in widths)
        out = [f"== {self.title}", fmt.format(*self.header)]
        out += [fmt.format(*r) for r in self.rows]
        out += [f"   {n}" for n in self.notes]
        return "\n".join(out)


class Section(Protocol):
    """What a benchmark section prints (``text``) and writes to results.md (``markdown``)."""

    def text(self) -> str: ...

    def markdown(self) -> str: ...


def section_main(doc: str, build: Callable[[bool], Section], argv: list[str] | None) -> int:
    """The command line of a module that builds one section: ``--quick`` for smaller sizes,
    ``--markdown FILE`` to also write the section's markdown."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--markdown", type=Path, help="also write the section's markdown here")
    args = ap.parse_args(argv)
    section = build(args.quick)
    print(section.text())
    if args.markdown is not None:
        args.markdown.write_text(section.markdown(), encoding="utf-8")
    return 0
