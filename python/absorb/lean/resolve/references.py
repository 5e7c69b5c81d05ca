"""The constants a Lean file names, each with the scope Lean would resolve it in.

A file is cut into commands (a line at column 0 starts one).  ``namespace``/``section``/``end``
keep the namespace stack, ``open X`` (not ``open scoped``) and ``open X in`` the opened
namespaces, ``variable``/``universe`` the names bound for the rest of the file.  In a
declaration every identifier is a reference except

* keywords: Lean's own (``exact``, ``fun``, …) and the atoms of the syntax the closure declares
  (``linarith``, ``ℝ``, …);
* names bound locally, collected by rule rather than by elaboration: binders of the signature
  and of ``fun``/``λ``, ``∀``/``∃``/``∑``/… (up to ``,``), ``{x | …}``; the names introduced by
  ``intro``, ``rintro``, ``obtain``, ``rcases … with``, ``cases' … with``, ``have``, ``let``,
  ``set``, ``by_cases``, ``by_contra``, ``choose``, ``ext``, ``case``/``next``, match arms and
  ``induction … with`` alternatives (``| pat => …``), ``if h :``, ``for x in``, ``x ← e``, the
  local definitions after ``where``; ``this``.  A dotted name whose head is local (``h.trans``,
  ``hx.1``) is field notation on a local and is skipped too;
* a name right before ``:=`` (a field, a named argument ``(x := e)``, a ``have``'s name) or
  after ``.`` with nothing before it (``.inl``: resolved by the expected type).

Collection errs towards *local*: a constant caught by a binder rule is not checked (an
``unverified`` miss), while a local taken for a constant would be a false alarm.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from absorb.lean.resolve.lexer import (
    CLOSERS,
    DECL_NAME_RE,
    IDENT,
    MODIFIERS,
    OPENERS,
    closing_bracket,
    identifiers,
    line_starts,
)
from absorb.lean.source import close_scope, qualify

_MODS = MODIFIERS
_DECL_KINDS = frozenset({"theorem", "lemma", "def", "abbrev", "instance", "structure",
                         "class", "inductive", "opaque", "axiom", "example", "irreducible_def",
                         "alias"})
#: Commands whose words are not references (notation is read for its atoms elsewhere).
_SKIPPED = frozenset({"set_option", "notation", "notation3", "infix", "infixl", "infixr",
                      "prefix", "postfix", "macro", "macro_rules", "syntax", "elab",
                      "elab_rules", "omit", "include", "deriving", "export", "assert_not_exists",
                      "#check", "#eval", "#print", "#reduce", "#lint", "#guard", "run_cmd",
                      "initialize", "compile_inductive", "library_note", "add_decl_doc"})
_CONTINUATION = ("|", ")", "]", "}", "⟩", ",", "where", "termination_by", "decreasing_by",
                 "deriving")
_IN_END_RE = re.compile(r"\bin\s*\Z")
_COMMAND_RE = re.compile(rf"{_MODS}(#?[\w_]+)")
_ATTR_RE = re.compile(r"\s*@\[")
_OPEN_IN_RE = re.compile(rf"\s*open\s+((?:{IDENT}\s+)+)in\b")
_OPTION_IN_RE = re.compile(r"\s*(?:set_option\s+[\w.]+\s+\S+|omit\b[^\n]*?|include\b[^\n]*?)"
                           r"\s+in\b")
_NAME_RE = DECL_NAME_RE
_BINDER_GROUP_RE = re.compile(rf"[(\{{⦃\[]\s*((?:{IDENT}\s+)*{IDENT})\s*:(?!=)")

#: Tokens after which the names up to a stopper are bound (see :func:`_region`).
_BINDING_WORDS = frozenset({
    "fun", "λ", "intro", "intros", "rintro", "rintros", "rename_i", "ext", "ext1", "funext",
    "next", "case", "case'", "cases'", "induction'", "by_contra", "by_contra!", "by_contra'",
    "by_cases", "choose", "choose!", "obtain", "set", "set!", "lift", "peel", "generalize",
    "have", "haveI", "have!", "let", "letI", "replace", "suffices", "with", "for", "mut",
    "rec", "at", "catch",
})
_QUANTIFIERS = ("∀", "∃!", "∃", "Π", "Σ", "∑'", "∏'", "∑", "∏", "⋃", "⋂", "⨆", "⨅", "∫⁻",
                "∫", "∮", "∀ᶠ", "∃ᶠ", "⨁")
_TOKEN_RE = re.compile(
    rf"(?P<id>{IDENT})|(?P<tok>:=|=>|↦|←|<;>|∀ᶠ|∃ᶠ|∃!|∑'|∏'|∫⁻|[∀∃ΠΣ∑∏⋃⋂⨆⨅∫∮⨁λ]"
    r"|[()\[\]{}⟨⟩⦃⦄]|:|,|;|\||\n|[∈∉<≤>≥≠⊆⊂⊇⊃])"
)
_STOP_WORDS = frozenset({"using", "from", "then", "do", "in", "by", "with", "at", "only"})
_STOP_TOKENS = frozenset({":=", "=>", "↦", "←", ";", "<;>"})
_PREDICATES = frozenset({":", "∈", "∉", "<", "≤", ">", "≥", "≠", "⊆", "⊂", "⊇", "⊃", "in"})
#: Tactics that begin an alternative of ``first | tac | tac``, which is no pattern.
_TACTICS = frozenset({
    "exact", "apply", "refine", "refine'", "simp", "simpa", "rw", "rwa", "intro", "rintro",
    "obtain", "rcases", "cases", "induction", "have", "show", "calc", "linarith", "nlinarith",
    "norm_num", "omega", "positivity", "ring", "ring_nf", "field_simp", "constructor", "use",
    "exists", "tauto", "aesop", "gcongr", "decide", "assumption", "contradiction",
    "exfalso", "by_contra", "push_neg", "split_ifs", "unfold", "dsimp", "congr", "ext",
    "funext", "filter_upwards", "specialize", "subst", "convert", "exact_mod_cast",
    "norm_cast", "push_cast", "first", "try", "linear_combination", "abel", "fun_prop",
    "continuity", "measurability", "simp_all", "nth_rewrite", "erw", "change", "trans",
})
_ARM_RE = re.compile(r"\|([^|\n]*?)(?:=>|↦)")
_SETBUILDER_RE = re.compile(rf"\{{\s*((?:{IDENT}\s*)+)(?::(?!=)|∈|\||//)")
_IF_RE = re.compile(rf"\b(?:if|match|cases|induction|rcases|obtain)\s+({IDENT})\s*:(?!=)")
_BIND_ARROW_RE = re.compile(rf"(?:^|[;(\n])\s*({IDENT})\s*←")
_TERMINATION_RE = re.compile(rf"\btermination_by\s+((?:{IDENT}\s+)*){IDENT}?\s*=>")
_UNTYPED_GROUP_RE = re.compile(rf"[{{⦃]\s*((?:{IDENT}\s*)+)[}}⦄]")
_WHERE_RE = re.compile(r"(?:^|\s)where\s*\n")


@dataclass(frozen=True)
class Reference:
    """A name as written (``@`` dropped) at a line, with the namespaces Lean tries for it:
    ``scopes`` innermost first (the current namespace, its parents, the declaration's own
    prefixes) and the ``opens`` in force."""

    name: str
    line: int
    scopes: tuple[str, ...]
    opens: tuple[str, ...]
    on_local: bool = False  # field notation on a local (`hx.le`): only the fields are checked


@dataclass
class _Scope:
    kind: str
    parts: tuple[str, ...]
    opens: list[str]


def references(code: str, keywords: frozenset[str]) -> list[Reference]:
    """The references of a file (``code``: comments and strings blanked)."""
    starts = line_starts(code)
    scopes: list[_Scope] = []
    bound: set[str] = {"this"}
    out: list[Reference] = []
    for a, b in _commands(code):
        pos, temp_opens = a, list[str]()
        while (m := _ATTR_RE.match(code, pos)) is not None:
            pos = closing_bracket(code, m.end() - 1)
        while (m := _OPEN_IN_RE.match(code, pos) or _OPTION_IN_RE.match(code, pos)) is not None:
            temp_opens += m.group(1).split() if m.re is _OPEN_IN_RE else []
            pos = m.end()
        m = _COMMAND_RE.match(code, _skip_space(code, pos))
        if m is None:
            continue
        word, rest = m.group(1), m.end()
        scope_stack = [(s.kind, s.parts) for s in scopes]
        if word == "namespace":
            name = code[rest:b].split()
            scopes.append(_Scope("namespace", tuple(name[0].split(".")) if name else (), []))
        elif word in ("section", "noncomputable") or word == "mutual":
            name = [w for w in code[rest:b].split() if w != "section"]
            scopes.append(_Scope("section", tuple(name[0].split(".")) if name else (), []))
        elif word == "end":
            name = code[rest:b].split()
            close_scope(scope_stack, name[0] if name else "")
            del scopes[len(scope_stack):]
        elif word == "open":
            names = _open_names(code[rest:b])
            if scopes:
                scopes[-1].opens += names
            else:
                scopes.append(_Scope("file", (), names))
        elif word == "variable":
            bound |= _binder_names(code, rest, b, signature=True)
            ctx = _context(scopes, temp_opens, "")
            out += [Reference(name, _line(starts, at), *ctx, on_local=on_local)
                    for name, at, on_local in _candidates(code, rest, b, bound, keywords)]
        elif word == "universe":
            bound |= set(code[rest:b].split())
        elif word == "attribute":
            targets = code[closing_bracket(code, code.find("[", rest)) if "[" in code[rest:b]
                           else rest:b]
            ctx = _context(scopes, temp_opens, "")
            out += [Reference(i.name.lstrip("@"), _line(starts, a + i.start), *ctx)
                    for i in identifiers(targets) if i.name not in keywords]
        elif word in _DECL_KINDS:
            n = _NAME_RE.match(code, rest) if word not in ("example", "instance") else None
            if word == "instance":
                n = _instance_name(code, rest)
            decl = qualify(scope_stack, n.group(1)) if n else ""
            body_from = n.end() if n else rest
            ctx = _context(scopes, temp_opens, decl)
            local = bound | _locals(code, body_from, b, word)
            out += [Reference(name, _line(starts, at), *ctx, on_local=on_local)
                    for name, at, on_local in _candidates(code, body_from, b, local, keywords)]
    return out


def _commands(code: str) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` offsets of each command: a line at column 0 starts one unless it
    continues the previous (``| pat => …``, a closing bracket, ``where``, …)."""
    starts: list[int] = []
    for m in re.finditer(r"^\S.*$", code, re.MULTILINE):
        if starts and (m.group().startswith(_CONTINUATION)
                       or _IN_END_RE.search(code, starts[-1], m.start())):
            continue  # `open X in` (and `set_option … in`) prefix the next command
        starts.append(m.start())
    for k, s in enumerate(starts):
        yield s, starts[k + 1] if k + 1 < len(starts) else len(code)


