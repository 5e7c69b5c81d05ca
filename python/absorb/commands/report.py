"""``absorb report``: write the cross-validation report (report.md, index.html, report.json).

Exit 1 when an experiment crashed: the report is written and marks it, but the command did not
fully do its job.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import cast

from absorb.atomic_files import ensure_writable_folder
from absorb.commands.options import seed_type
from absorb.commands.result import Result
from absorb.errors import EXIT_INTERNAL, AbsorbError
from absorb.lean_project import lean_root

NAME = "report"
HELP = "write the cross-validation report"


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True,
                   help="output directory (a previous report there is replaced file by file)")
    p.add_argument("--seed", type=seed_type, default=0,
                   help="random seed, a non-negative integer (same seed, same output)")
    p.add_argument("--root", help="Lean tree to check (default: the project the current folder "
                                  "is in, else the installed package's; the same as `audit`)")


def run(args: argparse.Namespace) -> Result:
    from absorb.report import write_report

    out = ensure_writable_folder(args.out)  # before the minutes of work, not after them
    try:  # the tree `absorb audit` would read here; without one, formal status "not checked"
        root: Path | None = lean_root(args.root)
    except AbsorbError:
        if args.root is not None:
            raise
        root = None
    res = write_report(out, seed=args.seed, progress=True, root=root)
    result = Result(res, [f"report written to {out} (report.md, index.html, report.json); "
                          f"Lean tree read: {root or 'none'}"])
    errored = cast(list[str], res["errored"])
    if errored:
        result.exit_code = EXIT_INTERNAL
        result.failure = f"experiments crashed: {', '.join(errored)} (marked in the report)"
    return result
