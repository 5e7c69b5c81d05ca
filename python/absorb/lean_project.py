"""Where the Lean tree is: the one root-finding rule of ``audit``, ``verify`` and ``report``.

A Lean project root is a folder holding both ``lakefile.lean`` and the library folder
``Absorb/``.  Without ``--root`` the commands take the project the current directory is in
(searched upward), else the tree the installed package lives in (an editable checkout), so
``absorb audit`` and ``absorb report`` run in the same folder always read the same tree.
"""

from __future__ import annotations

from pathlib import Path

from absorb.errors import AbsorbError


def is_lean_root(directory: Path) -> bool:
    """True when ``directory`` holds ``lakefile.lean`` and the library folder ``Absorb/``."""
    return (directory / "lakefile.lean").is_file() and (directory / "Absorb").is_dir()


def find_root(start: Path | None = None) -> Path:
    """The Lean project root above ``start``; without ``start``, above the current directory,
    then above the installed package.  AbsorbError when there is none."""
    starts = [start] if start is not None else [Path.cwd(), Path(__file__).resolve().parent]
    for base in starts:
        for directory in (base, *base.parents):
            if is_lean_root(directory):
                return directory
    raise AbsorbError("no Lean project (lakefile.lean and Absorb/) found above the current "
                      "directory; pass --root DIR")


def lean_root(arg: str | Path | None) -> Path:
    """``--root DIR`` when given (it must hold ``Absorb/``), else :func:`find_root`."""
    if arg is None:
        return find_root()
    root = Path(arg)
    if not (root / "Absorb").is_dir():
        raise AbsorbError(f"{root}: no Absorb/ directory there")
    return root.resolve()
