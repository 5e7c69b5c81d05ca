"""Shared fixtures: seeded generators, planted index sets, a CLI runner."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from absorb.activations import get_activation
from absorb.blocks import Block
from absorb.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def experiments_seed0() -> dict[str, Any]:
    """Every registered experiment at seed 0, run once per session: test_experiments checks
    them, and test_report compares its own report's run with them (the determinism check, so
    the suite runs the registry at seed 0 twice, not three times)."""
    from absorb import experiments

    return {name: experiments.run_experiment(name, 0) for name in experiments.EXPERIMENTS}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20260423)


def plant(
    activation: str,
    d: int,
    n: int,
    size: int,
    rng: np.random.Generator,
    *,
    A: np.ndarray | None = None,
    biases: bool = False,
) -> tuple[Block, tuple[int, ...]]:
    """A skip block with W_down[:,S] W_up[S,:] = −A for a random S of the given size.

    W_down[:,S] = −A B⁺ with B = W_up[S,:] (size × d, full column rank), so the product is −A.
    """
    act = get_activation(activation)
    W_up = rng.standard_normal((n, d))
    W_down = rng.standard_normal((d, n))
    S = tuple(sorted(rng.choice(n, size=size, replace=False).tolist()))
    skip = np.eye(d) if A is None else A
    W_down[:, list(S)] = -skip @ np.linalg.pinv(W_up[list(S)])
    b_up = rng.standard_normal(n) if biases else None
    b_down = rng.standard_normal(d) if biases else None
    return Block(act, W_up, W_down, b_up=b_up, b_down=b_down, A_skip=A), S


def exact_planted_json(d: int, n: int, rng: np.random.Generator) -> tuple[dict[str, object],
                                                                        tuple[int, ...]]:
    """Rational weights (as "p/q" strings) with an index set S of size d + 1 on units 0..d.

    Units 0..d−1 have b_j = e_j, unit d has b = (1, …, 1); a_d = v (random rational) and
    a_j = −e_j − v make Σ_{i∈S} a_i b_iᵀ = −I exactly. The other units are random rationals.
    """
    W_up = [[Fraction(int(rng.integers(-5, 6)), int(rng.integers(1, 4))) for _ in range(d)]
            for _ in range(n)]
    W_down = [[Fraction(int(rng.integers(-5, 6)), int(rng.integers(1, 4))) for _ in range(n)]
              for _ in range(d)]
    v = [Fraction(int(rng.integers(1, 6)), int(rng.integers(1, 4))) for _ in range(d)]
    for j in range(d):
        W_up[j] = [Fraction(int(k == j)) for k in range(d)]
        for r in range(d):
            W_down[r][j] = -Fraction(int(r == j)) - v[r]
    W_up[d] = [Fraction(1)] * d
    for r in range(d):
        W_down[r][d] = v[r]
    data = {"W_up": [[str(q) for q in row] for row in W_up],
            "W_down": [[str(q) for q in row] for row in W_down]}
    return data, tuple(range(d + 1))


@pytest.fixture
def write_json(tmp_path: Path) -> Callable[[object, str], Path]:
    def write(data: object, name: str = "w.json") -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(data))
        return path

    return write


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, object]:
        obj = json.loads(self.out)
        assert isinstance(obj, dict)
        return obj


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run ``absorb.cli.main`` in-process, capturing stdout and stderr."""

    def run(*argv: str) -> CliResult:
        code = main(list(argv))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def run_subprocess(argv: Sequence[str], cwd: Path = REPO) -> CliResult:
    """``python -m absorb ARGV`` in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-m", "absorb", *argv], capture_output=True,
                          text=True, cwd=cwd, timeout=300, check=False)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


#: Tests that render a page in a real browser run where Chromium is installed.
needs_chromium = pytest.mark.skipif(shutil.which("chromium") is None,
                                    reason="chromium not installed")


def chromium_colors(page: Path, shot: Path, width: int,
                    height: int = 1200) -> set[tuple[int, int, int]]:
    """The colours of a headless Chromium screenshot of ``page`` in a ``width`` × ``height``
    window (a fresh profile, no network beyond the file itself)."""
    from PIL import Image

    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", f"--screenshot={shot}",
             f"--window-size={width},{height}", page.as_uri()],
            check=True, capture_output=True, timeout=120,
        )
    with Image.open(shot) as img:
        assert img.size == (width, height)
        return {c for _, c in img.convert("RGB").getcolors(maxcolors=1 << 20) or []}
