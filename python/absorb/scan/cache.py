"""The per-layer result cache of a model scan: an interrupted scan resumes where it stopped.

An entry is keyed by the SHA-256 of the tool's version, the options that change a verdict
(activation, layout, tolerance, search, seed, device) and the layer's content digest (its
stored bytes, :meth:`Checkpoint.digest`): the same numbers under the same options give the
same result, so two identical layers share one entry and a changed file never hits a stale
one. Each entry is ``KEY.json`` (the verdict in the JSON form ``--json`` prints, with a
certificate matrix on a dyadic grid stored beside it as ``KEY.Y<i>.npy``, exact float64
values rather than d² "p/q" strings). Files are written atomically, the matrices first, the
JSON last: an entry whose JSON exists is complete, and an interruption loses at most the
layer being written.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from absorb import __version__
from absorb.atomic_files import write_atomic
from absorb.errors import AbsorbError
from absorb.rationals import RationalMatrix
from absorb.scan.tasks import LayerTask, Outcome
from absorb.serialize import plain

MATRIX = "__rational_matrix__"


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

    def get(self, key: str) -> Outcome | None:
        """The stored outcome, or None when there is none (or it cannot be read)."""
        file = self.folder / f"{key}.json"
        try:
            entry = json.loads(file.read_text(encoding="utf-8"))
            return Outcome(self._decode(entry["verdict"]), float(entry["seconds"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent or damaged: recomputed and rewritten

    def put(self, key: str, outcome: Outcome) -> None:
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
                     json.dumps({"version": __version__, "seconds": outcome.seconds,
                                 "verdict": body}, allow_nan=False))

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
                values = np.load(self.folder / str(obj[MATRIX]), allow_pickle=False)
                return RationalMatrix(values, int(obj["grid"]))
            return {k: self._decode(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self._decode(v) for v in obj]
        return obj
