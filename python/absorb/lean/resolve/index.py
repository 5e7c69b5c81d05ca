"""The declarations of one Lean module, found by regular expressions over its blanked code.

Indexed mechanically (``declared``): ``theorem``/``lemma``/``def``/``abbrev``/``instance`` (named)
/``opaque``/``axiom``/``irreducible_def`` (and its ``_def``), ``structure``/``class`` with their
fields, constructor (``mk`` or the one named ``ctor ::``), parent projections (``toParent``)
and, under ``@[ext]``, ``ext``/``ext_iff``; ``inductive`` constructors; ``alias`` (also
``alias ⟨a, b⟩ :=``); ``export``; every name qualified through ``namespace``/``end``.

Names an attribute generates by a rule that is not mechanical here (``generated``): the
additive twin of a ``@[to_additive]`` declaration, by Mathlib's dictionary
(``ToAdditive.nameDict``: mul → add, one → zero, prod → sum, inv → neg, div → sub,
pow → nsmul, …, and ``zero_le`` → ``nonneg``) or by the name given explicitly; and the
``_assoc`` of ``@[reassoc]``.  ``@[simps]`` declarations are listed in ``simps``: a
reference ``decl_xyz`` resolves to them as generated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from absorb.lean.resolve.lexer import DECL_NAME_RE, IDENT, MODIFIERS, closing_bracket
from absorb.lean.source import close_scope, qualify

_MODS = MODIFIERS
_KINDS = (r"theorem|lemma|def|abbrev|instance|structure|class\s+inductive|class\s+abbrev|class"
          r"|inductive|axiom|opaque|irreducible_def|alias|export|attribute")
_HEAD_RE = re.compile(
    rf"^[ \t]*(?:(@\[)|{_MODS}(namespace|(?:noncomputable\s+)?section|end|mutual|{_KINDS})"
    r"(?![\w'!?.]))",
    re.MULTILINE,
)
_AFTER_ATTR_RE = re.compile(rf"\s*(@\[)|\s*{_MODS}({_KINDS})(?![\w'!?.])")
_SCOPE_NAME_RE = re.compile(rf"[ \t]*({IDENT})?")
_ALIAS_RE = re.compile(rf"\s*(?:⟨([^⟩]*)⟩|({IDENT}))\s*:=")
_EXPORT_RE = re.compile(rf"\s*({IDENT})\s*\(([^)]*)\)")
_ATTRIBUTE_RE = re.compile(rf"\s*\[([^\]]*)\]((?:\s+{IDENT})+)")
_IDENTS_RE = re.compile(IDENT)
_TO_ADDITIVE_RE = re.compile(
    rf"\bto_additive\b(?:\s*\((?:[^()]|\([^()]*\))*\))*\s*(existing\b\s*)?({IDENT})?")
_CTOR_RE = re.compile(rf"(?:^|[\s(])\|\s*({IDENT})")
_STRUCT_CTOR_RE = re.compile(rf"^\s*({IDENT})\s*::", re.MULTILINE)
_FIELD_RE = re.compile(rf"^[ \t]*(?:(?:protected|private)\s+)?((?:{IDENT}[ \t]+)*{IDENT})"
                       r"[ \t]*(?::|\(|\{|\[|⦃)")
_PAREN_FIELD_RE = re.compile(rf"^[ \t]*[({{\[]\s*((?:{IDENT}\s+)*{IDENT})\s*:(?!=)")
_EXTENDS_RE = re.compile(r"\bextends\b(.*?)(?:\bwhere\b|:=|$)", re.DOTALL)
_WORD_RE = re.compile(r"_|[A-Z]+(?![a-z])|[A-Z][a-z0-9'!?]*|[a-z0-9'!?]+|[^_A-Za-z0-9'!?]+")

#: ``ToAdditive.nameDict`` of Mathlib (``Mathlib/Tactic/ToAdditive/Frontend.lean``).
ADDITIVE_WORDS = {
    "one": "zero", "mul": "add", "smul": "vadd", "inv": "neg", "div": "sub", "prod": "sum",
    "hmul": "hadd", "hsmul": "hvadd", "hdiv": "hsub", "hpow": "hsmul", "finprod": "finsum",
    "tprod": "tsum", "pow": "nsmul", "npow": "nsmul", "zpow": "zsmul", "mabs": "abs",
    "monoid": "addMonoid", "submonoid": "addSubmonoid", "group": "addGroup",
    "subgroup": "addSubgroup", "semigroup": "addSemigroup", "magma": "addMagma",
    "haar": "addHaar", "prehaar": "addPrehaar", "unit": "addUnit", "units": "addUnits",
    "cyclic": "addCyclic", "rootable": "divisible", "semigrp": "addSemigrp", "grp": "addGrp",
    "commute": "addCommute", "semiconj": "addSemiconj", "zpowers": "zmultiples",
    "powers": "multiples", "multipliable": "summable", "gpfree": "apfree",
    "quantale": "addQuantale", "square": "even", "mconv": "conv",
    "irreducible": "addIrreducible", "mlconvolution": "lconvolution",
}
#: The commonest of ``ToAdditive.fixAbbreviation``'s rewrites.
_ABBREVIATIONS = (("zero_le", "nonneg"), ("zero_lt", "pos"), ("le_zero", "nonpos"),
                  ("lt_zero", "neg"), ("ZeroLE", "Nonneg"), ("ZeroLT", "Pos"),
                  ("commAdd", "addComm"), ("CommAdd", "AddComm"), ("addSingle", "single"),
                  ("AddSingle", "Single"), ("addSupport", "support"),
                  ("AddSupport", "Support"), ("addTSupport", "tsupport"),
                  ("addIndicator", "indicator"), ("AddIndicator", "Indicator"))
#: Constants Lean derives from every inductive type or definition (the recursor, equation
#: lemmas, …): ``T.rec``, ``f.eq_1``.  A reference ``X.s`` with ``X`` declared resolves.
AUTO_SUFFIXES = frozenset({
    "rec", "recOn", "casesOn", "noConfusion", "noConfusionType", "below", "brecOn",
    "ibelow", "binductionOn", "injEq", "inj", "sizeOf_spec", "eq_def", "induct", "eta",
    "eq_unfold", "mutual_induct",
})


@dataclass(frozen=True)
class ModuleIndex:
    """What one module declares."""

    declared: frozenset[str]
    generated: frozenset[str]
    simps: frozenset[str]


def additive_name(name: str) -> str:
    """``to_additive``'s guess at the additive name of ``name`` (``mul_one`` → ``add_zero``,
    ``Monoid.npow`` → ``AddMonoid.nsmul``, ``one_le_two`` → ``nonneg_two``... approximately:
    the dictionary and the commonest abbreviations)."""
    return ".".join(_additive_component(c) for c in name.split("."))


def _additive_component(text: str) -> str:
    out = []
    for w in _WORD_RE.findall(text):
        repl = ADDITIVE_WORDS.get(w.lower())
        if repl is None:
            out.append(w)
        else:
            out.append(repl[0].upper() + repl[1:] if w[0].isupper() else repl)
    joined = "".join(out)
    for old, new in _ABBREVIATIONS:
        joined = re.sub(rf"(?<![A-Za-z0-9]){old}(?![a-z0-9])", new, joined)
    return joined


def index_module(code: str) -> ModuleIndex:
    """The declarations of a module (``code``: comments and strings blanked)."""
    scopes: list[tuple[str, tuple[str, ...]]] = []
    declared: set[str] = set()
    generated: set[str] = set()
    simps: set[str] = set()
    heads = list(_HEAD_RE.finditer(code))
    for k, m in enumerate(heads):
        stop = heads[k + 1].start() if k + 1 < len(heads) else len(code)
        attrs, kind, pos = "", m.group(2), m.end()
        if m.group(1):  # attributes, then the declaration they belong to
            while True:
                close = closing_bracket(code, pos - 1)
                attrs += code[pos:close - 1] + " "
                after = _AFTER_ATTR_RE.match(code, close)
                if after is None:
                    break
                pos = after.end()
                if after.group(1) is None:
                    kind = after.group(2)
                    break
            if kind is None:
                continue
        kind = " ".join(kind.split())
        if kind in ("namespace", "end") or kind.endswith("section") or kind == "mutual":
            name = _SCOPE_NAME_RE.match(code, pos)
            _scope(scopes, kind, name.group(1) or "" if name else "")
            continue
        _declaration(kind, code, pos, stop, attrs, scopes, declared, generated, simps)
    return ModuleIndex(frozenset(declared), frozenset(generated), frozenset(simps))


def _scope(scopes: list[tuple[str, tuple[str, ...]]], kind: str, name: str) -> None:
    if kind == "namespace":
        scopes.append(("namespace", tuple(name.split("."))))
    elif kind == "end":
        close_scope(scopes, name)  # a mismatch in a tree module is the tree's, not ours
    else:
        scopes.append((kind, tuple(name.split(".")) if name else ()))


def _declaration(kind: str, code: str, pos: int, stop: int, attrs: str,
                 scopes: list[tuple[str, tuple[str, ...]]], declared: set[str],
                 generated: set[str], simps: set[str]) -> None:
    names: list[str] = []
    if kind == "alias":
        if (a := _ALIAS_RE.match(code, pos)) is not None:
            names = [n.strip() for n in (a.group(1) or a.group(2)).split(",")]
        declared.update(qualify(scopes, n) for n in names if n and n != "_")
        return
    if kind == "export":
        if (e := _EXPORT_RE.match(code, pos)) is not None:
            declared.update(qualify(scopes, n) for n in _IDENTS_RE.findall(e.group(2)))
        return
    if kind == "attribute":
        if (a := _ATTRIBUTE_RE.match(code, pos)) is not None:
            for n in a.group(2).split():
                _attributes(a.group(1), qualify(scopes, n), generated, simps)
        return
    n = DECL_NAME_RE.match(code, pos)
    if n is None:
        return  # an anonymous instance
    full = qualify(scopes, n.group(1))
    declared.add(full)
    body = code[n.end():stop]
    if kind == "irreducible_def":
        declared.add(full + "_def")
    elif kind.endswith("inductive"):
        declared.update(f"{full}.{c}" for c in _CTOR_RE.findall(body))
    elif kind in ("structure", "class"):
        declared.update(f"{full}.{f}" for f in _structure_members(body))
        if re.search(r"\bext\b", attrs):
            declared.update((f"{full}.ext", f"{full}.ext_iff"))
    if re.search(r"\bext\b", attrs) and full.endswith(".ext"):
        declared.add(full + "_iff")
    _attributes(attrs, full, generated, simps)


def _attributes(attrs: str, full: str, generated: set[str], simps: set[str]) -> None:
    if (t := _TO_ADDITIVE_RE.search(attrs)) is not None:
        explicit = t.group(2)
        prefix = additive_name(full.rpartition(".")[0])
        if explicit:
            generated.add(f"{prefix}.{explicit}" if prefix else explicit)
            generated.add(explicit)
        else:
            generated.add(additive_name(full))
    if re.search(r"\bsimps\b", attrs):
        simps.add(full)
    if re.search(r"\breassoc\b", attrs):
        generated.add(full + "_assoc")


def _structure_members(body: str) -> list[str]:
    """Fields, constructor and parent projections of a ``structure``/``class`` body (the text
    after its name up to the next command)."""
    w = re.search(r"\bwhere\b", body)
    header, fields = (body[:w.start()], body[w.end():]) if w else (body, "")
    out = ["mk"]
    if (ext := _EXTENDS_RE.search(header)) is not None:
        for parent in _split_top(ext.group(1)):
            words = _IDENTS_RE.findall(parent.split(":")[0])
            if words:
                out.append("to" + words[0].rsplit(".", 1)[-1])
    if w is None:
        return out
    if (c := _STRUCT_CTOR_RE.match(fields)) is not None:
        out.append(c.group(1))
    lines = [ln for ln in fields.splitlines() if ln.strip()]
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    for line in lines:
        if len(line) - len(line.lstrip()) < indent:
            break  # the body ends where a line is less indented than its first field
        if len(line) - len(line.lstrip()) > indent:
            continue
        f = _FIELD_RE.match(line) or _PAREN_FIELD_RE.match(line)
        if f is not None:
            out.extend(w for w in f.group(1).split() if w != "deriving")
    return out


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for j, c in enumerate(text):
        if c in "([{⟨":
            depth += 1
        elif c in ")]}⟩":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:j])
            start = j + 1
    parts.append(text[start:])
    return parts
