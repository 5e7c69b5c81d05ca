"""The per-layer result cache of a model scan: an interrupted scan resumes where it stopped.

An entry is keyed by the SHA-256 of the tool's version, the options that change a verdict
(activation, layout, tolerance, search, seed, device) and the layer's content digest (its
stored bytes, :meth:`Checkpoint.digest`): the same numbers under the same options give the
same result, so two identical layers share one entry and a changed file never hits a stale
one. Each entry is ``KEY.json`` (its key, the content digest it was computed from, and the
verdict in the JSON form ``--json`` prints, with a certificate matrix on a dyadic grid stored
beside it as ``KEY.Y<i>.npy``, exact float64 values rather than d² "p/q" strings). Files are
written atomically, the matrices first, the JSON last: an entry whose JSON exists is
complete, and an interruption loses at most the layer being written.

The cache is data, not truth (anyone who can write the folder can edit it): an entry is used
only when it names the key and digest it is filed under and its verdict re-checks on the
layer's stored weights exactly as a certificate is (:func:`confirmed`): ``absorbed`` by its
index set S (W_down[:,S] W_up[S,:] = −A, exactly), ``absorbable_up_to_rounding`` by the
least-norm repair of its S recomputed (and S not holding exactly), ``not_absorbed`` by its
dual certificate Y (:func:`absorb.certificates.check_dual`, with the margin, interval and
distance it states) and the hypotheses of index_set_necessary on the weights.
Every other verdict, and any entry that is damaged (not an object, fields missing or of the
wrong type, a matrix file missing or replaced), is recomputed, never trusted, never a crash.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from absorb import __version__
from absorb.atomic_files import write_atomic
from absorb.blocks import Block
from absorb.certificates import DualCertificate, check_dual, check_index_set
from absorb.errors import AbsorbError
from absorb.rationals import RationalMatrix
from absorb.scan.tasks import LayerTask, Outcome
from absorb.serialize import plain
from absorb.verdicts import AbsorbableUpToRounding, Absorbed, NotAbsorbed

MATRIX = "__rational_matrix__"
# What reading an edited or damaged entry can raise; each means "recompute the layer".
DAMAGED = (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError,
           ArithmeticError, AbsorbError)


def cache_key(task: LayerTask) -> str:
    """The entry name of a task's result: version, options and content digest, hashed."""
    what = {"version": __version__, "digest": task.digest, "activation": task.activation,
            "layout": task.layout, "tol": task.tol, "search": task.search, "seed": task.seed,
            "device": task.device}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


