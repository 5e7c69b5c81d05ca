"""Experiments of the counterexample search: planted vs generic blocks, and deep stacks (open).

Both use :mod:`absorb.fits` with random starts only (independent of the theory); their
positive controls are planted blocks fitted by the same code in the same run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from absorb import certificates, theory
from absorb.activations import get_activation
from absorb.blocks import planted_block, planted_block_and_set, random_block, stack_forward
from absorb.experiments.base import (
    EXACT_TOL,
    ExperimentResult,
    _num,
    _rel,
    _series,
    decade,
    recovered,
)
from absorb.fits import fit_residual_free
from absorb.stacks.fit import fit_stack, layerwise_start

#: Separation (generic floor ÷ planted error) that "agrees" asks for, as issue 8 sets it.
SEPARATION = 1e4
#: A fit "finds" an exact block below this (max over scales of the held-out relative error).
FOUND_TOL = 1e-8
SCALES = (0.01, 1.0, 100.0)


#: Single-unit re-draw moves per restart and unit of the same-width search
#: (:meth:`absorb.fits.lm.VarPro.redraw_search`).
REDRAWS_PER_UNIT = 2


def _worst(errors: dict[float, float]) -> float:
    return max(errors.values())


def necessary_search_caption(rates: Mapping[tuple[str, bool], tuple[int, int]],
                             rows: Sequence[Mapping[str, object]]) -> str:
    """The caption of ``index_set_necessary_search``, every number taken from its data:
    restarts at or below FOUND_TOL per activation and kind, the planted blocks' best error,
    the generic blocks' best error and the separation."""
    names = list(dict.fromkeys(a for a, _ in rates))

    def count(planted: bool) -> str:
        return "; ".join(f"{a}: {rates[(a, planted)][0]} of {rates[(a, planted)][1]}"
                         for a in names)

    planted_best = max(_num(r["best fit rel. error (max over scales)"]) for r in rows
                       if r["planted S"])
    generic_best = min(_num(r["best fit rel. error (max over scales)"]) for r in rows
                       if not r["planted S"])
    separation = min(_num(r["separation (generic ÷ planted)"]) for r in rows
                     if "separation (generic ÷ planted)" in r)
    return (f"Each marker is one restart from an independent random start. Planted blocks (an "
            f"exact same-width residual-free block exists) reach ≤ {FOUND_TOL:g} in "
            f"{count(True)} restarts; each planted block's best restart is at or below "
            f"{planted_best:.1e}. Generic "
            f"blocks (no index set, not absorbable) reach ≤ {FOUND_TOL:g} in {count(False)} "
            f"restarts; their best is {generic_best:.1e}, a separation of at least "
            f"{separation:.1e} (generic best ÷ planted best, per activation), measured by the "
            "same code. Restarts that miss a planted block show how often a single random start "
            "fails: the negative result counts only its best restart.")


def index_set_necessary_search(rng: np.random.Generator) -> ExperimentResult:
    """Same-width search on ReLU and GELU blocks, planted vs generic (evidence, no proof).

    Generic weights (n < d², so r² > 0: no index set, not absorbable by index_set_necessary)
    against blocks of the same size with a planted index set (absorbable: an exact same-width
    residual-free block exists), fitted by the same LM search from random starts. The planted
    blocks are the positive control: they must be found (≤ 1e-8 at every scale) for the
    generic floor to mean anything; the separation is generic floor ÷ planted error.
    """
    d, n, restarts = 2, 3, 6
    rows: list[dict[str, object]] = []
    series: list[dict[str, object]] = []
    rates: dict[tuple[str, bool], tuple[int, int]] = {}
    for name in ("relu", "gelu"):
        generic = random_block(get_activation(name), d, n, rng)
        planted = planted_block(generic, rng)
        best: dict[bool, float] = {}
        for is_planted, f in ((True, planted), (False, generic)):
            res = fit_residual_free(f, restarts=restarts, rng=rng, redraws=REDRAWS_PER_UNIT * n)
            per = [_worst(r) for r in res.per_restart]
            best[is_planted] = res.worst
            rates[(name, is_planted)] = recovered(res.per_restart, FOUND_TOL)
            kind = "planted" if is_planted else "generic"
            k, m = rates[(name, is_planted)]
            series.append(_series(f"{name}, {kind}: ≤ {FOUND_TOL:g} in {k}/{m} restarts",
                                  range(1, len(per) + 1),
                                  np.maximum(per, 1e-17), panel=name, style="markers"))
            rows.append({"activation": name, "d": d, "n": n, "planted S": is_planted,
                         "r²": certificates.relaxation(f.W_up, f.W_down).residual,
                         **{f"rel. error @ {s:g}": res.relative_error[s] for s in SCALES},
                         "best fit rel. error (max over scales)": res.worst,
                         f"restarts ≤ {FOUND_TOL:g}": f"{k}/{m}",
                         "contradiction": bool(res.contradictions)})
        rows[-1]["separation (generic ÷ planted)"] = best[False] / max(best[True], 1e-300)
    agrees = all(
        (_num(r["best fit rel. error (max over scales)"]) <= FOUND_TOL) == bool(r["planted S"])
        and not r["contradiction"] for r in rows
    ) and all(_num(r["separation (generic ÷ planted)"]) >= SEPARATION
              for r in rows if "separation (generic ÷ planted)" in r)
    figure: dict[str, object] = {
        "title": f"Same-width fits, planted vs generic (d = {d}, n = {n}): every restart",
        "xlabel": "restart (independent random start)",
        "ylabel": "held-out relative error (max over scales)",
        "xticks": list(range(1, restarts + 1)),
        "xscale": "linear", "yscale": "log", "series": series,
        "caption": necessary_search_caption(rates, rows),
    }
    return ExperimentResult(
        "index_set_necessary_search", "index_set_necessary",
        "Search evidence (no formal proof): from random starts, the LM search fits planted "
        "blocks (positive control, same size and code) to round-off and stalls on generic "
        "blocks, which have no index set.", agrees, rows, figure,
        summary=f"planted ≤ {FOUND_TOL:g} in "
                + ", ".join(f"{a} {k}/{m}" for (a, p), (k, m) in rates.items() if p)
                + f" restarts, generic floor ≥ {SEPARATION:g}× higher (evidence only)",
    )


