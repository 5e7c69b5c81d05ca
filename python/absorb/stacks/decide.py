"""The verdict on a residual stack R = f_L ∘ … ∘ f_1 (``absorb check`` on a stack file).

Question: does some residual-free stack H = h_L ∘ … ∘ h_1 of the same kind and widths equal R?

* ``impossible`` — depth_degree (homogeneous of degree k ≠ 1) or depth_linearization (gated,
  g(0) = 0): identity skips, no biases.
* ``absorbed`` — every layer is matched on the image of the layers before it, by an index set
  (index_set_sufficient) or by the image-cone construction (ReLU, no biases); the construction
  is checked exactly over ℚ (:mod:`absorb.stacks.cone`) and numerically at three scales.
* ``not_absorbed`` — depth_narrow: first width n₁ < 2d and det(A_l + W_l D U_l) ≠ 0 certified
  for every realized pattern of every layer (for GELU, tanh-GELU, SiLU, softplus or biases,
  through bias_blowup's limit).
* ``undetermined`` — neither; the unmet hypotheses are listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from absorb.blocks import Block, stack_forward
from absorb.errors import AbsorbError
from absorb.manifest import get_theorem
from absorb.stacks.arrangement import arrangement_rays
from absorb.stacks.cone import (
    LayerMatch,
    exact_agreement,
    image_cone_match,
    index_set_match,
    rational_grid,
)
from absorb.stacks.exact import exact_weights
from absorb.stacks.narrow import check_determinants
from absorb.theory.common import verify_functions

LIMIT_TS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5)
#: The exact evaluation of R and H over ℚ at test points is skipped above this many weights.
MAX_EXACT_CHECK_WEIGHTS = 20000


def _theorem(tid: str | None) -> dict[str, object]:
    return {"theorem": tid, "lean": [] if tid is None else list(get_theorem(tid).lean)}


def _limit_witness(blocks: Sequence[Block], rng: np.random.Generator) -> dict[str, object]:
    """‖R(tx)/t − x‖ → 0 as t → 0⁺ (every residual-free H has H(tx)/t → 0)."""
    x = rng.standard_normal(blocks[0].d)
    t = np.asarray(LIMIT_TS)
    gaps = np.linalg.norm(stack_forward(blocks, t[:, None] * x) / t[:, None] - x, axis=1)
    return {"x": x.tolist(), "x_norm": float(np.linalg.norm(x)),
            "steps": [{"t": float(a), "gap": float(b)} for a, b in zip(t, gaps, strict=True)],
            "note": "R(tx)/t → x while H(tx)/t → 0 for every residual-free stack H"}


def _impossible(blocks: Sequence[Block], base: dict[str, Any], rng: np.random.Generator
                ) -> dict[str, object] | None:
    act = blocks[0].activation
    plain = not any(b.has_biases or b.A_skip is not None for b in blocks)
    if not plain:
        return None
    if act.degree is not None and act.degree > 0 and act.degree != 1.0:
        tid = "depth_degree"
        why = f"every block is homogeneous of degree {act.degree:g} != 1, identity skips"
    elif act.gated and act.g0 == 0.0:
        tid = "depth_linearization"
        why = f"gated blocks with g = {act.gate}, g(0) = 0, identity skips"
    else:
        return None
    return {**base, "verdict": "impossible", **_theorem(tid), "reason": why,
            "witness": _limit_witness(blocks, rng)}


def _layer_matches(blocks: Sequence[Block]) -> tuple[list[LayerMatch | None], list[dict[str, Any]]]:
    """Per layer: an index set, else (ReLU, no biases, l ≥ 1) the image-cone construction."""
    relu_plain = blocks[0].activation.name == "relu" and not any(b.has_biases for b in blocks)
    matches: list[LayerMatch | None] = []
    details: list[dict[str, Any]] = []
    for ell, block in enumerate(blocks):
        match, info = index_set_match(block, ell)
        detail: dict[str, Any] = {"layer": ell, "d": block.d, "n": block.n, "index_set": info}
        if match is None and ell > 0 and relu_plain:
            match, cone = image_cone_match(blocks[ell - 1], block, ell)
            detail["image_cone"] = {k: v for k, v in cone.items() if k not in ("Z", "L")}
        detail["mechanism"] = None if match is None else match.mechanism
        matches.append(match)
        details.append(detail)
    return matches, details


def _weights_json(match: LayerMatch, exact: bool) -> dict[str, object]:
    return {k: (v if exact else np.asarray(v, dtype=np.float64)).tolist()
            for k, v in match.weights.items()}


def _absorbed(blocks: Sequence[Block], matches: list[LayerMatch], base: dict[str, Any],
              details: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, object]:
    H = [m.block(b) for m, b in zip(matches, blocks, strict=True)]
    cone = any(m.mechanism == "image_cone" for m in matches)
    out: dict[str, Any] = {
        **base, "verdict": "absorbed",
        **_theorem(None if cone else "index_set_sufficient"),
        "construction": "image_cone" if cone else "index_set_per_layer",
        "reason": ("every layer is matched on the image of the layers before it: "
                   + ", ".join(f"layer {m.layer} by {m.mechanism.replace('_', ' ')}"
                               for m in matches)),
        "layers": details,
        "absorbing_stack": [_weights_json(m, base["exact"]) for m in matches],
        **verify_functions(partial(stack_forward, blocks), partial(stack_forward, H),
                           blocks[0].d, rng)}
    small = sum(b.W_up.size + b.W_down.size for b in blocks) <= MAX_EXACT_CHECK_WEIGHTS
    if small and not any(b.has_biases for b in blocks) and blocks[0].activation.name == "relu":
        U0 = exact_weights(blocks[0])[0]
        points = rational_grid(blocks[0].d, rng) + (arrangement_rays(U0) or [])
        out["exact_check"] = {"points": len(points),
                              "equal": exact_agreement(list(blocks), matches, points)}
    return out


def _narrow(blocks: Sequence[Block], base: dict[str, Any], details: list[dict[str, Any]]
            ) -> tuple[dict[str, object] | None, list[str]]:
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
    via = act.name != "relu" or any(b.has_biases for b in blocks)
    return {**base, "verdict": "not_absorbed", **_theorem("depth_narrow"),
            "theorems_used": ["bias_blowup", "depth_narrow"] if via else ["depth_narrow"],
            "reason": (f"first hidden width n1 = {n1} < 2d = {2 * d} and det(A + W D U) != 0 "
                       "is certified for every realized pattern of every layer"
                       + ("; through bias_blowup's limit (the bias-free ReLU stack with the "
                          "same weights)" if via else "")),
            "layers": details}, []


def decide_stack(blocks: Sequence[Block], *, rng: np.random.Generator,
                 search: bool = True) -> dict[str, object]:
    """The ``check`` object of a stack (see the module docstring)."""
    if not blocks:
        raise AbsorbError("a stack needs at least one layer")
    if not all(b.residual for b in blocks):
        raise AbsorbError("decide_stack needs skip blocks (residual=True)")
    act = blocks[0].activation
    base: dict[str, Any] = {
        "stack": True, "activation": act.name, "d": blocks[0].d, "depth": len(blocks),
        "widths": [b.n for b in blocks], "n": blocks[0].n,
        "biases": any(b.has_biases for b in blocks),
        "skip": "identity" if all(b.A_skip is None for b in blocks) else "matrix",
        "exact": all(b.exact is not None for b in blocks)}
    impossible = _impossible(blocks, base, rng)
    if impossible is not None:
        return impossible
    if act.gated or not act.odd_part_linear:
        return {**base, "verdict": "undetermined", **_theorem(None),
                "reason": "no theorem on stacks applies to this activation",
                "unmet_hypotheses": [f"{act.name}: neither homogeneous of degree k != 1, gated "
                                     "with g(0) = 0 (no biases, identity skips), nor "
                                     "odd-part-linear"]}
    matches, details = _layer_matches(blocks)
    if all(m is not None for m in matches):
        return _absorbed(blocks, [m for m in matches if m is not None], base, details, rng)
    narrow, unmet = _narrow(blocks, base, details)
    if narrow is not None:
        return narrow
    missing = [d["layer"] for d, m in zip(details, matches, strict=True) if m is None]
    unmet.insert(0, "every layer matched by an index set or the image-cone construction "
                    f"(not found for layers {missing})")
    out: dict[str, Any] = {**base, "verdict": "undetermined", **_theorem(None),
                           "reason": "neither an absorbing construction nor depth_narrow "
                                     "applies", "unmet_hypotheses": unmet, "layers": details}
    if search:
        from absorb.stacks.fit import fit_stack

        try:
            out["search"] = fit_stack(blocks, rng=rng).to_json()
        except AbsorbError as exc:  # the evidence is optional: say why it is missing
            out["search"] = None
            out["search_skipped"] = str(exc)
    return out
