"""The verdicts of ``depth_injective``, ``depth_two_kinks`` and ``depth_kink_rays`` on a stack.

Verdict logic (docs/THEORY.md, "Verdict logic for stacks"); the question is the subject's —
a residual-free ReLU stack H of the same depth and widths as R:

* every block injective and some width n_l < 2d ⇒ ``not_absorbed`` (depth_injective);
* depth 2, n₁ = 2d, (I) and (D′) with m = n₂ ⇒ ``not_absorbed`` (depth_two_kinks);
* d = 2, every block injective, every width 2d and more than 2·L·d kink rays ⇒
  ``not_absorbed`` (depth_kink_rays, through depth_injective);
* otherwise ``undetermined``, naming the regime: a non-invertible block ((I) fails), a
  non-injective block, k open regions of U₂ met by R₁'s image when (D′) fails (k = 1:
  single-sector folded), widths the theorems do not cover.

Every ``not_absorbed`` carries the document :func:`absorb.stacks.kinks.certificate`, which
:mod:`absorb.stacks.recheck` re-checks from the weights alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from absorb.blocks import Block
from absorb.stacks.injective import Injectivity, block_injectivity
from absorb.stacks.kinks import (
    MAX_SECTORS,
    Plane,
    Realized,
    analyse,
    certificate,
    predicted_sectors,
    ray_count_bound,
)
from absorb.stacks.pieces import (
    MAX_POINTS,
    SECONDS_PER_POINT,
    analyse_depth_two,
    predicted_points,
)
from absorb.stacks.pieces import certificate as pieces_certificate
from absorb.stacks.plane import layers_of

#: The certificate format of a depth_injective verdict (``absorb stack --recheck``).
INJECTIVE_FORMAT = "absorb-stack-injective/1"


def applies(blocks: Sequence[Block]) -> str | None:
    """Why the kink theorems do not apply (None: they do): ReLU, no biases, identity skips."""
    act = blocks[0].activation
    if not (act.degree == 1.0 and act.odd_part_linear):
        return f"the kink theorems are proved for ReLU (got {act.name})"
    if any(b.has_biases for b in blocks):
        return "the kink theorems are proved for bias-free stacks"
    if any(b.A_skip is not None for b in blocks):
        return "the kink theorems are proved for identity skips"
    return None


@dataclass
class KinkOutcome:
    """What the kink theorems decided: ``theorem`` and its ``certificate`` when R ≠ H is
    proved, else the ``unmet`` hypotheses and the ``regime``; ``details`` for the verdict."""

    theorem: str | None = None
    chain: tuple[str, ...] = ()
    reason: str = ""
    certificate: dict[str, Any] = field(default_factory=dict)
    unmet: list[str] = field(default_factory=list)
    regime: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def _regime(plane: Plane | None, inj: Sequence[Injectivity], widths: Sequence[int], d: int
            ) -> str:
    if plane is not None and not all(r.holds for r in plane.realized):
        return "non-invertible block"
    if any(n > 2 * d for n in widths):
        return "widths above 2d (no theorem speaks of a residual-free stack that wide)"
    if any(i.injective is False for i in inj):
        return "non-injective block"
    return "injective blocks" if all(i.injective for i in inj) else "injectivity unknown"


def _excluded(plane: Plane, all_inj: bool, widths: Sequence[int], d: int) -> list[str]:
    """The classes of residual-free stacks the kink theorems exclude although they are not the
    subject's (its widths differ): reported with an undetermined verdict."""
    L, out = len(widths), []
    if (L == 2 and all(r.holds for r in plane.realized) and plane.dprime.holds(widths[1])):
        out.append(f"depth 2, widths ({2 * d}, {widths[1]}) (depth_two_kinks)")
    if all_inj and len(plane.kinks) > ray_count_bound(L, d):
        out.append(f"depth {L}, every width {2 * d} (depth_kink_rays)")
    return out


