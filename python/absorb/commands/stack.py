"""``absorb stack``: the verdict on a residual stack file, its kink certificate written for an
independent re-check, or such a certificate re-checked (exit 4 when it does not hold)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from absorb.atomic_files import distinct_outputs, ensure_writable_file
from absorb.commands.options import seed_type
from absorb.commands.result import Outcome, Result
from absorb.errors import EXIT_FINDINGS, AbsorbError

NAME = "stack"
HELP = "decide a residual stack file; write or re-check its kink certificate"


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--weights", required=True, help="a stack file (.json with \"layers\", or "
                   ".npz with layer-suffixed keys)")
    p.add_argument("--activation", default="relu", help="a catalog name (absorb activations)")
    p.add_argument("--seed", type=seed_type, default=0,
                   help="random seed, a non-negative integer (same seed, same output)")
    p.add_argument("--no-search", action="store_true",
                   help="no numerical search for undetermined verdicts")
    p.add_argument("--certificate-out", metavar="FILE",
                   help="write the certificate of a not_absorbed verdict (absorb-stack-kinks/1, "
                        "absorb-stack-pieces/1 or absorb-stack-injective/1) for --recheck "
                        "(default: not written)")
    p.add_argument("--recheck", metavar="CERT",
                   help="re-check CERT against the stack in exact arithmetic instead of "
                        "deciding (exit 4 when it does not hold) (default: decide)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --certificate-out")


def _read_certificate(path: str) -> object:
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AbsorbError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AbsorbError(f"{p}: not a readable JSON certificate ({exc})") from None


def run(args: argparse.Namespace) -> Outcome:
    from absorb.activations import get_activation
    from absorb.commands import export
    from absorb.stacks import decide_stack, load_stack
    from absorb.stacks.recheck import recheck

    if args.recheck and args.certificate_out:
        raise AbsorbError("--recheck and --certificate-out exclude each other")
    distinct_outputs({"--weights": args.weights, "--certificate-out": args.certificate_out})
    target = (ensure_writable_file(args.certificate_out, force=args.force,
                                   what="--certificate-out")
              if args.certificate_out else None)
    blocks = load_stack(args.weights, get_activation(args.activation))
    if args.recheck:
        res = recheck(blocks, _read_certificate(args.recheck))
        line = (f"certificate {args.recheck}: "
                + ("holds (re-checked exactly)" if res["valid"] else f"FAILS: {res['reason']}"))
        return Result({"recheck": res}, [line],
                      exit_code=0 if res["valid"] else EXIT_FINDINGS,
                      failure=None if res["valid"] else str(res["reason"]))
    verdict = decide_stack(blocks, rng=np.random.default_rng(args.seed), fit=not args.no_search)
    if target is None:
        return verdict
    cert = verdict.get("certificate")
    if not isinstance(cert, dict) or cert.get("format") is None:
        raise AbsorbError(f"verdict {verdict['verdict']}: no kink certificate to write "
                          "(nothing written)")
    export.write_new_file(target, cert)
    out = verdict.to_json()
    out["certificate_file"] = str(target)
    return Result(out, [*verdict.text_lines(), f"written: {target}"])
