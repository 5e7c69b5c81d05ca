"""The checker's JSON format (``lake exe absorb-check FILE.json``), written for third parties.

Keys: ``W_up`` (n rows of d entries), ``W_down`` (d rows of n entries), ``A_skip`` (d×d,
absent = identity), ``format`` = ``"absorb-check/1"``, and exactly one of ``S`` (0-based
indices: W_down[:,S] W_up[S,:] = −A is checked exactly) or ``Y`` (a dual certificate). Every
entry is an exact rational string "p/q": a stored float is a dyadic rational and is written
as exactly that number, so the file says precisely what the stored weights say.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from absorb.errors import AbsorbError
from absorb.files import write_atomic
from absorb.rationals import RationalMatrix

__all__ = ["FORMAT", "checker_document", "ensure_writable", "export_documents", "write_new_file"]

FORMAT = "absorb-check/1"


def _q(v: object) -> str:
    if isinstance(v, Fraction):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(Fraction(float(v)))  # type: ignore[arg-type]


def _rows(M: Any) -> list[list[str]]:
    return [[_q(v) for v in row] for row in np.asarray(M, dtype=object)]


def checker_document(W_up: Any, W_down: Any, A: Any = None, *, S: Sequence[int] | None = None,
                     Y: Any = None) -> dict[str, object]:
    """The checker's input for (W_up, W_down, A) with an index set S or a certificate Y."""
    if (S is None) == (Y is None):
        raise AbsorbError("a checker file holds exactly one of S and Y")
    doc: dict[str, object] = {"format": FORMAT, "W_up": _rows(W_up), "W_down": _rows(W_down)}
    if A is not None:
        doc["A_skip"] = _rows(A)
    if S is not None:
        doc["S"] = [int(i) for i in S]
    else:
        doc["Y"] = [[str(Fraction(v)) for v in row] for row in Y]
    return doc


def ensure_writable(path: str | Path, force: bool) -> Path:
    """Refuse (before any work) a target that exists (unless ``force``) or cannot be created."""
    target = Path(path)
    if target.is_dir():
        raise AbsorbError(f"{target}: is a directory, not a file")
    if target.exists() and not force:
        raise AbsorbError(f"{target}: exists; pass --force to overwrite it")
    if not target.parent.is_dir():
        raise AbsorbError(f"{target.parent}: no such directory")
    return target


def write_new_file(path: Path, doc: dict[str, object]) -> None:
    """Write JSON atomically (a temporary file renamed into place): never half a file."""
    write_atomic(path, json.dumps(doc) + "\n")


def export_documents(result: dict[str, Any], W_up: Any, W_down: Any, A: Any, *,
                     certificate: bool) -> dict[str, object]:
    """The checker document of a verdict: ``Y`` (``certificate``, or a not_absorbed verdict)
    from ``certificate.dual``, else ``S`` of an absorbed verdict (AbsorbError if none)."""
    verdict = result.get("verdict")
    cert = result.get("certificate")
    dual = cert.get("dual") if isinstance(cert, dict) else None
    if certificate or verdict == "not_absorbed":
        if not isinstance(dual, dict):
            raise AbsorbError(f"the verdict ({verdict}) carries no dual certificate Y to write"
                              + ("; -A lies inside the zonotope, so none exists"
                                 if verdict == "not_absorbed" else ""))
        Y = dual["Y"]
        return checker_document(W_up, W_down, A, Y=Y.fractions() if isinstance(
            Y, RationalMatrix) else [[Fraction(q) for q in row] for row in Y])
    if verdict in ("absorbed", "absorbable_up_to_rounding") and result.get("S") is not None:
        return checker_document(W_up, W_down, A, S=result["S"])
    raise AbsorbError(f"the verdict ({verdict}) carries neither an index set S nor a dual "
                      "certificate Y for the checker")
