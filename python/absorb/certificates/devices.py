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
import functools
import time
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


#: Side of the matrix on which the Cholesky thread count is chosen (about 4·10⁸ flops).
CHOLESKY_PROBE = 1024


@functools.cache
def cholesky_threads() -> int | None:
    """BLAS threads for LAPACK's Cholesky: 1 when one thread factorizes a 1024×1024 matrix
    faster than the default count (best of 3 each, measured once per process), else None
    (the default).

    Why: OpenBLAS's threaded ``potrf`` synchronizes its threads at every panel step, and when
    the machine's cores are busy with other work each step waits for a thread's time slice:
    at n = 3072 on 2 cores at load 4–5 it took 3.4–4.4 s with 2 threads and 0.26–0.40 s with
    one, while the GEMM rate barely changed (benchmarks/results.md). On an idle multi-core
    machine the threaded factorization wins and is kept.
    """
    from threadpoolctl import threadpool_limits

    n = CHOLESKY_PROBE
    X = np.random.default_rng(0).standard_normal((n, n // 2))
    G0 = X @ X.T + n * np.eye(n)

    def best(limit: int | None) -> float:
        times = []
        with threadpool_limits(limits=limit, user_api="blas"):
            for _ in range(3):
                G = np.asfortranarray(G0)
                t0 = time.perf_counter()
                sla.lapack.dpotrf(G, lower=1, clean=0, overwrite_a=1)
                times.append(time.perf_counter() - t0)
        return min(times)

    return 1 if best(1) < best(None) else None


def cholesky(G: FloatArray) -> tuple[FloatArray, int]:
    """(L, info) as LAPACK ``potrf`` gives them: the lower factor of the symmetric G (info > 0
    when G is not numerically positive definite). On ``cpu`` G is factorized in place (its
    transpose is the same matrix in Fortran order) with :func:`cholesky_threads`; on a torch
    device in float64 there, G left as it is."""
    if current_device() == "cpu":
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=cholesky_threads(), user_api="blas"):
            L, info = sla.lapack.dpotrf(G.T, lower=1, clean=0, overwrite_a=1)
        return L, int(info)
    import torch

    dev = _torch_device(current_device())
    Lt, info_t = torch.linalg.cholesky_ex(torch.from_numpy(G).to(dev))
    factor: FloatArray = Lt.cpu().numpy()
    return factor, int(info_t.item())
