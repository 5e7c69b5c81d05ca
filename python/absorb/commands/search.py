"""``absorb search``: numerical fits of residual-free blocks to a skip block (or a stack), what
the theory predicts for them, their lower bounds and a positive control.

The prediction is computed from the target's weights by the theory's own tools (the exact
index-set search and its certificates) — only to *explain* the number; the fits never see it.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from absorb.blocks import Block, planted_block, random_block
from absorb.budget import require, search_cost
from absorb.commands.options import (
    add_block_options,
    positive,
    weights_from_options,
)
from absorb.commands.result import Result
from absorb.errors import EXIT_FINDINGS, AbsorbError
from absorb.fits.fit import (
    DEFAULT_STEPS,
    FOUND_TOL,
    FitResult,
    default_samples,
    fit_residual_free,
)
from absorb.theory import applicable_theorems, decide
from absorb.verdicts import Absorbed, Impossible, NotAbsorbed, exact_zero_skip

NAME = "search"
HELP = "numerical counterexample search (residual-free fits)"


def prediction(block: Block, width: int) -> dict[str, object]:
    """What the theory says about residual-free fits of ``block`` at ``width``.

    ``expect``: "zero" (an exact residual-free block of this width exists), "floor" (none
    exists; the best error stays away from 0) or "unknown". Which theorem applies comes from
    :func:`absorb.theory.applicable_theorems`; at the block's own width the prediction is
    ``check``'s verdict itself (``verdict``), built by :func:`absorb.theory.decide`.
    """
    if exact_zero_skip(block.stored_weights[2]) is not None:
        return {"expect": "zero", "text": "A = 0: the block is residual-free already; expect ≈ 0"}
    how = applicable_theorems(block)
    d, n = block.d, block.n
    if how.path == "impossible":
        return {"expect": "floor", "theorem": how.theorem,
                "text": f"{how.reason}: not absorbable at any width; expect an error at or "
                        "above the lower bound (for fits with bounded weight norms)"}
    if how.path == "index_set" and width >= n + 2 * d:
        return {"expect": "zero", "theorem": "index_set_sufficient",
                "text": f"width {width} >= n + 2d = {n + 2 * d}: always absorbable "
                        "(x = σ(x) - σ(-x)); expect ≈ 0"}
    if width != n:
        return {"expect": "unknown",
                "text": f"width {width} is not n = {n}"
                        + (f" nor >= n + 2d = {n + 2 * d}" if how.path == "index_set" else "")
                        + ": no theorem speaks about it; no prediction"}
    verdict = decide(block, rng=np.random.default_rng(0))
    expect = ("zero" if isinstance(verdict, Absorbed)
              else "floor" if isinstance(verdict, NotAbsorbed | Impossible) else "unknown")
    return {"expect": expect, "theorem": verdict.theorem, "verdict": verdict.kind,
            "chain": list(verdict.chain),
            "text": f"same width, check says {verdict.kind}"
                    + (f" ({' + '.join(verdict.chain)})" if verdict.chain else "")
                    + f": {verdict.reason}; "
                    + {"zero": "expect ≈ 0", "floor": "expect a floor"}.get(
                        expect, "no prediction")}


def _control_target(block: Block, rng: np.random.Generator) -> tuple[Block, str]:
    act = block.activation
    if act.odd_part_linear and not act.gated and block.n >= block.d:
        return planted_block(block, rng), "planted index set (absorbable at this width)"
    base = random_block(act, block.d, block.n, rng, biases=block.has_biases)
    return (Block(act, base.W_up, base.W_down, base.W_gate, base.b_up, base.b_down,
                  residual=False), "residual-free block of the same kind (A = 0)")


def control_failure(control: FitResult | None) -> str | None:
    """Why the positive control failed, or None: a block of the target's size that is known to
    have an exact fit was not fitted below FOUND_TOL by the same code and budget, so a nonzero
    error on the target says nothing about the theory."""
    if control is None or control.worst <= FOUND_TOL:
        return None
    return (f"POSITIVE CONTROL FAILED: the same search reached only {control.worst:.3g} "
            f"(> {FOUND_TOL:g}) on a block of this size that has an exact fit, so the best "
            "error on the target is no evidence; give it more --restarts, --steps, "
            "--samples or --time-budget")


def _verdict(pred: dict[str, object], res: FitResult, control: FitResult | None
             ) -> str:
    best = res.worst
    if res.contradictions:
        return (f"CONTRADICTION: the best error {best:.3g} is below a theorem's lower bound; "
                "this would refute the theorem or reveal a bug")
    parts = ["POSITIVE CONTROL FAILED"] if control_failure(control) else []
    parts.append(f"best error {best:.3g}")
    if control is not None:
        parts.append(f"positive control (same size, same code) {control.worst:.3g}")
        if control.worst > 0:
            parts.append(f"ratio {best / control.worst:.3g}")
    bound = max((float(v["relative_error"])
                 for b in res.bounds if b["applies_to_fit"]
                 for v in b["per_scale"].values()), default=None)  # type: ignore[attr-defined]
    if bound is not None:
        parts.append(f"largest lower bound {bound:.3g}")
    return "; ".join(parts)


def width_of(block: Block, width_factor: float) -> int:
    """⌈width_factor·n⌉ (at least 1)."""
    if not (width_factor > 0 and math.isfinite(width_factor)):
        raise AbsorbError(f"width factor must be positive, got {width_factor}")
    return max(1, math.ceil(width_factor * block.n - 1e-9))


def resolve_settings(block: Block, width_factor: float, engine: str, steps: int | None,
                     samples: int | None) -> tuple[int, int, int]:
    """(width, steps, samples) of a search, the engine's defaults filled in."""
    width = width_of(block, width_factor)
    return (width, DEFAULT_STEPS.get(engine, 1) if steps is None else steps,
            default_samples(block, width, engine) if samples is None else samples)