def decide_kinks(blocks: Sequence[Block]) -> KinkOutcome:
    """The verdict logic of the module docstring (callers check :func:`applies` first)."""
    d, L = blocks[0].d, len(blocks)
    widths = [b.n for b in blocks]
    inj = [block_injectivity(b, ell) for ell, b in enumerate(blocks)]
    all_inj = all(i.injective for i in inj)
    inj_json = [i.to_json() for i in inj]
    out = KinkOutcome(details={"injectivity": inj_json})
    if all_inj:
        out.details["excluded"] = [f"any depth, some width below 2d = {2 * d} (depth_injective)"]
    narrow = [ell for ell, n in enumerate(widths) if n < 2 * d]
    if all_inj and narrow:
        out.theorem, out.chain = "depth_injective", ("depth_injective",)
        out.reason = (f"every block is injective and layer {narrow[0]} has width "
                      f"{widths[narrow[0]]} < 2d = {2 * d}: no residual-free ReLU stack with a "
                      "hidden width below 2d equals R")
        out.certificate = {"proof": "every block proved injective (" + "; ".join(
            f"layer {i.layer}: {i.method}" for i in inj) + ")", "format": INJECTIVE_FORMAT,
            "theorem": "depth_injective", "d": d, "depth": L, "widths": widths,
            "narrow_layer": narrow[0], "injectivity": inj_json,
            "against": "residual-free ReLU stacks of any depth with some hidden width < 2d"}
        return out
    if d != 2:
        if L == 2 and widths[0] == 2 * d:
            return _depth_two(blocks, out, inj)
        out.unmet.append("d = 2, or depth 2 with first width 2d (the kink enumeration in "
                         "d ≥ 3 is implemented for Theorem A)")
        out.regime = _regime(None, inj, widths, d)
        return out
    predicted = predicted_sectors(widths)
    out.details["predicted_sectors"] = predicted
    if predicted > MAX_SECTORS:
        out.unmet.append(f"the exact enumeration: up to {predicted} sectors predicted, above "
                         f"the budget {MAX_SECTORS}")
        out.regime = _regime(None, inj, widths, d)
        return out
    layers = layers_of(blocks)
    plane = analyse(layers)
    out.details.update(kink_rays=len(plane.kinks), kink_lines=plane.kink_lines,
                       d_prime=plane.dprime.to_json(), regions_met=plane.regions_met,
                       realized=[r.to_json() for r in plane.realized])
    holds_I = all(r.holds for r in plane.realized)
    if L == 2 and widths[0] == 2 * d and holds_I and plane.dprime.holds(widths[1]):
        return _theorem_a(out, d, widths[1], plane.dprime.count, "rays", len(plane.kinks),
                          lambda against: certificate(
                              layers, plane, theorem="depth_two_kinks", against=against,
                              m=widths[1], injectivity=inj_json))
    bound = ray_count_bound(L, d)
    if all_inj and all(n == 2 * d for n in widths) and len(plane.kinks) > bound:
        against = f"residual-free ReLU stacks of depth {L} with every hidden width 2d = {2 * d}"
        out.theorem, out.chain = "depth_kink_rays", ("depth_kink_rays", "depth_injective")
        out.reason = (f"every block is injective and R has {len(plane.kinks)} kink rays, more "
                      f"than 2·L·d = {bound}; R equals none of the {against}")
        out.certificate = _with_proof(certificate(
            layers, plane, theorem="depth_kink_rays", against=against, m=None,
            injectivity=inj_json), f"every block injective; {len(plane.kinks)} > {bound} kink "
            "rays, each with its jump read from the adjacent Jacobians")
        return out
    out.unmet.extend(_unmet(plane, inj, widths, d, L, holds_I))
    out.details["excluded"] = out.details.get("excluded", []) + _excluded(plane, all_inj,
                                                                          widths, d)
    out.regime = _regime(plane, inj, widths, d)
    if holds_I and L == 2 and widths[0] == 2 * d and not plane.dprime.holds(widths[1]):
        out.regime = _folded(plane.regions_met)
    return out


