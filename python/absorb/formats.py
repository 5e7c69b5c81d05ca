"""Storage formats: the numbers a file stores, read exactly once, and their float64 view.

A weights file names the format of its numbers: the dtype of an ``.npz`` member, the dtype
in a safetensors header, or — a ``.json`` file — exact rationals (its number grammar,
:mod:`absorb.numbers`). Every reader turns an array into one :class:`StoredArray`: the
format taken from the file, the float64 view every numerical step works on (each entry
rounded to nearest; ±inf beyond the float range), and the exact values wherever the view is
not them. Nothing downstream converts again.

Held exactly (every value is a rational, kept as such):

* float16, bfloat16, float32, float64: dyadic rationals m·2^e that float64 holds exactly (the
  view IS the stored value);
* long double (``np.longdouble``: the 80-bit x87 format on x86, 64-bit mantissa, exponents
  to ±16383): the view is exact for values inside float64's precision and range; otherwise
  each entry is decomposed exactly (``np.frexp``: mantissa·2^p is an integer, p the format's
  precision) and kept as a Fraction — 1 + 2⁻⁶⁰ stays 1 + 2⁻⁶⁰, 1e-4000 stays nonzero;
* int8 … int64, uint8 … uint64: integers; up to 2⁵³ in magnitude the view is exact, beyond
  it the entries are kept as Python integers (2⁵³ + 1 stays 2⁵³ + 1);
* rational (JSON): Fractions, always kept beside the view.

Refused with a one-line reason: bool, complex, object (pickles), strings and bytes,
structured and datetime arrays, and NaN or ±inf entries (no rational value).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from absorb.errors import AbsorbError
from absorb.exact import safe_float

__all__ = ["EXACT_FLOAT64", "FLOAT_FORMATS", "RATIONAL", "StoredArray", "coarsest",
           "float_view", "format_name", "is_integer_format", "stored_array", "unit_roundoff"]

Array = NDArray[np.float64]
ObjectArray = NDArray[np.object_]

#: The format of exact (JSON) input.
RATIONAL = "rational"
#: Unit roundoff (half the spacing of the numbers near 1) of each float format.
FLOAT_FORMATS: dict[str, float] = {
    "bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 2.0**-24, "float64": 2.0**-53,
    "longdouble": float(np.finfo(np.longdouble).eps) / 2}
#: Integers of magnitude up to this are held exactly by float64.
EXACT_FLOAT64 = 1 << 53
#: Most entries of one array kept as exact values (Python rationals, ~100 bytes each): an
#: array past it whose float64 view is not exact is refused, not rounded.
MAX_EXACT_ENTRIES = 1 << 22
_INTEGER_FORMATS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def is_integer_format(name: str) -> bool:
    return name in _INTEGER_FORMATS


def unit_roundoff(name: str) -> float:
    """The relative precision of a format: a float format's unit roundoff; for integers (held
    exactly) and long double (computed on in float64) the float64 arithmetic's, 2⁻⁵³; 0 for
    rationals."""
    if name == RATIONAL:
        return 0.0
    if is_integer_format(name):
        return FLOAT_FORMATS["float64"]
    return max(FLOAT_FORMATS[name], FLOAT_FORMATS["float64"])


def coarsest(names: list[str]) -> str:
    """The format of largest unit roundoff among ``names`` (the block's precision)."""
    return max(names, key=lambda name: (unit_roundoff(name), name))


@dataclass(frozen=True, eq=False)
class StoredArray:
    """One stored array: its ``format`` (from the file), its float64 ``view``, and its
    ``exact`` values (Fractions) when the view is not exactly the stored numbers, else None."""

    format: str
    view: Array
    exact: ObjectArray | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.view.shape)


