"""The number grammar of JSON weights files, shared with the Lean checker (DESIGN.md, "Weights
files"): what an entry of a ``.json`` file means, exactly.

* A JSON number literal (RFC 8259: ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?``) denotes
  the exact rational it spells: ``0.1`` is 1/10, ``1e-400`` is 10⁻⁴⁰⁰ (never a float).
  Refused: an exponent whose absolute value exceeds :data:`MAX_EXPONENT`, more than
  :data:`MAX_DIGITS` digits in the integer or the fraction part.
* A JSON string entry matches ``-?[0-9]+(/[0-9]+)?`` exactly (no ``+``, no spaces, no decimal
  point, no exponent), with a nonzero denominator and at most :data:`MAX_DIGITS` digits in each
  run; it denotes p/q.
* ``null``, booleans, ``NaN``/``Infinity`` and duplicate keys in any object are refused.
* Nesting deeper than :data:`MAX_DEPTH` arrays/objects is refused before parsing.

:func:`loads` decodes a document under these rules: integers stay ``int``, other number
literals become ``fractions.Fraction``; :func:`entry` turns one decoded entry into a Fraction.
Every refusal is an :class:`~absorb.errors.AbsorbError` (one line, exit 2 at the CLI). This
module sits at the bottom of the package: it imports nothing of it but :mod:`absorb.errors`.
"""

from __future__ import annotations

import functools
import json
import re
from fractions import Fraction

import numpy as np

from absorb.errors import AbsorbError

#: Largest absolute value of the exponent of a number literal (both readers refuse beyond it:
#: 10^exponent would otherwise be computed for an arbitrarily large exponent).
MAX_EXPONENT = 4096
#: Most digits in one digit run: the integer or fraction part of a literal, p or q of "p/q".
MAX_DIGITS = 4096
#: Deepest nesting of arrays and objects in any JSON document the tool reads (a weights file
#: needs 4, a config.json a handful): checked by a linear scan before the recursive parser runs.
MAX_DEPTH = 512

_LITERAL = re.compile(r"(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?", re.ASCII)
_RATIONAL = re.compile(r"(-?[0-9]+)(?:/([0-9]+))?", re.ASCII)


def _short(text: str) -> str:
    """``text`` for an error message: long literals cut in the middle."""
    return repr(text if len(text) <= 40 else f"{text[:20]}…{text[-10:]}")


def _digits(run: str, text: str) -> None:
    if len(run) > MAX_DIGITS:
        raise AbsorbError(f"{_short(text)} has a run of {len(run)} digits, more than "
                          f"the limit {MAX_DIGITS}")


def number_literal(text: str) -> int | Fraction:
    """The exact value of a JSON number literal: an ``int`` when it has no fraction part and no
    exponent, else a Fraction (mantissa · 10^exponent, never rounded)."""
    m = _LITERAL.fullmatch(text)
    if m is None:
        raise AbsorbError(f"{_short(text)} is not a JSON number literal")
    sign, whole, frac, exp_sign, exp_digits = m.groups()
    _digits(whole, text)
    if frac is None and exp_digits is None:
        return int(text)
    frac = frac or ""
    _digits(frac, text)
    exponent = 0
    if exp_digits is not None:
        # leading zeros carry no value (1e0001 is 10); the rest is bounded before int() sees it
        run = exp_digits.lstrip("0")
        if len(run) > len(str(MAX_EXPONENT)) or (run and int(run) > MAX_EXPONENT):
            raise AbsorbError(f"number {_short(text)}: exponent beyond ±{MAX_EXPONENT}")
        exponent = -int(run or "0") if exp_sign == "-" else int(run or "0")
    exponent -= len(frac)
    # int() converts at most MAX_DIGITS digits at a time: below Python's int-from-string limit
    digits = whole + frac
    mantissa = (int(digits) if len(digits) <= MAX_DIGITS
                else int(whole) * _pow10(len(frac)) + int(frac))
    if sign:
        mantissa = -mantissa
    if exponent >= 0:
        return Fraction(mantissa * _pow10(exponent))
    return Fraction(mantissa, _pow10(-exponent))


@functools.lru_cache(maxsize=256)
def _pow10(k: int) -> int:
    return int(10**k)  # int ** int is typed as Any (a negative power is a float)


