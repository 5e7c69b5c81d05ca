"""Where the certificate's dense phases run: numpy (``cpu``, the default) or torch.

The dense phases are the O(n²d) Gram products and the O(n³) Cholesky factorization of the
relaxation (:mod:`.real_relaxation`). ``--device cpu-torch`` runs them with torch on the CPU,
``--device cuda`` on an NVIDIA GPU; both in float64, so the factor and the solution are the
numpy path's up to floating-point rounding of the same operations (different summation orders),
and everything that is proven afterwards (the residual, the certificate's exact or bounded
re-check) is computed from the stored numbers as before: a device changes speed, never what a
verdict rests on. torch is an optional extra (``pip install -e '.[torch]'``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import numpy as np
import scipy.linalg as sla

from absorb.blocks import Array as FloatArray
from absorb.errors import AbsorbError, ToolMissing

DEVICES = ("cpu", "cpu-torch", "cuda")
TORCH_EXTRA = "needs the torch extra: pip install -e '.[torch]'"
_current: contextvars.ContextVar[str] = contextvars.ContextVar("absorb_device", default="cpu")


def current_device() -> str:
    """The device the dense phases use in this context (``cpu`` unless set)."""
    return _current.get()


def check_device(name: str) -> str:
    """``name`` when it is usable here: AbsorbError for an unknown name, ToolMissing (exit 3)
    when torch, or CUDA for ``cuda``, is missing."""
    if name not in DEVICES:
        raise AbsorbError(f"unknown device {name!r} (one of: {', '.join(DEVICES)})")
    if name == "cpu":
        return name
    try:
        import torch
    except ImportError:
        raise ToolMissing(f"--device {name} {TORCH_EXTRA}") from None
    if name == "cuda" and not torch.cuda.is_available():
        raise ToolMissing("--device cuda: no CUDA device is available to torch here")
    return name


@contextlib.contextmanager
def using_device(name: str) -> Iterator[None]:
    """Run the dense phases on ``name`` inside the block (checked first)."""
    token = _current.set(check_device(name))
    try:
        yield
    finally:
        _current.reset(token)


def host_bytes(device: str, n: int) -> float:
    """Host memory the dense phases on ``device`` need beyond the numpy path's: on
    ``cpu-torch`` the second n×n Gram factor, whole (numpy builds G in row blocks). On
    ``cuda`` the host holds G as on numpy; the GPU holds both n×n factors and the weights."""
    return 8.0 * n * n if device == "cpu-torch" else 0.0


def _torch_device(name: str) -> Any:
    import torch

    return torch.device("cuda" if name == "cuda" else "cpu")


def torch_gram(W_up: FloatArray, W_down: FloatArray) -> FloatArray:
    """G = (W_downᵀW_down) ⊙ (W_up W_upᵀ) in float64 on the current torch device (two n×n
    products, the second multiplied in place), returned as a numpy array."""
    import torch

    dev = _torch_device(current_device())
    Wd = torch.from_numpy(np.ascontiguousarray(W_down)).to(dev)
    Wu = torch.from_numpy(np.ascontiguousarray(W_up)).to(dev)
    G = Wd.T @ Wd
    G.mul_(Wu @ Wu.T)
    out: FloatArray = G.cpu().numpy()
    return out


#: BLAS threads for LAPACK's factorizations on ``cpu`` (the relaxation's Cholesky ``potrf``,
#: the rounding repair's Cholesky and its fallback, the pivoted QR ``gelsy``): one, always.
#:
#: OpenBLAS's threaded ``potrf`` segfaults on large matrices here: at n = 16384 on 2 cores
#: (OpenBLAS 0.3.30/0.3.31) it killed the process in 6 of 15 runs of a whole ``absorb inspect``
#: layer and in 3 of 3 runs of the factorization alone after a thread-count switch, whether the
#: count came from a timing probe or from the load average; no single-threaded run crashed.
#: One thread also avoids its slowdown on busy cores (its threads synchronize at every panel
#: step: n = 3072 at load 4–5 took 3.4–4.4 s with 2 threads, 0.26–0.40 s with one; the
#: repair's least squares at d = 1024 took 12.2 s as numpy's threaded SVD ``gelsd``, 1.9 s as
#: ``gelsd`` on one thread and 0.22 s as ``gelsy`` on one thread). The cost: on idle cores the
#: Cholesky takes about 2× as long (n = 16384: 31 s against 16.5 s).
FACTORIZATION_THREADS = 1


@contextlib.contextmanager
def factorization_threads() -> Iterator[None]:
    """Every loaded BLAS library (numpy's and scipy's copies) at
    :data:`FACTORIZATION_THREADS` inside the block, the previous counts restored after."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=FACTORIZATION_THREADS, user_api="blas"):
        yield


def cholesky(G: FloatArray) -> tuple[FloatArray, int]:
    """(L, info) as LAPACK ``potrf`` gives them: the lower factor of the symmetric G (info > 0
    when G is not numerically positive definite). On ``cpu`` G is factorized in place (its
    transpose is the same matrix in Fortran order) with :data:`FACTORIZATION_THREADS`; on a
    torch device in float64 there, G left as it is."""
    if current_device() == "cpu":
        with factorization_threads():
            L, info = sla.lapack.dpotrf(G.T, lower=1, clean=0, overwrite_a=1)
        return L, int(info)
    import torch

    dev = _torch_device(current_device())
    Lt, info_t = torch.linalg.cholesky_ex(torch.from_numpy(G).to(dev))
    factor: FloatArray = Lt.cpu().numpy()
    return factor, int(info_t.item())
