"""The certificate's dense phases on torch (CPU here) give the numpy path's verdicts: the
Gram matrix and the relaxation agree to rounding, and every certificate is re-checked on the
stored numbers whichever device produced it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.conftest import CliResult, plant

from absorb.activations import get_activation
from absorb.blocks import random_block
from absorb.certificates import gram
from absorb.certificates.devices import (
    cholesky,
    current_device,
    using_device,
)
from absorb.errors import AbsorbError
from absorb.theory import decide

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch is not installed (extra absorb[torch])")


def test_cholesky_runs_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch,
                                         rng: np.random.Generator) -> None:
    """On cpu, LAPACK's potrf sees every BLAS library at one thread (its threaded version
    segfaults on large matrices), and the default counts are back afterwards."""
    from threadpoolctl import threadpool_info

    from absorb.certificates import devices

    def blas_threads() -> list[int]:
        return [int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]

    seen: list[list[int]] = []
    potrf = devices.sla.lapack.dpotrf

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(blas_threads())
        return potrf(*args, **kwargs)

    before = blas_threads()
    monkeypatch.setattr(devices.sla.lapack, "dpotrf", spy)
    X = rng.standard_normal((20, 10))
    _, info = cholesky(X @ X.T + np.eye(20))
    assert info == 0 and seen and all(count == [1] * len(count) for count in seen)
    assert blas_threads() == before


@pytest.mark.parametrize("device", ["cpu", "cpu-torch"])
def test_cholesky(device: str, rng: np.random.Generator) -> None:
    if device != "cpu" and importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    X = rng.standard_normal((40, 30))
    G = X @ X.T + np.eye(40)
    with using_device(device):
        L, info = cholesky(G.copy())
        assert info == 0
        L = np.tril(L)  # LAPACK leaves the upper triangle as it was
        np.testing.assert_allclose(L @ L.T, G, rtol=1e-12, atol=1e-12 * np.abs(G).max())
        _, info = cholesky(-G)  # negative definite: the factorization stops
        assert info > 0


@needs_torch
def test_gram_matches_numpy(rng: np.random.Generator) -> None:
    W_up, W_down = rng.standard_normal((50, 7)), rng.standard_normal((7, 50))
    want = gram(W_up, W_down)
    with using_device("cpu-torch"):
        assert current_device() == "cpu-torch"
        got = gram(W_up, W_down)
    assert current_device() == "cpu"
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


@needs_torch
@pytest.mark.parametrize("case", ["gelu", "gelu_biases", "relu_planted"])
def test_verdicts_match_numpy(case: str, rng: np.random.Generator) -> None:
    if case == "relu_planted":
        block, _ = plant("relu", 3, 12, 4, rng)
    else:
        block = random_block(get_activation("gelu"), 6, 30, rng, biases=case.endswith("biases"))
    want = decide(block, rng=np.random.default_rng(1))
    with using_device("cpu-torch"):
        got = decide(block, rng=np.random.default_rng(1))
    assert got["verdict"] == want["verdict"]
    cw, cg = want.get("certificate") or {}, got.get("certificate") or {}
    assert isinstance(cw, dict) and isinstance(cg, dict)
    if cw.get("distance") is not None:
        assert cg["distance"] == pytest.approx(cw["distance"], rel=1e-9)
    if cw.get("dual"):
        assert cg["dual"]["verified"] == cw["dual"]["verified"]
        assert cg["dual"]["margin_float"] == pytest.approx(cw["dual"]["margin_float"], rel=1e-6)


@needs_torch
def test_device_option(tmp_path: Path, rng: np.random.Generator, cli: Any,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_checkpoint import BERT_CONFIG, BERT_DOWN, BERT_UP, mlp_tensors, write

    path = write(tmp_path / "m", mlp_tensors(rng, BERT_UP, BERT_DOWN), BERT_CONFIG)
    cpu = cli("inspect", str(path), "--json").json()
    on_torch: CliResult = cli("inspect", str(path), "--json", "--device", "cpu-torch")
    assert on_torch.code == 0, on_torch.err
    assert [r["verdict"] for r in on_torch.json()["layers"]] == [
        r["verdict"] for r in cpu["layers"]]
    assert on_torch.json()["scan"]["device"] == "cpu-torch"
    import torch

    if not torch.cuda.is_available():
        res: CliResult = cli("inspect", str(path), "--device", "cuda")
        assert res.code == 3 and res.err.count("\n") == 1 and "no CUDA device" in res.err
    bad: CliResult = cli("inspect", str(path), "--device", "tpu")
    assert bad.code == 2 and "unknown device 'tpu'" in bad.err
    monkeypatch.setitem(sys.modules, "torch", None)
    missing: CliResult = cli("inspect", str(path), "--device", "cpu-torch")
    assert missing.code == 3 and "needs the torch extra" in missing.err
    with pytest.raises(AbsorbError), using_device("gpu"):
        pass
