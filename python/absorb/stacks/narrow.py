"""depth_narrow: certify det(A + W D U) ≠ 0 for every realized activation pattern D.

Theorem (depth_narrow, docs/THEORY.md). ReLU, no biases. Let R = f_L ∘ … ∘ f_1 with
f_l(y) = A_l y + W_l ReLU(U_l y), and suppose det(A_l + W_l D U_l) ≠ 0 for every 0/1 diagonal D
realized by an open region of U_l's arrangement, for every l. Then R equals no residual-free
stack H = h_L ∘ … ∘ h_1 whose first hidden width is below 2d. (Off the hyperplanes, h_1's
active sets at x and −x are disjoint, so one of them has fewer than d units: on that open cone
H has rank < d and maps it into a null set, while R maps every open set onto a set with
interior.) Via bias_blowup (t → ∞, layer by layer) the same holds for GELU, tanh-GELU and
SiLU stacks with any biases, with the condition on the bias-free ReLU limit (same W, U, A).

Two certificates, both rigorous for the stored numbers:

* the norm bound ‖W‖₂‖U‖₂ ≤ ‖W‖_F‖U‖_F < 1 (identity skip): then ‖W D U‖₂ < 1 for every D
  with 0 ≤ D ≤ I, so I + W D U is invertible. ‖·‖_F² is summed in floating point and bounded
  from above with the rounding-error bound of a sum of m squares (|error| ≤ γ_{m+1}·sum, plus
  m·2⁻¹⁰⁷⁴ for underflow), so the test never accepts a product ≥ 1;
* exact enumeration: one rational point in every open region of U's arrangement
  (:mod:`absorb.stacks.arrangement`), its pattern D, and det(A + W D U) over ℚ (floats are the
  dyadic rationals they store).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from absorb.blocks import Array, Block
from absorb.exact import det
from absorb.rationals import rational_text
from absorb.stacks.arrangement import MAX_REGIONS, active_pattern, region_bound, region_points

_UNIT = 2.0**-53
_TINY = 2.0**-1074


@dataclass(frozen=True)
class DeterminantCheck:
    """Whether det(A + W D U) ≠ 0 was certified for every realized pattern D of one layer."""

    layer: int
    certified: bool
    method: Literal["norm_bound", "enumeration", "none"]
    norm_bound: float | None
    regions: int | None
    min_abs_det: Fraction | None
    singular_pattern: tuple[int, ...] | None
    singular_point: tuple[Fraction, ...] | None
    detail: str

    def to_json(self) -> dict[str, object]:
        return {
            "layer": self.layer, "certified": self.certified, "method": self.method,
            "norm_bound": self.norm_bound, "regions": self.regions,
            "min_abs_det": None if self.min_abs_det is None else rational_text(self.min_abs_det),
            "singular_pattern": (None if self.singular_pattern is None
                                 else list(self.singular_pattern)),
            "singular_point": (None if self.singular_point is None
                               else [rational_text(v) for v in self.singular_point]),
            "detail": self.detail,
        }


def frobenius_upper(M: Array) -> float:
    """A rigorous upper bound on ‖M‖_F² (rounding of the squares and the sum included)."""
    m = int(M.size)
    s = float(np.sum(M * M))
    gamma = (m + 1) * _UNIT / (1 - (m + 1) * _UNIT)
    # the bound itself is rounded up by one more relative unit
    return (s * (1 + gamma) + m * _TINY) * (1 + 2 * _UNIT)


def norm_product_bound(block: Block) -> float:
    """An upper bound on ‖W‖₂‖U‖₂ (through ‖W‖_F²‖U‖_F², rounded upward)."""
    return float(np.sqrt(frobenius_upper(block.W_down) * frobenius_upper(block.W_up)
                         * (1 + 2 * _UNIT)) * (1 + 2 * _UNIT))


def check_determinants(block: Block, layer: int) -> DeterminantCheck:
    """Certify det(A + W D U) ≠ 0 for every realized D of ``block`` (its bias-free ReLU limit)."""
    bound = norm_product_bound(block) if block.A_skip is None else None
    if bound is not None and bound < 1.0:
        return DeterminantCheck(layer, True, "norm_bound", bound, None, None, None, None,
                                f"‖W‖₂‖U‖₂ ≤ ‖W‖_F‖U‖_F ≤ {bound:.6g} < 1")
    # the bound on the region count needs no exact weights: refuse before converting them
    points = (region_points(block.rational_weights[0])
              if region_bound(block.n, block.d) <= MAX_REGIONS else None)
    if points is None:
        why = (f"the arrangement may have {region_bound(block.n, block.d)} regions, above "
               f"the enumeration limit {MAX_REGIONS}")
        return DeterminantCheck(layer, False, "none", bound, None, None, None, None,
                                why + ("" if bound is None else
                                       f"; the norm bound {bound:.6g} is not < 1"))
    U, W, A = block.rational_weights
    smallest: Fraction | None = None
    for p in points:
        S = list(active_pattern(U, p))
        value = det(A + W[:, S] @ U[S, :])
        if value == 0:
            return DeterminantCheck(
                layer, False, "enumeration", bound, len(points), Fraction(0), tuple(S), p,
                f"det(A + W D U) = 0 exactly for the realized pattern D = {S} (a region "
                "containing the stated point): the hypothesis fails for this layer")
        smallest = abs(value) if smallest is None else min(smallest, abs(value))
    return DeterminantCheck(layer, True, "enumeration", bound, len(points), smallest, None,
                            None, f"det(A + W D U) ≠ 0 exactly on all {len(points)} regions "
                            f"(smallest |det| ≈ {float(smallest or 0):.3g})")
