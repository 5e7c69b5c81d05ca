"""The Lean bridge: a static audit of ``Absorb/`` and the verification through ``lake``.

Two entry points, both keyed on the manifest (:mod:`absorb.manifest`):

* :func:`audit` reads the Lean sources with no toolchain.  Comments (``--``, nested ``/- … -/``)
  and string literals are blanked out first, so that only code counts; then it resolves
  declaration names through ``namespace``/``section``/``end``, and lists every ``sorry``,
  ``admit``, ``native_decide`` and ``axiom`` declaration with file and line, every module of
  ``Absorb/`` that ``Absorb.lean`` does not import, every import of ``Absorb.lean`` without a
  source file, and per manifest theorem whether its declarations exist.
* :func:`verify` runs ``lake build`` (own process group, timeout, clean kill), parses its
  diagnostics, runs ``#print axioms`` on every manifest declaration through ``lake env lean``
  and classifies each theorem, then runs the compiled checker ``lake exe absorb-check`` on the
  fixtures and on an index set found by :func:`absorb.certificates.find_index_set`, and compares
  verdicts.

A theorem is ``proved`` when its declarations depend on no axioms beyond the three standard ones
(``propext``, ``Classical.choice``, ``Quot.sound``); ``sorryAx`` means ``sorry`` and
``Lean.ofReduceBool`` means ``native_decide`` (trusting the compiler), neither counts as proved.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from absorb.errors import AbsorbError, ToolMissing
from absorb.manifest import THEOREMS, Theorem

#: The axioms every classical Mathlib proof may use; anything else is reported.
STANDARD_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})
#: Axioms that betray compiler trust (``native_decide``, ``decide +native``).
NATIVE_AXIOMS = frozenset({"Lean.ofReduceBool", "Lean.ofReduceNat"})

INSTALL_HINT = (
    "no Lean toolchain found (`lake` is neither on PATH nor in ~/.elan/bin); install elan with "
    "`curl https://raw.githubusercontent.com/leanprover/elan/master/elan-init.sh -sSf | sh`, "
    "then run `lake exe cache get` in the repository"
)

# Worst status wins when a theorem has several declarations.
_STATUS_RANK = {"proved": 0, "axiom": 1, "native_decide": 2, "sorry": 3, "error": 4, "missing": 5}


# ---------------------------------------------------------------------------------------------
# Lexing: blank out comments and string literals, keeping line and column positions.


def strip_comments_and_strings(source: str) -> str:
    """``source`` with comments and string/char literals replaced by spaces (newlines kept).

    Handles ``--`` line comments, nested block comments ``/- … -/`` (doc comments ``/-- -/``
    and ``/-! -/`` included), string literals with backslash escapes, raw strings
    ``r"…"``/``r#"…"#``, and char literals such as ``'x'`` or ``'\\n'`` (a ``'`` that follows
    an identifier character is a prime in a name, ``h'``, and is left alone).
    """
    out = list(source)
    n = len(source)
    i = 0

    def blank(start: int, stop: int) -> None:
        for j in range(start, min(stop, n)):
            if out[j] != "\n":
                out[j] = " "

    while i < n:
        c = source[i]
        if source.startswith("--", i):
            stop = source.find("\n", i)
            stop = n if stop < 0 else stop
            blank(i, stop)
            i = stop
        elif source.startswith("/-", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if source.startswith("/-", j):
                    depth, j = depth + 1, j + 2
                elif source.startswith("-/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == "r" and (m := re.match(r'r(#*)"', source[i:])) and not _ident_before(source, i):
            closing = '"' + m.group(1)
            stop = source.find(closing, i + m.end())
            stop = n if stop < 0 else stop + len(closing)
            blank(i, stop)
            i = stop
        elif c == '"':
            j = i + 1
            while j < n and source[j] != '"':
                j += 2 if source[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'" and not _ident_before(source, i):
            m = re.match(r"'(\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)|[^\\'\n])'", source[i:])
            if m:
                blank(i, i + m.end())
                i += m.end()
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def _ident_before(source: str, i: int) -> bool:
    return i > 0 and (source[i - 1].isalnum() or source[i - 1] in "_'!?.»")


# ---------------------------------------------------------------------------------------------
# Static audit.

_MODIFIERS = r"(?:(?:private|protected|noncomputable|partial|unsafe|nonrec|scoped)\s+)*"
_ATTRS = r"(?:@\[[^\]]*\]\s*)*"
_DECL_RE = re.compile(
    rf"^\s*{_ATTRS}{_MODIFIERS}"
    r"(theorem|lemma|def|abbrev|instance|structure|class|inductive|axiom|opaque|example)\b"
    r"\s*([^\s:(){}\[\]⦃⦄]*)"
)
_NAMESPACE_RE = re.compile(r"^\s*namespace\s+(\S+)")
_SECTION_RE = re.compile(r"^\s*(?:noncomputable\s+)?section\b\s*(\S*)")
_MUTUAL_RE = re.compile(r"^\s*mutual\b")
_END_RE = re.compile(r"^\s*end\b[ \t]*([^\s]*)")
_IMPORT_RE = re.compile(r"^\s*import\s+(.+)$")
_IDENT_CHARS = r"\w.'?!"
_FORBIDDEN = {
    "sorry": re.compile(rf"(?<![{_IDENT_CHARS}])sorry(?![{_IDENT_CHARS}])"),
    "admit": re.compile(rf"(?<![{_IDENT_CHARS}])admit(?![{_IDENT_CHARS}])"),
    "native_decide": re.compile(
        rf"(?<![{_IDENT_CHARS}])(?:native_decide|decide\s*\+native|Lean\.ofReduceBool)"
        rf"(?![{_IDENT_CHARS}])"
    ),
}


@dataclass(frozen=True)
class Declaration:
    """A declaration found in a Lean source file."""

    name: str  # fully qualified, namespaces resolved
    kind: str  # theorem, lemma, def, structure, axiom, …
    file: str  # relative to the audited root
    line: int  # 1-based


@dataclass(frozen=True)
class Finding:
    """Something that keeps the library from counting as checked."""

    kind: str  # sorry, admit, native_decide, axiom, not_imported, missing_module, parse
    file: str
    line: int
    column: int  # 1-based; 0 where not applicable
    text: str  # the source line, stripped
    declaration: str | None  # the enclosing declaration, where known


@dataclass(frozen=True)
class ScannedFile:
    """The declarations, findings and imports of one Lean file."""

    declarations: tuple[Declaration, ...]
    findings: tuple[Finding, ...]
    imports: tuple[str, ...]


def scan_lean(source: str, file: str) -> ScannedFile:
    """Declarations (names resolved through namespaces), findings and imports of one file."""
    code = strip_comments_and_strings(source)
    raw_lines = source.splitlines()
    # Scope stack: ("namespace", components) contributes to names; sections and mutual don't.
    scopes: list[tuple[str, tuple[str, ...]]] = []
    declarations: list[Declaration] = []
    findings: list[Finding] = []
    imports: list[str] = []
    current: str | None = None
    for lineno, line in enumerate(code.splitlines(), start=1):
        if m := _IMPORT_RE.match(line):
            imports.extend(m.group(1).split())
        elif m := _NAMESPACE_RE.match(line):
            scopes.append(("namespace", tuple(m.group(1).split("."))))
        elif m := _SECTION_RE.match(line):
            scopes.append(("section", tuple(m.group(1).split(".")) if m.group(1) else ()))
        elif _MUTUAL_RE.match(line):
            scopes.append(("mutual", ()))
        elif m := _END_RE.match(line):
            problem = _close_scope(scopes, m.group(1))
            if problem:
                # Reported, not raised: the audit goes on and `ok` turns false.
                findings.append(Finding("parse", file, lineno, 1, problem, current))
        elif m := _DECL_RE.match(line):
            kind, name = m.group(1), m.group(2)
            if kind == "lemma":
                kind = "theorem"
            if name and kind != "example":
                full = _qualify(scopes, name)
                declarations.append(Declaration(full, kind, file, lineno))
                current = full
                if kind == "axiom":
                    text = _raw(raw_lines, lineno)
                    findings.append(Finding("axiom", file, lineno, m.start(1) + 1, text, full))
            else:
                current = None
        for kind, pattern in _FORBIDDEN.items():
            for hit in pattern.finditer(line):
                findings.append(
                    Finding(kind, file, lineno, hit.start() + 1, _raw(raw_lines, lineno), current)
                )
    return ScannedFile(tuple(declarations), tuple(findings), tuple(imports))


def _raw(lines: Sequence[str], lineno: int) -> str:
    return lines[lineno - 1].strip() if lineno <= len(lines) else ""


def _qualify(scopes: Sequence[tuple[str, tuple[str, ...]]], name: str) -> str:
    if name.startswith("_root_."):
        return name.removeprefix("_root_.")
    prefix = [part for kind, parts in scopes if kind == "namespace" for part in parts]
    return ".".join([*prefix, name])


def _close_scope(scopes: list[tuple[str, tuple[str, ...]]], name: str) -> str | None:
    """Pop the scope closed by ``end name`` (``end A.B`` closes ``namespace A.B`` or two nested
    namespaces ``A`` and ``B``); a message when it matches no open scope."""
    parts = tuple(name.split(".")) if name else ()
    if not parts:
        if scopes and scopes[-1][1] == ():
            scopes.pop()
            return None
        return "`end` closes no anonymous section or mutual block"
    remaining = parts
    while remaining:
        if not scopes:
            return f"`end {name}` closes nothing"
        _, top = scopes[-1]
        if not top or remaining[-len(top) :] != top:
            return f"`end {name}` does not match the open scope"
        scopes.pop()
        remaining = remaining[: -len(top)]
    return None


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


# ---------------------------------------------------------------------------------------------
# Parsing toolchain output.

_LAKE_DIAG_RE = re.compile(r"^(error|warning|info): (.+?\.lean):(\d+):(\d+): ?(.*)$")
_PLAIN_DIAG_RE = re.compile(r"^(.+?\.lean):(\d+):(\d+): (error|warning|info)(?:\([^)]*\))?: ?(.*)$")
# Lines of lake's own progress and summary output: they end a multi-line message.
_LAKE_STATUS_RE = re.compile(
    r"^(?:[✔⚠✖] \[|\[\d+/\d+\]|trace: |Build completed|Some required builds logged failures|"
    r"- \S+$|error: build failed|error: Lean exited with code|error: stdout:|error: stderr:|"
    r"info: \S+: (?:cloning|checking out|no previous manifest))"
)
_LAKE_STREAM_HEADERS = ("error: stdout:", "error: stderr:")
_LAKE_PLAIN_RE = re.compile(r"^(error|warning): (.*)$")
_SORRY_RE = re.compile(r"declaration uses ['`]sorry['`]")
_FAILED_MODULE_RE = re.compile(r"^- (\S+)$")


@dataclass
class Diagnostic:
    """One message of Lean (``file:line:col``) as printed by ``lake build`` or ``lean``."""

    severity: str  # error, warning, info
    file: str | None  # normalized relative path ("Absorb/X.lean"), None for lake's own errors
    line: int
    column: int
    message: str
    sorry: bool = field(default=False)


def _normalize_path(path: str) -> str:
    while path.startswith("./"):
        path = path[2:]
    return path


def parse_diagnostics(text: str) -> list[Diagnostic]:
    """Diagnostics in ``lake build`` or plain ``lean`` output.

    Accepts the lake form ``error: ./Absorb/X.lean:12:4: msg`` and the plain form
    ``Absorb/X.lean:12:4: error: msg`` (optionally ``error(lean.name):``); a message continues on
    following lines until the next diagnostic or a line of lake's own output.  Lake's errors
    without a position (``error: build failed``) come back with ``file`` None.  A warning
    "declaration uses 'sorry'" (or with backticks, as newer Lean prints it) sets ``sorry``.
    """
    out: list[Diagnostic] = []
    current: Diagnostic | None = None
    for line in text.splitlines():
        if m := _LAKE_DIAG_RE.match(line):
            sev, path, row, col, msg = m.groups()
            current = Diagnostic(sev, _normalize_path(path), int(row), int(col), msg)
            out.append(current)
        elif m := _PLAIN_DIAG_RE.match(line):
            path, row, col, sev, msg = m.groups()
            current = Diagnostic(sev, _normalize_path(path), int(row), int(col), msg)
            out.append(current)
        elif _LAKE_STATUS_RE.match(line):
            current = None
            if line.startswith("error: ") and not line.startswith(_LAKE_STREAM_HEADERS):
                out.append(Diagnostic("error", None, 0, 0, line.removeprefix("error: ")))
        elif current is not None:
            current.message += "\n" + line
        elif m := _LAKE_PLAIN_RE.match(line):
            out.append(Diagnostic(m.group(1), None, 0, 0, m.group(2)))
    for diag in out:
        diag.message = diag.message.rstrip()
        diag.sorry = bool(_SORRY_RE.search(diag.message))
    return out


def failed_modules(text: str) -> list[str]:
    """The modules lake lists after "Some required builds logged failures:"."""
    lines = text.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("Some required builds logged failures"):
            return [m.group(1) for ln in lines[k + 1 :] if (m := _FAILED_MODULE_RE.match(ln))]
    return []


_AXIOMS_RE = re.compile(r"'([^']+)' depends on axioms: \[([^\]]*)\]", re.DOTALL)
_NO_AXIOMS_RE = re.compile(r"'([^']+)' does not depend on any axioms")
_UNKNOWN_RE = re.compile(r"unknown (?:identifier|constant|declaration) ['`]", re.IGNORECASE)


@dataclass(frozen=True)
class AxiomReport:
    """What ``#print axioms`` said about one declaration."""

    name: str
    status: str  # proved, axiom, native_decide, sorry, error, missing
    axioms: tuple[str, ...]
    message: str


