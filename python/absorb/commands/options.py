"""The option types and option groups shared by the commands (argparse ``type=`` callables)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from absorb.activations import get_activation
from absorb.blocks import Block, random_block
from absorb.budget import Cost, require
from absorb.errors import AbsorbError
from absorb.weights import CheckerKeys

# Random blocks above this many weights (d·n) are refused: beyond it `check` stops being quick.
MAX_RANDOM_WEIGHTS = 1 << 26
#: Longest --timeout accepted: a week (beyond it the OS's timers overflow long before).
MAX_TIMEOUT = 7 * 86_400.0


def seed_type(text: str) -> int:
    """An argparse type for ``--seed``: what ``numpy.random.default_rng`` accepts as an integer
    seed, i.e. a non-negative integer of any size, written in decimal."""
    digits = text.strip().replace("_", "")
    if not digits.isdecimal() or not digits.isascii():
        raise argparse.ArgumentTypeError(
            f"must be a non-negative integer (what numpy.random.default_rng accepts), "
            f"got {text!r}")
    try:
        return int(digits)
    except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
        raise argparse.ArgumentTypeError(f"too many digits ({len(digits)})") from None


def _integer(text: str) -> int:
    """A whole number, also in float notation (``1e8``), as shells and users write sizes."""
    try:
        return int(text)
    except ValueError:
        value = float(text)  # ValueError propagates: not a number at all
        if not math.isfinite(value) or value != int(value):
            raise ValueError(text) from None
        return int(value)


def layer_pattern(text: str) -> str:
    """An argparse type for a checkpoint key pattern: must hold ``{i}`` (the layer index)."""
    if text.count("{i}") != 1:
        raise argparse.ArgumentTypeError(
            f"pattern {text!r} must contain {{i}} exactly once, where the layer index goes "
            "(e.g. 'model.layers.{i}.mlp.up_proj.weight')")
    return text


def positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type: a positive (finite) value of ``kind`` (int also from ``1e8``)."""
    def parse(text: str) -> Any:
        try:
            value = _integer(text) if kind is int else kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}") from None
        if not value > 0 or (isinstance(value, float) and not math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
        return value

    return parse


def timeout_type(text: str) -> float:
    """An argparse type for ``--timeout``: seconds, positive, at most :data:`MAX_TIMEOUT`."""
    seconds = float(positive(float)(text))
    if seconds > MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(f"at most {MAX_TIMEOUT:.0f} s (a week), got {text!r}")
    return seconds


def tol_type(text: str) -> float:
    """An argparse type for ``--tol``: a storage tolerance (:func:`absorb.verdicts.check_tol`),
    refused here, before any work, when it is not a plausible relative precision."""
    from absorb.verdicts import check_tol

    try:
        value = float(text)
        check_tol(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}") from None
    except AbsorbError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--tol ")) from None
    return value


def add_block_options(p: argparse.ArgumentParser) -> None:
    """The block of ``check``/``search``: --activation with --weights, or --d/--n/--seed."""
    p.add_argument("--activation", required=True, help="a catalog name (absorb activations)")
    p.add_argument("--weights", help="a .npz or .json weights file (default: none, a random "
                                     "block of --d, --n, --seed)")
    p.add_argument("--d", type=positive(int), help="model dimension (random weights) (default: "
                                                   "none; give it, or --weights)")
    p.add_argument("--n", type=positive(int), help="hidden width (random weights) (default: "
                                                   "none; give it, or --weights)")
    p.add_argument("--biases", action="store_true", help="random weights with biases")
    p.add_argument("--seed", type=seed_type, default=0,
                   help="random seed, a non-negative integer (same seed, same output)")


def add_root_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", help="repository root (default: found from the CWD)")


def no_sizes_with_weights(args: argparse.Namespace) -> None:
    """A weights file fixes the sizes: --d, --n and --biases are refused beside it."""
    if args.d is not None or args.n is not None or args.biases:
        raise AbsorbError("--weights cannot be combined with --d, --n or --biases")


def weights_from_options(args: argparse.Namespace
                         ) -> list[Block] | tuple[Block, CheckerKeys | None]:
    """What the block options give: a ``--weights`` file read once (a stack, or one block and
    the checker keys S, Y it holds: :func:`absorb.stacks.load_weights`), or a random block;
    random weights are refused up front beyond :data:`MAX_RANDOM_WEIGHTS` or memory."""
    act = get_activation(args.activation)
    if args.weights is not None:
        no_sizes_with_weights(args)
        from absorb.stacks import load_weights

        return load_weights(args.weights, act)
    if args.d is None or args.n is None:
        raise AbsorbError("give --weights FILE, or both --d and --n")
    if args.d * args.n > MAX_RANDOM_WEIGHTS:
        raise AbsorbError(f"d*n = {args.d * args.n} exceeds the limit {MAX_RANDOM_WEIGHTS}")
    # Three weight matrices of d·n floats (up, down, gate) and the d×d skip.
    require(Cost(8.0 * (3 * args.d * args.n + args.d**2), 0.0),
            f"a random block with d={args.d}, n={args.n}")
    return random_block(act, args.d, args.n, np.random.default_rng(args.seed),
                        biases=args.biases), None
