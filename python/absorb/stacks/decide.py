"""The verdict on a residual stack R = f_L ∘ … ∘ f_1 (``absorb check`` on a stack file).

Question: does some residual-free stack H = h_L ∘ … ∘ h_1 of the same kind and widths equal R?

* ``impossible`` — depth_degree (homogeneous of degree k ≠ 1) or depth_linearization (gated,
  g(0) = 0): identity skips, no biases.
* ``absorbed`` — every layer is matched on the image of the layers before it, by an index set
  that holds exactly on the stored values (index_set_sufficient) or by the image-cone
  construction (ReLU, no biases), verified exactly over ℚ (:mod:`absorb.stacks.cone`); also
  checked numerically at three scales. A float index set within tolerance only does not match.
* ``not_absorbed`` — depth_narrow: first width n₁ < 2d and det(A_l + W_l D U_l) ≠ 0 certified
  for every realized pattern of every layer (for GELU, tanh-GELU, SiLU, softplus or biases,
  through bias_blowup's limit); or (ReLU, no biases, identity skips) depth_injective,
  depth_two_kinks, depth_kink_rays (:mod:`.kink_verdict`), with a re-checkable certificate.
* ``undetermined`` — neither; the unmet hypotheses are listed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from absorb.blocks import (
    Block,
    stack_forward,
)
from absorb.errors import AbsorbError
from absorb.stacks.arrangement import arrangement_rays
from absorb.stacks.cone import (
    LayerMatch,
    exact_agreement,
    image_cone_match,
    index_set_match,
    rational_grid,
)
from absorb.stacks.kink_verdict import applies, decide_kinks
from absorb.stacks.narrow import check_determinants
from absorb.theory import SCOPE
from absorb.theory.applicable import applicable_stack_theorems
from absorb.theory.construction import CHECK_NOT_RUN, check_maps
from absorb.theory.witnesses import float_witness_missing
from absorb.verdicts import (
    Absorbed,
    ExactCheck,
    Impossible,
    NotAbsorbed,
    Subject,
    Undetermined,
    Verdict,
    exact_index_set,
    exact_stack,
)

LIMIT_TS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5)
#: The exact evaluation of R and H over ℚ at test points is skipped above this many weights.
MAX_EXACT_CHECK_WEIGHTS = 20000
#: ... and above this predicted cost (:func:`exact_check_cost`, a worst case in bit
#: operations). Measured: 256 planted ReLU layers (d = 2, n = 4) of 60-digit entries, predicted
#: 3.1e10, take 12 s; 1024 such layers (4.9e11) are skipped instead of running for minutes.
MAX_EXACT_CHECK_BITS = 4e10


def _bits(weights: Sequence[Any]) -> int:
    """The most bits of one entry (numerator and denominator) among ``weights`` over ℚ."""
    return max((abs(q.numerator).bit_length() + q.denominator.bit_length()
                for w in weights for q in np.asarray(w, dtype=object).ravel()), default=0)


def exact_check_cost(layers: Sequence[tuple[int, int, int]], points: int) -> float:
    """Predicted bit operations of evaluating R and H over ℚ at ``points`` inputs, from each
    layer's (d, n, entry bits b), in the worst case: a value's size grows by b + log₂ n bits
    per layer (numerators and denominators multiply), and a layer costs 2·2nd products of
    numbers that size (linear in the bits), for R and H. So the digits count, not only the
    weights: 1024 layers of 60-digit entries predict 4.9e11."""
    size, total = 64.0, 0.0
    for d, n, b in layers:
        size += b + math.log2(max(n, 2))
        total += 2 * 2 * n * d * (size + b)
    return points * total


def _limit_witness(blocks: Sequence[Block], rng: np.random.Generator) -> dict[str, object]:
    """‖R(tx)/t − x‖ → 0 as t → 0⁺ (every residual-free H has H(tx)/t → 0)."""
    x = rng.standard_normal(blocks[0].d)
    t = np.asarray(LIMIT_TS)
    gaps = np.linalg.norm(stack_forward(blocks, t[:, None] * x) / t[:, None] - x, axis=1)
    return {"x": x.tolist(), "x_norm": float(np.linalg.norm(x)),
            "steps": [{"t": float(a), "gap": float(b)} for a, b in zip(t, gaps, strict=True)],
            "note": "R(tx)/t → x while H(tx)/t → 0 for every residual-free stack H"}


def _layer_matches(blocks: Sequence[Block]
                   ) -> tuple[list[LayerMatch | None], list[ExactCheck | bool],
                              list[dict[str, Any]]]:
    """Per layer: an index set holding exactly on the stored values, else (ReLU, no biases,
    l ≥ 1) the image-cone construction (verified exactly over ℚ by :mod:`.cone`). Returns the
    matches, each match's exact evidence, and the per-layer details."""
    act = blocks[0].activation
    # the image cone needs σ = ReLU: degree-1 homogeneous and odd-part-linear, no biases
    relu_plain = (act.degree == 1.0 and act.odd_part_linear
                  and not any(b.has_biases for b in blocks))
    matches: list[LayerMatch | None] = []
    evidence: list[ExactCheck | bool] = []
    details: list[dict[str, Any]] = []
    for ell, block in enumerate(blocks):
        match, info = index_set_match(block, ell)
        detail: dict[str, Any] = {"layer": ell, "d": block.d, "n": block.n, "index_set": info}
        proof: ExactCheck | bool = False
        if match is not None:
            W_up, W_down, A = block.stored_weights
            S = info.get("S")
            found = (exact_index_set(W_up, W_down, S, A) if isinstance(S, list | tuple)
                     else None)
            detail["index_set_exact"] = found is not None
            if found is None:  # within the float tolerance only: no exact match
                match = None
            else:
                proof = found
        if match is None and ell > 0 and relu_plain:
            match, cone = image_cone_match(blocks[ell - 1], block, ell)
            detail["image_cone"] = {k: v for k, v in cone.items() if k not in ("Z", "L")}
            proof = match is not None  # its identities are checked exactly over Q
        detail["mechanism"] = None if match is None else match.mechanism
        matches.append(match)
        evidence.append(proof)
        details.append(detail)
    return matches, evidence, details


