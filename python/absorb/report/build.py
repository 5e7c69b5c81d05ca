"""Gathering the report: the Lean side, every experiment, and the evidence state per theorem.

Formal side: ``verify`` (``lake build`` and the axiom audit) when a toolchain is on PATH, else the
static ``audit`` (the Lean files read as text), else nothing.  Numerical side: every experiment
the manifest names, run through :func:`absorb.experiments.run_experiment`, so a crash is the
state ``error`` with its one-line cause.  A theorem's numerical state is ``error`` when one of its
counted experiments (open explorations are shown, not counted) errored, ``disagrees`` when one
disagrees or is a negative result whose positive control did not agree, else ``agrees``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from pathlib import Path

from absorb import __version__
from absorb.errors import AbsorbError
from absorb.experiments import ExperimentResult, run_experiment
from absorb.lean import audit, find_lake, verify
from absorb.manifest import THEOREMS, Theorem


def jsonable(value: object) -> object:
    """Plain JSON: NaN and infinities become None (JSON has no NaN), tuples become lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def _formal(root: Path | None, progress: bool) -> tuple[str, dict[str, object] | None]:
    """Lean results: ("verify", …) with a toolchain, ("audit", …) without, ("none", None)."""
    if root is None:
        return "none", None
    if find_lake() is not None:
        if progress:
            print("absorb report: running lake build and the axiom audit …", file=sys.stderr)
        return "verify", verify(root)
    return "audit", audit(root)


def _formal_status(thm: Theorem, source: str, lean: dict[str, object] | None) -> dict[str, object]:
    """One theorem's formal badge; the source (compiled or audited) is said once, at the top."""
    if not thm.lean:
        return {"status": "not formalized", "detail": thm.lean_note}
    if lean is None:
        return {"status": "not checked", "detail": "no Lean sources found"}
    entry = next(t for t in lean["theorems"] if t["id"] == thm.id)  # type: ignore[attr-defined]
    if source == "verify":
        return {"status": entry["status"], "declarations": entry["declarations"]}
    if entry["status"] == "missing":
        return {"status": "missing", "detail": "a declaration is missing",
                "declarations": entry["declarations"]}
    own = [f for f in lean["findings"] if f["declaration"] in thm.lean]  # type: ignore[attr-defined]
    if own:
        kinds = sorted({str(f["kind"]) for f in own})
        return {"status": kinds[0], "detail": "the audit found " + ", ".join(kinds),
                "declarations": entry["declarations"], "findings": own}
    return {"status": "audited", "declarations": entry["declarations"]}


def run_experiments(seed: int, progress: bool) -> dict[str, dict[str, object]]:
    """Every experiment the manifest names, as JSON, in manifest order; never raises for a
    crashing (or unregistered) experiment: that one comes back with status ``error``."""
    from tqdm import tqdm

    results: dict[str, dict[str, object]] = {}
    pairs = [(name, thm.id) for thm in THEOREMS for name in thm.experiments]
    for name, tid in tqdm(pairs, desc="experiments", disable=not progress, file=sys.stderr):
        try:
            result = run_experiment(name, seed)
        except AbsorbError as exc:  # named by the manifest but not registered
            result = ExperimentResult.crashed(name, tid, exc)
        results[name] = result.to_json()
    return results


def _attach_controls(results: Mapping[str, dict[str, object]]) -> None:
    """Give every negative result the state of its positive control (``missing`` when the
    control is not among the results)."""
    for e in results.values():
        control = e.get("positive_control")
        if control:
            other = results.get(str(control))
            e["positive_control_status"] = other["status"] if other else "missing"


def theorem_state(experiments: list[dict[str, object]]) -> str:
    """``error`` > ``disagrees`` > ``agrees`` over the counted (non-open) experiments; a negative
    result only counts as agreeing when its positive control agrees too."""
    counted = [e for e in experiments if not e["open"] or e["status"] == "error"]
    if any(e["status"] == "error" for e in counted):
        return "error"
    if any(e["status"] != "agrees" or e.get("positive_control_status", "agrees") != "agrees"
           for e in counted):
        return "disagrees"
    return "agrees"


def errored(report: Mapping[str, object]) -> list[str]:
    """Names of the experiments that raised (status ``error``), in report order."""
    return [str(e["name"]) for t in report["theorems"]  # type: ignore[attr-defined]
            for e in t["numerical"]["experiments"] if e["status"] == "error"]


def build_report(seed: int, progress: bool, root: Path | None) -> dict[str, object]:
    """The report as a JSON object (no files written).  ``root`` is the Lean tree read (None:
    no tree, formal status "not checked")."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise AbsorbError(f"seed must be a non-negative integer, got {seed!r}")
    source, lean = _formal(root, progress)
    results = run_experiments(seed, progress)
    _attach_controls(results)
    theorems = []
    for thm in THEOREMS:
        exps = [results[name] for name in thm.experiments]
        theorems.append({
            "id": thm.id,
            "title": thm.title,
            "statement": thm.statement,
            "paper": thm.paper,
            "hypotheses": list(thm.hypotheses),
            "lean": list(thm.lean),
            "lean_note": thm.lean_note,
            "lean_scope": thm.lean_scope,
            "formal": _formal_status(thm, source, lean),
            "numerical": {"status": theorem_state(exps), "experiments": exps},
        })
    report: dict[str, object] = {
        "tool": "absorb report",
        "version": __version__,
        "seed": seed,
        "formal_source": source,
        "lean_root": str(root) if root is not None else None,
        "theorems": theorems,
        "lean": lean,
    }
    report["errored"] = errored(report)
    return report
