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
import re
import secrets
import signal
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn, TextIO, cast

import numpy as np

from absorb.activations import CATALOG, get_activation
from absorb.blocks import Block, random_block
from absorb.budget import Cost, require, search_cost
from absorb.checkpoints.architectures import BY_NAME as ARCHITECTURE_NAMES
from absorb.errors import (
    EXIT_BAD_INPUT,
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_TOOL_MISSING,
    AbsorbError,
    ToolMissing,
)
from absorb.project import lean_root
from absorb.rationals import RationalMatrix
from absorb.weights import CheckerKeys

# Random blocks above this many weights (d·n) are refused: beyond it `check` stops being quick.
MAX_RANDOM_WEIGHTS = 1 << 26


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors turned into AbsorbError (one line, exit 2)."""

    def error(self, message: str) -> NoReturn:
        raise AbsorbError(message)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default, except where there is none to show (flags,
    options whose absence the help text itself explains)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.required or any(action.default is v for v in (None, False,
                                                                 argparse.SUPPRESS)):
            return action.help
        return super()._get_help_string(action)


def version() -> str:
    """The installed distribution's version (package metadata), else the source tree's."""
    try:
        return metadata.version("absorb")
    except metadata.PackageNotFoundError:
        from absorb import __version__

        return __version__


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


def plain(obj: Any, matrix: Callable[[RationalMatrix], Any] | None = None) -> Any:
    """JSON-ready copy: numpy values to Python, Fractions to "p/q", non-finite floats to None,
    certificate matrices to their "p/q" strings (or to ``matrix(m)`` when given)."""
    if isinstance(obj, dict):
        return {str(k): plain(v, matrix) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v, matrix) for v in obj]
    if isinstance(obj, RationalMatrix):
        return obj.to_json() if matrix is None else matrix(obj)
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


def write_json(result: Any, stream: TextIO) -> None:
    """``result`` as one line of JSON, its certificate matrices serialized one at a time.

    A d = 4096 certificate is 16.7M "p/q" strings; building every layer's at once would hold
    all of them. Each :class:`RationalMatrix` is replaced by a placeholder, the rest encoded,
    and the matrices are encoded and written in place of their placeholders in turn.
    """
    matrices: list[RationalMatrix] = []
    # a per-call nonce: no string of the result can be mistaken for a placeholder
    tag = "absorb-matrix-" + secrets.token_hex(8)

    def slot(m: RationalMatrix) -> str:
        matrices.append(m)
        return f"\x00{tag}-{len(matrices) - 1}\x00"

    placeholder = re.compile(r'"\\u0000' + tag + r'-(\d+)\\u0000"')
    parts = placeholder.split(json.dumps(plain(result, slot), allow_nan=False))
    stream.write(parts[0])
    for index, rest in zip(parts[1::2], parts[2::2], strict=True):
        stream.write(json.dumps(matrices[int(index)].to_json()))
        stream.write(rest)
    stream.write("\n")


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = _integer(text) if kind is int else kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}") from None
        if not value > 0 or (isinstance(value, float) and not math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
        return value

    return parse


#: Longest --timeout accepted: a week (beyond it the OS's timers overflow long before).
MAX_TIMEOUT = 7 * 86_400.0


def timeout_type(text: str) -> float:
    """An argparse type for ``--timeout``: seconds, positive, at most :data:`MAX_TIMEOUT`."""
    seconds = float(_positive(float)(text))
    if seconds > MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(f"at most {MAX_TIMEOUT:.0f} s (a week), got {text!r}")
    return seconds


def _block(args: argparse.Namespace) -> Block:
    """The block of ``check``/``search``: from --weights, or random from --d/--n/--seed."""
    return _loaded(args)[0]


def _loaded(args: argparse.Namespace) -> tuple[Block, CheckerKeys | None]:
    """The block and, for a --weights file, the checker keys (S, Y) it holds."""
    act = get_activation(args.activation)
    if args.weights is not None:
        if args.d is not None or args.n is not None or args.biases:
            raise AbsorbError("--weights cannot be combined with --d, --n or --biases")
        from absorb.weights import load_check_input

        return load_check_input(args.weights, act)
    if args.d is None or args.n is None:
        raise AbsorbError("give --weights FILE, or both --d and --n")
    if args.d * args.n > MAX_RANDOM_WEIGHTS:
        raise AbsorbError(f"d*n = {args.d * args.n} exceeds the limit {MAX_RANDOM_WEIGHTS}")
    # Three weight matrices of d·n floats (up, down, gate) and the d×d skip.
    require(Cost(8.0 * (3 * args.d * args.n + args.d**2), 0.0),
            f"a random block with d={args.d}, n={args.n}")
    return random_block(act, args.d, args.n, np.random.default_rng(args.seed),
                        biases=args.biases), None


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
    lines += _text_certificates(r)
    for hyp in r.get("unmet_hypotheses", []):
        lines.append(f"unmet hypothesis: {hyp}")
    if r.get("search"):
        lines.append("search (best relative error per input scale): "
                     + _text_errors(r["search"]["relative_error"]))
        lines.append(f"  ({r['search']['note']})")
    return lines


def _text_certificates(r: dict[str, Any]) -> list[str]:
    """Theorem chain, dual certificate, distance, rounding repair, files, scope."""
    cert = r.get("certificate") or {}
    lines = []
    if len(r.get("chain") or []) > 1:
        lines.append("theorems used: " + " + ".join(r["chain"]))
    dual = cert.get("dual")
    if dual:
        lines.append(f"dual certificate: Y ({dual['source']}, grid {dual['grid']}), margin "
                     f"{dual['margin_float']:.3g}; verified by {dual['verified']}")
    if cert.get("up_to_rounding"):
        lines.append(f"up to rounding: {cert['up_to_rounding']}")
    if cert.get("distance") is not None:
        lines.append(f"distance to absorbable (r/|A|_F; every index set is at least this far, "
                     f"relatively): {cert['distance']:.3g}")
    rnd = r.get("rounding")
    if rnd:
        lines.append(f"rounding: {rnd['storage_dtype']} weights; the least-norm change of "
                     f"W_down[:,S] is {rnd['delta_norm_relative_to_W_down']:.3g} of |W_down| "
                     f"({rnd['delta_norm_in_unit_roundoffs']:.3g} unit roundoffs)")
    given = r.get("given_certificate")
    if given:
        lines.append(f"given certificate Y: {'valid' if given['valid'] else 'NOT valid'} "
                     f"({given['verified']})")
    lines += [f"written: {r[k]}" for k in ("certificate_file", "lean_file") if k in r]
    if r.get("scope"):
        lines.append(f"note: {r['scope']}")
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


def _require_decidable(block: Block) -> None:
    """Refuse up front a block whose float relaxation (the certificate ``decide`` computes for
    ungated odd-part-linear activations) would not fit in memory or time."""
    if block.activation.odd_part_linear and not block.activation.gated:
        from absorb.certificates import relaxation_cost

        require(relaxation_cost(block.d, block.n),
                f"the relaxation certificate of a block with d={block.d}, n={block.n}")


def cmd_check(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.stacks import commands as stack_commands
    from absorb.theory import decide, given_certificate, stored_weights

    if args.weights is not None and stack_commands.is_stack_file(args.weights):
        return stack_commands.run_check(args)
    from absorb.certificates import export

    targets = {key: export.ensure_writable(path, args.force) for key, path in
               (("certificate", args.certificate_out), ("lean", args.export_lean)) if path}
    block, keys = _loaded(args)
    _require_decidable(block)
    result = decide(block, rng=np.random.default_rng(args.seed), search=not args.no_search,
                    tol=args.tol, candidate=None if keys is None else keys.S)
    if keys is not None and keys.Y is not None:
        result["given_certificate"] = given_certificate(block, keys.Y)
    for key, path in targets.items():
        W_up, W_down, A = stored_weights(block)
        export.write_new_file(path, export.export_documents(result, W_up, W_down, A,
                                                            certificate=key == "certificate"))
        result[f"{key}_file"] = str(path)
    return result, _text_check(result)


def cmd_search(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.stacks import commands as stack_commands

    if args.weights is not None and stack_commands.is_stack_file(args.weights):
        return stack_commands.run_search(args)
    from absorb.search import explain_lines, resolve_settings, run_search

    block = _block(args)
    width, steps, samples = resolve_settings(block, args.width_factor, args.engine, args.steps,
                                             args.samples)
    runs = 1 if args.no_control else 2
    require(search_cost(block.d, block.n, width, samples=samples, steps=steps,
                        restarts=args.restarts * runs),
            f"a search of width {width} with {samples} samples, {args.restarts} restarts "
            f"x {steps} steps")
    out = run_search(block, width_factor=args.width_factor, restarts=args.restarts, steps=steps,
                     samples=samples, seed=args.seed, engine=args.engine,
                     control=not args.no_control, init_from_target=args.init_from_target,
                     time_budget=args.time_budget, progress=True)
    return out, explain_lines(out)


def cmd_inspect(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.checkpoints import inspect_checkpoint, text_lines

    res = inspect_checkpoint(args.checkpoint, arch=args.arch, up=args.up, down=args.down,
                             gate=args.gate, activation=args.activation, search=args.search,
                             tol=args.tol, rng=np.random.default_rng(args.seed), progress=True,
                             keep_certificates=bool(args.json))
    return res, text_lines(res)


def _finding(f: dict[str, Any]) -> str:
    where = f" in {f['declaration']}" if f.get("declaration") else ""
    return f"{f['kind']} {f['file']}:{f['line']}{where}: {f['text']}"


def _status_lines(res: dict[str, Any]) -> list[str]:
    lines = [f"{t['id']:<24} {t['status']}" for t in res["theorems"]]
    lines += [f"finding: {_finding(f)}" for f in res.get("findings", [])]
    lines += [f"exercise (does not fail the audit): {_finding(f)}"
              for f in res.get("exercises", [])]
    if res.get("backend") == "dojo":
        lines.append(f"traced with LeanDojo at commit {res['commit']}"
                     + (f"; not traced (uncommitted): {', '.join(res['uncommitted_lean_changes'])}"
                        if res["uncommitted_lean_changes"] else ""))
    lines.append("ok" if res.get("ok") else "NOT ok")
    return lines


def cmd_audit(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.lean import audit

    res = audit(lean_root(args.root))
    return res, _status_lines(res)


def cmd_verify(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.lean import verify, verify_dojo

    if args.backend == "dojo":
        res = verify_dojo(lean_root(args.root), timeout=args.timeout, out=args.dojo_out)
    elif args.dojo_out is not None:
        raise AbsorbError("--dojo-out needs --backend dojo")
    else:
        res = verify(lean_root(args.root), timeout=args.timeout)
    return res, _status_lines(res)


def cmd_report(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb.report import write_report

    out = Path(args.out)
    try:  # the tree `absorb audit` would read here; without one, formal status "not checked"
        root: Path | None = lean_root(args.root)
    except AbsorbError:
        if args.root is not None:
            raise
        root = None
    res = write_report(out, seed=args.seed, progress=True, root=root)
    return res, [f"report written to {out} (report.md, index.html, report.json); Lean tree "
                 f"read: {root or 'none'}"]


def cmd_blueprint(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from absorb import blueprint

    out = Path(args.out)
    if out.exists() and any(out.iterdir()) and not (out / "src" / "web.tex").is_file():
        raise AbsorbError(f"{out} is not empty and holds no earlier blueprint; choose another "
                          "folder (nothing was written)")
    proved: dict[str, bool] = {}
    if args.verify:
        from absorb.lean import verify

        res = verify(lean_root(args.root), timeout=args.timeout)
        theorems = cast(list[dict[str, Any]], res["theorems"])
        proved = {str(t["id"]): t["status"] == "proved" for t in theorems}
    if args.sources_only:
        src = blueprint.write_sources(out, proved)
        return ({"sources": str(src), "web": None, "leanok": sorted(k for k, v in proved.items()
                                                                     if v)},
                [f"blueprint sources written to {src}"])
    web = blueprint.build_web(out, proved)
    marked = sorted(k for k, v in proved.items() if v)
    return ({"sources": str(out / "src"), "web": str(web), "leanok": marked},
            [f"blueprint written to {web} (index.html; dependency graph in "
             "dep_graph_document.html)",
             "the graph needs HTTP (it is blank from file://): python3 -m http.server 8000 "
             f"--directory {web}, then open http://localhost:8000/dep_graph_document.html",
             f"marked \\leanok (proved by lake build): {', '.join(marked) or 'none'}"])


def _block_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--activation", required=True, help="a catalog name (absorb activations)")
    p.add_argument("--weights", help="a .npz or .json weights file")
    p.add_argument("--d", type=_positive(int), help="model dimension (random weights)")
    p.add_argument("--n", type=_positive(int), help="hidden width (random weights)")
    p.add_argument("--biases", action="store_true", help="random weights with biases")
    p.add_argument("--seed", type=seed_type, default=0,
                   help="random seed, a non-negative integer (same seed, same output)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="absorb", description="Can an MLP absorb its own skip connection?",
                     formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"absorb {version()}",
                        help="print the installed version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run: Callable[..., Any], helptext: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=helptext, description=helptext,
                           formatter_class=_HelpFormatter)
        p.add_argument("--json", action="store_true", help="one JSON object on stdout")
        p.set_defaults(run=run)
        return p

    command("activations", cmd_activations, "the activation catalog and the theory's verdicts")
    p = command("check", cmd_check, "decide whether one skip block is absorbable")
    _block_args(p)
    p.add_argument("--no-search", action="store_true",
                   help="no numerical search for undetermined verdicts")
    p.add_argument("--tol", type=_positive(float), default=None,
                   help="relative precision of the stored weights for 'absorbable up to "
                        "rounding' (default: the unit roundoff of the detected storage format; "
                        "1e-9 for float64)")
    p.add_argument("--certificate-out", metavar="FILE",
                   help="write the dual certificate Y in the Lean checker's JSON format "
                        "(default: not written)")
    p.add_argument("--export-lean", metavar="FILE",
                   help="write the verdict for the Lean checker: S (absorbed) or Y "
                        "(not_absorbed) (default: not written)")
    p.add_argument("--force", action="store_true",
                   help="overwrite existing --certificate-out/--export-lean files")
    p = command("search", cmd_search, "numerical counterexample search (residual-free fits)")
    _block_args(p)
    p.add_argument("--width-factor", type=_positive(float), default=1.0,
                   help="width of the fitted blocks, as a multiple of n")
    p.add_argument("--restarts", type=_positive(int), default=4,
                   help="independent random initialisations; the best one is reported")
    p.add_argument("--steps", type=_positive(int), default=None,
                   help="LM iterations per stage (default 200) or Adam steps (default 1500) "
                        "per restart; for a stack, LM steps per restart (default 200)")
    p.add_argument("--samples", type=_positive(int), default=None,
                   help="training inputs per input scale (default: 8 per unit, 64 to 512, for "
                        "lm; 2048 for adam; 128 for a stack); as many held-out pairs (x, 2x)")
    p.add_argument("--engine", choices=("lm", "adam"), default="lm",
                   help="lm: variable projection + Levenberg-Marquardt (default); adam")
    p.add_argument("--time-budget", type=_positive(float), default=None, metavar="SECONDS",
                   help="stop cleanly after this many seconds (the output says so)")
    p.add_argument("--no-control", action="store_true",
                   help="skip the positive control (a planted block of the same size)")
    p.add_argument("--init-from-target", action="store_true",
                   help="add one restart from the target's own weights (NOT independent of "
                        "the theory; labelled so in the output)")
    p = command("inspect", cmd_inspect, "check every MLP block of a safetensors checkpoint")
    p.add_argument("checkpoint", help="a .safetensors file, a folder, or a sharded "
                   "checkpoint's *.safetensors.index.json (config.json read from beside it)")
    p.add_argument("--arch", help="architecture, overriding detection (one of: "
                   f"{', '.join(ARCHITECTURE_NAMES)})")
    p.add_argument("--up", type=layer_pattern,
                   help="up-projection key pattern, {i} = layer (instead of detection; "
                   "nn.Linear layout)")
    p.add_argument("--down", type=layer_pattern,
                   help="down-projection key pattern, {i} = layer")
    p.add_argument("--gate", type=layer_pattern,
                   help="gate key pattern, {i} = layer (gated activations)")
    p.add_argument("--activation", help="a catalog name; needed with --up/--down, else it "
                   "overrides the detected activation")
    p.add_argument("--tol", type=_positive(float), default=None,
                   help="relative precision of the stored weights for 'absorbable up to "
                        "rounding' (default: the unit roundoff of each layer's storage format)")
    p.add_argument("--search", action="store_true",
                   help="also run the numerical search on undetermined layers (slow)")
    p.add_argument("--seed", type=seed_type, default=0,
                   help="random seed, a non-negative integer (same seed, same output)")
    p = command("audit", cmd_audit, "static audit of the Lean library (no toolchain needed)")
    p.add_argument("--root", help="repository root (default: found from the CWD)")
    p = command("verify", cmd_verify, "build the Lean library and audit its axioms (needs lake)")
    p.add_argument("--root", help="repository root (default: found from the CWD)")
    p.add_argument("--timeout", type=timeout_type, default=3600.0,
                   help="seconds allowed for each toolchain command")
    p.add_argument("--backend", choices=("lake", "dojo"), default="lake",
                   help="lake: build and #print axioms; dojo: trace with LeanDojo (extra "
                   "dojo: pip install -e \".[dojo]\") and check every manifest proof tactic "
                   "by tactic")
    p.add_argument("--dojo-out", type=Path, metavar="DIR",
                   help="with --backend dojo: write each theorem's tactic-by-tactic goal "
                   "states to DIR/<id>.json")
    p = command("report", cmd_report, "write the cross-validation report")
    p.add_argument("--out", required=True,
                   help="output directory (a previous report there is replaced file by file)")
    p.add_argument("--seed", type=seed_type, default=0,
                   help="random seed, a non-negative integer (same seed, same output)")
    p.add_argument("--root", help="Lean tree to check (default: the project the current folder "
                                  "is in, else the installed package's; the same as `audit`)")
    p = command("blueprint", cmd_blueprint,
                "write the leanblueprint of the formalization, generated from the manifest")
    p.add_argument("--out", required=True, help="output folder (src/ and web/ inside)")
    p.add_argument("--verify", action="store_true",
                   help="run the Lean build first and mark \\leanok what it proved (needs lake); "
                   "without it nothing is marked")
    p.add_argument("--sources-only", action="store_true",
                   help="write the LaTeX sources without rendering them with plasTeX")
    p.add_argument("--root", help="repository root for --verify (default: found from the CWD)")
    p.add_argument("--timeout", type=timeout_type, default=3600.0,
                   help="seconds allowed for each toolchain command (with --verify)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (see the module docstring)."""
    wants_json = False
    try:
        args = build_parser().parse_args(argv)
        wants_json = bool(args.json)
        result, lines = args.run(args)
        if args.json:
            write_json(result, sys.stdout)
        else:
            sys.stdout.write("\n".join(lines) + "\n")
        if args.command == "report" and result["errored"]:
            # The report is written and marks them, but the command did not fully do its job.
            print(f"error: experiments crashed: {', '.join(result['errored'])} (marked in the "
                  "report)", file=sys.stderr)
            return EXIT_INTERNAL
        return EXIT_FINDINGS if args.command in {"audit", "verify"} and not result["ok"] else 0
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except AbsorbError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ToolMissing as exc:
        # A missing tool is still an answer a script must be able to parse under --json.
        if wants_json:
            sys.stdout.write(json.dumps({"ok": False, "error": str(exc),
                                         "exit_code": EXIT_TOOL_MISSING}) + "\n")
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_TOOL_MISSING
    except KeyboardInterrupt:
        # Every file writer replaces its target atomically, so no half-written file is left
        # behind (JSON streamed to stdout may stop mid-line: invalid, never wrongly complete);
        # a second Ctrl-C while the message is printed must not bring the traceback back.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(("\n" if sys.stderr.isatty() else "") + "interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError as exc:
        detail = f" ({exc})" if str(exc) else ""
        print(f"error: out of memory{detail}; try smaller sizes", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:
        print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
