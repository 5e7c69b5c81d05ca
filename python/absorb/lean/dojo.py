"""``verify --backend dojo``: trace the repository with LeanDojo and walk every manifest proof.

LeanDojo (the optional extra ``dojo``) builds the repository with ``lake`` and records,
for every theorem, its source range and each tactic with the goal state before and after it.
Per manifest theorem this module reports whether its traced proof is *complete* — the proof
text of each declaration holds no ``sorry``/``admit``/``native_decide`` (read with the same
lexer as :func:`absorb.lean.audit`) — and can export the tactic-by-tactic goal states as JSON
for the teaching material (a proof walk-through, one file per theorem).

What "complete" does not cover: a proof that calls a lemma which itself uses ``sorry``.  That is
what the axiom check of the default backend (``#print axioms``) decides.

LeanDojo traces a commit: the repository's ``HEAD`` (uncommitted edits are not traced).  The
trace runs in a child process (``python -m absorb.lean.dojo``) under
:func:`absorb.lean.toolchain.run_process`, so that ``--timeout`` and Ctrl-C stop it, LeanDojo's
own workers included.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from absorb.atomic_files import interrupts_deferred, write_atomic
from absorb.errors import AbsorbError, ToolMissing
from absorb.lean.audit import audit
from absorb.lean.source import scan_lean
from absorb.lean.toolchain import INSTALL_HINT, find_lake, run_process
from absorb.manifest import THEOREMS, Theorem

DOJO_HINT = ("LeanDojo is not installed (the optional extra `dojo`): "
             "pip install -e \".[dojo]\" from a checkout of the repository")
_INCOMPLETE = ("sorry", "admit", "native_decide")
# Worst status wins when a theorem has several declarations.
_RANK = {"complete": 0, "untraced": 1, "native_decide": 2, "sorry": 3, "missing": 4,
         "error": 5}
_ACCEPTED = ("complete", "untraced", "not_formalized")


def dojo_installed() -> bool:
    """Whether ``lean_dojo`` can be imported (checked without importing it: it is heavy)."""
    return importlib.util.find_spec("lean_dojo") is not None


def verify_dojo(root: Path, *, timeout: float = 3600.0,
                out: Path | None = None) -> dict[str, object]:
    """Trace ``root`` at ``HEAD`` with LeanDojo and report per manifest theorem.

    Raises :class:`ToolMissing` without the extra, without ``lake`` or without ``git``.
    Returns ``{"backend": "dojo", "commit", "uncommitted_lean_changes" (Lean files not
    traced as they are: LeanDojo sees ``HEAD``), "trace": {...}, "theorems": [{"id", "lean",
    "status", "declarations"}], "ok"}`` with status ``complete``, ``sorry``,
    ``native_decide``, ``untraced`` (a ``def``/``instance``/``structure``: LeanDojo traces
    theorems only), ``missing`` (no such theorem traced), ``error`` (the trace failed) or
    ``not_formalized``; with ``out``, also ``exported`` (the files written there).  ``ok``
    holds when the trace succeeded and every theorem is complete (or untraced, or has no
    Lean counterpart).
    """
    root = Path(root).resolve()
    if not dojo_installed():
        raise ToolMissing(DOJO_HINT)
    lake = find_lake()
    if lake is None:
        raise ToolMissing(INSTALL_HINT)
    if not (root / "lakefile.lean").is_file() and not (root / "lakefile.toml").is_file():
        raise AbsorbError(f"{root}: no lakefile (is this the repository root?)")
    commit = head_commit(root)
    dirty = _uncommitted(root)
    # LeanDojo calls `lake` through the shell: elan's default location must be on PATH.
    env = {**os.environ, "PATH": f"{lake.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    with tempfile.TemporaryDirectory(prefix="absorb-dojo-") as tmp:
        dest = Path(tmp) / "traced.json"
        proc = run_process([sys.executable, "-m", "absorb.lean.dojo", str(root), commit,
                            str(dest)], root, timeout, env=env)
        traced = _read_traced(dest) if proc.returncode == 0 else None
    trace = {"ok": traced is not None, "returncode": proc.returncode,
             "timed_out": proc.timed_out, "seconds": round(proc.seconds, 1),
             "output_tail": proc.output.splitlines()[-20:]}
    kinds = _declaration_kinds(root)
    theorems = [theorem_record(thm, traced, root, kinds) for thm in THEOREMS]
    result: dict[str, object] = {
        "backend": "dojo", "root": str(root), "commit": commit,
        "uncommitted_lean_changes": dirty, "trace": trace,
        "theorems": [{k: v for k, v in t.items() if k != "walkthrough"} for t in theorems],
        "ok": traced is not None
        and all(t["status"] in _ACCEPTED for t in theorems),
    }
    if out is not None and traced is not None:
        result["exported"] = export_walkthroughs(theorems, Path(out))
    return result


def head_commit(root: Path) -> str:
    """The commit LeanDojo will trace: ``git rev-parse HEAD`` in ``root``."""
    git = shutil.which("git")
    if git is None:
        raise ToolMissing("git is not installed; LeanDojo traces a git commit")
    proc = run_process([git, "rev-parse", "HEAD"], root, 60.0)
    commit = proc.output.strip()
    if proc.returncode != 0 or len(commit) != 40:
        raise AbsorbError(f"{root}: not a git repository with a commit; LeanDojo traces a "
                          "commit (git init && git commit first)")
    return commit


def _uncommitted(root: Path) -> list[str]:
    """Lean files whose working-tree state differs from ``HEAD`` (LeanDojo does not see it)."""
    git = shutil.which("git")
    assert git is not None  # head_commit found it
    proc = run_process([git, "status", "--porcelain", "--", "*.lean"], root, 60.0)
    return [line[3:] for line in proc.output.splitlines() if line.strip()]


def _read_traced(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def declaration_status(source: str, file: str) -> str:
    """``complete`` when the proof text ``source`` has no ``sorry``/``admit``/``native_decide``
    outside comments and strings, else the first such word found."""
    kinds = {f.kind for f in scan_lean(source, file).findings}
    return next((k for k in _INCOMPLETE if k in kinds), "complete")


def _source_range(root: Path, file: str, start: Sequence[int], end: Sequence[int]) -> str:
    """The text of ``file`` from (line, column) ``start`` to ``end`` (1-based, LeanDojo's
    :class:`Pos`), whole lines: a declaration's words before its start column are blanks."""
    try:
        lines = (root / file).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    return "\n".join(lines[int(start[0]) - 1 : int(end[0])])


