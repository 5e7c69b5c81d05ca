"""``absorb check`` and ``absorb search`` on a stack file (the CLI dispatches here)."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from absorb.activations import get_activation
from absorb.blocks import Block
from absorb.errors import AbsorbError
from absorb.stacks.decide import decide_stack
from absorb.stacks.files import is_stack_file, load_stack
from absorb.stacks.fit import STACK_SAMPLES, STACK_STEPS, fit_stack

__all__ = ["is_stack_file", "run_check", "run_search", "text_lines"]


def _stack(args: argparse.Namespace) -> list[Block]:
    if args.d is not None or args.n is not None or args.biases:
        raise AbsorbError("--weights cannot be combined with --d, --n or --biases")
    return load_stack(args.weights, get_activation(args.activation))


def _errors(errors: dict[str, Any]) -> str:
    return ", ".join(f"{float(k):g}: {float(v):.3g}" for k, v in errors.items())


def text_lines(r: dict[str, Any]) -> list[str]:
    """The human-readable form of a stack's ``check`` object."""
    lines = [f"{r['activation']} stack, d={r['d']}, depth {r['depth']}, widths {r['widths']}"
             + (", biases" if r["biases"] else "") + (", exact arithmetic" if r["exact"] else ""),
             f"verdict: {r['verdict']}" + (f"  (theorem {r['theorem']})" if r["theorem"] else "")
             + (f"  (construction {r['construction']})" if r.get("construction") else ""),
             f"why: {r['reason']}"]
    if r.get("witness"):
        w = r["witness"]
        lines.append("witness: |R(tx)/t - x| = " + ", ".join(
            f"{s['gap']:.2e} (t={s['t']:g})" for s in w["steps"]) + f"; |x| = {w['x_norm']:.3g}")
    for layer in r.get("layers", []):
        parts = [f"layer {layer['layer']}: n={layer['n']}",
                 f"index set {layer['index_set']['status']}"]
        if layer.get("mechanism"):
            parts.append(f"matched by {layer['mechanism'].replace('_', ' ')}")
        cone = layer.get("image_cone")
        if cone and not cone.get("applies"):
            parts.append(f"image cone: {cone['reason']}")
        dets = layer.get("determinants")
        if dets:
            parts.append(f"determinants {'certified' if dets['certified'] else 'NOT certified'}"
                         f" ({dets['method']})")
        lines.append("  " + "; ".join(parts))
    if "max_relative_error" in r:
        lines.append(f"construction checked: max relative error {r['max_relative_error']:.3g} "
                     "at scales " + ", ".join(f"{e['scale']:g}" for e in r["errors_by_scale"]))
    if "exact_check" in r:
        lines.append(f"exact check over Q at {r['exact_check']['points']} points: "
                     + ("equal" if r["exact_check"]["equal"] else "NOT equal"))
    lines += [f"unmet hypothesis: {h}" for h in r.get("unmet_hypotheses", [])]
    if r.get("search"):
        lines.append("stack fit (best relative error per input scale): "
                     + _errors(r["search"]["relative_error"]))
    return lines


def run_check(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """``absorb check --weights STACK``: :func:`decide_stack` and its text."""
    result = decide_stack(_stack(args), rng=np.random.default_rng(args.seed),
                          search=not args.no_search)
    return result, text_lines(result)


def run_search(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """``absorb search --weights STACK``: fit residual-free stacks of the same widths."""
    if args.width_factor != 1.0:
        raise AbsorbError("--width-factor is for single blocks; a stack is fitted with its "
                          "own widths")
    blocks = _stack(args)
    steps = STACK_STEPS if args.steps is None else args.steps
    samples = STACK_SAMPLES if args.samples is None else args.samples
    res = fit_stack(blocks, rng=np.random.default_rng(args.seed), restarts=args.restarts,
                    samples=samples, steps=steps,
                    init_from_target=args.init_from_target).to_json()
    out = {"stack": True, "activation": blocks[0].activation.name, "d": blocks[0].d,
           "depth": len(blocks), **res}
    return out, [f"{out['activation']} stack d={out['d']}, depth {len(blocks)}, widths "
                 f"{res['widths']}; residual-free stack fits, {args.restarts} restarts x at most "
                 f"{steps} Levenberg-Marquardt steps, {samples} samples per scale",
                 "best held-out relative error per input scale: "
                 + _errors(res["relative_error"]),  # type: ignore[arg-type]
                 *(["restart 0 started from the target's own weights (--init-from-target): "
                    "not independent of the target"] if args.init_from_target else [])]