def _skip_space(code: str, pos: int) -> int:
    while pos < len(code) and code[pos].isspace():
        pos += 1
    return pos


def _line(starts: Sequence[int], offset: int) -> int:
    lo, hi = 0, len(starts)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if starts[mid] <= offset else (lo, mid)
    return lo + 1


def _open_names(text: str) -> list[str]:
    """The namespaces of ``open X Y (a b) hiding c``; none for ``open scoped`` (it opens
    notation and instances, not names)."""
    words = text.split()
    if words and words[0] == "scoped":
        return []
    out = []
    for w in words:
        if w in ("hiding", "renaming") or w.startswith("("):
            break
        out.append(w)
    return out


def _instance_name(code: str, pos: int) -> re.Match[str] | None:
    m = _NAME_RE.match(code, pos)
    return m if m is not None and not code[m.end():].lstrip().startswith(("→", "×")) else None


def _context(scopes: Sequence[_Scope], temp_opens: Sequence[str], decl: str
             ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The namespaces a name is tried in: the declaration's own prefixes (``Foo`` inside
    ``theorem Foo.bar``), the current namespace and its parents, the root (``""``); and the
    opened namespaces, each also relative to the current namespace."""
    ns = [p for s in scopes if s.kind == "namespace" for p in s.parts]
    tried = []
    parts = decl.split(".") if decl else []
    for k in range(len(parts), len(ns), -1):
        tried.append(".".join(parts[:k]))
    tried += [".".join(ns[:k]) for k in range(len(ns), -1, -1)]
    opens = [o for s in scopes for o in s.opens] + list(temp_opens)
    relative = [f"{p}.{o}" for o in opens for p in tried if p]
    return tuple(dict.fromkeys(tried)), tuple(dict.fromkeys(opens + relative))


# ---------------------------------------------------------------------------------------------
# Local names.


def _locals(code: str, start: int, stop: int, kind: str) -> set[str]:
    """The names bound anywhere in a declaration's text ``code[start:stop]``."""
    out = _binder_names(code, start, stop, signature=kind != "alias")
    text = code[start:stop]
    for t in _TOKEN_RE.finditer(text):
        word = t.group("id") or t.group("tok")
        if word in _BINDING_WORDS or word in _QUANTIFIERS:
            out |= _region(text, t.end(), quantifier=word in _QUANTIFIERS,
                           stop_at_colon=word not in ("fun", "λ", "generalize"))
    for regex in (_ARM_RE, _SETBUILDER_RE, _IF_RE, _BIND_ARROW_RE, _TERMINATION_RE):
        for m in regex.finditer(text):
            names = [i.name for i in identifiers(m.group(1) or "")]
            if regex is _ARM_RE and names and names[0] in _TACTICS:
                continue  # `first | exact f fun x => …`: an alternative, not a pattern
            out.update(names)
    for m in _WHERE_RE.finditer(text):
        out |= _where_names(text, m.end())
    return {n for n in out if "." not in n}


