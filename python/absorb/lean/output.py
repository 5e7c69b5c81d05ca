"""Parsing what the toolchain prints: ``lake build`` / ``lean`` diagnostics and the output of
``#print axioms``.

A declaration is ``proved`` when it depends on no axioms beyond the three standard ones
(``propext``, ``Classical.choice``, ``Quot.sound``); ``sorryAx`` means ``sorry`` and
``Lean.ofReduceBool`` means ``native_decide`` (trusting the compiler), neither counts as proved.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

#: The axioms every classical Mathlib proof may use; anything else is reported.
STANDARD_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})
#: Axioms that betray compiler trust (``native_decide``, ``decide +native``).
NATIVE_AXIOMS = frozenset({"Lean.ofReduceBool", "Lean.ofReduceNat"})


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
