"""Lean identifiers as Lean's tokenizer reads them, on code whose comments and strings are
already blanked (:func:`absorb.lean.source.strip_comments_and_strings`).

An identifier starts with an ASCII letter, ``_`` or a *letter-like* character and goes on with
those, digits, ``'``, ``!``, ``?`` and subscripts (``Lean.isIdFirst``/``Lean.isIdRest`` in core
``Init/Meta.lean``); components are joined by ``.`` and may be quoted ``«…»``.  Letter-like
are Greek (but ``λ``, ``Π``, ``Σ``), Coptic, the letter-like block (``ℝ``, ``ℕ``: notation, so
keywords here) and mathematical alphanumerics.  So ``ᵀ`` or ``⬝ᵥ`` never start one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_LETTER_LIKE = (
    "\u03b1-\u03ba\u03bc-\u03c9"  # Greek lower case but λ
    "\u0391-\u039f\u03a1\u03a4-\u03a9"  # Greek upper case but Π and Σ
    "\u03ca-\u03fb\u1f00-\u1ffe\u2100-\u214f\U0001d49c-\U0001d59f"
)
_SUBSCRIPT = "\u2080-\u2089\u2090-\u209c\u1d62-\u1d6a\u2c7c"
_FIRST = f"A-Za-z_{_LETTER_LIKE}"
_REST = f"A-Za-z0-9_'!?{_LETTER_LIKE}{_SUBSCRIPT}"
_ATOM = f"(?:«[^»\\n]*»|[{_FIRST}][{_REST}]*)"

#: One identifier (dotted, possibly quoted components); no leading ``@``.
IDENT = f"{_ATOM}(?:\\.{_ATOM})*"
IDENT_RE = re.compile(f"(?<![{_REST}.«»]){IDENT}")
WHOLE_IDENT_RE = re.compile(f"{IDENT}")


#: Declaration modifiers, as a regular expression prefix.
MODIFIERS = r"(?:(?:private|protected|noncomputable|partial|unsafe|nonrec|scoped|local)\s+)*"
#: A declaration's name after its keyword (an instance's ``(priority := n)`` skipped).
DECL_NAME_RE = re.compile(rf"\s*(?:\(priority\s*:=[^)]*\)\s*)?({IDENT})")
OPENERS, CLOSERS = "([{⟨⦃", ")]}⟩⦄"


def closing_bracket(code: str, open_at: int) -> int:
    """The offset just past the bracket closing the one at ``open_at`` (brackets of every
    kind counted together; the end of ``code`` when it never closes)."""
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] in OPENERS:
            depth += 1
        elif code[j] in CLOSERS:
            depth -= 1
            if not depth:
                return j + 1
    return len(code)


@dataclass(frozen=True)
class Ident:
    """An identifier occurrence: its text, offset in the code, and what is right before it."""

    name: str
    start: int
    end: int
    before: str  # the non-blank character before it ('' at the start)


def identifiers(code: str, start: int = 0, stop: int | None = None) -> Iterator[Ident]:
    """The identifiers of ``code[start:stop]`` in order.  A trailing ``.1``/``.2`` projection
    is not part of the name, and neither is the ``.`` of ``h.1``."""
    end = len(code) if stop is None else stop
    for m in IDENT_RE.finditer(code, start, end):
        j = m.start() - 1
        while j >= 0 and code[j] in " \t":
            j -= 1
        yield Ident(m.group(), m.start(), m.end(), code[j] if j >= 0 else "")


def is_identifier(text: str) -> bool:
    """Whether ``text`` is exactly one identifier (``foo``, ``Foo.bar'``, ``exact?``)."""
    return WHOLE_IDENT_RE.fullmatch(text) is not None


def line_starts(code: str) -> list[int]:
    """Offsets where each line starts (for offset → 1-based line by bisection)."""
    return [0] + [m.end() for m in re.finditer("\n", code)]