def classify_axioms(axioms: Iterable[str]) -> str:
    """``sorry`` if ``sorryAx`` occurs, ``native_decide`` for ``Lean.ofReduceBool``, ``axiom``
    for any other non-standard axiom, ``proved`` when all are among :data:`STANDARD_AXIOMS`."""
    found = set(axioms)
    if "sorryAx" in found:
        return "sorry"
    if found & NATIVE_AXIOMS:
        return "native_decide"
    return "proved" if found <= STANDARD_AXIOMS else "axiom"


def axiom_probe(declarations: Sequence[str]) -> tuple[str, dict[int, str]]:
    """A Lean file printing the axioms of each declaration, and line → declaration."""
    lines = ["import Absorb", ""]
    by_line: dict[int, str] = {}
    for name in declarations:
        lines.append(f"#print axioms {name}")
        by_line[len(lines)] = name
    return "\n".join(lines) + "\n", by_line


def parse_axioms_output(text: str, by_line: Mapping[int, str]) -> dict[str, AxiomReport]:
    """Per declaration the axioms reported by the probe of :func:`axiom_probe`.

    Reads "'X' depends on axioms: [a, b, c]" (the list may wrap over lines) and "'X' does not
    depend on any axioms", with or without a ``file:line:col: info:`` prefix; an error at the
    line of ``#print axioms X`` marks X ``missing`` (unknown identifier/constant) or ``error``.
    """
    reports: dict[str, AxiomReport] = {}
    names = set(by_line.values())
    for m in _AXIOMS_RE.finditer(text):
        name = m.group(1)
        axioms = tuple(a.strip() for a in m.group(2).replace("\n", " ").split(",") if a.strip())
        reports[name] = AxiomReport(name, classify_axioms(axioms), axioms, m.group(0))
    for m in _NO_AXIOMS_RE.finditer(text):
        reports[m.group(1)] = AxiomReport(m.group(1), "proved", (), m.group(0))
    for diag in parse_diagnostics(text):
        name = by_line.get(diag.line) if diag.severity == "error" else None
        if name is not None and name not in reports:
            status = "missing" if _UNKNOWN_RE.search(diag.message) else "error"
            reports[name] = AxiomReport(name, status, (), diag.message)
    for name in names - reports.keys():
        reports[name] = AxiomReport(name, "error", (), "no #print axioms output for it")
    return {name: reports[name] for name in by_line.values()}