def rational_string(text: str) -> Fraction:
    """The rational p/q (or p) that a string entry spells, under the string grammar."""
    m = _RATIONAL.fullmatch(text)
    if m is None:
        raise AbsorbError(f"string {_short(text)} is not a rational 'p/q' or integer 'p' "
                          "(digits only: no '+', spaces, decimal point or exponent)")
    p, q = m.groups()
    _digits(p.removeprefix("-"), text)
    if q is None:
        return Fraction(int(p))
    _digits(q, text)
    if int(q) == 0:
        raise AbsorbError(f"string {_short(text)} has denominator 0")
    return Fraction(int(p), int(q))


def entry(value: object, where: str) -> Fraction:
    """One decoded entry (from :func:`loads`) as an exact rational; ``where`` names it."""
    if type(value) is Fraction:  # the common case first: a decoded decimal literal
        return value
    if isinstance(value, bool) or value is None:
        raise AbsorbError(f"{where}: {json.dumps(value)} is not a number")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, str):
        try:
            return rational_string(value)
        except AbsorbError as exc:
            raise AbsorbError(f"{where}: {exc}") from None
    raise AbsorbError(f"{where}: expected a number or a string 'p/q', got a "
                      f"{'list' if isinstance(value, list) else 'JSON object'}")


def _no_constant(name: str) -> object:
    raise AbsorbError(f"{name} is not a number (NaN and Infinity are refused)")


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise AbsorbError(f"duplicate key {_short(key)} in a JSON object")
        out[key] = value
    return out


def check_depth(text: str) -> None:
    """Refuse a document nested deeper than :data:`MAX_DEPTH`, in a few vectorized passes and
    no recursion. Brackets inside strings do not count: escape pairs are dropped first
    (``\\\\`` then ``\\"``, left to right as JSON reads them), so every quote left delimits a
    string, and a byte is inside one when an odd number of quotes precede it (UTF-8 never
    puts an ASCII byte inside a multi-byte character)."""
    raw = text.encode("utf-8", "surrogatepass").replace(b"\\\\", b"").replace(b'\\"', b"")
    data = np.frombuffer(raw, dtype=np.uint8)
    opens = np.flatnonzero((data == ord("[")) | (data == ord("{")))
    closes = np.flatnonzero((data == ord("]")) | (data == ord("}")))
    at = np.concatenate([opens, closes])
    steps = np.concatenate([np.ones(len(opens), np.int64), -np.ones(len(closes), np.int64)])
    order = np.argsort(at, kind="stable")
    at, steps = at[order], steps[order]
    quotes_before = np.searchsorted(np.flatnonzero(data == ord('"')), at)
    steps = steps[quotes_before % 2 == 0]  # brackets outside strings
    depth = int(np.cumsum(steps).max(initial=0))
    if depth > MAX_DEPTH:
        raise AbsorbError(f"JSON nested too deeply ({depth} levels; the limit is {MAX_DEPTH})")


def _bounded_int(token: str) -> int:
    _digits(token.removeprefix("-"), token)
    return int(token)


def loads_document(text: str) -> object:
    """A JSON document that is not a weights file (``config.json``, a shard index) under the
    same limits — nesting (:data:`MAX_DEPTH`) and integer length (:data:`MAX_DIGITS`) — but
    otherwise read as Python's ``json`` reads it (floats as floats, constants, last duplicate
    key wins), as the library that wrote it does. Refusals are one-line AbsorbErrors."""
    check_depth(text)
    try:
        return json.loads(text, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise AbsorbError(f"not valid JSON ({exc})") from None
    except RecursionError:
        raise AbsorbError("JSON nested too deeply") from None


def loads(text: str) -> object:
    """The JSON document ``text`` under the grammar: ints, Fractions, strings, lists and dicts
    (and ``None``/booleans, which :func:`entry` refuses where a number belongs). Duplicate keys,
    NaN/Infinity, out-of-range literals, malformed JSON and nesting deeper than the
    interpreter's recursion limit are refused."""
    def literal(token: str) -> int | Fraction:
        try:
            return number_literal(token)
        except AbsorbError as exc:  # the decoder does not say where: the first occurrence
            # of the token as a whole literal (not inside a longer one or a string's digits)
            found = re.search(r'(?<![0-9A-Za-z.+"-])' + re.escape(token) + r'(?![0-9A-Za-z."])',
                              text)
            at = found.start() if found else 0
            line = text.count("\n", 0, at) + 1
            column = at - text.rfind("\n", 0, at)
            raise AbsorbError(f"{exc} (line {line} column {column})") from None

    check_depth(text)
    try:
        return json.loads(text, parse_int=literal, parse_float=literal,
                          parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise AbsorbError(f"not valid JSON ({exc})") from None
    except RecursionError:
        raise AbsorbError("not valid JSON for a weights file: nested too deeply") from None
