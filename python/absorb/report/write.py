"""Writing the report into its folder, safely.

Everything is written into a fresh temporary folder beside ``out`` and then moved into place, so
an interrupted run leaves nothing half-written.  An existing ``out`` must be empty or a previous
report (it carries the marker file ``.absorb-report``, which lists the files the report wrote);
only those files are replaced or removed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from absorb.atomic_files import interrupts_deferred
from absorb.errors import AbsorbError
from absorb.report import figures
from absorb.report.build import build_report, jsonable
from absorb.report.render_html import render_html
from absorb.report.render_markdown import render_markdown

MARKER = ".absorb-report"


def _previous_files(out: Path) -> list[str]:
    """Files a previous report wrote into ``out``; AbsorbError if ``out`` holds anything else."""
    if not out.exists():
        return []
    if not out.is_dir():
        raise AbsorbError(f"{out} exists and is not a folder")
    marker = out / MARKER
    if marker.is_file():
        try:
            files = json.loads(marker.read_text(encoding="utf-8"))["files"]
        except (json.JSONDecodeError, KeyError, TypeError, OSError):
            raise AbsorbError(f"{marker}: unreadable report marker; move the folder away") from None
        previous = [str(f) for f in files if isinstance(f, str) and "/" not in f]
        for name in {*previous, "report.json", "report.md", "index.html"}:
            if (out / name).is_dir():  # a file cannot replace it: refused before the work
                raise AbsorbError(f"{out / name} is a folder where the report writes a file; "
                                  "move it away (nothing was computed or written)")
        return previous
    if any(out.iterdir()):
        raise AbsorbError(f"{out} is not empty and holds no previous report; choose another --out")
    return []


def write_report(
    out: Path, *, seed: int = 0, progress: bool = True, root: Path | None = None
) -> dict[str, object]:
    """Run the Lean side and every experiment and write the report into ``out``.

    ``root`` is the Lean tree to read (None: none; the CLI resolves the default with
    :func:`absorb.lean_project.find_root`, the same rule as ``absorb audit``).  Returns the report
    JSON (as in ``report.json``) with ``out`` and ``files``; ``errored`` names the experiments
    that crashed (the report is written all the same, with those marked).
    """
    out = Path(out)
    previous = _previous_files(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = jsonable(build_report(seed, progress, root))
    assert isinstance(report, dict)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the report is meant to be read and served
    try:
        names: dict[str, str] = {}
        images: dict[str, bytes] = {}
        for t in report["theorems"]:
            for e in t["numerical"]["experiments"]:
                if e.get("figure"):
                    name = f"fig_{e['name']}.png"
                    figures.plot(e["figure"], tmp / name)
                    names[e["name"]] = name
                    images[e["name"]] = (tmp / name).read_bytes()
        (tmp / "report.json").write_text(
            json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
            encoding="utf-8")
        (tmp / "report.md").write_text(render_markdown(report, names), encoding="utf-8")
        (tmp / "index.html").write_text(render_html(report, images), encoding="utf-8")
        files = sorted(p.name for p in tmp.iterdir())
        (tmp / MARKER).write_text(json.dumps({"tool": "absorb report", "files": files}) + "\n",
                                  encoding="utf-8")
        _move_into_place(tmp, out, files, previous)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return {**report, "out": str(out), "files": files}


def _move_into_place(tmp: Path, out: Path, files: Sequence[str], previous: Sequence[str]) -> None:
    """Fresh ``out``: one rename.  Previous report: replace its files one by one (each an
    atomic rename), drop the files of the old report the new one no longer writes, and leave
    anything else alone; the marker goes last, so it always lists what is there."""
    if not out.exists():
        os.replace(tmp, out)
        return
    with interrupts_deferred():  # Ctrl-C leaves the old report or the new one, never a mix
        for name in files:
            os.replace(tmp / name, out / name)
        for name in set(previous) - set(files):
            (out / name).unlink(missing_ok=True)
        os.replace(tmp / MARKER, out / MARKER)