def _errors_text(errors: object) -> str:
    assert isinstance(errors, dict)
    return ", ".join(f"{float(s):g}: {float(e):.3g}" for s, e in errors.items())


def fit_lines(out: dict[str, object]) -> list[str]:
    """The text form of :func:`fit_and_explain`'s object."""
    t = out["target"]
    assert isinstance(t, dict)
    pred = out["prediction"]
    assert isinstance(pred, dict)
    lines = [f"{t['activation']} skip block d={t['d']}, n={t['n']}; residual-free fits of width "
             f"{out['width']} ({out['engine']} engine, {out['status']}, {out['seconds']:.1f} s)",
             f"theory: {pred['text']}",
             "best held-out relative error per input scale: "
             + _errors_text(out["relative_error"])]
    bounds = out["lower_bounds"]
    assert isinstance(bounds, list)
    for b in bounds:
        lines.append(f"lower bound ({b['theorem']}, {b.get('norms', 'any width')}"
                     f"{'' if b['applies_to_fit'] else '; does not apply to this fit'}): "
                     + _errors_text({s: v["relative_error"] for s, v in b["per_scale"].items()}))
    if not bounds:
        lines.append("lower bound: none known for this kind")
    ctrl = out["control"]
    if isinstance(ctrl, dict):
        lines.append(f"positive control ({ctrl['kind']}; same size, same code): "
                     + _errors_text(ctrl["relative_error"])
                     + ("" if ctrl["failure"] else f" (recovered: <= {ctrl['found_tol']:g})"))
        if ctrl["failure"]:
            lines.append(str(ctrl["failure"]))
    lines.append(f"summary: {out['summary']}")
    lines.append(f"independence: {out['independence']}")
    contra = out["contradictions"]
    assert isinstance(contra, list)
    lines += [f"CONTRADICTION: {c['metric']} at scale {c['scale']:g} is {c['error']:.3g} < "
              f"{c['theorem']} lower bound {c['bound']:.3g}" for c in contra]
    return lines


def fit_and_explain(
    block: Block,
    *,
    width_factor: float = 1.0,
    restarts: int = 4,
    steps: int | None = None,
    samples: int | None = None,
    seed: int = 0,
    engine: str = "lm",
    control: bool = True,
    init_from_target: bool = False,
    time_budget: float | None = None,
    progress: bool = False,
) -> dict[str, object]:
    """``absorb search`` on one block: fit at width ⌈width_factor·n⌉ and explain the number
    (JSON object).

    The positive control (unless ``control=False``) is a block of the same size fitted by the
    same code with the same settings: a planted index set for odd-part-linear ungated kinds,
    else a residual-free block of the kind; its error says what "≈ 0" looks like here.
    """
    width = width_of(block, width_factor)
    rng = np.random.default_rng(seed)
    def fit(target: Block, generator: np.random.Generator, from_target: bool) -> FitResult:
        return fit_residual_free(target, width=width, restarts=restarts, steps=steps,
                                 samples=samples, engine=engine, progress=progress,
                                 rng=generator, init_from_target=from_target,
                                 time_budget=time_budget)

    res = fit(block, rng, init_from_target)
    pred = prediction(block, width)
    ctrl_json: dict[str, object] | None = None
    ctrl: FitResult | None = None
    if control:
        ctrl_rng = np.random.default_rng([seed, 1])
        target, kind = _control_target(block, ctrl_rng)
        ctrl = fit(target, ctrl_rng, False)
        ctrl_json = {"kind": kind, "max_relative_error": ctrl.worst,
                     "relative_error": {str(s): e for s, e in ctrl.relative_error.items()},
                     "status": ctrl.status, "seconds": ctrl.seconds,
                     "recovered": ctrl.worst <= FOUND_TOL, "found_tol": FOUND_TOL,
                     "failure": control_failure(ctrl)}
    return {
        "target": {
            "activation": block.activation.name,
            "d": block.d,
            "n": block.n,
            "gated": block.W_gate is not None,
            "biases": block.has_biases,
            "skip": "identity" if block.A_skip is None else "matrix",
        },
        "width_factor": width_factor,
        **res.to_json(),
        "prediction": pred,
        "control": ctrl_json,
        "summary": _verdict(pred, res, ctrl),
        "independence": ("independent of the theory: random starts only" if res.independent
                         else "NOT independent: one restart starts from the target's weights"),
    }


