"""``absorb audit``: the static audit of the Lean library (no toolchain needed).

Exit 4 (:data:`~absorb.errors.EXIT_FINDINGS`) when the audit found a problem.
"""

from __future__ import annotations

import argparse
from typing import Any

from absorb.commands.options import add_root_option
from absorb.commands.result import Result
from absorb.errors import EXIT_FINDINGS
from absorb.lean_project import lean_root

NAME = "audit"
HELP = "static audit of the Lean library (no toolchain needed)"


def add_options(p: argparse.ArgumentParser) -> None:
    add_root_option(p)


def _finding(f: dict[str, Any]) -> str:
    where = f" in {f['declaration']}" if f.get("declaration") else ""
    return f"{f['kind']} {f['file']}:{f['line']}{where}: {f['text']}"


def status_result(res: dict[str, Any]) -> Result:
    """The result of ``audit``/``verify``: one line per theorem, the findings, ok or not (exit 4
    when not ok)."""
    lines = [f"{t['id']:<24} {t['status']}" for t in res["theorems"]]
    lines += [f"finding: {_finding(f)}" for f in res.get("findings", [])]
    lines += [f"exercise (does not fail the audit): {_finding(f)}"
              for f in res.get("exercises", [])]
    if res.get("backend") == "dojo":
        lines.append(f"traced with LeanDojo at commit {res['commit']}"
                     + (f"; not traced (uncommitted): {', '.join(res['uncommitted_lean_changes'])}"
                        if res["uncommitted_lean_changes"] else ""))
    lines.append("ok" if res.get("ok") else "NOT ok")
    return Result(res, lines, 0 if res["ok"] else EXIT_FINDINGS)


def run(args: argparse.Namespace) -> Result:
    from absorb.lean import audit

    return status_result(audit(lean_root(args.root)))
