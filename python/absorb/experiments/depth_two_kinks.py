"""The ``depth_two_kinks`` theorem (Theorem A) and the map of the open problem.

* kink_columns_recheck: random d = 2 depth-2 stacks of width 4 (N(0, 1) rounded to 2⁻⁸, the
  issue's distribution): the exact kink columns agree with float finite differences of the
  network across each kink ray; every ``not_absorbed`` certificate re-checks independently
  (:mod:`absorb.stacks.recheck`); the rest is ``undetermined`` with its regime named; the
  absorbed stack of depth_narrow's experiments (matched on block 1's image) is never called
  ``not_absorbed``.
* stack_kink_map: random bias-free ReLU residual stacks (d = 2, 3, 4; depth 2 and 3; widths 2d
  and 2d + 2; weights N(0, σ²) rounded to 2⁻⁸), for each setting the fraction where B0's
  hypothesis holds (every block injective: every H with a width below 2d excluded), where
  Theorem A's conditions hold ((I) ∧ (D′) with m = n₂: every H of depth 2 with widths (2d, n₂)
  excluded), where Theorem B's hold (d = 2: injective and more than 2·L·d kink rays: every H
  of depth L with widths 2d excluded), the fraction decided for the subject's own widths, and
  what stays open, with the single-sector folded share (k = 1) and the share refused by the
  enumeration budget (d = 4 at width 8). Residual-free stack fits run on
  the open d = 2 stacks. The conditions are proved sufficient (docs/THEORY.md); the fractions
  are measured on these samples only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from absorb.blocks import stack_forward
from absorb.experiments.base import Experiment, ExperimentResult, decade
from absorb.experiments.depth_injective import dyadic_block
from absorb.experiments.depth_narrow import image_cone_stack
from absorb.stacks import decide_stack
from absorb.stacks.fit import fit_stack
from absorb.stacks.injective import block_injectivity
from absorb.stacks.kinks import analyse, ray_count_bound
from absorb.stacks.pieces import analyse_depth_two, predicted_points
from absorb.stacks.plane import Kink, layers_of
from absorb.stacks.recheck import recheck

#: (d, depth, width, σ, stacks): small on purpose (the registry runs in seconds).
SETTINGS: tuple[tuple[int, int, int, float, int], ...] = (
    (2, 2, 4, 1.0, 40), (2, 2, 6, 1.0, 12), (2, 3, 4, 1.0, 12), (2, 3, 6, 1.0, 6),
    (2, 2, 4, 0.25, 12), (2, 3, 4, 0.25, 8),
    (3, 2, 6, 1.0, 2), (3, 3, 6, 0.25, 3), (4, 2, 8, 0.25, 2),
)
#: Stacks of kink_columns_recheck, and the finite-difference step (radians off the ray).
RECHECK_STACKS, FD_ANGLE, FD_STEP = 16, 1e-6, 1e-8
#: The map enumerates d ≥ 3 stacks up to this many predicted candidate points (a d = 3 stack of
#: widths 6: 11 488, about 2 s); beyond it (d = 4, widths 8: 652 320, about 2.5 min) it records
#: the refusal — ``absorb stack`` itself goes to MAX_POINTS of absorb.stacks.pieces.
MAP_POINTS = 20000
#: Fits run on at most this many open d = 2 stacks (a short budget: evidence, not a search).
FITS = 2


def _fd_column_error(stack: list[Any], k: Kink) -> float:
    """|c_fd − c|ν||/|c|ν||: the jump of DR across the ray by float64 central differences (step
    FD_STEP) at FD_ANGLE either side (R is linear there, so only rounding enters). With ν the
    primitive normal and n̂ = ν/|ν|, ΔDR·n̂ = c|ν|; the +n̂ side is the sector after the ray."""
    r = np.array(k.ray, dtype=np.float64) / np.linalg.norm(np.array(k.ray, dtype=np.float64))
    nu = np.array(k.normal, dtype=np.float64)
    n_hat = nu / np.linalg.norm(nu)

    def jac(x: np.ndarray) -> np.ndarray:
        steps = FD_STEP * np.eye(2)
        return np.stack([(stack_forward(stack, (x + e)[None])[0]
                          - stack_forward(stack, (x - e)[None])[0]) / (2 * FD_STEP)
                         for e in steps], axis=1)

    c_fd = (jac(r + FD_ANGLE * n_hat) - jac(r - FD_ANGLE * n_hat)) @ n_hat
    exact = np.array([float(v) for v in k.column]) * np.linalg.norm(nu)
    return float(np.linalg.norm(c_fd - exact) / max(float(np.linalg.norm(exact)), 1e-300))


def kink_columns_recheck(rng: np.random.Generator) -> ExperimentResult:
    """Theorem A's decision on the issue's distribution, its certificates re-checked, its kink
    columns against finite differences, and the image-cone control."""
    counts = {"not_absorbed": 0, "rechecked": 0, "undetermined_named": 0, "other": 0}
    worst_fd = 0.0
    for _ in range(RECHECK_STACKS):
        stack = [dyadic_block(rng, 2, 4, 1.0) for _ in range(2)]
        v = decide_stack(stack, rng=rng, fit=False)
        if v["verdict"] == "not_absorbed":
            counts["not_absorbed"] += 1
            counts["rechecked"] += bool(recheck(stack, v["certificate"])["valid"])
        elif v["verdict"] == "undetermined" and "regime:" in str(v["reason"]):
            counts["undetermined_named"] += 1
        else:
            counts["other"] += 1
        for k in analyse(layers_of(stack)).kinks:
            worst_fd = max(worst_fd, _fd_column_error(stack, k))
    control = decide_stack(image_cone_stack(), rng=rng, fit=False)
    table: list[dict[str, object]] = [
        {"stacks": RECHECK_STACKS, **counts, "worst_fd_rel_error": float(f"{worst_fd:.1e}"),
         "image_cone_control": str(control["verdict"])}]
    agrees = (counts["rechecked"] == counts["not_absorbed"] and counts["other"] == 0
              and worst_fd < 1e-4 and control["verdict"] != "not_absorbed")
    return ExperimentResult(
        "kink_columns_recheck", "depth_two_kinks",
        "d = 2, depth 2, width 4 (N(0, 1) rounded to 2⁻⁸): not_absorbed by (I) ∧ (D′) with a "
        "certificate that re-checks, or undetermined with its regime; exact kink columns "
        "against float finite differences; an absorbed stack (block 1 has an index set, block "
        "2 is matched on block 1's image) as control.",
        agrees, table,
        summary=(f"{counts['not_absorbed']} of {RECHECK_STACKS} not_absorbed, "
                 f"{counts['rechecked']} certificates re-checked, "
                 f"{counts['undetermined_named']} undetermined with a regime; kink columns "
                 f"within {worst_fd:.1e} of finite differences; image-cone control: "
                 f"{control['verdict']}"),
        table_note="finite differences only corroborate the exact columns (float64, step "
                   "1e-8 at 1e-6 from the ray); the verdicts rest on the exact ones.")


def classify(stack: list[Any]) -> dict[str, Any]:
    """Which conditions hold for one stack: all of them in d = 2; in d ≥ 3 injectivity and, at
    depth 2 within the budget of :mod:`absorb.stacks.pieces`, Theorem A's."""
    d, L = stack[0].d, len(stack)
    widths = [b.n for b in stack]
    inj = all(block_injectivity(b, ell).injective for ell, b in enumerate(stack))
    out: dict[str, Any] = {"B0": inj, "A": False, "B": False, "k": None, "refused": False}
    if d == 2:
        plane = analyse(layers_of(stack))
        holds_I = all(r.holds for r in plane.realized)
        out["A"] = L == 2 and holds_I and plane.dprime.holds(widths[1])
        out["B"] = inj and len(plane.kinks) > ray_count_bound(L, d)
        out["k"] = plane.regions_met
    elif L == 2 and predicted_points(d, *widths) <= MAP_POINTS:
        res = analyse_depth_two(stack)
        out["A"] = all(r.holds for r in res.realized) and res.dprime.holds(widths[1])
        out["k"] = res.regions_met
    elif L == 2:
        out["refused"] = True
    # decided for the subject's own widths: the H class of the theorem is the subject's
    out["decided"] = ((out["A"] and widths[0] == 2 * d)
                      or (out["B"] and all(n == 2 * d for n in widths)))
    return out


