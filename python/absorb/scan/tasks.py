"""One layer of a model scan as a task a worker runs: what to read, never the weights.

A :class:`LayerTask` names the checkpoint (the local path the driver resolved and, for a Hub
id, the id itself, which a worker without that path resolves in its own Hub cache), the
layer's tensor keys, the layout and activation, and the content digest the driver computed.
The worker reads the tensors itself (memory maps), checks that they have that digest (a
cluster's copy of the files must be the driver's), and runs ``decide``. Its random generator
is seeded by the scan's seed and the digest, so a layer's result depends only on its stored
numbers and the options: the same on any worker, in any order, and from the result cache.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from absorb.activations import get_activation
from absorb.checkpoints.architectures import Layout
from absorb.checkpoints.hub import resolve_checkpoint
from absorb.checkpoints.inspection import load_block
from absorb.checkpoints.reading import Checkpoint
from absorb.errors import AbsorbError

#: Layers whose Gram work n²d is at most this are decided on one BLAS thread: their many
#: small products wait for every thread at each call, which on busy cores costs more than the
#: second thread gives (8 layers of d = 256, n = 1024 at load 3–4: 0.86–1.0 s on one thread,
#: 1.8–2.8 s on two; d = 64, n = 256: 0.14 s against 0.39–0.68 s).
SMALL_LAYER_WORK = 1 << 29


def blas_for(d: int, n: int) -> contextlib.AbstractContextManager[object]:
    """One BLAS thread for a small layer (:data:`SMALL_LAYER_WORK`), else the default."""
    if n * n * d > SMALL_LAYER_WORK:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    limits: contextlib.AbstractContextManager[object] = threadpool_limits(limits=1,
                                                                           user_api="blas")
    return limits


@dataclass(frozen=True)
class LayerTask:
    """Everything a worker needs to decide one layer (small: names and numbers only)."""

    source: str
    path: str
    label: str
    keys: dict[str, str]
    layout: Layout
    activation: str
    digest: str
    seed: int
    search: bool
    tol: float | None
    device: str = "cpu"

    def rng(self) -> np.random.Generator:
        """The layer's generator: from the scan's seed and the first 64 bits of the digest."""
        return np.random.default_rng([self.seed, int(self.digest[:16], 16)])


@dataclass(frozen=True)
class Outcome:
    """A decided layer: the ``check`` object and the seconds reading and deciding took."""

    verdict: dict[str, object]
    seconds: float


def run_task(task: LayerTask) -> Outcome:
    """Read the layer's tensors (checking their digest) and ``decide`` it."""
    from absorb.certificates.devices import using_device
    from absorb.fits.evidence import fit_evidence
    from absorb.theory import decide

    path = Path(task.path)
    if not path.exists():
        path = resolve_checkpoint(task.source)
    t0 = time.perf_counter()
    with Checkpoint(path) as ckpt:
        try:
            if ckpt.digest(task.keys) != task.digest:
                raise AbsorbError(f"the tensors at {path} differ from those the scan was "
                                  "planned on (the checkpoint changed, or this worker sees "
                                  "other files)")
            block = load_block(ckpt, task.keys, task.layout, get_activation(task.activation))
        except AbsorbError as exc:
            raise AbsorbError(f"layer {task.label}: {exc}") from None
        with using_device(task.device), blas_for(block.d, block.n):
            verdict = decide(block, rng=task.rng(), evidence=fit_evidence if task.search else None,
                             tol=task.tol).to_json()
    return Outcome(verdict, time.perf_counter() - t0)
