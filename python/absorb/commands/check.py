"""``absorb check``: the verdict on one skip block (or on a stack file), optionally written for
the Lean checker (:mod:`.export`)."""

from __future__ import annotations

import argparse

import numpy as np

from absorb.atomic_files import distinct_outputs, ensure_writable_file
from absorb.blocks import Block
from absorb.budget import require
from absorb.commands.options import (
    add_block_options,
    tol_type,
    weights_from_options,
)
from absorb.commands.result import Outcome, Result
from absorb.errors import AbsorbError

NAME = "check"
HELP = "decide whether one skip block is absorbable"


def add_options(p: argparse.ArgumentParser) -> None:
    add_block_options(p)
    p.add_argument("--no-search", action="store_true",
                   help="no numerical search for undetermined verdicts")
    p.add_argument("--tol", type=tol_type, default=None,
                   help="relative precision of the stored weights for 'absorbable up to "
                        "rounding', at most 1e-2; never makes a block absorbed (default: "
                        "the unit roundoff of the detected storage format; 1e-9 for float64)")
    p.add_argument("--certificate-out", metavar="FILE",
                   help="write the dual certificate Y in the Lean checker's JSON format "
                        "(absorb-check/2; refused for a block the checker cannot state) "
                        "(default: not written)")
    p.add_argument("--export-lean", metavar="FILE",
                   help="write the verdict for the Lean checker: S (absorbed) or Y "
                        "(not_absorbed), with the block its theorem chain speaks about "
                        "(absorb-check/2; refused for a gated block) (default: not written)")
    p.add_argument("--force", action="store_true",
                   help="overwrite existing --certificate-out/--export-lean files")


def _require_decidable(block: Block) -> None:
    """Refuse up front a block whose float relaxation (the certificate ``decide`` computes for
    ungated odd-part-linear activations) would not fit in memory or time."""
    if block.activation.odd_part_linear and not block.activation.gated:
        from absorb.certificates import relaxation_cost

        require(relaxation_cost(block.d, block.n),
                f"the relaxation certificate of a block with d={block.d}, n={block.n}")


def check_stack(args: argparse.Namespace, blocks: list[Block]) -> Outcome:
    """``absorb check --weights STACK``: :func:`~absorb.stacks.decide_stack`'s verdict."""
    from absorb.stacks import decide_stack

    if args.certificate_out or args.export_lean:
        raise AbsorbError("--certificate-out and --export-lean are for single blocks; the Lean "
                          "checker's format holds one block (nothing written)")
    return decide_stack(blocks, rng=np.random.default_rng(args.seed), fit=not args.no_search)


def run(args: argparse.Namespace) -> Outcome:
    from absorb.commands import export
    from absorb.fits.evidence import fit_evidence
    from absorb.theory import decide, given_certificate

    outputs = {"--certificate-out": args.certificate_out, "--export-lean": args.export_lean}
    distinct_outputs({"--weights": args.weights, **outputs})  # --force never writes the input
    targets = {key: ensure_writable_file(path, force=args.force, what=option)
               for (key, path), option in zip((("certificate", args.certificate_out),
                                               ("lean", args.export_lean)), outputs, strict=True)
               if path}
    loaded = weights_from_options(args)  # a stack file is read once, as a stack
    if isinstance(loaded, list):
        return check_stack(args, loaded)
    block, keys = loaded
    _require_decidable(block)
    verdict = decide(block, rng=np.random.default_rng(args.seed),
                     evidence=None if args.no_search else fit_evidence, tol=args.tol,
                     candidate=None if keys is None else keys.S)
    result = verdict.to_json()
    lines = verdict.text_lines()
    if keys is not None and keys.Y is not None:
        result["given_certificate"] = given = given_certificate(block, keys.Y)
        lines.append(f"given certificate Y: {'valid' if given['valid'] else 'NOT valid'} "
                     f"({given['verified']})")
    docs = {key: export.export_document(verdict, block, certificate=key == "certificate")
            for key in targets}  # every document built (or refused) before any is written
    for key, path in targets.items():
        doc, note = docs[key]
        export.write_new_file(path, doc)
        result[f"{key}_file"] = {"path": str(path), "block": note}
        lines.append(f"written: {path} ({note})")
    return Result(result, lines)