def _setting(rng: np.random.Generator, d: int, L: int, n: int, sigma: float, count: int
             ) -> tuple[dict[str, object], list[list[Any]]]:
    stacks = [[dyadic_block(rng, d, n, sigma) for _ in range(L)] for _ in range(count)]
    rows = [classify(s) for s in stacks]
    still_open = [s for s, r in zip(stacks, rows, strict=True) if not r["decided"]]
    folded = sum(1 for r in rows if not r["decided"] and r["k"] == 1)
    row: dict[str, object] = {
        "d": d, "depth": L, "width": n, "sigma": sigma, "stacks": count,
        "B0_injective": sum(r["B0"] for r in rows) / count,
        "A_holds": sum(r["A"] for r in rows) / count,
        "B_holds": sum(r["B"] for r in rows) / count,
        "decided": sum(r["decided"] for r in rows) / count,
        "open": len(still_open) / count,
        "folded_k1": folded / count,
        "refused_budget": sum(r["refused"] for r in rows) / count,
    }
    return row, (still_open if d == 2 else [])


def stack_kink_map(rng: np.random.Generator) -> ExperimentResult:
    """The map: per setting the fractions decided by B0, A, B, and open (module docstring)."""
    table, open_d2 = [], []
    for setting in SETTINGS:
        row, still_open = _setting(rng, *setting)
        table.append(row)
        open_d2 += still_open
    fits = []
    for stack in open_d2[:FITS]:
        res = fit_stack(stack, rng=rng, restarts=1, steps=20, samples=64)
        fits.append(decade(max(res.relative_error.values())))
    first = table[0]
    agrees = all(0.0 <= float(str(r["open"])) <= 1.0 for r in table)
    return ExperimentResult(
        "stack_kink_map", "depth_two_kinks",
        "The map of the open problem on random stacks: fractions where B0 (injective blocks), "
        "Theorem A ((I) ∧ (D′)) and Theorem B (> 2·L·d kink rays) hold, decided for the "
        "stack's own widths, open, and the single-sector folded share; fits on open stacks.",
        agrees, table, open=True,
        summary=(f"d = 2, depth 2, width 4, σ = 1: (D′) with (I) in {first['A_holds']:.0%}, "
                 f"decided {first['decided']:.0%}, open {first['open']:.0%} (folded "
                 f"{first['folded_k1']:.0%}); best residual-free fit errors on open stacks "
                 f"(decades): {fits or 'none open'}"),
        table_note="proved: each condition excludes its class of H; measured: how often the "
                   "conditions hold on these samples. Theorem B is tested in d = 2 only (a ray "
                   "count); Theorem A in d ≥ 3 at depth 2 within the enumeration budget "
                   "(refused_budget: beyond the map's budget of 20000 predicted points, left open "
                   "here; absorb stack decides them in minutes).")


EXPERIMENTS: tuple[Experiment, ...] = (
    kink_columns_recheck,
    stack_kink_map,
)