# ---------------------------------------------------------------------------------------------
# Running processes.


@dataclass(frozen=True)
class ProcessResult:
    """Outcome of one toolchain command (stdout and stderr merged, in order)."""

    command: tuple[str, ...]
    returncode: int | None  # None when killed after the timeout
    output: str
    timed_out: bool
    seconds: float


def find_lake() -> Path | None:
    """``lake`` on PATH, else elan's default ``~/.elan/bin/lake``, else None."""
    on_path = shutil.which("lake")
    if on_path:
        return Path(on_path)
    default = Path.home() / ".elan" / "bin" / "lake"
    return default if default.is_file() and os.access(default, os.X_OK) else None


def _kill_group(proc: subprocess.Popen[str], grace: float) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after ``grace`` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            # The leader is gone; still sweep children that ignored SIGTERM.
            if sig == signal.SIGTERM:
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def run_process(
    command: Sequence[str], cwd: Path, timeout: float, *, grace: float = 5.0
) -> ProcessResult:
    """Run ``command`` in its own process group (session) with a timeout.

    On timeout the whole group gets SIGTERM, then SIGKILL after ``grace`` seconds, and the
    result says ``timed_out``; on KeyboardInterrupt the group is killed the same way and the
    interrupt propagates.  A missing executable raises :class:`ToolMissing`.
    """
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(command),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except FileNotFoundError:
        raise ToolMissing(f"{command[0]}: not found; {INSTALL_HINT}") from None
    try:
        output, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc, grace)
        output, _ = proc.communicate()
        timed_out = True
    except KeyboardInterrupt:
        _kill_group(proc, grace)
        proc.communicate()
        raise
    return ProcessResult(
        tuple(command),
        None if timed_out else proc.returncode,
        output or "",
        timed_out,
        time.monotonic() - start,
    )


