"""``absorb blueprint``: write the leanblueprint of the formalization, from the manifest."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, cast

from absorb.commands.options import timeout_type
from absorb.commands.result import Result
from absorb.lean_project import lean_root

NAME = "blueprint"
HELP = "write the leanblueprint of the formalization, generated from the manifest"


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="output folder (src/ and web/ inside)")
    p.add_argument("--verify", action="store_true",
                   help="run the Lean build first and mark \\leanok what it proved (needs lake); "
                   "without it nothing is marked")
    p.add_argument("--sources-only", action="store_true",
                   help="write the LaTeX sources without rendering them with plasTeX")
    p.add_argument("--root", help="repository root for --verify (default: found from the CWD)")
    p.add_argument("--timeout", type=timeout_type, default=3600.0,
                   help="seconds allowed for each toolchain command (with --verify)")
    p.add_argument("--force", action="store_true",
                   help="write into a folder that holds files an earlier absorb blueprint did "
                        "not write (a leanblueprint project's src/content.tex, hand edits): "
                        "they are overwritten")


def run(args: argparse.Namespace) -> Result:
    from absorb import blueprint

    out = blueprint.check_out(Path(args.out), args.force)  # before --verify's build
    proved: dict[str, bool] = {}
    if args.verify:
        from absorb.lean import verify

        res = verify(lean_root(args.root), timeout=args.timeout)
        theorems = cast(list[dict[str, Any]], res["theorems"])
        proved = {str(t["id"]): t["status"] == "proved" for t in theorems}
    if args.sources_only:
        src = blueprint.write_sources(out, proved)
        return Result({"sources": str(src), "web": None,
                       "leanok": sorted(k for k, v in proved.items() if v)},
                      [f"blueprint sources written to {src}"])
    web = blueprint.build_web(out, proved)
    marked = sorted(k for k, v in proved.items() if v)
    return Result({"sources": str(out / "src"), "web": str(web), "leanok": marked},
                  [f"blueprint written to {web} (index.html; dependency graph in "
                   "dep_graph_document.html)",
                   "the graph needs HTTP (it is blank from file://): python3 -m http.server 8000 "
                   f"--directory {web}, then open http://localhost:8000/dep_graph_document.html",
                   f"marked \\leanok (proved by lake build): {', '.join(marked) or 'none'}"])