def _binder_names(code: str, start: int, stop: int, signature: bool) -> set[str]:
    """Names of the binder groups ``(x y : T)``/``{x}``/``[inst : C]`` of a signature (up to
    its ``:=``) or of a ``variable``/``universe`` command (all of it)."""
    end = stop
    if signature:
        depth = 0
        for t in _TOKEN_RE.finditer(code, start, stop):
            tok = t.group("tok")
            if tok and tok in OPENERS:
                depth += 1
            elif tok and tok in CLOSERS:
                depth -= 1
            elif depth == 0 and tok in (":=", "|"):
                end = t.start()
                break
    out: set[str] = set()
    for m in _BINDER_GROUP_RE.finditer(code, start, end):
        out |= set(m.group(1).split())
    for m in _UNTYPED_GROUP_RE.finditer(code, start, end):
        out |= set(m.group(1).split())  # `{x y}`: implicit binders without a type
    return out


def _region(text: str, pos: int, quantifier: bool, stop_at_colon: bool) -> set[str]:
    """The names bound after a binding word at ``pos``: up to a stopper at bracket depth 0
    (``:=``, ``=>``, ``,`` after a quantifier, a new line, ``using``, …); a ``:`` (or a binder
    predicate ``∈``, ``<`` after a quantifier) ends the names and starts their type, inside a
    bracket group too."""
    out: set[str] = set()
    depth, typed = 0, [False]
    for t in _TOKEN_RE.finditer(text, pos):
        name, tok = t.group("id"), t.group("tok")
        if name is not None:
            if depth == 0 and name in _STOP_WORDS:
                break
            if name in _PREDICATES and quantifier:
                typed[-1] = True
            elif not typed[-1]:
                out.add(name)
            continue
        if tok in OPENERS:
            depth += 1
            typed.append(False)
        elif tok in CLOSERS:
            depth -= 1
            typed.pop()
            if depth < 0:
                break
        elif depth == 0 and (tok in _STOP_TOKENS or tok == "\n" or (quantifier and tok == ",")):
            break
        elif tok == ":" or (quantifier and tok in _PREDICATES):
            if depth == 0 and stop_at_colon and not quantifier:
                break
            typed[-1] = True
    return out