# ---------------------------------------------------------------------------------------------
# verify.


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
    checker = _run_checker(lake, root, timeout) if build.returncode == 0 else []
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


def checker_agrees(output: str, expected: Mapping[str, object]) -> tuple[bool, object]:
    """Whether the checker's JSON (its last stdout line) carries every key of ``expected``
    with the same value; also the parsed output (None when it is not JSON)."""
    lines = output.strip().splitlines()
    try:
        got = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        got = None
    ok = isinstance(got, dict) and all(got.get(k) == v for k, v in expected.items())
    return ok, got


def _checker_on(lake: Path, root: Path, path: Path, expected: Mapping[str, object],
                timeout: float, source: str) -> dict[str, object]:
    result = run_process([str(lake), "exe", "absorb-check", str(path)], root, timeout)
    agrees, got = checker_agrees(result.output, expected)
    return {"input": path.name, "source": source, "expected": dict(expected), "output": got,
            "returncode": result.returncode, "agrees": agrees}


def python_checker_cases(rng: np.random.Generator) -> list[tuple[str, dict[str, object],
                                                                 dict[str, object]]]:
    """Checker inputs decided on the Python side: (name, input JSON, expected verdict).

    A planted instance with exact rational weights, W_up[S] = I and W_down[:, S] = −I for
    S = {0, 1, 2} (other units random small integers): the S that
    :func:`absorb.certificates.find_index_set` finds must be ``absorbed``, and the same S minus
    one unit (for which :func:`absorb.certificates.index_set_residual` is nonzero) must give
    ``condition_fails``.
    """
    from absorb.certificates import find_index_set, index_set_residual

    d, n = 3, 7
    to_frac = np.vectorize(lambda v: Fraction(int(v)), otypes=[object])
    up = to_frac(rng.integers(-4, 5, size=(n, d)))
    down = to_frac(rng.integers(-4, 5, size=(d, n)))
    up[:d] = to_frac(np.eye(d, dtype=int))
    down[:, :d] = to_frac(-np.eye(d, dtype=int))
    search = find_index_set(up, down)
    if search.S is None:
        raise AbsorbError("python side found no index set in a planted instance")
    weights = {"W_up": [[str(v) for v in row] for row in up],
               "W_down": [[str(v) for v in row] for row in down]}
    wrong = list(search.S[:-1])
    cases: list[tuple[str, dict[str, object], dict[str, object]]] = [
        ("planted_found.json", {**weights, "S": list(search.S)},
         {"verdict": "absorbed", "S": list(search.S)}),
    ]
    if index_set_residual(up, down, wrong) > 0:
        cases.append(("planted_wrong_S.json", {**weights, "S": wrong},
                      {"verdict": "condition_fails", "S": wrong}))
    return cases


def _run_checker(lake: Path, root: Path, timeout: float) -> list[dict[str, object]]:
    """The compiled checker on the Lean fixtures (``X.json`` against ``X.expected.json``) and
    on the cases of :func:`python_checker_cases`."""
    out: list[dict[str, object]] = []
    fixtures = root / "tests" / "fixtures" / "lean"
    for path in sorted(fixtures.glob("*.json")) if fixtures.is_dir() else []:
        expected_path = path.with_name(path.name.removesuffix(".json") + ".expected.json")
        if path.name.endswith(".expected.json") or not expected_path.is_file():
            continue
        expected = json.loads(expected_path.read_text(encoding="utf-8"))
        out.append(_checker_on(lake, root, path, expected, timeout, "fixture"))
    with tempfile.TemporaryDirectory(prefix="absorb-check-") as tmp:
        for name, payload, expected in python_checker_cases(np.random.default_rng(0)):
            path = Path(tmp) / name
            path.write_text(json.dumps(payload), encoding="utf-8")
            out.append(_checker_on(lake, root, path, expected, timeout, "python"))
    return out
