"""The compiled checker ``lake exe absorb-check`` against outcomes decided on the Python side.

Every input is a document of format ``absorb-check/2`` and every expectation has the shape of
the shared conformance vectors (``tests/conformance/NAME.json`` beside
``NAME.expected.json``): ``{"accepted": bool, "reason"?: str, "checker"?: {key: value}}``.
An accepted document must give exit code 0 and a report (the checker's last stdout line, a JSON
object) that carries every key of ``"checker"`` with the same value; a refused one must give a
nonzero exit code and an error object ``{"error": ...}``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path

import numpy as np

from absorb.errors import AbsorbError
from absorb.lean.toolchain import run_process

#: The shared conformance vectors, relative to the repository root.
CONFORMANCE = Path("tests") / "conformance"


def checker_output(output: str) -> object:
    """The checker's report: its last stdout line parsed as JSON (None when it is not JSON)."""
    lines = output.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None


def checker_agrees(returncode: int | None, output: str,
                   expected: Mapping[str, object]) -> tuple[bool, object]:
    """Whether one run of the checker matches a conformance expectation; also the parsed report.

    ``accepted`` true: exit code 0, a JSON object without ``"error"`` holding every key of
    ``expected["checker"]`` with the same value. ``accepted`` false: a nonzero exit code and a
    JSON object with ``"error"``.
    """
    got = checker_output(output)
    if not isinstance(got, dict):
        return False, got
    if not expected["accepted"]:
        return returncode not in (0, None) and "error" in got, got
    wanted = expected.get("checker") or {}
    if not isinstance(wanted, Mapping):
        return False, got
    ok = returncode == 0 and "error" not in got and all(got.get(k) == v for k, v in wanted.items())
    return ok, got


def _checker_on(lake: Path, root: Path, path: Path, expected: Mapping[str, object],
                timeout: float, source: str) -> dict[str, object]:
    result = run_process([str(lake), "exe", "absorb-check", str(path)], root, timeout)
    agrees, got = checker_agrees(result.returncode, result.output, expected)
    return {"input": path.name, "source": source, "expected": dict(expected), "output": got,
            "returncode": result.returncode, "agrees": agrees}


def python_checker_cases(rng: np.random.Generator) -> list[tuple[str, dict[str, object],
                                                                 dict[str, object]]]:
    """Checker inputs decided on the Python side: (name, document, expectation).

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
    weights: dict[str, object] = {
        "format": "absorb-check/2", "activation": "relu",
        "W_up": [[str(v) for v in row] for row in up],
        "W_down": [[str(v) for v in row] for row in down]}
    wrong = list(search.S[:-1])
    cases: list[tuple[str, dict[str, object], dict[str, object]]] = [
        ("planted_found.json", {**weights, "S": list(search.S)},
         {"accepted": True, "checker": {"verdict": "absorbed", "S": list(search.S)}}),
    ]
    if index_set_residual(up, down, wrong) > 0:
        cases.append(("planted_wrong_S.json", {**weights, "S": wrong},
                      {"accepted": True, "checker": {"verdict": "condition_fails", "S": wrong}}))
    return cases


def conformance_vectors(root: Path) -> list[tuple[Path, dict[str, object]]]:
    """The shared vectors under ``root``: (document, its parsed ``.expected.json``)."""
    folder = root / CONFORMANCE
    out: list[tuple[Path, dict[str, object]]] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        expected_path = path.with_name(path.name.removesuffix(".json") + ".expected.json")
        if path.name.endswith(".expected.json") or not expected_path.is_file():
            continue
        out.append((path, json.loads(expected_path.read_text(encoding="utf-8"))))
    return out


def run_checker(lake: Path, root: Path, timeout: float) -> list[dict[str, object]]:
    """The compiled checker on every conformance vector and on the cases of
    :func:`python_checker_cases`."""
    out = [_checker_on(lake, root, path, expected, timeout, "conformance")
           for path, expected in conformance_vectors(root)]
    with tempfile.TemporaryDirectory(prefix="absorb-check-") as tmp:
        for name, payload, expected in python_checker_cases(np.random.default_rng(0)):
            path = Path(tmp) / name
            path.write_text(json.dumps(payload), encoding="utf-8")
            out.append(_checker_on(lake, root, path, expected, timeout, "python"))
    return out
