"""``absorb verify``: build the Lean library and audit its axioms (needs lake), or trace it with
LeanDojo. Exit 4 when the build or the audit found a problem, 3 when the toolchain is missing.

("verify" here is the Lean build; the construction check of a verdict is ``check``, and the
dual certificate check is :func:`absorb.certificates.check_dual`.)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from absorb.atomic_files import ensure_writable_folder
from absorb.commands.audit import status_result
from absorb.commands.options import add_root_option, timeout_type
from absorb.commands.result import Result
from absorb.errors import AbsorbError
from absorb.lean_project import lean_root

NAME = "verify"
HELP = "build the Lean library and audit its axioms (needs lake)"


def add_options(p: argparse.ArgumentParser) -> None:
    add_root_option(p)
    p.add_argument("--timeout", type=timeout_type, default=3600.0,
                   help="seconds allowed for each toolchain command")
    p.add_argument("--backend", choices=("lake", "dojo"), default="lake",
                   help="lake: build and #print axioms; dojo: trace with LeanDojo (extra "
                   "dojo: pip install -e \".[dojo]\") and check every manifest proof tactic "
                   "by tactic")
    p.add_argument("--dojo-out", type=Path, metavar="DIR",
                   help="with --backend dojo: write each theorem's tactic-by-tactic goal "
                   "states to DIR/<id>.json (default: not written)")


def run(args: argparse.Namespace) -> Result:
    from absorb.lean import verify, verify_dojo

    if args.backend == "dojo":
        if args.dojo_out is not None:  # before the trace, which takes minutes
            ensure_writable_folder(args.dojo_out)
        res = verify_dojo(lean_root(args.root), timeout=args.timeout, out=args.dojo_out)
    elif args.dojo_out is not None:
        raise AbsorbError("--dojo-out needs --backend dojo")
    else:
        res = verify(lean_root(args.root), timeout=args.timeout)
    return status_result(res)
