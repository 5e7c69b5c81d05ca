"""Skip blocks, residual-free blocks and depth-L stacks, evaluated on batches (rows).

Ungated:  f(x) = A x + W_down σ(W_up x + b_up) + b_down
Gated:    f(x) = A x + W_down (g(W_gate x) ⊙ (W_up x + b_up)) + b_down
Residual-free (``residual=False``): the same without the A x term.

A batch X is an (m, d) array; the block maps it to (m, d). ``A_skip=None`` is the identity skip.

The weights as stored, carried by the block itself (``Block.stored_weights``,
``stored_biases``, ``stored_arrays``): the rational originals of an exact input
(``Block.exact``), else the float64 arrays — every float is a dyadic rational, so both are the
stored numbers exactly; ``Block.rational_weights`` and ``rational_biases`` give them as
``fractions.Fraction`` arrays with the identity skip written out. Each array is converted at
most once per block (kept on it), however many steps of a verdict read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from absorb.activations import Activation
from absorb.errors import AbsorbError
from absorb.exact import as_fractions, identity

Array = NDArray[np.float64]
ObjectArray = NDArray[np.object_]

#: The input scales at which a block is evaluated by every numerical check, fit and experiment:
#: small inputs (the linear regime the linearization argument reads), unit inputs, and large
#: ones (the regime of the degree argument and of ReLU at infinity).
INPUT_SCALES: tuple[float, ...] = (1e-2, 1.0, 1e2)


@dataclass(frozen=True)
class ExactWeights:
    """The rational originals (object arrays of ``fractions.Fraction``) of an exact input."""

    W_up: ObjectArray
    W_down: ObjectArray
    W_gate: ObjectArray | None = None
    b_up: ObjectArray | None = None
    b_down: ObjectArray | None = None
    A_skip: ObjectArray | None = None


def _check_shape(name: str, arr: NDArray[np.generic] | None, shape: tuple[int, ...]) -> None:
    if arr is not None and arr.shape != shape:
        want = "x".join(map(str, shape))
        got = "x".join(map(str, arr.shape)) or "scalar"
        raise AbsorbError(f"{name} has shape {got}, expected {want}")


@dataclass(frozen=True)
class Block:
    """One block of the kind fixed by ``activation``; shapes follow PyTorch ``nn.Linear``.

    ``dtype`` is the storage format the weights were read in (:mod:`absorb.formats`, named by
    the file: an ``.npz`` member's dtype, a safetensors header, "rational" for JSON); None for
    a block built in memory. ``exact`` holds the stored numbers where the float views are not
    them (rationals, integers beyond 2⁵³, long doubles beyond float64)."""

    activation: Activation
    W_up: Array
    W_down: Array
    W_gate: Array | None = None
    b_up: Array | None = None
    b_down: Array | None = None
    A_skip: Array | None = None
    residual: bool = True
    exact: ExactWeights | None = None
    dtype: str | None = None

    def __post_init__(self) -> None:
        if self.W_up.ndim != 2:
            raise AbsorbError(f"W_up must be a matrix (n x d), got {self.W_up.ndim} dimensions")
        n, d = self.W_up.shape
        if n == 0 or d == 0:
            raise AbsorbError(f"W_up has a zero size ({n}x{d}); need n >= 1 and d >= 1")
        _check_shape("W_down", self.W_down, (d, n))
        if self.activation.gated:
            if self.W_gate is None:
                raise AbsorbError(f"activation {self.activation.name} is gated and needs W_gate")
            _check_shape("W_gate", self.W_gate, (n, d))
        elif self.W_gate is not None:
            raise AbsorbError(f"activation {self.activation.name} is not gated; W_gate given")
        _check_shape("b_up", self.b_up, (n,))
        _check_shape("b_down", self.b_down, (d,))
        _check_shape("A_skip", self.A_skip, (d, d))

    @property
    def d(self) -> int:
        return int(self.W_up.shape[1])

    @property
    def n(self) -> int:
        return int(self.W_up.shape[0])

    @property
    def has_biases(self) -> bool:
        return self.b_up is not None or self.b_down is not None

    @cached_property
    def stored(self) -> dict[str, Any]:
        """Every array as stored, by name (None where absent): for exact input its rational
        original, or — an array a hand-built block gave only as floats — those floats as
        rationals; float64 otherwise. Exact input never passes through float."""
        keys = ("W_up", "W_down", "W_gate", "b_up", "b_down", "A_skip")
        if self.exact is None:
            return {key: getattr(self, key) for key in keys}
        out: dict[str, Any] = {}
        for key in keys:
            value, original = getattr(self, key), getattr(self.exact, key)
            out[key] = None if value is None else (
                as_fractions(value) if original is None else original)
        return out

    @cached_property
    def rational(self) -> dict[str, Any]:
        """Every array as stored over ℚ (Fraction arrays; a float is its dyadic value), the
        identity skip written out as ``A_skip``; None where absent. Converted once: for exact
        input :attr:`stored` already holds Fractions."""
        out = dict(self.stored) if self.exact is not None else {
            key: None if value is None else as_fractions(value)
            for key, value in self.stored.items()}
        if out["A_skip"] is None:
            out["A_skip"] = identity(self.d)
        return out

    @property
    def stored_weights(self) -> tuple[Any, Any, Any]:
        """(W_up, W_down, A) as stored (Fractions for exact input, float64 otherwise), with A
        None for the identity skip: the form the index-set search and the exact checks take,
        which treat None as I without building it."""
        return self.stored["W_up"], self.stored["W_down"], self.stored["A_skip"]

    @property
    def stored_biases(self) -> tuple[Any, Any]:
        """(b_up, b_down) as stored (Fractions for exact input, float64 otherwise), None if
        absent."""
        return self.stored["b_up"], self.stored["b_down"]

    @property
    def stored_arrays(self) -> dict[str, Any]:
        """The block's own MLP arrays as stored, by name (W_up, W_down and those of W_gate,
        b_up, b_down that it has): the rational originals for exact input."""
        keys = ("W_up", "W_down", "W_gate", "b_up", "b_down")
        return {key: self.stored[key] for key in keys if self.stored[key] is not None}

    @property
    def rational_weights(self) -> tuple[ObjectArray, ObjectArray, ObjectArray]:
        """(W_up, W_down, A) as stored, over ℚ: Fraction arrays (a float is its dyadic
        value), with the identity skip written out as the d×d identity, for arithmetic such
        as A + W_down D W_up."""
        return self.rational["W_up"], self.rational["W_down"], self.rational["A_skip"]

    @property
    def rational_biases(self) -> tuple[ObjectArray | None, ObjectArray | None]:
        """(b_up, b_down) as stored, over ℚ (Fraction arrays), None where absent."""
        return self.rational["b_up"], self.rational["b_down"]

    @cached_property
    def float_view_finite(self) -> bool:
        """Whether every float array of the block is finite (false only for exact input with
        an entry beyond the float range, which the reader keeps as ±inf beside its
        rational)."""
        return all(bool(np.all(np.isfinite(m))) for m in (
            self.W_up, self.W_down, self.W_gate, self.b_up, self.b_down, self.A_skip)
            if m is not None)

    def skip_matrix(self) -> Array:
        """A (the identity when ``A_skip`` is None)."""
        return np.eye(self.d) if self.A_skip is None else self.A_skip

    def hidden(self, X: Array) -> Array:
        """The hidden activations (m, n): σ(X W_upᵀ + b_up), or g(X W_gateᵀ) ⊙ (X W_upᵀ + b_up)."""
        pre = X @ self.W_up.T
        if self.b_up is not None:
            pre = pre + self.b_up
        if self.W_gate is None:
            return self.activation(pre)
        return self.activation(X @ self.W_gate.T) * pre

    def mlp(self, X: Array) -> Array:
        """M(X) for a batch X of shape (m, d), without the skip."""
        out = self.hidden(X) @ self.W_down.T
        return out if self.b_down is None else out + self.b_down

    def __call__(self, X: Array) -> Array:
        """f(X) = A X + M(X) (residual) or M(X); X is (d,) or (m, d)."""
        X = np.asarray(X, dtype=np.float64)
        single = X.ndim == 1
        batch = X[None, :] if single else X
        if batch.ndim != 2 or batch.shape[1] != self.d:
            raise AbsorbError(f"input has shape {X.shape}, expected ({self.d},) or (m, {self.d})")
        out = self.mlp(batch)
        if self.residual:
            out = out + (batch if self.A_skip is None else batch @ self.A_skip.T)
        return out[0] if single else out


def random_block(
    activation: Activation,
    d: int,
    n: int,
    rng: np.random.Generator,
    *,
    biases: bool = False,
    skip: Array | None = None,
) -> Block:
    """Gaussian weights at the usual fan-in scale: W_up, W_gate ~ N(0, 1/d), W_down ~ N(0, 1/n).

    Biases (when asked for) are N(0, 1/4); ``skip`` is the matrix A (None: identity).
    """
    if d < 1 or n < 1:
        raise AbsorbError(f"sizes must be positive, got d={d}, n={n}")
    W_up = rng.standard_normal((n, d)) / np.sqrt(d)
    W_down = rng.standard_normal((d, n)) / np.sqrt(n)
    W_gate = rng.standard_normal((n, d)) / np.sqrt(d) if activation.gated else None
    b_up = 0.5 * rng.standard_normal(n) if biases else None
    b_down = 0.5 * rng.standard_normal(d) if biases else None
    return Block(activation, W_up, W_down, W_gate, b_up, b_down, skip)


def planted_block(block_like: Block, rng: np.random.Generator, size: int | None = None) -> Block:
    """A random block of ``block_like``'s kind and size with a planted index set
    (see :func:`planted_block_and_set`)."""
    return planted_block_and_set(block_like, rng, size)[0]


def planted_block_and_set(block_like: Block, rng: np.random.Generator, size: int | None = None
                          ) -> tuple[Block, list[int]]:
    """A random block of ``block_like``'s kind and size with an index set S of ``size`` units
    (default d + 1, at most n), and S (W_up[T] well-conditioned):
    W_down[:,T] = (−A − W_down[:,S∖T] W_up[S∖T]) W_up[T]⁻¹ for the first d units T of a random
    S, so W_down[:,S] W_up[S,:] = −A and the block is absorbable at its own width
    (index_set_sufficient). Needs n ≥ d."""
    d, n = block_like.d, block_like.n
    if n < d:
        raise AbsorbError(f"no index set fits in n = {n} < d = {d} units")
    k = min(n, d + 1) if size is None else size
    base = random_block(block_like.activation, d, n, rng, biases=block_like.has_biases,
                        skip=block_like.A_skip)
    W_up, W_down = base.W_up.copy(), base.W_down.copy()
    # a well-conditioned W_up[T] (redrawn otherwise): an ill-conditioned one makes W_down huge
    # and the block an accident of cancellation rather than a test instance
    for _ in range(100):
        S = rng.choice(n, size=k, replace=False)
        T, rest = S[:d], S[d:]
        if np.linalg.cond(W_up[T]) < 30:
            break
    W_down[:, T] = (-base.skip_matrix() - W_down[:, rest] @ W_up[rest]) @ np.linalg.inv(W_up[T])
    block = Block(base.activation, W_up, W_down, base.W_gate, base.b_up, base.b_down,
                  block_like.A_skip)
    return block, sorted(int(i) for i in S)


def stack_forward(blocks: Sequence[Block], X: Array) -> Array:
    """The depth-L composition blocks[L-1] ∘ … ∘ blocks[0] applied to X."""
    out = np.asarray(X, dtype=np.float64)
    for block in blocks:
        out = block(out)
    return out