def format_name(dtype: np.dtype[np.generic], key: str) -> str:
    """The format of a numpy dtype, or a one-line refusal naming the array ``key``."""
    if dtype.hasobject:
        raise AbsorbError(f"{key} is an object array (refused: it could hold anything)")
    if dtype.kind == "f":
        if dtype == np.longdouble and dtype.itemsize > 8:
            return "longdouble"
        if dtype.name in FLOAT_FORMATS:
            return dtype.name
    if dtype.kind in "iu" and dtype.name in _INTEGER_FORMATS:
        return dtype.name
    what = {"b": "boolean", "c": "complex", "U": "string", "S": "bytes", "V": "structured",
            "M": "datetime", "m": "timedelta"}.get(dtype.kind, "unsupported")
    raise AbsorbError(f"{key}: non-numeric array ({what}, dtype {dtype}) refused; weights are "
                      "integers or floats (float16/32/64, long double)")


def stored_array(arr: NDArray[np.generic], key: str) -> StoredArray:
    """The exact stored value of a numpy array and its float64 view (see the module
    docstring); NaN and ±inf are refused."""
    fmt = format_name(arr.dtype, key)
    if is_integer_format(fmt):
        return _integers(arr, fmt, key)
    if fmt != "longdouble":
        view = np.asarray(arr, dtype=np.float64)  # widening: every value kept exactly
        _finite(view, key)
        return StoredArray(fmt, view)
    if not np.all(np.isfinite(arr)):
        raise AbsorbError(f"{key} contains NaN or Inf")
    with np.errstate(over="ignore", under="ignore"):
        view = np.asarray(arr, dtype=np.float64)
        same = bool(np.all(np.isfinite(view))) and bool(
            np.array_equal(view.astype(np.longdouble), arr))
    if same:
        return StoredArray(fmt, view)
    _exact_size(arr, fmt, key)
    return StoredArray(fmt, view, _longdouble_fractions(arr))


def _finite(view: Array, key: str) -> None:
    if not np.all(np.isfinite(view)):
        raise AbsorbError(f"{key} contains NaN or Inf")


def _integers(arr: NDArray[np.generic], fmt: str, key: str) -> StoredArray:
    """Integers: the float64 view, and Python integers beside it where some entry is beyond
    2⁵³ (where float64 would round it)."""
    view = np.asarray(arr, dtype=np.float64)
    if arr.size == 0 or max(abs(int(arr.min())), abs(int(arr.max()))) <= EXACT_FLOAT64:
        return StoredArray(fmt, view)
    _exact_size(arr, fmt, key)
    ints = arr.astype(object)
    return StoredArray(fmt, view, np.frompyfunc(Fraction, 1, 1)(ints).astype(object))


def _exact_size(arr: NDArray[np.generic], fmt: str, key: str) -> None:
    if arr.size > MAX_EXACT_ENTRIES:
        raise AbsorbError(f"{key}: {arr.size} {fmt} entries that float64 would round need exact "
                          f"arithmetic, refused above {MAX_EXACT_ENTRIES} entries")


def _longdouble_fractions(x: NDArray[np.generic]) -> ObjectArray:
    """Every finite long double as the exact rational it is: x = m·2^e (``np.frexp``, exact,
    m in [1/2, 1)) and M = m·2^p an integer (p the format's precision); M is read off in
    32-bit chunks, each exact in float64 (powers of two scale long doubles exactly)."""
    p = int(np.finfo(np.longdouble).nmant) + 1
    m, e = np.frexp(x)
    rest = np.abs(np.ldexp(m, p))  # integers below 2^p
    chunk = np.longdouble(2**32)
    M = np.zeros(x.shape, dtype=object)
    for k in range(math.ceil(p / 32)):
        high = np.floor(rest / chunk)
        low = (rest - high * chunk).astype(np.int64).astype(object)
        M = M + (low << (32 * k))
        rest = high
    sign = np.where(np.signbit(x), -1, 1).astype(object)
    shift = (e.astype(np.int64) - p).astype(object)

    def value(n: int, s: int, k: int) -> Fraction:
        return Fraction(s * n << k) if k >= 0 else Fraction(s * n, 1 << -k)

    out: ObjectArray = np.frompyfunc(value, 3, 1)(M, sign, shift).astype(object)
    return out


def float_view(exact: ObjectArray) -> Array:
    """The float64 view of exact values: each entry rounded to nearest, ±inf beyond the float
    range (:func:`absorb.exact.safe_float`)."""
    return np.array([safe_float(q) for q in exact.reshape(-1)],
                    dtype=np.float64).reshape(exact.shape)
