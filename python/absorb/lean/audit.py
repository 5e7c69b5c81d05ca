"""``audit``: the static look at the Lean library, with no toolchain.

Which files belong to what comes from the build file: every ``lean_lib`` of ``lakefile.lean``
(or ``lakefile.toml``) with its ``roots``; a library marked ``@[default_target]`` (``lake
build`` checks it) is *the library*, any other is teaching material (the ``AbsorbExercises``
sheet, whose ``sorry`` placeholders are for students to fill).  Findings in the library fail
the audit; findings in the other libraries are listed under ``exercises`` and do not, unless
the library imports one of their modules.  Manifest declarations count only where the library
declares them.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from absorb.errors import AbsorbError
from absorb.lean.source import (
    Declaration,
    Finding,
    ScannedFile,
    scan_lean,
    strip_comments_and_strings,
)
from absorb.manifest import THEOREMS, Theorem


@dataclass(frozen=True)
class LeanLib:
    """One ``lean_lib`` of the build file: its module roots, and whether ``lake build``
    builds it by default."""

    name: str
    roots: tuple[str, ...]
    default: bool

    def owns(self, module: str) -> bool:
        """Whether ``module`` (``A.B.C``) is one of the roots or below one."""
        return any(module == r or module.startswith(r + ".") for r in self.roots)


#: Without a build file: the library as the repository lays it out.
FALLBACK_LIBS = (LeanLib("Absorb", ("Absorb", "AbsorbCheck"), True),)

#: Where a ``lakefile.lean`` declaration's body ends: at the next declaration or the end.
_NEXT_DECL = (r"(?=^[ \t]*(?:@\[|lean_lib\b|lean_exe\b|require\b|package\b|target\b"
              r"|extern_lib\b)|\Z)")
_LIB_RE = re.compile(
    r"^((?:[ \t]*@\[[^\]]*\]\s*)*)[ \t]*lean_lib\s+(«[^»]+»|[\w.]+)(.*?)" + _NEXT_DECL,
    re.MULTILINE | re.DOTALL,
)
_ROOTS_RE = re.compile(r"\broots\s*:=\s*#\[([^\]]*)\]")


def parse_lakefile_lean(text: str) -> tuple[LeanLib, ...]:
    """The ``lean_lib`` declarations of a ``lakefile.lean`` (comments ignored): name, the
    backtick names of ``roots := #[…]`` (default: the library's own name) and whether an
    attribute ``@[default_target]`` precedes it."""
    libs = []
    for m in _LIB_RE.finditer(strip_comments_and_strings(text)):
        attrs, name, body = m.group(1), m.group(2).strip("«»"), m.group(3)
        roots_m = _ROOTS_RE.search(body)
        roots = tuple(re.findall(r"`([^\s,\]]+)", roots_m.group(1))) if roots_m else (name,)
        libs.append(LeanLib(name, tuple(r.strip("«»") for r in roots), "default_target" in attrs))
    return tuple(libs)


def parse_lakefile_toml(text: str) -> tuple[LeanLib, ...]:
    """The ``[[lean_lib]]`` tables of a ``lakefile.toml``; defaults from ``defaultTargets``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AbsorbError(f"lakefile.toml: {exc}") from None
    defaults = set(data.get("defaultTargets", []))
    return tuple(
        LeanLib(str(lib["name"]), tuple(str(r) for r in lib.get("roots", [lib["name"]])),
                lib["name"] in defaults)
        for lib in data.get("lean_lib", []) if isinstance(lib, dict) and "name" in lib
    )


_EXE_RE = re.compile(r"^[ \t]*lean_exe\s+(«[^»]+»|[\w.-]+)(.*?)" + _NEXT_DECL,
                     re.MULTILINE | re.DOTALL)
_EXE_ROOT_RE = re.compile(r"\broot\s*:=\s*`([^\s,]+)")


def parse_lean_exes(text: str) -> dict[str, str]:
    """The ``lean_exe`` declarations of a ``lakefile.lean``: name → root module (``root :=
    `M``, by default the executable's name)."""
    out = {}
    for m in _EXE_RE.finditer(strip_comments_and_strings(text)):
        name = m.group(1).strip("«»")
        root = _EXE_ROOT_RE.search(m.group(2))
        out[name] = root.group(1).strip("«»") if root else name
    return out


