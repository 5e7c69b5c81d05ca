"""Which argument of THEORY.md decides a block or a stack, from the activation's catalog
properties and the block's shape and biases alone (never from an activation's name).

One table, read by ``decide``, ``decide_stack`` and ``absorb search``'s prediction:

* ``linear`` — σ = id: the block is the linear map A + W_down W_up (rank decides);
* ``impossible`` — ``degree`` (homogeneous of degree k ≠ 1, no biases), ``linearization``
  (gated, g(0) = 0, no biases) or ``bounded`` (ungated, |σ| ≤ B, any biases, any width):
  never absorbable when A ≠ 0;
* ``index_set`` — ungated odd-part-linear σ: index_set_sufficient, and index_set_necessary
  (through bias_blowup where needed) under its hypotheses on the weights;
* ``none`` — no theorem applies; ``unmet`` says which hypotheses fail.

For stacks (identity skips, no biases for the depth theorems): ``depth_degree`` (k > 0,
k ≠ 1), ``depth_linearization``, else per-layer constructions and depth_narrow for ungated
odd-part-linear σ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from absorb.activations import Activation
from absorb.blocks import Block

__all__ = ["Applicable", "applicable_stack_theorems", "applicable_theorems", "necessary_chain"]


@dataclass(frozen=True)
class Applicable:
    """The argument that decides (``path``), its impossibility theorem where there is one,
    and the hypotheses that fail when none applies."""

    path: Literal["linear", "impossible", "index_set", "none"]
    theorem: str | None
    reason: str
    unmet: tuple[str, ...] = ()


def _impossibility(act: Activation, biases: bool, *, depth: bool) -> Applicable | None:
    degree_ok = act.degree is not None and act.degree != 1.0 and (not depth or act.degree > 0)
    if degree_ok and not biases:
        k = act.degree
        return Applicable("impossible", "depth_degree" if depth else "degree",
                          f"homogeneous of degree {k:g} != 1"
                          + (", identity skips, no biases" if depth else ", no biases, A != 0"))
    if act.gated and act.g0 == 0.0 and not biases:
        return Applicable("impossible", "depth_linearization" if depth else "linearization",
                          f"gated with g = {act.gate}, g(0) = 0, g continuous"
                          + (", identity skips, no biases" if depth else ", no biases, A != 0"))
    if not depth and not act.gated and act.bounded:
        return Applicable("impossible", "bounded",
                          f"|σ| <= {act.bound:g} is bounded, so every residual-free block is "
                          "bounded, while A != 0 makes the block unbounded")
    return None


def _none(act: Activation, biases: bool, *, depth: bool) -> Applicable:
    if (act.degree is not None and act.degree != 1.0) or (act.gated and act.g0 == 0.0):
        unmet = ["no biases" + (" and identity skips (the depth theorems assume them)" if depth
                                else " (the degree and linearization theorems assume none)")]
    elif act.gated:
        unmet = [f"g(0) = 0 (gate {act.gate} has g(0) = {act.g0:g})"]
    else:
        unmet = [f"{act.name} is neither homogeneous of degree k != 1, gated with g(0) = 0, "
                 + ("" if depth else "bounded, ") + "nor odd-part-linear"]
    return Applicable("none", None, "no theorem " + ("on stacks " if depth else "")
                      + "applies", tuple(unmet))


def applicable_theorems(block: Block) -> Applicable:
    """The argument deciding a skip block with A ≠ 0 (A = 0 is absorbed before any theorem)."""
    act = block.activation
    if act.linear:
        return Applicable("linear", None, "σ = id: the block is the linear map A + W_down W_up")
    found = _impossibility(act, block.has_biases, depth=False)
    if found is not None:
        return found
    if act.odd_part_linear and not act.gated:
        return Applicable("index_set", None, "odd-part-linear: absorbable iff an index set "
                          "exists (under index_set_necessary's hypotheses)")
    return _none(act, block.has_biases, depth=False)


def applicable_stack_theorems(blocks: Sequence[Block]) -> Applicable:
    """The argument deciding a residual stack (all layers of one activation)."""
    act = blocks[0].activation
    plain = not any(b.has_biases or b.A_skip is not None for b in blocks)
    found = _impossibility(act, not plain, depth=True)
    if found is not None:
        return found
    if act.odd_part_linear and not act.gated:
        return Applicable("index_set", None, "odd-part-linear: per-layer constructions, "
                          "depth_narrow")
    return _none(act, not plain, depth=True)


def necessary_chain(block: Block) -> list[str]:
    """The theorems that turn "no index set" into "not absorbable" for this block:
    index_set_necessary directly (σ with ``necessary_direct``, no biases), else through
    bias_blowup."""
    if block.activation.necessary_direct and not block.has_biases:
        return ["index_set_necessary"]
    return ["bias_blowup", "index_set_necessary"]
