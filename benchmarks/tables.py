"""The result table every benchmark section returns: its markdown (results.md) and its text
(the terminal). A module of its own so that run.py and the section scripts it imports
(scale_bench.py, search_bench.py) share it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field


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
