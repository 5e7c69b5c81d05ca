"""Exact rational matrices kept in their stored form and written as "p/q" strings on output.

A light module (numpy and fractions only): the command line recognizes these matrices when it
writes JSON without importing the certificate machinery (scipy) at start-up.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["RationalMatrix", "rational_text"]


def _int_text(n: int) -> str:
    """The decimal digits of n. Why not str(n): Python ≥ 3.11 refuses str() of an int past
    4300 digits (sys.get_int_max_str_digits), which exact products of long inputs reach;
    Decimal converts an int exactly and without that limit, and its str of an integer
    (exponent 0) is the plain digits."""
    return str(n) if -10**4000 < n < 10**4000 else str(Decimal(n))


def rational_text(v: Fraction | int | float) -> str:
    """The exact "p/q" (or "p") string of a rational (a finite float: its exact dyadic value),
    of any length: the one writer of exact values (certificates, JSON output, exported
    files)."""
    q = Fraction(v)
    if q.denominator == 1:
        return _int_text(q.numerator)
    return f"{_int_text(q.numerator)}/{_int_text(q.denominator)}"


@dataclass(frozen=True, eq=False)
class RationalMatrix:
    """A matrix of exact rationals as stored — float64 on the dyadic grid 2^-``grid`` (exact
    values), or Fractions (``grid`` None) — written as "p/q" strings only when serialized.

    Why lazy: d² Python strings cost about a microsecond each (17 s and some 2 GB at
    d = 4096), which text output never needs and JSON output needs one layer at a time.
    Iterating yields the rows of strings, so a JSON reader's code works on it unchanged.
    """

    values: Any
    grid: int | None

    def to_json(self) -> list[list[str]]:
        """The entries as exact "p/q" strings (vectorized on the grid: m / 2^grid reduced)."""
        if self.grid is None:
            return [[rational_text(v) for v in row] for row in self.values]
        m = np.rint(np.asarray(self.values) * 2.0**self.grid).astype(np.int64)
        den = np.int64(1) << np.int64(self.grid)
        g = np.gcd(m, den)
        num, q = m // g, den // g
        return [[f"{a}/{b}" if b != 1 else str(a) for a, b in zip(r1, r2, strict=True)]
                for r1, r2 in zip(num.tolist(), q.tolist(), strict=True)]

    def fractions(self) -> list[list[Fraction]]:
        """The entries as Fractions (a float64 is a dyadic rational: exact)."""
        return [[Fraction(v) for v in row] for row in np.asarray(self.values).tolist()]

    def __iter__(self) -> Iterator[list[str]]:
        return iter(self.to_json())

    def __eq__(self, other: object) -> bool:
        """Equal when the exact values are (whatever grid or representation holds them)."""
        if not isinstance(other, RationalMatrix):
            return NotImplemented
        if self.grid is not None and other.grid is not None:  # floats: equal iff same values
            return bool(np.array_equal(np.asarray(self.values), np.asarray(other.values)))
        return self.fractions() == other.fractions()

    def __len__(self) -> int:
        return len(self.values)