def lean_libs(root: Path) -> tuple[LeanLib, ...]:
    """The libraries of the build file under ``root`` (:data:`FALLBACK_LIBS` without one)."""
    for name, parse in (("lakefile.lean", parse_lakefile_lean),
                        ("lakefile.toml", parse_lakefile_toml)):
        path = root / name
        if path.is_file():
            try:
                libs = parse(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise AbsorbError(f"{path}: cannot read ({exc})") from None
            if any(lib.default for lib in libs):
                return libs
    return FALLBACK_LIBS


def _module(rel: str) -> str:
    return rel.removesuffix(".lean").replace("/", ".")


def lean_sources(root: Path, libs: Sequence[LeanLib] | None = None) -> list[Path]:
    """The audited files: for every root ``R`` of every library, ``R.lean`` and
    ``R/**/*.lean`` (``Absorb/``, ``Absorb.lean``, ``AbsorbCheck.lean``, the exercises)."""
    if not (root / "Absorb").is_dir():
        raise AbsorbError(f"{root}: no Lean library folder Absorb/ (is this the repository root?)")
    files: set[Path] = set()
    for lib in lean_libs(root) if libs is None else libs:
        for r in lib.roots:
            base = root.joinpath(*r.split("."))
            files.update(p for p in (base.with_name(base.name + ".lean"),) if p.is_file())
            if base.is_dir():
                files.update(base.rglob("*.lean"))
    return sorted(files)


def audit(root: Path) -> dict[str, object]:
    """Static audit of the Lean library under ``root`` (no toolchain needed).

    Returns ``{"theorems": [...], "declarations": n, "findings": [...], "exercises": [...],
    "libraries": [...], "ok": bool}`` where each theorem carries ``id``, ``lean``, ``status``
    (``present`` when every declaration is found in the library, ``missing`` otherwise,
    ``not_formalized`` when the manifest names none, with its ``lean_note``) and per
    declaration its file and line.  ``findings`` are the library's, ``exercises`` those of the
    libraries that are not default targets.  ``ok`` is false when the library has a finding
    or a declaration is missing; exercises never make it false.
    """
    root = Path(root)
    libs = lean_libs(root)
    scanned: dict[str, ScannedFile] = {}
    for path in lean_sources(root, libs):
        rel = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AbsorbError(f"{rel}: cannot read ({exc})") from None
        scanned[rel] = scan_lean(text, rel)
    in_library = {rel: _in_library(rel, libs) for rel in scanned}
    every = [f for s in scanned.values() for f in s.findings]
    every += _import_findings(root, scanned, libs)
    findings = [f for f in every if in_library[f.file]]
    exercises = [f for f in every if not in_library[f.file]]
    found = {d.name: d for rel, s in scanned.items() if in_library[rel] for d in s.declarations}
    theorems = [_audit_theorem(thm, found) for thm in THEOREMS]
    missing = any(t["status"] == "missing" for t in theorems)
    return {
        "root": str(root),
        "files": len(scanned),
        "declarations": len(found),
        "libraries": [asdict(lib) for lib in libs],
        "theorems": theorems,
        "findings": [asdict(f) for f in findings],
        "exercises": [asdict(f) for f in exercises],
        "ok": not findings and not missing,
    }


def _in_library(rel: str, libs: Iterable[LeanLib]) -> bool:
    """A file is the library's unless only non-default libraries own it."""
    owners = [lib for lib in libs if lib.owns(_module(rel))]
    return not owners or any(lib.default for lib in owners)


def _import_findings(root: Path, scanned: Mapping[str, ScannedFile],
                     libs: Sequence[LeanLib]) -> list[Finding]:
    """Per root ``R``: modules under ``R/`` that ``R.lean`` does not import, imports of
    ``R.*`` without a source file; and library files importing a non-default library."""
    out = []
    for r in sorted({r for lib in libs for r in lib.roots}):
        top_rel = r.replace(".", "/") + ".lean"
        top = scanned.get(top_rel)
        imported = set(top.imports) if top else set()
        present = set()
        for rel in sorted(rel for rel in scanned if rel.startswith(r.replace(".", "/") + "/")):
            present.add(_module(rel))
            if top and _module(rel) not in imported:
                out.append(Finding("not_imported", rel, 0, 0,
                                   f"{top_rel} does not import {_module(rel)}", None))
        # An import of a module that does not exist breaks `lake build` before anything else.
        lines = (root / top_rel).read_text(encoding="utf-8").splitlines() if top else []
        for module in sorted(m for m in imported if m.startswith(r + ".") and m not in present):
            out.append(Finding("missing_module", top_rel, _line_of(lines, module), 0,
                               f"{top_rel} imports {module}, which has no source file", None))
    others = [lib for lib in libs if not lib.default]
    for rel, s in sorted(scanned.items()):
        if not _in_library(rel, libs):
            continue
        for module in s.imports:
            owner = next((lib.name for lib in others if lib.owns(module)), None)
            if owner is not None and not any(lib.default and lib.owns(module) for lib in libs):
                out.append(Finding("imports_exercises", rel, 0, 0,
                                   f"{rel} imports {module} of {owner}, not a default target",
                                   None))
    return out


def _line_of(lines: Sequence[str], word: str) -> int:
    return next((k for k, text in enumerate(lines, 1) if word in text.split()), 0)


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
