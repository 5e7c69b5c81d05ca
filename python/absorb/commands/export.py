"""``check --certificate-out/--export-lean``: the Lean checker's JSON format
(``lake exe absorb-check FILE.json``), written for third parties.

Format ``absorb-check/2``. Keys: ``format``, ``activation`` (``"relu"`` or ``"gelu"``),
``W_up`` (n rows of d entries), ``W_down`` (d rows of n entries), optional ``A_skip`` (d×d,
absent = identity), optional ``b_up`` (n entries) and ``b_down`` (d entries), and exactly one
of ``S`` (0-based indices: W_down[:,S] W_up[S,:] = −A is checked exactly) or ``Y`` (a dual
certificate). Every entry is an exact rational string "p/q" or "p": a stored float is a
dyadic rational and is written as exactly that number, so the file says precisely what the
stored weights say.

Export says what it exports: the file holds the block that the verdict's theorem chain speaks
about. A ReLU or GELU block is written as it is, biases included. A block of another σ that is
ReLU at infinity (tanh-GELU, SiLU, softplus) is written as the bias-free ReLU block with the
same W_up, W_down, A: bias_blowup carries "no index set" (Y) from it to the block, and an
index set S of the W's absorbs every odd-part-linear block with those W's
(index_set_sufficient). Gated blocks, and activations whose verdict rests on no index set,
are refused (exit 2): the checker's theorems do not speak about them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from absorb.atomic_files import write_atomic
from absorb.blocks import Block
from absorb.errors import AbsorbError
from absorb.numbers import MAX_DIGITS
from absorb.rationals import RationalMatrix, rational_text
from absorb.verdicts import AbsorbableUpToRounding, Absorbed, NotAbsorbed, Verdict
from absorb.weights import CHECKER_ACTIVATIONS

__all__ = ["FORMAT", "checker_document", "export_document", "write_new_file"]

FORMAT = "absorb-check/2"


def _q(v: object) -> str:
    if isinstance(v, Fraction | int):
        return rational_text(v)
    if isinstance(v, np.integer):
        return rational_text(int(v))
    return rational_text(float(v))  # type: ignore[arg-type]


def _rows(M: Any) -> list[list[str]]:
    return [[_q(v) for v in row] for row in np.asarray(M, dtype=object)]


def _readable(doc: dict[str, object]) -> None:
    """Refuse a document the checker could not read back: an exact entry whose numerator or
    denominator has more digits than the number grammar allows (MAX_DIGITS: a long double
    near 2^±16000 has about 4800)."""
    for key, value in doc.items():
        rows = value if isinstance(value, list) else []
        for row in rows:
            for text in row if isinstance(row, list) else [row]:
                if isinstance(text, str) and max(map(len, text.lstrip("-").split("/"))) \
                        > MAX_DIGITS:
                    raise AbsorbError(f"an entry of {key} has more than {MAX_DIGITS} digits, "
                                      "beyond the checker's number grammar (nothing written)")


def checker_document(W_up: Any, W_down: Any, A: Any = None, *, activation: str = "relu",
                     b_up: Any = None, b_down: Any = None, S: Sequence[int] | None = None,
                     Y: Any = None) -> dict[str, object]:
    """The checker's input for the block (σ, W_up, W_down, A, b_up, b_down) with an index set
    S or a certificate Y."""
    if (S is None) == (Y is None):
        raise AbsorbError("a checker file holds exactly one of S and Y")
    if activation not in CHECKER_ACTIVATIONS:
        raise AbsorbError(f"the checker's format speaks about {' and '.join(CHECKER_ACTIVATIONS)} "
                          f"blocks, not {activation}")
    doc: dict[str, object] = {"format": FORMAT, "activation": activation,
                              "W_up": _rows(W_up), "W_down": _rows(W_down)}
    if A is not None:
        doc["A_skip"] = _rows(A)
    if b_up is not None:
        doc["b_up"] = [_q(v) for v in np.asarray(b_up, dtype=object)]
    if b_down is not None:
        doc["b_down"] = [_q(v) for v in np.asarray(b_down, dtype=object)]
    if S is not None:
        doc["S"] = [int(i) for i in S]
    else:
        doc["Y"] = [[rational_text(Fraction(v)) for v in row] for row in Y]
    _readable(doc)
    return doc


def write_new_file(path: Path, doc: dict[str, object]) -> None:
    """Write JSON atomically (a temporary file renamed into place): never half a file."""
    write_atomic(path, json.dumps(doc) + "\n")


def _exported_block(block: Block) -> tuple[str, bool, str]:
    """(checker activation, whether the biases are written, what the file holds) for a block;
    AbsorbError when the checker's theorems do not speak about it."""
    act = block.activation
    if act.gated:
        raise AbsorbError(f"{act.name} is gated: the Lean checker's format holds ungated "
                          "blocks only, and W_gate would be dropped (nothing written)")
    if act.checker_name is not None:
        return (act.checker_name, True, f"the {act.name} block as stored"
                + (", biases included" if block.has_biases else ""))
    if act.odd_part_linear and act.relu_at_infinity:
        return ("relu", False, f"the bias-free ReLU block with the same W_up, W_down, A: the "
                f"block bias_blowup reduces this {act.name} block to (chain: bias_blowup + "
                "index_set_necessary for Y; index_set_sufficient for S)")
    raise AbsorbError(f"the verdict on a {act.name} block rests on no index set: the Lean "
                      "checker's theorems do not speak about it (nothing written)")


def export_document(verdict: Verdict, block: Block, *, certificate: bool
                    ) -> tuple[dict[str, object], str]:
    """The checker document of a verdict and a note on the block it holds: ``Y``
    (``certificate``, or a not_absorbed verdict) from ``certificate.dual``, else the exact
    ``S`` of an absorbed verdict. AbsorbError (nothing written) when there is none, or when
    the file could not say what the verdict is about."""
    activation, with_biases, note = _exported_block(block)
    W_up, W_down, A = block.stored_weights
    b_up, b_down = block.stored_biases if with_biases else (None, None)
    cert = verdict.get("certificate")
    dual = cert.get("dual") if isinstance(cert, dict) else None
    if certificate or isinstance(verdict, NotAbsorbed):
        if not isinstance(dual, dict):
            raise AbsorbError(f"the verdict ({verdict.kind}) carries no dual certificate Y to "
                              "write" + ("; -A lies inside the zonotope, so none exists"
                                         if isinstance(verdict, NotAbsorbed) else ""))
        Y = dual["Y"]
        rows = (Y.fractions() if isinstance(Y, RationalMatrix)
                else [[Fraction(q) for q in row] for row in Y])
        return checker_document(W_up, W_down, A, activation=activation, b_up=b_up,
                                b_down=b_down, Y=rows), note
    if isinstance(verdict, Absorbed) and verdict.proof.S is not None:
        return checker_document(W_up, W_down, A, activation=activation, b_up=b_up,
                                b_down=b_down, S=verdict.proof.S), note
    if isinstance(verdict, AbsorbableUpToRounding):
        raise AbsorbError("the index set holds only up to rounding: on the stored values the "
                          "checker would refute it (nothing written)")
    raise AbsorbError(f"the verdict ({verdict.kind}) carries neither an exact index set S "
                      "nor a dual certificate Y for the checker")
