"""Exact arithmetic on stored weights: rationals, integer scaling, and products checked on BLAS.

The bottom layer for every exact decision (certificates, theory, stacks). Every stored
float16/bfloat16/float32/float64 value is a dyadic rational m·2^e, so the stored weights ARE
rationals; exact input arrives as ``fractions.Fraction`` (or integers, or "p/q" strings).

* Rationals: :func:`to_fraction`, :func:`as_fractions`, :func:`identity`; linear algebra over
  ℚ: :func:`rank`, :func:`det` and :func:`rref` (fraction-free Gaussian elimination on
  integers, Python integers never round; :func:`rref_seconds` predicts its time),
  :func:`inverse` and :func:`null_space` (from :func:`rref`).
* Integer scaling: :func:`integers` writes a matrix M as N·``scale`` with N an integer matrix
  and ``scale`` an exact rational (a power of two for floats: 2^(smallest exponent)); huge
  float exponent spreads are never expanded — N is kept as odd mantissas times powers of
  two and only reduced modulo primes (:meth:`Scaled.residues`), so 2^520 or 10⁻³⁰⁰ cost
  nothing extra.
* Products on BLAS: :func:`matmul_mod` multiplies residue matrices modulo a prime p < 2²²
  with float64 GEMMs that are exact (see its docstring), and :func:`product_equals` decides
  X·Y = Z exactly from residues modulo enough primes (proof in its docstring), at the cost
  of a few float GEMMs of the same size. Float input is tried first on row and column grids
  (:mod:`absorb.exact.grid`): one GEMM of X·Y as given and a few passes over the entries,
  decisive when each row of X and column of Y needs few bits on its own grid (float16/32
  weights times a sparse or power-of-two factor) and whenever Z is off the products' grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from absorb.errors import AbsorbError
from absorb.exact.grid import grid_product_equals
from absorb.exact.linalg import (
    as_fractions,
    det,
    identity,
    inverse,
    json_float,
    null_space,
    rank,
    rref,
    rref_seconds,
    safe_float,
    to_fraction,
)

__all__ = ["Scaled", "as_fractions", "bilinear_rows", "det", "frobenius_product", "identity",
           "index_set_holds", "integers", "inverse", "json_float", "matmul_mod", "negated",
           "null_space", "primes_below", "product_equals", "rank", "rref", "rref_seconds",
           "safe_float", "to_fraction"]

ObjArray = NDArray[np.object_]
IntArray = NDArray[np.int64]

#: Inner-dimension chunk of :func:`matmul_mod`: CHUNK·(p/2)² ≤ 2⁵³ for every prime below.
CHUNK = 1 << 11
#: Moduli bound: primes below 2²² (symmetric residues |x| < 2²¹, products < 2⁴²).
_PRIME_CEILING = 1 << 22


def _is_prime(m: int) -> bool:
    if m < 2 or m % 2 == 0:
        return m == 2
    f = 3
    while f * f <= m:
        if m % f == 0:
            return False
        f += 2
    return True


def primes_below(top: int, count: int) -> tuple[int, ...]:
    out: list[int] = []
    m = top - 1
    while len(out) < count:
        if _is_prime(m):
            out.append(m)
        m -= 1
    return tuple(out)


@cache
def _primes(count: int) -> tuple[int, ...]:
    """The ``count`` largest primes below 2²² (each above 2²¹, so each adds 21 bits to M),
    made once on first use."""
    return primes_below(_PRIME_CEILING, count)


# --------------------------------------------------------------------------------------------
# integer scaling


@dataclass(frozen=True)
class Scaled:
    """A rational matrix M = N · ``scale``, N integer, kept without expanding huge integers.

    Float source (``x``): scale = 2^``emin``, emin the lowest set bit's exponent over all
    entries, so N = x·2^-emin entry-wise (odd mantissas times powers of two). Rational source:
    N = ``big`` (Python integers), scale = 1/lcm(denominators). ``bits`` bounds every
    |N_ij| < 2^bits; ``max_abs`` is the exact max |N_ij|.
    """

    shape: tuple[int, ...]
    scale: Fraction
    bits: int
    max_abs: int
    x: NDArray[np.float64] | None = None
    emin: int = 0
    big: ObjArray | None = None

    @cached_property
    def _parts(self) -> tuple[IntArray, IntArray]:
        """(m, k) with N = m·2^k entry-wise, |m| < 2⁵³ odd or 0, k ≥ 0 (float source)."""
        assert self.x is not None
        m, e = _dyadic_parts(self.x)
        return m, np.where(m != 0, e - self.emin, 0)

    def residues(self, p: int) -> IntArray:
        """N mod p, as int64 in [0, p)."""
        if self.big is not None:
            out: IntArray = np.asarray(np.mod(self.big, p), dtype=np.int64).reshape(self.shape)
            return out
        if self.bits <= 52:  # N is a float64 integer below 2^52: one exact reduction
            return np.mod(_reduce(self.floats().copy(), p).astype(np.int64), p)
        m, k = self._parts
        pow2 = _pow2_table(p, int(k.max()) if k.size else 0)
        return np.asarray((np.mod(m, p) * pow2[k]) % p, dtype=np.int64)

    def exact(self) -> ObjArray:
        """N as Python integers (for small matrices: confirmations, tests)."""
        if self.big is not None:
            return self.big
        m, k = self._parts
        out: ObjArray = np.empty(self.shape, dtype=object)
        flat = out.reshape(-1)
        for i, (mi, ki) in enumerate(zip(m.reshape(-1).tolist(), k.reshape(-1).tolist(),
                                         strict=True)):
            flat[i] = int(mi) << int(ki)
        return out

    @cached_property
    def _floats(self) -> NDArray[np.float64]:
        if self.big is not None:
            return np.asarray(self.big.astype(np.float64), dtype=np.float64)
        assert self.x is not None
        return np.asarray(np.ldexp(self.x, -self.emin), dtype=np.float64)

    def floats(self) -> NDArray[np.float64]:
        """N as float64: exact when ``bits`` ≤ 53 (the caller's condition); computed once."""
        return self._floats

    def nonzero(self) -> NDArray[np.bool_]:
        """N ≠ 0 entry-wise (exact)."""
        if self.big is not None:
            return np.asarray(self.big != 0, dtype=bool)
        assert self.x is not None
        return np.asarray(self.x != 0)

    def is_zero(self) -> bool:
        return self.max_abs == 0


@cache
def _pow2_table(p: int, top: int) -> IntArray:
    """2^k mod p for k = 0..top."""
    out = np.empty(top + 1, dtype=np.int64)
    v = 1
    for k in range(top + 1):
        out[k] = v
        v = (v * 2) % p
    return out


_FRACTION_BITS = np.uint64((1 << 52) - 1)


def _dyadic_parts(x: NDArray[np.float64]) -> tuple[IntArray, IntArray]:
    """x = m·2^e exactly, m odd (or 0) int64 with |m| < 2⁵³, e int64 (any finite float64).

    Read from the IEEE 754 bits: a normal number is (2⁵² + fraction)·2^(E−1075), a subnormal
    fraction·2⁻¹⁰⁷⁴; trailing zero bits of m are moved into e (the lowest set bit of m is a
    power of two, whose float64 exponent field gives its position exactly).
    """
    raw = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
    ebits = ((raw >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    frac = (raw & _FRACTION_BITS).astype(np.int64)
    normal = ebits != 0
    m = np.where(normal, frac | (1 << 52), frac)
    e = np.where(normal, ebits - 1075, -1074)
    nz = m != 0
    low = np.where(nz, m & -m, 1).astype(np.float64)
    tz = ((low.view(np.uint64) >> np.uint64(52)).astype(np.int64) - 1023)
    m >>= tz
    m = np.where(raw >> np.uint64(63) != 0, -m, m)
    return m, np.where(nz, e + tz, 0)


def _lowest_exponent(x: NDArray[np.float64]) -> int:
    """min over the nonzero entries of the exponent of their lowest set bit (x not all zero).

    The same IEEE 754 reading as :func:`_dyadic_parts`, with a few in-place passes: for
    m = 2⁵²·[normal] + fraction, the lowest set bit m & (−m) is a power of two 2^t whose float64
    exponent field is t + 1023, and the entry's lowest bit is 2^(t + max(E, 1) − 1075)."""
    raw = np.ascontiguousarray(x, dtype=np.float64).reshape(-1).view(np.uint64)
    m = raw & _FRACTION_BITS
    field = raw >> np.uint64(52)
    field &= np.uint64(0x7FF)
    np.bitwise_or(m, np.uint64(1 << 52), out=m, where=field != 0)
    low = ~m
    low += np.uint64(1)
    low &= m  # lowest set bit (0 for a zero entry)
    t = low.astype(np.float64).view(np.uint64)
    t >>= np.uint64(52)  # t + 1023 (0 for a zero entry)
    np.maximum(field, np.uint64(1), out=field)
    field += t  # (t + 1023) + max(E, 1)
    field[m == 0] = np.iinfo(np.uint64).max
    return int(field.min()) - 1023 - 1075


def integers(M: Any) -> Scaled:
    """M = N·scale with N integer (see :class:`Scaled`). Floats are read as the dyadic
    rationals they are; object arrays as rationals (Fractions, integers, "p/q" strings)."""
    arr = np.asarray(M)
    if arr.dtype.kind in "biu" and arr.dtype != np.bool_:
        arr = arr.astype(object)
    if arr.dtype.kind == "f":
        x = np.asarray(arr, dtype=np.float64)
        peak = float(np.max(np.abs(x))) if x.size else 0.0
        if not math.isfinite(peak):
            raise AbsorbError("weights contain NaN or Inf")
        if peak == 0.0:
            return Scaled(x.shape, Fraction(1), 0, 0, x, 0)
        emin = _lowest_exponent(x)
        # |N| ≤ max|x|·2^-emin < 2^(top + 1 − emin), top = ⌊log₂ max|x|⌋ (frexp: exact)
        bits = int(np.frexp(peak)[1]) - emin
        max_abs = int(Fraction(peak) / Fraction(2) ** emin)
        return Scaled(x.shape, Fraction(2) ** emin, bits, max_abs, x, emin)
    Q = as_fractions(arr)
    den = math.lcm(1, *(q.denominator for q in Q.reshape(-1)))
    big: ObjArray = np.empty(Q.shape, dtype=object)
    flat = big.reshape(-1)
    for k, q in enumerate(Q.reshape(-1)):
        flat[k] = q.numerator * (den // q.denominator)
    max_abs = max((abs(int(v)) for v in flat), default=0)
    return Scaled(Q.shape, Fraction(1, den), max_abs.bit_length(), max_abs, big=big)


def _reduce(C: NDArray[np.float64], p: int) -> NDArray[np.float64]:
    """An integer congruent to C modulo p, in place, for integer-valued |C| < 2⁵³: with
    q = rint(C·(1/p)), q·p and C − q·p are integers below 2⁵³, so both are exact (``np.fmod``
    is exact too, but several times slower). The computed C·(1/p) is within |C/p|·2⁻⁵² of
    C/p, and C/p lies at least 1/(2p) from a half-integer (p odd), so for |C| < 2⁵¹ q is the
    nearest integer and the result is the centered representative in [−(p−1)/2, (p−1)/2];
    for larger |C| it is within 3p/2."""
    q = C * (1.0 / p)
    np.rint(q, out=q)
    q *= p
    C -= q
    return C


def _centered(r: NDArray[np.float64], p: int) -> NDArray[np.float64]:
    """The representative in [−(p−1)/2, (p−1)/2] of integers r with |r| < 2⁵³, in place."""
    return _reduce(_reduce(r, p), p)  # the second pass starts below 3p/2 < 2^51: centered


def _matmul_centered(Xs: NDArray[np.float64], Ys: NDArray[np.float64],
                     p: int) -> NDArray[np.float64]:
    """X·Y modulo p for centered residues (|x| ≤ (p−1)/2 < 2²¹), centered: every chunk of
    CHUNK products sums to an integer below 2⁵³ in magnitude in any order (exact in float64)
    and is reduced exactly before it is accumulated."""
    if Xs.shape[1] <= CHUNK:  # one chunk: within 3p/2 after one pass, then centered
        return _reduce(_reduce(Xs @ Ys, p), p)
    acc = np.zeros((Xs.shape[0], Ys.shape[1]))
    for k0 in range(0, Xs.shape[1], CHUNK):
        acc += _reduce(Xs[:, k0:k0 + CHUNK] @ Ys[k0:k0 + CHUNK], p)
        _reduce(acc, p)  # |acc| < 3p before: centered after
    return acc


def matmul_mod(X: IntArray, Y: IntArray, p: int) -> IntArray:
    """X·Y mod p (entries of X, Y in [0, p), p < 2²²), exactly, with float64 GEMMs.

    Why exact: the residues are shifted to the centered range |x| ≤ (p−1)/2 < 2²¹, so each
    product is below 2⁴² in magnitude, and each GEMM sums at most CHUNK = 2¹¹ of them: every
    partial sum, in any order BLAS chooses, is an integer of magnitude below 2⁵³, hence
    represented exactly in float64 — no rounding occurs. Each chunk is reduced exactly
    (:func:`_reduce`) before it is accumulated.
    """
    if p >= _PRIME_CEILING:
        raise ValueError(f"modulus {p} is not below 2^22")
    Xs = _centered(X.astype(np.float64), p)
    Ys = _centered(Y.astype(np.float64), p)
    out: IntArray = np.mod(_matmul_centered(Xs, Ys, p).astype(np.int64), p)
    return out


#: Split point of :class:`_Residues`' two float64 limbs: N = hi·2^_LIMB + lo, 0 ≤ lo < 2^_LIMB.
_LIMB = 48


class _Residues:
    """Centered residues of one scaled matrix, prime after prime: from its float64 integers
    when they are below 2⁵² (then :func:`_reduce` is exact and no int64 pass is needed); from
    two float64 limbs N = hi·2⁴⁸ + lo when a float source is below 2⁹⁸ (hi = ⌊N·2⁻⁴⁸⌋ and
    lo = N − hi·2⁴⁸ ∈ [0, 2⁴⁸) are exact: a power-of-two shift, floor, and a difference that
    is itself a float64 integer; |hi| < 2⁵⁰); else from :meth:`Scaled.residues`."""

    def __init__(self, s: Scaled) -> None:
        self.s = s
        self.N = s.floats() if s.bits <= 52 else None
        self.limbs: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
        if self.N is None and s.x is not None and s.bits <= _LIMB + 50:
            N = s.floats()
            hi = np.floor(np.ldexp(N, -_LIMB))
            self.limbs = hi, N - np.ldexp(hi, _LIMB)

    def __call__(self, p: int) -> NDArray[np.float64]:
        if self.N is not None:  # one pass suffices below 2^51 (see _reduce)
            r = _reduce(self.N.copy(), p)
            return r if self.s.bits <= 50 else _reduce(r, p)
        if self.limbs is not None:
            hi, lo = self.limbs
            # centered hi (< 2^21) times 2^48 mod p (< 2^22), plus lo's (< 2^23): below 2^51
            r = _reduce(hi.copy(), p)
            r *= float(pow(2, _LIMB, p))
            r += _reduce(lo.copy(), p)
            return _reduce(r, p)
        return _reduce(self.s.residues(p).astype(np.float64), p)  # from [0, p): centered


def product_equals(X: Any, Y: Any, Z: Any) -> bool:
    """Whether X·Y = Z exactly (X a×k, Y k×b, Z a×b; floats as stored dyadics, or rationals).

    Write X = Nx·sx, Y = Ny·sy, Z = Nz·sz (:func:`integers`) and sz/(sx·sy) = a/b in lowest
    terms (b > 0). Then X·Y = Z ⟺ b·P = a·Nz with P = Nx·Ny, an integer identity.

    * b | a·Nz_ij and gcd(a, b) = 1 give b | Nz_ij: if max|Nz| < b, equality needs Nz = 0
      and P = 0 (a ≠ 0 unless Nz = 0).
    * |P_ij| ≤ k·max|Nx|·max|Ny| ≤ L := k·2^bx·2^by. If a·max|Nz| > b·L some entry differs.
    * Otherwise every |b·P_ij − a·Nz_ij| ≤ 2bL. Let M be a product of distinct primes with
      M > 2bL. If b·P ≡ a·Nz (mod p) for each prime p | M, then M divides every difference
      (Chinese remainder theorem), whose magnitude is below M: the differences are 0.

    * Float input first (:func:`_float_product_bound`): one float64 GEMM P̂ = Nx·Ny of the
      integer matrices (exact values, no underflow) with the proven bound |P̂ − P| ≤ β
      entry-wise. An entry where the computed |P̂ − (a/b)·Nz| exceeds β proves a difference;
      otherwise |b·P − a·Nz| ≤ b·max(|P̂ − (a/b)·Nz| + β), about 2⁻⁴³·k·L instead of 2L, so
      the primes need about 43 − log₂k fewer bits (and none when that bound is below 1).

    * Float16/32/64 input first (:func:`absorb.exact.grid.grid_product_equals`): the same
      error bound on each row's and column's own power-of-two grid, with Z checked to lie on
      the products' grid (one GEMM; proof in its docstring); what it leaves (None) goes on
      below.

    Cost: the float64 GEMM, then one :func:`matmul_mod` (a float64 GEMM of the same size) per
    prime, about (bits(b) + bx + by + 2·log₂k − 50)/21 primes after the float pass (≈ 2 for
    float32 weights of ordinary spread, instead of 5–6), stopping at the first prime that
    shows a difference. When 2bL < 2⁵³ the float64 GEMM is already exact and decides alone.
    """
    fast = _grid_decision(X, Y, Z)
    if fast is not None:
        return fast
    sx, sy, sz = integers(X), integers(Y), integers(Z)
    if len(sx.shape) != 2 or len(sy.shape) != 2 or sx.shape[1] != sy.shape[0] \
            or sz.shape != (sx.shape[0], sy.shape[1]):
        raise ValueError("shapes must be X (a, k), Y (k, b), Z (a, b)")
    k = sx.shape[1]
    if sx.is_zero() or sy.is_zero() or k == 0:
        return sz.is_zero()
    q = sz.scale / (sx.scale * sy.scale)
    a, b = q.numerator, q.denominator
    if sz.max_abs < b:
        return sz.is_zero() and _product_is_zero(sx, sy)
    L_bits = sx.bits + sy.bits + k.bit_length()  # L = k·2^bx·2^by ≤ 2^L_bits
    if a * sz.max_abs > b << L_bits:
        return False
    need = b.bit_length() + L_bits + 1  # 2bL < 2^need
    if need < 53 and sx.bits < 53 and sy.bits < 53 and sz.bits < 53:
        P = sx.floats() @ sy.floats()  # integer partial sums below 2^53: exact
        return bool(np.array_equal(float(b) * P, float(a) * sz.floats()))
    bound = _float_product_bound(sx, sy, sz, a, b)
    if bound is not None:
        if bound < 0:  # an entry differs beyond the float GEMM's error: a proof
            return False
        if bound == 0:  # |b·P − a·Nz| < 1 everywhere, an integer: zero
            return True
        need = min(need, bound)
    return _equal_mod_primes(sx, sy, sz, a, b, need)


_GEMM_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _grid_decision(X: Any, Y: Any, Z: Any) -> bool | None:
    """:func:`absorb.exact.grid.grid_product_equals` on float16/32/64 input of valid nonempty
    shapes (exactly converted to float64), else None."""
    arrs = [np.asarray(M) for M in (X, Y, Z)]
    if any(a.dtype not in _GEMM_FLOATS or a.ndim != 2 or a.size == 0 for a in arrs):
        return None
    x, y, z = (np.ascontiguousarray(a, dtype=np.float64) for a in arrs)
    if x.shape[1] != y.shape[0] or z.shape != (x.shape[0], y.shape[1]):
        return None
    return grid_product_equals(x, y, z)


#: The float pass of :func:`product_equals` runs when every integer matrix is below 2^_FLOAT_BITS
#: (squares and k-term sums of products stay far inside the float64 range).
_FLOAT_BITS = 480


def _float_product_bound(sx: Scaled, sy: Scaled, sz: Scaled, a: int, b: int) -> int | None:
    """One float64 GEMM toward deciding b·(Nx·Ny) = a·Nz: −1 when it proves an entry
    different, else the bits B with |b·P − a·Nz| < 2^(B−1) (0 when that bound is below 1,
    so the integers are equal); None when it does not apply (non-float input, integers of
    more than _FLOAT_BITS bits, or a/b not a power of two).

    Proof. Nx, Ny are integers held exactly as float64 (x·2^−emin: exponent shifts), so
    P̂ = fl(Nx·Ny) has no underflow and, in any summation order, |P̂_ij − P_ij| ≤
    γ_k·(|Nx||Ny|)_ij ≤ γ_k‖Nx_i,:‖₂‖Ny_:,j‖₂ =: β_ij (γ_k = k·u/(1 − k·u), u = 2⁻⁵³, Higham
    §3.1; Cauchy–Schwarz). The norms are float sums of k squares, at most (1 + γ_k) off, and
    β is formed with a few more roundings; the factor 1.01 covers them all (k ≪ 2⁴⁰).
    T = (a/b)·Nz is exact (a power-of-two shift within range). The computed |P̂ − T| is
    within a factor (1 ± u) of the true one, so fl(|P̂ − T|)·(1 − 2u) > β_ij proves
    P_ij ≠ T_ij, and otherwise |P_ij − T_ij| ≤ fl(|P̂ − T|)·(1 + 2u) + β_ij =: R_ij; then
    |b·P_ij − a·Nz_ij| = b·|P_ij − T_ij| ≤ b·max R, bounded by 2^(B−1) with B from the
    float's exponent (frexp: exact).
    """
    if sx.x is None or sy.x is None or sz.x is None:
        return None
    if max(sx.bits, sy.bits, sz.bits + abs(a.bit_length() - b.bit_length())) > _FLOAT_BITS \
            or a & (a - 1) or b & (b - 1):
        return None
    k = sx.shape[1]
    Fx, Fy = sx.floats(), sy.floats()
    P = Fx @ Fy
    shift = a.bit_length() - b.bit_length()  # a/b = 2^shift
    P -= np.ldexp(sz.floats(), shift)
    np.abs(P, out=P)
    gamma = k * 2.0**-53 / (1.0 - k * 2.0**-53)
    row = np.sqrt(np.einsum("ik,ik->i", Fx, Fx))
    col = np.sqrt(np.einsum("kj,kj->j", Fy, Fy))
    beta = np.multiply.outer(1.01 * gamma * row, col)
    if np.any(beta < P * (1.0 - 2.0**-52)):
        return -1
    P *= 1.0 + 2.0**-52
    P += beta
    top = float(np.max(P)) * 1.01 * b  # b ≤ 2^_FLOAT_BITS·…: within range
    if top < 1.0:
        return 0
    return int(np.frexp(top)[1]) + 1  # top < 2^frexp: |b·P − a·Nz| < 2^(B−1)


def _product_is_zero(sx: Scaled, sy: Scaled) -> bool:
    """Nx·Ny = 0: |P_ij| ≤ L < M, so P ≡ 0 modulo primes with product M > L suffices."""
    need = sx.bits + sy.bits + sx.shape[1].bit_length()
    rx, ry = _Residues(sx), _Residues(sy)
    prod = 1
    for p in _primes(need // 21 + 2):
        if np.any(_matmul_centered(rx(p), ry(p), p)):
            return False
        prod *= p
        if prod.bit_length() > need:
            return True
    raise AssertionError("prime supply exhausted")


def _equal_mod_primes(sx: Scaled, sy: Scaled, sz: Scaled, a: int, b: int, need: int) -> bool:
    """b·(Nx·Ny) ≡ a·Nz modulo each prime until their product exceeds 2^need (≥ 2bL + 1)."""
    rx, ry, rz = _Residues(sx), _Residues(sy), _Residues(sz)
    prod = 1
    for p in _primes(need // 21 + 2):
        # products of centered residues are below 2^42: _reduce leaves them centered
        lhs = _reduce(_matmul_centered(rx(p), ry(p), p) * float(b % p), p)
        rhs = _reduce(rz(p) * float(a % p), p)
        if not np.array_equal(lhs, rhs):
            return False
        prod *= p
        if prod.bit_length() > need:  # M ≥ 2^(bitlen−1) ≥ 2^need > 2bL
            return True
    raise AssertionError("prime supply exhausted")


def _rowdot_centered(P: NDArray[np.float64], U: NDArray[np.float64],
                     p: int) -> NDArray[np.float64]:
    """Σ_k P_ik U_ik modulo p for centered residues, centered (chunks of CHUNK products are
    exact integers below 2⁵³, as in :func:`_matmul_centered`)."""
    acc = np.zeros(P.shape[0])
    for k0 in range(0, P.shape[1], CHUNK):
        acc += _reduce(np.einsum("ik,ik->i", P[:, k0:k0 + CHUNK], U[:, k0:k0 + CHUNK]), p)
        _reduce(acc, p)
    return acc


def _crt(residues: list[list[int]], primes: list[int]) -> list[int]:
    """The integers x_i with |x_i| < M/2 (M = Π primes) and x_i ≡ residues[j][i] (mod p_j)."""
    M = math.prod(primes)
    basis = [(M // p) * pow(M // p, -1, p) for p in primes]
    out = []
    for column in zip(*residues, strict=True):
        x = sum(int(r) * e for r, e in zip(column, basis, strict=True)) % M
        out.append(x - M if 2 * x > M else x)
    return out


def bilinear_rows(X: Any, Y: Any, U: Any) -> tuple[list[int], Fraction]:
    """c_i = Σ_k (Xᵀ Y)_ik U_ik exactly, for X (d×n), Y (d×d), U (n×d) — the certificate's
    a_iᵀ Y b_i — as integers ``c`` and a scale: c_i·scale is the exact value.

    With integer forms X = Nx·sx, Y = Ny·sy, U = Nu·su, |Σ_k (NxᵀNy)_ik Nu_ik| ≤
    d²·2^(bx+by+bu) =: L; the residues modulo primes whose product M exceeds 2L determine each
    value (Chinese remainder theorem, the representative in (−M/2, M/2)). Cost: one n×d×d
    GEMM per prime on float64 BLAS, plus O(n·#primes) big-integer work.
    """
    sx, sy, su = integers(X), integers(Y), integers(U)
    d = sx.shape[0]
    scale = sx.scale * sy.scale * su.scale
    n = sx.shape[1]
    if sx.is_zero() or sy.is_zero() or su.is_zero():
        return [0] * n, scale
    need = sx.bits + sy.bits + su.bits + 2 * d.bit_length() + 1
    rx, ry, ru = _Residues(sx), _Residues(sy), _Residues(su)
    primes: list[int] = []
    res: list[list[int]] = []
    for p in _primes(need // 21 + 2):
        P = _matmul_centered(np.ascontiguousarray(rx(p).T), ry(p), p)
        res.append(_rowdot_centered(P, ru(p), p).astype(np.int64).tolist())
        primes.append(p)
        if math.prod(primes).bit_length() > need:
            return _crt(res, primes), scale
    raise AssertionError("prime supply exhausted")


def frobenius_product(X: Any, Y: Any) -> Fraction:
    """⟨X, Y⟩ = Σ_ij X_ij Y_ij exactly (any shapes alike), by residues and the CRT."""
    if np.shape(X) != np.shape(Y):
        raise ValueError(f"shapes {np.shape(X)} and {np.shape(Y)} differ")
    sx, sy = integers(np.asarray(X).reshape(1, -1)), integers(np.asarray(Y).reshape(1, -1))
    if sx.is_zero() or sy.is_zero():
        return Fraction(0)
    need = sx.bits + sy.bits + max(1, sx.shape[1]).bit_length() + 1
    rx, ry = _Residues(sx), _Residues(sy)
    primes: list[int] = []
    res: list[list[int]] = []
    for p in _primes(need // 21 + 2):
        res.append(_rowdot_centered(rx(p), ry(p), p).astype(np.int64).tolist())
        primes.append(p)
        if math.prod(primes).bit_length() > need:
            return _crt(res, primes)[0] * sx.scale * sy.scale
    raise AssertionError("prime supply exhausted")


def negated(M: Any) -> Any:
    """−M, exactly: floats and integers by numpy, object arrays entry by entry as rationals."""
    arr = np.asarray(M)
    if arr.dtype != object:
        return -arr
    return np.vectorize(lambda v: -to_fraction(v), otypes=[object])(arr) if arr.size else arr


def index_set_holds(W_up: Any, W_down: Any, S: Any, A: Any = None) -> bool:
    """Whether W_down[:,S] W_up[S,:] = −A exactly on the given values (A = I when None).

    Floats are their stored dyadic values; object arrays hold rationals. Only the columns S of
    W_down and rows S of W_up are read. S = ∅ holds iff A = 0. Cost: a few float64 GEMMs of
    size d×|S|×d (:func:`product_equals`).
    """
    Wu = np.asarray(W_up)
    Wd = np.asarray(W_down)
    if Wu.ndim != 2 or Wd.ndim != 2 or Wd.shape != (Wu.shape[1], Wu.shape[0]):
        raise ValueError("shapes must be W_up (n, d) and W_down (d, n)")
    n, d = Wu.shape
    idx = [int(i) for i in S]
    if len(set(idx)) != len(idx) or any(not 0 <= i < n for i in idx):
        raise ValueError(f"S must hold distinct indices in [0, {n})")
    A_in: Any = np.eye(d) if A is None else np.asarray(A)
    if A_in.shape != (d, d):
        raise ValueError(f"A must be ({d}, {d})")
    negA = negated(A_in)
    if not idx:
        return integers(negA).is_zero()
    return product_equals(Wd[:, idx], Wu[idx, :], negA)