# --------------------------------------------------------------------------------------------
# depth 2 (open)


def depth_open_relu_gelu(rng: np.random.Generator) -> ExperimentResult:
    """OPEN (no theorem): depth-2 ReLU and GELU stacks against residual-free stacks.

    Why the arguments give nothing: ReLU stacks are homogeneous of degree 1 in both forms
    (no scaling mismatch), and GELU stacks match to first order at 0. What the search says:
    joint LM over both blocks, from random starts and from a layer-wise start (each block
    fitted alone by the single-block search), on generic residual stacks and on positive
    controls — stacks whose every block has a planted index set, so the residual-free stack of
    the sign-flip blocks equals them exactly (checked). Numbers only, never a theorem.
    """
    d, n, L = 2, 4, 2
    rows: list[dict[str, object]] = []
    relu = [random_block(get_activation("relu"), d, n, rng) for _ in range(L)]
    X = rng.standard_normal((32, d))
    homogeneous = _rel(stack_forward(relu, 3 * X), 3 * stack_forward(relu, X))
    rows.append({"stack": "relu, L = 2", "kind": "generic",
                 "check": "‖R(3x) − 3R(x)‖ / ‖R(x)‖ (degree 1: no scaling obstruction)",
                 "value": homogeneous})
    best: dict[tuple[str, str], float] = {}
    for name in ("relu", "gelu"):
        act = get_activation(name)
        generic = [random_block(act, d, n, rng) for _ in range(L)]
        P = np.concatenate([s * rng.standard_normal((32, d)) for s in SCALES])
        # A planted stack can collapse (block 2's units all off on block 1's image, so R ≈ 0 on
        # every sample): relative errors against it mean nothing, so such draws are redrawn.
        for _ in range(50):
            planted, sets = zip(*(planted_block_and_set(g, rng) for g in generic), strict=True)
            if np.linalg.norm(stack_forward(planted, P)) > 1e-3 * np.linalg.norm(P):
                break
        # the control is absorbable: the stack of sign-flip blocks equals it (exactly)
        flips = [theory.absorbing_block(b, S) for b, S in zip(planted, sets, strict=True)]
        rows.append({"stack": f"{name}, L = 2", "kind": "control: planted in every block",
                     "check": "sign-flip stack vs R (construction, max rel. error)",
                     "value": _rel(stack_forward(flips, P), stack_forward(planted, P))})
        for kind, target in (("control: planted in every block", planted), ("generic", generic)):
            per = fit_stack(target, rng=rng, restarts=2, samples=96, steps=100,
                            extra_starts=[layerwise_start(target, rng)]
                            ).per_restart
            errs = [_worst(r) for r in per]
            best[(name, kind)] = min(errs)
            k, m = recovered(per[:-1], FOUND_TOL)
            rows.append({"stack": f"{name}, L = 2", "kind": kind,
                         "check": "best joint-LM fit (held-out rel. error, max over scales, "
                                  "decade): random starts / layer-wise start",
                         "value": decade(min(errs[:-1])), "layer-wise start": decade(errs[-1]),
                         f"random starts ≤ {FOUND_TOL:g}": f"{k}/{m}"})
        rows.append({"stack": f"{name}, L = 2", "kind": "separation",
                     "check": "generic best ÷ control best (decade)",
                     "value": decade(best[(name, "generic")]
                                     / max(best[(name, "control: planted in every block")],
                                           1e-300))})
    controls_found = all(v <= FOUND_TOL for (_, k), v in best.items() if k.startswith("control"))
    constructions = all(_num(r["value"]) < EXACT_TOL for r in rows
                        if str(r["check"]).startswith("sign-flip"))
    agrees = homogeneous < EXACT_TOL and constructions and controls_found
    return ExperimentResult(
        "depth_open_relu_gelu", "depth_degree",
        "OPEN (paper): deep ReLU/GELU stacks. No scaling or first-order obstruction exists; "
        "the search fits depth-2 positive controls (planted index set in every block) and "
        "reports how close it gets on generic stacks. Whether generic stacks are replicable "
        "is open.",
        agrees, rows, open=True,
        summary=("open: positive controls found by the search; generic best errors and the "
                 "separation are numbers, no theorem is claimed" if agrees else
                 "open: a check failed (positive control not found, or a construction off; see "
                 "the table), so the generic numbers say little; no theorem is claimed"),
    )


EXPERIMENTS_SEARCH = (index_set_necessary_search, depth_open_relu_gelu)