def _declaration_kinds(root: Path) -> dict[str, str]:
    """Manifest declaration → its kind (theorem, def, …) as the static audit reads it."""
    report = audit(root)
    return {str(d["name"]): str(d["kind"]) for t in report["theorems"]  # type: ignore[attr-defined]
            for d in t["declarations"] if d["status"] == "present"}


def theorem_record(thm: Theorem, traced: Mapping[str, Any] | None, root: Path,
                   kinds: Mapping[str, str]) -> dict[str, Any]:
    """The report of one manifest theorem from the traced data (None: the trace failed) and
    the declarations' kinds; ``walkthrough`` holds per declaration the tactic steps with their
    goal states."""
    decls: list[dict[str, Any]] = []
    for name in thm.lean:
        t = None if traced is None else traced.get(name)
        if t is None:
            status = ("error" if traced is None
                      else "untraced" if kinds.get(name, "theorem") != "theorem" else "missing")
            decls.append({"name": name, "status": status, "steps": []})
            continue
        status = declaration_status(_source_range(root, t["file"], t["start"], t["end"]),
                                    t["file"])
        decls.append({"name": name, "status": status, "file": t["file"], "start": t["start"],
                      "end": t["end"], "tactic_proof": t.get("tactic_proof"),
                      "steps": t.get("steps", [])})
    status = ("not_formalized" if not thm.lean
              else max((d["status"] for d in decls), key=_RANK.__getitem__))
    return {
        "id": thm.id,
        "lean": list(thm.lean),
        "status": status,
        "declarations": [{k: v for k, v in d.items() if k not in ("steps", "tactic_proof")}
                         | {"tactics": len(d["steps"])} for d in decls],
        "walkthrough": decls,
    }


def export_walkthroughs(theorems: Sequence[Mapping[str, Any]], out: Path) -> list[str]:
    """One ``<id>.json`` per formalized theorem in ``out`` (each written atomically):
    statement-level status and, per declaration, every tactic with the goals before and after
    it.  Returns the file names written."""
    if out.exists() and not out.is_dir():
        raise AbsorbError(f"{out}: exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    by_id = {thm.id: thm for thm in THEOREMS}
    written = []
    docs = {f"{t['id']}.json": {"id": t["id"], "title": by_id[t["id"]].title,
                                "statement": by_id[t["id"]].statement,
                                "paper": by_id[t["id"]].paper, "status": t["status"],
                                "declarations": t["walkthrough"]}
            for t in theorems if t["lean"]}
    with interrupts_deferred():  # the walk-through of one run, never half old, half new
        for name, doc in docs.items():
            write_atomic(out / name, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
            written.append(name)
    return written


def _trace(root: str, commit: str, dest: str) -> None:
    """In the child process: trace with LeanDojo, keep the repository's own theorems."""
    from lean_dojo import LeanGitRepo, trace

    traced_repo = trace(LeanGitRepo(root, commit), build_deps=False)
    records: dict[str, Any] = {}
    for t in traced_repo.get_traced_theorems():
        if t.repo != traced_repo.repo:
            continue  # a dependency's theorem
        records[t.theorem.full_name] = {
            "file": str(t.file_path),
            "start": list(t.start),
            "end": list(t.end),
            "tactic_proof": t.get_tactic_proof(),
            "steps": [{"index": k, "tactic": tac.tactic, "state_before": tac.state_before,
                       "state_after": tac.state_after, "start": list(tac.start),
                       "end": list(tac.end)}
                      for k, tac in enumerate(t.get_traced_tactics())],
        }
    write_atomic(dest, json.dumps(records))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python -m absorb.lean.dojo ROOT COMMIT DEST.json")
    _trace(*sys.argv[1:])