def _weights_json(match: LayerMatch) -> dict[str, object]:
    return {k: np.asarray(v, dtype=object) for k, v in match.weights.items()}


def _absorbed(blocks: Sequence[Block], matches: list[LayerMatch], proof: ExactCheck,
              subject: Subject, details: list[dict[str, Any]], rng: np.random.Generator
              ) -> Absorbed:
    H = [m.block(b) for m, b in zip(matches, blocks, strict=True)]
    cone = any(m.mechanism == "image_cone" for m in matches)
    extra: dict[str, object] = {"layers": details}
    small = sum(b.W_up.size + b.W_down.size for b in blocks) <= MAX_EXACT_CHECK_WEIGHTS
    relu_plain = (blocks[0].activation.degree == 1.0 and blocks[0].activation.odd_part_linear
                  and not any(b.has_biases for b in blocks))
    if small and relu_plain:
        U0 = blocks[0].rational_weights[0]
        points = rational_grid(blocks[0].d, rng) + (arrangement_rays(U0) or [])
        cost = exact_check_cost(
            [(b.d, b.n, max(_bits(b.rational_weights[:2]), _bits(list(m.weights.values()))))
             for b, m in zip(blocks, matches, strict=True)], len(points))
        extra["exact_check"] = (
            {"points": len(points), "equal": exact_agreement(list(blocks), matches, points)}
            if cost <= MAX_EXACT_CHECK_BITS else
            {"points": 0, "equal": None,
             "skipped": f"predicted {cost:.3g} bit operations over Q at {len(points)} points, "
                        f"above the budget {MAX_EXACT_CHECK_BITS:.3g}"})
    return Absorbed(
        subject=subject, chain=() if cone else ("index_set_sufficient",), proof=proof,
        reason=("every layer is matched exactly on the image of the layers before it: "
                + ", ".join(f"layer {m.layer} by {m.mechanism.replace('_', ' ')}"
                            for m in matches)),
        construction={"construction": "image_cone" if cone else "index_set_per_layer",
                      "absorbing_stack": [_weights_json(m) for m in matches]},
        check=(check_maps(partial(stack_forward, blocks), partial(stack_forward, H),
                          blocks[0].d, rng)
               if all(b.float_view_finite for b in blocks)
               else dict(CHECK_NOT_RUN)),
        details=extra)


