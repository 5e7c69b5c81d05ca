"""Reading Lean sources without a toolchain: comments and strings blanked out, declarations
resolved through ``namespace``/``section``/``end``, and every ``sorry``, ``admit``,
``native_decide`` and ``axiom`` located by file, line and column."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# ---------------------------------------------------------------------------------------------
# Lexing: blank out comments and string literals, keeping line and column positions.


def strip_comments_and_strings(source: str) -> str:
    """``source`` with comments and string/char literals replaced by spaces (newlines kept).

    Handles ``--`` line comments, nested block comments ``/- … -/`` (doc comments ``/-- -/``
    and ``/-! -/`` included), string literals with backslash escapes, raw strings
    ``r"…"``/``r#"…"#``, and char literals such as ``'x'`` or ``'\\n'`` (a ``'`` that follows
    an identifier character is a prime in a name, ``h'``, and is left alone).
    """
    out: list[str] = []
    n = len(source)
    done = 0  # source[:done] is settled (copied to out or blanked)

    def blank(start: int, stop: int) -> None:
        nonlocal done
        out.append(source[done:start])
        stop = min(stop, n)
        out.append(_BLANK_RE.sub(" ", source[start:stop]))
        done = stop

    # Jump from one opening (`--`, `/-`, a quote) to the next rather than walking characters:
    # Mathlib's closures are thousands of files, read on every run.
    i = 0
    while (m := _OPENING_RE.search(source, i)) is not None:
        i, token = m.start(), m.group()
        if token == "--":
            stop = source.find("\n", i)
            stop = n if stop < 0 else stop
        elif token == "/-":
            depth, j = 1, i + 2
            for c in _NEST_RE.finditer(source, j):
                depth += 1 if c.group() == "/-" else -1
                j = c.end()
                if not depth:
                    break
            else:
                j = n
            stop = j
        elif token.startswith("r"):
            if _ident_before(source, i):
                i += 1
                continue
            closing = '"' + token[1:-1]
            stop = source.find(closing, i + len(token))
            stop = n if stop < 0 else stop + len(closing)
        elif token == '"':
            j = i + 1
            while j < n and source[j] != '"':
                j += 2 if source[j] == "\\" else 1
            stop = j + 1
        else:  # a quote: a char literal unless it is the prime of a name (h')
            lit = None if _ident_before(source, i) else _CHAR_RE.match(source, i)
            if lit is None:
                i += 1
                continue
            stop = lit.end()
        blank(i, stop)
        i = stop
    out.append(source[done:])
    return "".join(out)


_OPENING_RE = re.compile(r'--|/-|r#*"|"|\'')
_NEST_RE = re.compile(r"/-|-/")
_CHAR_RE = re.compile(r"'(\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)|[^\\'\n])'")
_BLANK_RE = re.compile(r"[^\n]")


def _ident_before(source: str, i: int) -> bool:
    return i > 0 and (source[i - 1].isalnum() or source[i - 1] in "_'!?.»")


# ---------------------------------------------------------------------------------------------
# Declarations and findings.

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
            problem = close_scope(scopes, m.group(1))
            if problem:
                # Reported, not raised: the audit goes on and `ok` turns false.
                findings.append(Finding("parse", file, lineno, 1, problem, current))
        elif m := _DECL_RE.match(line):
            kind, name = m.group(1), m.group(2)
            if kind == "lemma":
                kind = "theorem"
            if name and kind != "example":
                full = qualify(scopes, name)
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


def qualify(scopes: Sequence[tuple[str, tuple[str, ...]]], name: str) -> str:
    """``name`` declared inside ``scopes``: prefixed by the open namespaces (``_root_.`` not)."""
    if name.startswith("_root_."):
        return name.removeprefix("_root_.")
    prefix = [part for kind, parts in scopes if kind == "namespace" for part in parts]
    return ".".join([*prefix, name])


def close_scope(scopes: list[tuple[str, tuple[str, ...]]], name: str) -> str | None:
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
