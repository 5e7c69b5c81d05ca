"""``audit``: the static look at the Lean library, with no toolchain."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from absorb.errors import AbsorbError
from absorb.lean.source import Declaration, Finding, ScannedFile, scan_lean
from absorb.manifest import THEOREMS, Theorem


def lean_sources(root: Path) -> list[Path]:
    """The audited files: ``Absorb/**/*.lean``, ``Absorb.lean`` and ``AbsorbCheck.lean``."""
    library = root / "Absorb"
    if not library.is_dir():
        raise AbsorbError(f"{root}: no Lean library folder Absorb/ (is this the repository root?)")
    files = sorted(library.rglob("*.lean"))
    files += [p for p in (root / "Absorb.lean", root / "AbsorbCheck.lean") if p.is_file()]
    return files


def audit(root: Path) -> dict[str, object]:
    """Static audit of the Lean library under ``root`` (no toolchain needed).

    Returns ``{"theorems": [...], "declarations": n, "findings": [...], "ok": bool}`` where
    each theorem carries ``id``, ``lean``, ``status`` (``present`` when every declaration is
    found, ``missing`` otherwise, ``not_formalized`` when the manifest names none, with its
    ``lean_note``) and per declaration its file and line.  ``ok`` is false when any finding
    exists or any declaration is missing.
    """
    root = Path(root)
    scanned: dict[str, ScannedFile] = {}
    for path in lean_sources(root):
        rel = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AbsorbError(f"{rel}: cannot read ({exc})") from None
        scanned[rel] = scan_lean(text, rel)
    findings = [f for s in scanned.values() for f in s.findings]
    findings += _import_findings(root, scanned)
    found = {d.name: d for s in scanned.values() for d in s.declarations}
    theorems = [_audit_theorem(thm, found) for thm in THEOREMS]
    missing = any(t["status"] == "missing" for t in theorems)
    return {
        "root": str(root),
        "files": len(scanned),
        "declarations": len(found),
        "theorems": theorems,
        "findings": [asdict(f) for f in findings],
        "ok": not findings and not missing,
    }


def _import_findings(root: Path, scanned: Mapping[str, ScannedFile]) -> list[Finding]:
    top = scanned.get("Absorb.lean")
    imported = set(top.imports) if top else set()
    modules = sorted(rel for rel in scanned if rel.startswith("Absorb/"))
    out = []
    present = set()
    for rel in modules:
        module = rel.removesuffix(".lean").replace("/", ".")
        present.add(module)
        if module not in imported:
            out.append(
                Finding("not_imported", rel, 0, 0, f"Absorb.lean does not import {module}", None)
            )
    # An import of a module that does not exist breaks `lake build` before anything is checked.
    lines = (root / "Absorb.lean").read_text(encoding="utf-8").splitlines() if top else []
    for module in sorted(m for m in imported if m.startswith("Absorb.") and m not in present):
        line = next((k for k, text in enumerate(lines, 1) if module in text.split()), 0)
        out.append(Finding("missing_module", "Absorb.lean", line, 0,
                           f"Absorb.lean imports {module}, which has no source file", None))
    return out


def _audit_theorem(thm: Theorem, found: Mapping[str, Declaration]) -> dict[str, object]:
    decls: list[dict[str, object]] = []
    for name in thm.lean:
        d = found.get(name)
        decls.append(
            {"name": name, "status": "present", "kind": d.kind, "file": d.file, "line": d.line}
            if d
            else {"name": name, "status": "missing"}
        )
    if not thm.lean:
        status = "not_formalized"
    else:
        status = "present" if all(d["status"] == "present" for d in decls) else "missing"
    return {
        "id": thm.id,
        "lean": list(thm.lean),
        "status": status,
        "declarations": decls,
        "lean_note": thm.lean_note,
    }