def _where_names(text: str, pos: int) -> set[str]:
    """Local definitions after ``where`` (``go (i : Nat) : Nat := …``) and fields of an
    instance body (``op x y := …``): each line's names before its ``:``/``:=``."""
    out: set[str] = set()
    indent: int | None = None
    for line in text[pos:].splitlines():
        if not line.strip():
            continue
        ind = len(line) - len(line.lstrip())
        indent = ind if indent is None else indent
        if ind < indent:
            break
        if ind == indent:
            out |= _region(line, 0, quantifier=False, stop_at_colon=True)
            out |= _binder_names(line, 0, len(line), signature=True)
    return out


# ---------------------------------------------------------------------------------------------
# Candidates.


def _starts_line(code: str, at: int) -> bool:
    return not code[code.rfind("\n", 0, at) + 1:at].strip()


def _candidates(code: str, start: int, stop: int, local: set[str], keywords: frozenset[str]
                ) -> Iterator[tuple[str, int, bool]]:
    """``(name, offset, on_local)`` of every identifier of ``code[start:stop]`` that is a
    reference, or field notation on a local (``hx.le``: ``on_local``)."""
    for i in identifiers(code, start, stop):
        name = i.name
        head = name.split(".", 1)[0]
        if name in keywords or (head.startswith("_") and head != "_root_"):
            continue
        if i.before == "." or (re.match(r"\s*:=", code[i.end:i.end + 8])
                               and (i.before in "({,⟨" or _starts_line(code, i.start))):
            continue  # a field or named argument being given, not a constant
        if head in local:
            if "." in name:
                yield name, i.start, True
            continue
        yield name, i.start, False