def add_options(p: argparse.ArgumentParser) -> None:
    add_block_options(p)
    p.add_argument("--width-factor", type=positive(float), default=1.0,
                   help="width of the fitted blocks, as a multiple of n")
    p.add_argument("--restarts", type=positive(int), default=4,
                   help="independent random initialisations; the best one is reported")
    p.add_argument("--steps", type=positive(int), default=None,
                   help="LM iterations per stage or Adam steps per restart; for a stack, LM "
                        "steps per restart (default: 200 for lm, 1500 for adam, 200 for a "
                        "stack)")
    p.add_argument("--samples", type=positive(int), default=None,
                   help="training inputs per input scale, and as many held-out pairs (x, 2x) "
                        "(default: 8 per unit, 256 to 512, for lm; 2048 for adam; 128 for a "
                        "stack)")
    p.add_argument("--engine", choices=("lm", "adam"), default="lm",
                   help="lm: variable projection + Levenberg-Marquardt; adam: Adam steps")
    p.add_argument("--time-budget", type=positive(float), default=None, metavar="SECONDS",
                   help="stop cleanly after this many seconds (the output says so) "
                        "(default: no limit)")
    p.add_argument("--no-control", action="store_true",
                   help="skip the positive control (a planted block of the same size)")
    p.add_argument("--init-from-target", action="store_true",
                   help="add one restart from the target's own weights (NOT independent of "
                        "the theory; labelled so in the output)")


def fit_stack_file(args: argparse.Namespace, blocks: list[Block]) -> Result:
    """``absorb search --weights STACK``: fit residual-free stacks of the same widths."""
    from absorb.stacks.fit import STACK_SAMPLES, STACK_STEPS, fit_stack

    if args.width_factor != 1.0:
        raise AbsorbError("--width-factor is for single blocks; a stack is fitted with its "
                          "own widths")
    steps = STACK_STEPS if args.steps is None else args.steps
    samples = STACK_SAMPLES if args.samples is None else args.samples
    res = fit_stack(blocks, rng=np.random.default_rng(args.seed), restarts=args.restarts,
                    samples=samples, steps=steps,
                    init_from_target=args.init_from_target).to_json()
    out = {"stack": True, "activation": blocks[0].activation.name, "d": blocks[0].d,
           "depth": len(blocks), **res}
    return Result(out, [
        f"{out['activation']} stack d={out['d']}, depth {len(blocks)}, widths "
        f"{res['widths']}; residual-free stack fits, {args.restarts} restarts x at most "
        f"{steps} Levenberg-Marquardt steps, {samples} samples per scale",
        "best held-out relative error per input scale: "
        + _errors_text(res["relative_error"]),
        *(["restart 0 started from the target's own weights (--init-from-target): "
           "not independent of the target"] if args.init_from_target else [])])


def run(args: argparse.Namespace) -> Result:
    loaded = weights_from_options(args)  # a stack file is read once, as a stack
    if isinstance(loaded, list):
        return fit_stack_file(args, loaded)
    block = loaded[0]
    width, steps, samples = resolve_settings(block, args.width_factor, args.engine, args.steps,
                                             args.samples)
    runs = 1 if args.no_control else 2
    require(search_cost(block.d, block.n, width, samples=samples, steps=steps,
                        restarts=args.restarts * runs),
            f"a search of width {width} with {samples} samples, {args.restarts} restarts "
            f"x {steps} steps")
    out = fit_and_explain(block, width_factor=args.width_factor, restarts=args.restarts,
                          steps=steps, samples=samples, seed=args.seed, engine=args.engine,
                          control=not args.no_control, init_from_target=args.init_from_target,
                          time_budget=args.time_budget, progress=True)
    ctrl = out["control"]
    failure = ctrl["failure"] if isinstance(ctrl, dict) else None
    return Result(out, fit_lines(out), EXIT_FINDINGS if failure else 0,
                  None if failure is None else str(failure))