class LayerCache:
    """Results by :func:`cache_key` in ``folder`` (created on first write, after calling
    ``prepare``: the scan folder's marker)."""

    def __init__(self, folder: str | Path, prepare: Callable[[], None] | None = None) -> None:
        self.folder = Path(folder)
        self._prepare = prepare
        if self.folder.exists() and not self.folder.is_dir():
            raise AbsorbError(f"cache {self.folder} is not a folder")

    def get(self, key: str, digest: str) -> Outcome | None:
        """The stored outcome of the layer with content ``digest``, unchecked (see
        :func:`confirmed`), or None when there is none, or it is damaged or filed for other
        weights."""
        file = self.folder / f"{key}.json"
        try:
            if not file.is_file():  # absent, or a FIFO or device, whose read would block
                return None
            entry = json.loads(file.read_text(encoding="utf-8"))
            if not (isinstance(entry, dict) and entry.get("version") == __version__
                    and entry.get("key") == key and entry.get("digest") == digest
                    and isinstance(entry.get("verdict"), dict)):
                return None
            seconds = float(entry["seconds"])
            return Outcome(self._decode(entry["verdict"]), seconds)
        except DAMAGED:
            return None  # absent or damaged: recomputed and rewritten

    def put(self, key: str, digest: str, outcome: Outcome) -> None:
        if self._prepare is not None:
            self._prepare()
            self._prepare = None
        self.folder.mkdir(parents=True, exist_ok=True)
        matrices: list[RationalMatrix] = []
        body = plain(outcome.verdict, lambda m: self._slot(m, key, matrices))
        for i, m in enumerate(matrices):
            buf = io.BytesIO()
            np.save(buf, np.asarray(m.values, dtype=np.float64), allow_pickle=False)
            write_atomic(self.folder / f"{key}.Y{i}.npy", buf.getvalue())
        write_atomic(self.folder / f"{key}.json",
                     json.dumps({"version": __version__, "key": key, "digest": digest,
                                 "seconds": outcome.seconds, "verdict": body}, allow_nan=False))

    @staticmethod
    def _slot(m: RationalMatrix, key: str, matrices: list[RationalMatrix]) -> dict[str, Any]:
        if m.grid is None:  # Fractions (exact input, small): "p/q" strings inline
            return {MATRIX: None, "grid": None, "rows": m.to_json()}
        matrices.append(m)
        return {MATRIX: f"{key}.Y{len(matrices) - 1}.npy", "grid": m.grid}

    def _decode(self, obj: Any) -> Any:
        if isinstance(obj, dict):
            if MATRIX in obj:
                if obj[MATRIX] is None:
                    return RationalMatrix([[Fraction(v) for v in row] for row in obj["rows"]],
                                          None)
                name = Path(str(obj[MATRIX])).name  # a file of this folder, nowhere else
                if not (self.folder / name).is_file():  # a FIFO's read would block
                    raise ValueError(f"{name}: not a regular file")
                values = np.load(self.folder / name, allow_pickle=False)
                if values.dtype != np.float64 or values.ndim != 2:
                    raise ValueError(f"{name}: not a float64 matrix")
                return RationalMatrix(values, int(obj["grid"]))
            return {k: self._decode(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self._decode(v) for v in obj]
        return obj


def _dual_confirmed(verdict: Mapping[str, Any], W_up: Any, W_down: Any, A: Any, d: int) -> bool:
    """A not_absorbed verdict's dual certificate, re-checked: valid, and every number the
    verdict states about it (margin, value, interval, side, how verified, distance) what
    the re-check gives."""
    from absorb.theory.index_sets import dual_distance

    cert = verdict["certificate"]
    dual = cert["dual"]
    Y = dual["Y"]
    if not isinstance(Y, RationalMatrix) or np.shape(Y.values) != (d, d):
        return False
    chk = check_dual(W_up, W_down, Y.values, A)
    if not chk.valid:
        return False
    again = DualCertificate(Y.values, chk, str(dual["source"]), Y.grid)
    stated = {k: v for k, v in again.to_json().items() if k != "Y"}
    distance, _ = dual_distance(again, A, d)
    return bool(all(dual.get(k) == v for k, v in plain(stated).items())
                and cert.get("distance") == distance)


def _index_set(verdict: Mapping[str, Any], n: int) -> list[int] | None:
    S = verdict.get("S")
    if isinstance(S, list) and all(type(i) is int and 0 <= i < n for i in S) \
            and len(set(S)) == len(S):
        return S
    return None


def _rounding_confirmed(verdict: Mapping[str, Any], block: Block, S: list[int],
                        tol: float | None) -> bool:
    """An absorbable_up_to_rounding verdict's repair, recomputed for its S: within rounding,
    the same change in the same unit roundoffs (and S does not hold exactly)."""
    from absorb.certificates.rounding import repair
    from absorb.theory.index_sets import storage

    store = storage(block, tol)
    if store.unit_roundoff == 0.0:
        return False
    rep = repair(block.W_up, block.W_down, block.skip_matrix(), S, store.dtype, u=store.tol)
    return bool(rep.within_rounding and plain(rep.to_json()) == verdict.get("rounding")
                and verdict.get("distance_in_unit_roundoffs")
                == rep.relative_change / store.unit_roundoff)


def confirmed(verdict: Mapping[str, Any], block: Block, tol: float | None) -> bool:
    """Whether a cached verdict re-checks on the layer's stored weights (the module
    docstring): ``absorbed`` by an exact index set, ``absorbable_up_to_rounding`` by its
    repair recomputed for its S, ``not_absorbed`` by a dual certificate; anything else
    returns False (recompute). ``tol`` is the scan's ``--tol``."""
    from absorb.theory import applicable_theorems, subject
    from absorb.theory.applicable import necessary_chain
    from absorb.theory.index_sets import necessary_hypotheses

    if applicable_theorems(block).path != "index_set":
        return False
    if any(verdict.get(k) != v for k, v in plain(subject(block).to_json()).items()):
        return False
    if not (isinstance(verdict.get("reason"), str) and isinstance(verdict.get("lean"), list)):
        return False
    W_up, W_down, A = block.stored_weights
    try:
        kind = verdict.get("verdict")
        if kind in (Absorbed.kind, AbsorbableUpToRounding.kind):
            S = _index_set(verdict, block.n)
            if S is None or verdict.get("theorem") != "index_set_sufficient":
                return False
            holds = check_index_set(W_up, W_down, S, A)
            if kind == Absorbed.kind:
                return isinstance(verdict.get("proof"), dict) and holds
            return not holds and _rounding_confirmed(verdict, block, S, tol)
        if kind == NotAbsorbed.kind:
            chain = [*necessary_chain(block), "relaxation_certificate"]
            return (verdict.get("chain") == chain and verdict.get("theorem") == chain[0]
                    and not necessary_hypotheses(block)
                    and _dual_confirmed(verdict, W_up, W_down, A, block.d))
    except DAMAGED:
        return False
    return False