def _narrow(blocks: Sequence[Block], subject: Subject, details: list[dict[str, Any]]
            ) -> tuple[NotAbsorbed | None, list[str]]:
    d, n1 = blocks[0].d, blocks[0].n
    act = blocks[0].activation
    if not act.relu_at_infinity:
        return None, [f"depth_narrow needs an activation that is ReLU at infinity (ReLU, GELU, "
                      f"tanh-GELU, SiLU, softplus; got {act.name})"]
    if n1 >= 2 * d:
        return None, [f"first hidden width n1 = {n1} < 2d = {2 * d} (depth_narrow)"]
    checks = [check_determinants(b, ell) for ell, b in enumerate(blocks)]
    for detail, check in zip(details, checks, strict=True):
        detail["determinants"] = check.to_json()
    failed = [c for c in checks if not c.certified]
    if failed:
        return None, [f"det(A + W D U) != 0 for every realized pattern D, layer {c.layer}: "
                      f"{c.detail}" for c in failed]
    # the bias-free ReLU stack with the same weights: through bias_blowup unless σ = ReLU
    via = not (act.degree == 1.0 and act.odd_part_linear) or any(b.has_biases for b in blocks)
    return NotAbsorbed(
        subject=subject, chain=("bias_blowup", "depth_narrow") if via else ("depth_narrow",),
        reason=(f"first hidden width n1 = {n1} < 2d = {2 * d} and det(A + W D U) != 0 "
                "is certified for every realized pattern of every layer"
                + ("; through bias_blowup's limit (the bias-free ReLU stack with the "
                   "same weights)" if via else "")),
        certificate={"proof": "det(A + W D U) != 0 certified for every realized pattern of "
                              "every layer (" + "; ".join(
                                  f"layer {c.layer}: {c.method}" for c in checks) + ")"},
        details={"layers": details}), []


def _kinks(blocks: Sequence[Block], subject: Subject, out: dict[str, Any], unmet: list[str]
           ) -> NotAbsorbed | None:
    """depth_injective, depth_two_kinks, depth_kink_rays (:mod:`.kink_verdict`): their verdict,
    or None with their unmet hypotheses and the regime added to ``unmet`` and ``out``."""
    why = applies(blocks)
    if why is not None:
        unmet.append(why)
        return None
    res = decide_kinks(blocks)
    if res.theorem is not None:
        return NotAbsorbed(subject=subject, chain=res.chain, reason=res.reason,
                           certificate=res.certificate, details={**out, "kinks": res.details})
    unmet.extend(res.unmet)
    out["kinks"] = res.details
    out["regime"] = res.regime
    return None


def stack_subject(blocks: Sequence[Block]) -> Subject:
    """The :class:`~absorb.verdicts.Subject` of a stack."""
    return Subject(blocks[0].activation.name, blocks[0].d, blocks[0].n,
                   any(b.has_biases for b in blocks),
                   "identity" if all(b.A_skip is None for b in blocks) else "matrix",
                   all(b.exact is not None for b in blocks), depth=len(blocks),
                   widths=tuple(b.n for b in blocks), extra={"scope": SCOPE})


def decide_stack(blocks: Sequence[Block], *, rng: np.random.Generator,
                 fit: bool = True) -> Verdict:
    """The verdict on a stack (see the module docstring)."""
    if not blocks:
        raise AbsorbError("a stack needs at least one layer")
    if not all(b.residual for b in blocks):
        raise AbsorbError("decide_stack needs skip blocks (residual=True)")
    subject = stack_subject(blocks)
    how = applicable_stack_theorems(blocks)
    if how.path == "impossible":
        assert how.theorem is not None  # an impossibility path names its theorem
        if not all(b.float_view_finite for b in blocks):
            # the limit witness evaluates the stack in floating point: no witness, no verdict
            return Undetermined(subject=subject, reason=float_witness_missing(how.theorem),
                                unmet_hypotheses=tuple(how.unmet))
        return Impossible(subject=subject, chain=(how.theorem,),
                          reason=f"every block: {how.reason}",
                          witness=_limit_witness(blocks, rng))
    if how.path == "none":
        return Undetermined(subject=subject, reason=how.reason, unmet_hypotheses=how.unmet)
    matches, evidence, details = _layer_matches(blocks)
    proof = exact_stack([(m.mechanism, ev) for m, ev in zip(matches, evidence, strict=True)
                         if m is not None]) if all(m is not None for m in matches) else None
    if proof is not None:
        return _absorbed(blocks, [m for m in matches if m is not None], proof, subject,
                         details, rng)
    narrow, unmet = _narrow(blocks, subject, details)
    if narrow is not None:
        return narrow
    out: dict[str, Any] = {"layers": details}
    kinks = _kinks(blocks, subject, out, unmet)
    if kinks is not None:
        return kinks
    missing = [d["layer"] for d, m in zip(details, matches, strict=True) if m is None]
    unmet.insert(0, "every layer matched exactly by an index set or the image-cone "
                    f"construction (not found for layers {missing})")
    if fit:
        from absorb.stacks.fit import fit_stack

        try:
            out["search"] = fit_stack(blocks, rng=rng).to_json()
        except AbsorbError as exc:  # the evidence is optional: say why it is missing
            out["search"] = None
            out["search_skipped"] = str(exc)
    regime = f" (regime: {out['regime']})" if out.get("regime") else ""
    return Undetermined(subject=subject, reason="neither an exact absorbing construction nor "
                        "depth_narrow nor the kink theorems apply" + regime,
                        unmet_hypotheses=tuple(unmet), details=out)
