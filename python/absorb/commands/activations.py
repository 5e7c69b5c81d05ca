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
    lines = [f"{'name':<10} {'family':<12} {'degree':<7} {'gate':<8} {'odd':<4} "
             f"{'lean':<15} verdict"]
    lines += [f"{r['name']:<10} {r['family']:<12} {_fmt(r['degree'] or '-'):<7} "
              f"{r['gate'] or '-':<8} {'yes' if r['odd_part_linear'] else 'no':<4} "
              f"{r['lean_name'] or '-':<15} {r['verdict']}"
              for r in rows]
    return Result({"activations": rows}, lines)
