"""The ``absorb`` command line (DESIGN.md, "Command line contract").

Exit codes: 0 the command did its job (whatever the verdict), 2 bad input (one line
``error: …`` on stderr), 3 a needed external tool is missing, 1 internal error, 4 ``audit`` or
``verify`` ran and found a problem (a ``sorry``, a missing declaration, a failed build).
With ``--json`` stdout holds exactly one JSON object; progress bars and logs go to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from absorb.activations import CATALOG, get_activation
from absorb.blocks import Block, random_block
from absorb.errors import AbsorbError, ToolMissing

# `audit`/`verify` ran to completion but the Lean library is not in order.
EXIT_FINDINGS = 4

# Random blocks above this many weights (d·n) are refused: beyond it `check` stops being quick.
MAX_RANDOM_WEIGHTS = 1 << 26


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors turned into AbsorbError (one line, exit 2)."""

    def error(self, message: str) -> NoReturn:
        raise AbsorbError(message)


def plain(obj: Any) -> Any:
    """JSON-ready copy: numpy values to Python, Fractions to "p/q", non-finite floats to None."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.generic):
        return plain(obj.item())
    if isinstance(obj, Fraction):
        return str(obj)
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def find_root(start: Path | None = None) -> Path:
    """The repository holding ``Absorb/``: searched upward from the CWD, then from this file."""
    starts = [start] if start is not None else [Path.cwd(), Path(__file__).resolve().parent]
    for base in starts:
        for directory in (base, *base.parents):
            if (directory / "Absorb").is_dir():
                return directory
    raise AbsorbError("no repository with an Absorb/ directory found above the current "
                      "directory; pass --root DIR")


def _root(arg: str | None) -> Path:
    if arg is None:
        return find_root()
    root = Path(arg)
    if not (root / "Absorb").is_dir():
        raise AbsorbError(f"{root}: no Absorb/ directory there")
    return root


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}") from None
        if not value > 0 or (isinstance(value, float) and not math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
        return value

    return parse


def _block(args: argparse.Namespace) -> Block:
    """The block of ``check``/``search``: from --weights, or random from --d/--n/--seed."""
    act = get_activation(args.activation)
    if args.weights is not None:
        if args.d is not None or args.n is not None or args.biases:
            raise AbsorbError("--weights cannot be combined with --d, --n or --biases")
        from absorb.weights import load_block

        return load_block(args.weights, act)
    if args.d is None or args.n is None:
        raise AbsorbError("give --weights FILE, or both --d and --n")
    if args.d * args.n > MAX_RANDOM_WEIGHTS:
        raise AbsorbError(f"d*n = {args.d * args.n} exceeds the limit {MAX_RANDOM_WEIGHTS}")
    return random_block(act, args.d, args.n, np.random.default_rng(args.seed),
                        biases=args.biases)


def _fmt(x: object) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def _text_check(r: dict[str, Any]) -> list[str]:
    lines = [f"{r['activation']} block, d={r['d']}, n={r['n']}"
             + (", biases" if r["biases"] else "") + (", skip matrix A" if r["skip"] == "matrix"
                                                        else "")
             + (", exact arithmetic" if r["exact"] else ""),
             f"verdict: {r['verdict']}"
             + (f"  (theorem {r['theorem']})" if r["theorem"] else ""),
             f"why: {r['reason']}"]
    w = r.get("witness")
    if w is not None and "gap_norm" in w:
        lines.append(f"witness: |f({w['lambda']:g}x) - {w['lambda']:g}^{w['k']:g} f(x)| = "
                     f"{w['gap_norm']:.6g} (= |(λ - λ^k) A x|, discrepancy "
                     f"{w['discrepancy']:.2g}); zero for every residual-free block")
    elif w is not None:
        lines.append(f"witness: |Ax| = {w['Ax_norm']:.6g}; as t -> 0, |f(tx)/t - Ax| and the "
                     "bound on |h(tx)/t| vanish:")
        lines += [f"  t={s['t']:.0e}  gap={s['skip_gap']:.3e}  bound={s['bound']:.3e}"
                  for s in w["steps"]]
    if "S" in r and r["S"] is not None:
        lines.append(f"index set S ({len(r['S'])} units): {r['S']}")
    if "max_abs_error" in r:
        lines.append(f"construction checked: max |h(x) - f(x)| = {r['max_abs_error']:.3g} "
                     f"(relative {r['max_relative_error']:.3g}) at scales "
                     + ", ".join(_fmt(e["scale"]) for e in r["errors_by_scale"]))
    cert = r.get("certificate")
    if cert is not None and "relaxation_residual" in cert:
        lines.append(f"certificate: relaxation residual r^2 = {cert['relaxation_residual']:.6g} "
                     f"({cert['method']}, {'exact' if cert['exact'] else 'floating point'}); "
                     f"{cert['detail']}")
    elif cert is not None:
        lines.append(f"rank of A + W_down W_up: {cert['rank']}")
    for hyp in r.get("unmet_hypotheses", []):
        lines.append(f"unmet hypothesis: {hyp}")
    if r.get("search"):
        lines.append("search (best relative error per input scale): "
                     + _text_errors(r["search"]["relative_error"]))
        lines.append(f"  ({r['search']['note']})")
    return lines


def _text_errors(errors: dict[Any, Any]) -> str:
    return ", ".join(f"{_fmt(float(k))}: {_fmt(v)}" for k, v in errors.items())


def cmd_activations(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    rows = [a.to_json() for a in CATALOG.values()]
    lines = [f"{'name':<10} {'family':<12} {'degree':<7} {'gate':<8} {'odd':<4} verdict"]
    lines += [f"{r['name']:<10} {r['family']:<12} {_fmt(r['degree'] or '-'):<7} "
              f"{r['gate'] or '-':<8} {'yes' if r['odd_part_linear'] else 'no':<4} {r['verdict']}"
              for r in rows]
    return {"activations": rows}, lines


def cmd_check(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.theory import decide

    block = _block(args)
    result = decide(block, rng=np.random.default_rng(args.seed), search=not args.no_search)
    return result, _text_check(result)


def cmd_search(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.search import fit_residual_free

    block = _block(args)
    width = max(1, round(args.width_factor * block.n))
    res = fit_residual_free(block, width=width, restarts=args.restarts, steps=args.steps,
                            samples=args.samples, rng=np.random.default_rng(args.seed),
                            progress=True).to_json()
    out = {"activation": block.activation.name, "d": block.d, "n": block.n,
           "width_factor": args.width_factor, **res}
    return out, [f"{block.activation.name} skip block d={block.d}, n={block.n}; residual-free "
                 f"fit of width {width}, {args.restarts} restarts x {args.steps} steps",
                 "best held-out relative error per input scale: "
                 + _text_errors(res["relative_error"])]  # type: ignore[arg-type]


def cmd_inspect(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.checkpoint import inspect_checkpoint

    res = inspect_checkpoint(args.checkpoint, up=args.up, down=args.down, gate=args.gate,
                             activation=get_activation(args.activation),
                             skip_search=not args.search,
                             rng=np.random.default_rng(args.seed), progress=True)
    lines = [f"{res['checkpoint']}: {len(res['layers'])} layers"]  # type: ignore[arg-type]
    for layer in res["layers"]:  # type: ignore[attr-defined]
        cert = layer.get("certificate") or {}
        extra = (f", r^2 = {cert['relaxation_residual']:.6g}"
                 if "relaxation_residual" in cert else "")
        lines.append(f"layer {layer['layer']}: d={layer['d']} n={layer['n']} "
                     f"{layer['verdict']}{extra}")
    return res, lines


def _status_lines(res: dict[str, Any]) -> list[str]:
    lines = [f"{t['id']:<24} {t['status']}" for t in res["theorems"]]
    lines += [f"finding: {f}" for f in res.get("findings", [])]
    lines.append("ok" if res.get("ok") else "NOT ok")
    return lines


def cmd_audit(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.lean import audit

    res = audit(_root(args.root))
    return res, _status_lines(res)


def cmd_verify(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.lean import verify

    res = verify(_root(args.root), timeout=args.timeout)
    return res, _status_lines(res)


def cmd_report(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.report import write_report

    out = Path(args.out)
    res = write_report(out, seed=args.seed, progress=True)
    return res, [f"report written to {out} (report.md, index.html, report.json)"]


def _block_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--activation", required=True, help="a catalog name (absorb activations)")
    p.add_argument("--weights", help="a .npz or .json weights file")
    p.add_argument("--d", type=_positive(int), help="model dimension (random weights)")
    p.add_argument("--n", type=_positive(int), help="hidden width (random weights)")
    p.add_argument("--biases", action="store_true", help="random weights with biases")
    p.add_argument("--seed", type=int, default=0)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="absorb", description="Can an MLP absorb its own skip connection?")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run: Callable[..., Any], helptext: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=helptext, description=helptext)
        p.add_argument("--json", action="store_true", help="one JSON object on stdout")
        p.set_defaults(run=run)
        return p

    command("activations", cmd_activations, "the activation catalog and the theory's verdicts")
    p = command("check", cmd_check, "decide whether one skip block is absorbable")
    _block_args(p)
    p.add_argument("--no-search", action="store_true",
                   help="no numerical search for undetermined verdicts")
    p = command("search", cmd_search, "numerical counterexample search (residual-free fits)")
    _block_args(p)
    p.add_argument("--width-factor", type=_positive(float), default=1.0,
                   help="width of the fitted blocks, as a multiple of n")
    p.add_argument("--restarts", type=_positive(int), default=4)
    p.add_argument("--steps", type=_positive(int), default=1500)
    p.add_argument("--samples", type=_positive(int), default=2048)
    p = command("inspect", cmd_inspect, "check every MLP block of a safetensors checkpoint")
    p.add_argument("checkpoint")
    p.add_argument("--up", required=True, help="up-projection key pattern, {i} = layer")
    p.add_argument("--down", required=True, help="down-projection key pattern")
    p.add_argument("--gate", help="gate key pattern (gated activations)")
    p.add_argument("--activation", required=True)
    p.add_argument("--search", action="store_true",
                   help="also run the numerical search on undetermined layers (slow)")
    p.add_argument("--seed", type=int, default=0)
    p = command("audit", cmd_audit, "static audit of the Lean library (no toolchain needed)")
    p.add_argument("--root", help="repository root (default: found from the CWD)")
    p = command("verify", cmd_verify, "build the Lean library and audit its axioms (needs lake)")
    p.add_argument("--root", help="repository root (default: found from the CWD)")
    p.add_argument("--timeout", type=_positive(float), default=3600.0)
    p = command("report", cmd_report, "write the cross-validation report")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (see the module docstring)."""
    try:
        args = build_parser().parse_args(argv)
        result, lines = args.run(args)
        text = json.dumps(plain(result), allow_nan=False) if args.json else "\n".join(lines)
        sys.stdout.write(text + "\n")
        return EXIT_FINDINGS if args.command in {"audit", "verify"} and not result["ok"] else 0
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except AbsorbError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ToolMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except Exception as exc:
        print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
