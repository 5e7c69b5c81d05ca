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

__all__ = ["is_stack_file", "run_check", "run_search"]


def _stack(args: argparse.Namespace) -> list[Block]:
    if args.d is not None or args.n is not None or args.biases:
        raise AbsorbError("--weights cannot be combined with --d, --n or --biases")
    return load_stack(args.weights, get_activation(args.activation))


def _errors(errors: dict[str, Any]) -> str:
    return ", ".join(f"{float(k):g}: {float(v):.3g}" for k, v in errors.items())


def run_check(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """``absorb check --weights STACK``: :func:`decide_stack`, its JSON and its text."""
    if args.certificate_out or args.export_lean:
        raise AbsorbError("--certificate-out and --export-lean are for single blocks; the Lean "
                          "checker's format holds one block (nothing written)")
    verdict = decide_stack(_stack(args), rng=np.random.default_rng(args.seed),
                           search=not args.no_search)
    return verdict.to_json(), verdict.text_lines()


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
