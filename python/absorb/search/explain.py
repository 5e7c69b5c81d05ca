"""``absorb search``: the fit, what the theory predicts for it, its bounds and a positive control.

The prediction is computed from the target's weights by the theory's own tools (the index-set
search and its certificates) — only to *explain* the number; the search never sees it.
"""

from __future__ import annotations

import math

import numpy as np

from absorb.blocks import Block, random_block
from absorb.errors import AbsorbError
from absorb.search.fit import DEFAULT_STEPS, SearchResult, default_samples, fit_residual_free

__all__ = [
    "explain_lines",
    "planted_block",
    "planted_block_and_set",
    "prediction",
    "resolve_settings",
    "run_search",
]


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


def prediction(block: Block, width: int) -> dict[str, object]:
    """What the theory says about residual-free fits of ``block`` at ``width``.

    ``expect``: "zero" (an exact residual-free block of this width exists), "floor" (none
    exists; the best error stays away from 0) or "unknown". Which theorem applies comes from
    :func:`absorb.theory.applicable_theorems`; at the block's own width the prediction is
    ``check``'s verdict itself (``verdict``), built by :func:`absorb.theory.decide`.
    """
    from absorb.theory import applicable_theorems, decide, stored_weights
    from absorb.verdicts import Absorbed, Impossible, NotAbsorbed, exact_zero_skip

    if exact_zero_skip(stored_weights(block)[2]) is not None:
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
    verdict = decide(block, rng=np.random.default_rng(0), search=False)
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


def _verdict(pred: dict[str, object], res: SearchResult, control: SearchResult | None
             ) -> str:
    best = res.worst
    if res.contradictions:
        return (f"CONTRADICTION: the best error {best:.3g} is below a theorem's lower bound; "
                "this would refute the theorem or reveal a bug")
    parts = [f"best error {best:.3g}"]
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
    return ", ".join(f"{float(s):g}: {e:.3g}" for s, e in errors.items())


def explain_lines(out: dict[str, object]) -> list[str]:
    """The text form of :func:`run_search`'s object."""
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
                     + _errors_text(ctrl["relative_error"]))
    lines.append(f"summary: {out['summary']}")
    lines.append(f"independence: {out['independence']}")
    contra = out["contradictions"]
    assert isinstance(contra, list)
    lines += [f"CONTRADICTION: {c['metric']} at scale {c['scale']:g} is {c['error']:.3g} < "
              f"{c['theorem']} lower bound {c['bound']:.3g}" for c in contra]
    return lines


def run_search(
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
    """``absorb search``: fit at width ⌈width_factor·n⌉ and explain the number (JSON object).

    The positive control (unless ``control=False``) is a block of the same size fitted by the
    same code with the same settings: a planted index set for odd-part-linear ungated kinds,
    else a residual-free block of the kind; its error says what "≈ 0" looks like here.
    """
    width = width_of(block, width_factor)
    rng = np.random.default_rng(seed)
    def fit(target: Block, generator: np.random.Generator, from_target: bool) -> SearchResult:
        return fit_residual_free(target, width=width, restarts=restarts, steps=steps,
                                 samples=samples, engine=engine, progress=progress,
                                 rng=generator, init_from_target=from_target,
                                 time_budget=time_budget)

    res = fit(block, rng, init_from_target)
    pred = prediction(block, width)
    ctrl_json: dict[str, object] | None = None
    ctrl: SearchResult | None = None
    if control:
        ctrl_rng = np.random.default_rng([seed, 1])
        target, kind = _control_target(block, ctrl_rng)
        ctrl = fit(target, ctrl_rng, False)
        ctrl_json = {"kind": kind, "max_relative_error": ctrl.worst,
                     "relative_error": {str(s): e for s, e in ctrl.relative_error.items()},
                     "status": ctrl.status, "seconds": ctrl.seconds}
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
