"""The compiled checker ``lake exe absorb-check`` against verdicts decided on the Python side."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path

import numpy as np

from absorb.errors import AbsorbError
from absorb.lean.toolchain import run_process


def checker_agrees(output: str, expected: Mapping[str, object]) -> tuple[bool, object]:
    """Whether the checker's JSON (its last stdout line) carries every key of ``expected``
    with the same value; also the parsed output (None when it is not JSON)."""
    lines = output.strip().splitlines()
    try:
        got = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        got = None
    ok = isinstance(got, dict) and all(got.get(k) == v for k, v in expected.items())
    return ok, got


def _checker_on(lake: Path, root: Path, path: Path, expected: Mapping[str, object],
                timeout: float, source: str) -> dict[str, object]:
    result = run_process([str(lake), "exe", "absorb-check", str(path)], root, timeout)
    agrees, got = checker_agrees(result.output, expected)
    return {"input": path.name, "source": source, "expected": dict(expected), "output": got,
            "returncode": result.returncode, "agrees": agrees}


def python_checker_cases(rng: np.random.Generator) -> list[tuple[str, dict[str, object],
                                                                 dict[str, object]]]:
    """Checker inputs decided on the Python side: (name, input JSON, expected verdict).

    A planted instance with exact rational weights, W_up[S] = I and W_down[:, S] = −I for
    S = {0, 1, 2} (other units random small integers): the S that
    :func:`absorb.certificates.find_index_set` finds must be ``absorbed``, and the same S minus
    one unit (for which :func:`absorb.certificates.index_set_residual` is nonzero) must give
    ``condition_fails``.
    """
    from absorb.certificates import find_index_set, index_set_residual

    d, n = 3, 7
    to_frac = np.vectorize(lambda v: Fraction(int(v)), otypes=[object])
    up = to_frac(rng.integers(-4, 5, size=(n, d)))
    down = to_frac(rng.integers(-4, 5, size=(d, n)))
    up[:d] = to_frac(np.eye(d, dtype=int))
    down[:, :d] = to_frac(-np.eye(d, dtype=int))
    search = find_index_set(up, down)
    if search.S is None:
        raise AbsorbError("python side found no index set in a planted instance")
    weights = {"W_up": [[str(v) for v in row] for row in up],
               "W_down": [[str(v) for v in row] for row in down]}
    wrong = list(search.S[:-1])
    cases: list[tuple[str, dict[str, object], dict[str, object]]] = [
        ("planted_found.json", {**weights, "S": list(search.S)},
         {"verdict": "absorbed", "S": list(search.S)}),
    ]
    if index_set_residual(up, down, wrong) > 0:
        cases.append(("planted_wrong_S.json", {**weights, "S": wrong},
                      {"verdict": "condition_fails", "S": wrong}))
    return cases


def run_checker(lake: Path, root: Path, timeout: float) -> list[dict[str, object]]:
    """The compiled checker on the Lean fixtures (``X.json`` against ``X.expected.json``) and
    on the cases of :func:`python_checker_cases`."""
    out: list[dict[str, object]] = []
    fixtures = root / "tests" / "fixtures" / "lean"
    for path in sorted(fixtures.glob("*.json")) if fixtures.is_dir() else []:
        expected_path = path.with_name(path.name.removesuffix(".json") + ".expected.json")
        if path.name.endswith(".expected.json") or not expected_path.is_file():
            continue
        expected = json.loads(expected_path.read_text(encoding="utf-8"))
        out.append(_checker_on(lake, root, path, expected, timeout, "fixture"))
    with tempfile.TemporaryDirectory(prefix="absorb-check-") as tmp:
        for name, payload, expected in python_checker_cases(np.random.default_rng(0)):
            path = Path(tmp) / name
            path.write_text(json.dumps(payload), encoding="utf-8")
            out.append(_checker_on(lake, root, path, expected, timeout, "python"))
    return out
