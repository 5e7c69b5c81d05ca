"""``absorb activations``: the activation catalog and the theory's verdict for each entry."""

from __future__ import annotations

import argparse

from absorb.activations import CATALOG
from absorb.commands.result import Result

NAME = "activations"
HELP = "the activation catalog and the theory's verdicts"


def add_options(p: argparse.ArgumentParser) -> None:
    """No options beyond ``--json``."""


def _fmt(x: object) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def run(args: argparse.Namespace) -> Result:
    rows = [a.to_json() for a in CATALOG.values()]
    header = ("name", "family", "degree", "gate", "odd", "lean", "verdict")
    table = [header] + [
        (str(r["name"]), str(r["family"]), _fmt(r["degree"] or "-"), str(r["gate"] or "-"),
         "yes" if r["odd_part_linear"] else "no", str(r["lean_name"] or "-"), str(r["verdict"]))
        for r in rows]
    # every column but the last (free text) as wide as its widest cell, two spaces apart
    widths = [max(len(row[k]) for row in table) for k in range(len(header) - 1)]
    lines = ["  ".join([*(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)),
                        row[-1]])
             for row in table]
    return Result({"activations": rows}, lines)
