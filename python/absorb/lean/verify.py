"""``verify``: build the library with ``lake``, audit the axioms, run the checker on the shared
conformance vectors and on cases decided in Python (:mod:`absorb.lean.checker`)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from absorb.errors import AbsorbError, ToolMissing
from absorb.lean.checker import run_checker
from absorb.lean.output import (
    AxiomReport,
    axiom_probe,
    failed_modules,
    parse_axioms_output,
    parse_diagnostics,
)
from absorb.lean.toolchain import INSTALL_HINT, find_lake, run_process
from absorb.manifest import THEOREMS

# Worst status wins when a theorem has several declarations.
_STATUS_RANK = {"proved": 0, "axiom": 1, "native_decide": 2, "sorry": 3, "error": 4, "missing": 5}


def verify(root: Path, *, timeout: float = 3600.0) -> dict[str, object]:
    """Build the Lean library, audit the axioms of every manifest declaration, run the checker.

    Raises :class:`ToolMissing` when no ``lake`` is found.  ``timeout`` bounds each toolchain
    command.  Returns ``{"theorems": [{"id", "lean", "status", "declarations"}], "build": …,
    "checker": …, "ok": bool}``; ``ok`` holds when the build succeeded, every formalized theorem
    is ``proved`` and every checker verdict matches.
    """
    root = Path(root)
    lake = find_lake()
    if lake is None:
        raise ToolMissing(INSTALL_HINT)
    if not (root / "lakefile.lean").is_file() and not (root / "lakefile.toml").is_file():
        raise AbsorbError(f"{root}: no lakefile (is this the repository root?)")
    build = run_process([str(lake), "build"], root, timeout)
    diagnostics = parse_diagnostics(build.output)
    build_json = {
        "ok": build.returncode == 0,
        "returncode": build.returncode,
        "timed_out": build.timed_out,
        "seconds": round(build.seconds, 1),
        "failed_modules": failed_modules(build.output),
        "errors": [asdict(d) for d in diagnostics if d.severity == "error"],
        "warnings": [asdict(d) for d in diagnostics if d.severity == "warning"],
        "sorry": [asdict(d) for d in diagnostics if d.sorry],
    }
    theorems = _axiom_audit(lake, root, timeout) if not build.timed_out else _all_status("error")
    checker = run_checker(lake, root, timeout) if build.returncode == 0 else []
    ok = (
        bool(build_json["ok"])
        and all(t["status"] in ("proved", "not_formalized") for t in theorems)
        and all(c["agrees"] for c in checker)
    )
    return {"theorems": theorems, "build": build_json, "checker": checker, "ok": ok}


def _all_status(status: str) -> list[dict[str, object]]:
    return [
        {
            "id": thm.id,
            "lean": list(thm.lean),
            "status": status if thm.lean else "not_formalized",
            "declarations": [{"name": n, "status": status, "axioms": []} for n in thm.lean],
        }
        for thm in THEOREMS
    ]


def _axiom_audit(lake: Path, root: Path, timeout: float) -> list[dict[str, object]]:
    names = [name for thm in THEOREMS for name in thm.lean]
    probe, by_line = axiom_probe(names)
    with tempfile.TemporaryDirectory(prefix="absorb-axioms-") as tmp:
        path = Path(tmp) / "AxiomProbe.lean"
        path.write_text(probe, encoding="utf-8")
        result = run_process([str(lake), "env", "lean", str(path)], root, timeout)
    if result.timed_out:
        return _all_status("error")
    reports = parse_axioms_output(result.output, by_line)
    return theorem_statuses(reports)


def theorem_statuses(reports: Mapping[str, AxiomReport]) -> list[dict[str, object]]:
    """Per manifest theorem the worst status among its declarations."""
    out: list[dict[str, object]] = []
    for thm in THEOREMS:
        decls = [reports[name] for name in thm.lean if name in reports]
        if not thm.lean:
            status = "not_formalized"
        elif len(decls) < len(thm.lean):
            status = "error"
        else:
            status = max((d.status for d in decls), key=_STATUS_RANK.__getitem__)
        out.append(
            {
                "id": thm.id,
                "lean": list(thm.lean),
                "status": status,
                "declarations": [
                    {"name": d.name, "status": d.status, "axioms": list(d.axioms)} for d in decls
                ],
            }
        )
    return out