def _theorem_a(out: KinkOutcome, d: int, m: int, minimum: int, what: str, count: int,
               document: Callable[[str], dict[str, Any]]) -> KinkOutcome:
    """``out`` as depth_two_kinks' not_absorbed: its H class, reason and certificate."""
    against = (f"residual-free ReLU stacks of depth 2 with first hidden width exactly "
               f"2d = {2 * d} and second width m = {m}")
    out.theorem, out.chain = "depth_two_kinks", ("depth_two_kinks",)
    out.reason = (f"(I) holds and (D′): every set S of at most d supports leaves at least "
                  f"{minimum} > m = {m} column directions of R's kink {what} outside S; R "
                  f"equals none of the {against}")
    out.certificate = _with_proof(document(against), "(I) by exact determinants on every "
                                  f"realized pattern; {count} kink {what} with columns from "
                                  "adjacent Jacobians; (D′) as an exhaustive minimum over S")
    return out


def _depth_two(blocks: Sequence[Block], out: KinkOutcome, inj: Sequence[Injectivity]
               ) -> KinkOutcome:
    """Theorem A in any d (:mod:`.pieces`), within the budget of candidate points."""
    d, n1, n2 = blocks[0].d, blocks[0].n, blocks[1].n
    predicted = predicted_points(d, n1, n2)
    out.details["predicted_points"] = predicted
    if predicted > MAX_POINTS:
        out.unmet.append(f"the exact enumeration: up to {predicted} candidate points predicted "
                         f"(about {predicted * SECONDS_PER_POINT:.0f} s), above the budget "
                         f"{MAX_POINTS}")
        out.regime = _regime(None, inj, [n1, n2], d)
        return out
    res = analyse_depth_two(blocks)
    holds_I = all(r.holds for r in res.realized)
    out.details.update(kink_pieces=len(res.pieces), d_prime=res.dprime.to_json(),
                       regions_met=res.regions_met,
                       realized=[r.to_json() for r in res.realized])
    if holds_I and res.dprime.holds(n2):
        return _theorem_a(out, d, n2, res.dprime.count, "pieces", len(res.pieces),
                          lambda against: pieces_certificate(blocks, res, against=against))
    if not holds_I:
        out.unmet.append(_unmet_I(res.realized))
        out.regime = "non-invertible block"
    else:
        out.unmet.append(f"(D′): at least {n2 + 1} column directions outside every S (the "
                         f"minimum is {res.dprime.count})")
        out.regime = _folded(res.regions_met)
    return out


def _folded(k: int | None) -> str:
    """The regime of a depth-2 stack whose (D′) fails: k regions of U₂ met by R₁'s image."""
    return ("single-sector folded (k = 1)" if k == 1
            else f"(D′) fails, R₁'s image meets k = {k} regions of U₂")


def _unmet(plane: Plane, inj: Sequence[Injectivity], widths: Sequence[int], d: int, L: int,
           holds_I: bool) -> list[str]:
    unmet = []
    if not holds_I:
        unmet.append(_unmet_I(plane.realized))
    if L == 2 and widths[0] != 2 * d:
        unmet.append(f"depth_two_kinks needs first width exactly 2d = {2 * d} (got {widths[0]})")
    elif L == 2 and holds_I:
        unmet.append(f"(D′): at least {widths[1] + 1} column directions outside every S "
                     f"(the minimum is {plane.dprime.count})")
    if L != 2 or not holds_I or not plane.dprime.holds(widths[1]):
        if not all(i.injective for i in inj):
            unmet.append("every block injective (not proved for layers "
                         f"{[i.layer for i in inj if not i.injective]})")
        elif any(n != 2 * d for n in widths):
            unmet.append(f"depth_kink_rays needs every width 2d = {2 * d} (got {list(widths)})")
        else:
            unmet.append(f"more than 2·L·d = {ray_count_bound(L, d)} kink rays (R has "
                         f"{len(plane.kinks)})")
    return unmet


def _unmet_I(realized: Sequence[Realized]) -> str:
    bad = [r.layer for r in realized if not r.holds]
    return f"(I): det(I + W D U) ≠ 0 on every realized pattern (fails for layers {bad})"


def _with_proof(doc: dict[str, Any], proof: str) -> dict[str, Any]:
    return {"proof": proof, **doc}
