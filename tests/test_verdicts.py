"""The verdict type and the failure kinds of issue 15, each against an exact oracle written here
(all 2ⁿ index sets in Fraction arithmetic on the stored values), not the package's own code."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import REPO, CliResult

from absorb import verdicts
from absorb.activations import CATALOG, get_activation
from absorb.blocks import Block, random_block
from absorb.certificates import check_dual, find_index_set
from absorb.certificates.dual import DualCertificate
from absorb.theory import decide
from absorb.theory.index_sets import _distance
from absorb.verdicts import (
    AbsorbableUpToRounding,
    Absorbed,
    ExactCheck,
    Impossible,
    NotAbsorbed,
    Subject,
    Undetermined,
)
from absorb.weights import load_block

TINY = "1/1" + "0" * 400  # 10⁻⁴⁰⁰: far below float64's smallest subnormal


def oracle_index_sets(Wu: object, Wd: object, A: object) -> list[tuple[int, ...]]:
    """Every S with Σ_{i∈S} W_down[:,i] W_up[i,:] = −A exactly (entries: anything Fraction
    accepts; n ≤ 12)."""
    U = [[Fraction(v) for v in row] for row in Wu]  # type: ignore[attr-defined]
    W = [[Fraction(v) for v in row] for row in Wd]  # type: ignore[attr-defined]
    M = [[Fraction(v) for v in row] for row in A]  # type: ignore[attr-defined]
    n, d = len(U), len(U[0])
    assert n <= 12
    hits = []
    for size in range(n + 1):
        for S in itertools.combinations(range(n), size):
            if all(sum((W[r][i] * U[i][c] for i in S), Fraction(0)) == -M[r][c]
                   for r in range(d) for c in range(d)):
                hits.append(S)
    return hits


def oracle_rank(M: list[list[Fraction]]) -> int:
    """Rank over ℚ by Gaussian elimination on Fractions."""
    rows = [list(r) for r in M]
    rank, col = 0, 0
    while rank < len(rows) and col < len(rows[0]):
        piv = next((i for i in range(rank, len(rows)) if rows[i][col] != 0), None)
        if piv is not None:
            rows[rank], rows[piv] = rows[piv], rows[rank]
            for i in range(rank + 1, len(rows)):
                f = rows[i][col] / rows[rank][col]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[rank], strict=True)]
            rank += 1
        col += 1
    return rank


# --------------------------------------------------------------------------------------------
# the type checks its evidence


def _subject() -> Subject:
    return Subject("relu", 2, 3, False, "identity", False)


def test_exact_check_cannot_be_forged() -> None:
    with pytest.raises(TypeError, match="exact_"):
        ExactCheck("index_set", "trust me", S=(0, 1))
    with pytest.raises(TypeError, match="ExactCheck"):
        Absorbed(subject=_subject(), reason="r", chain=("index_set_sufficient",),
                 proof="exact", construction={"absorbing_block": {}})  # type: ignore[arg-type]


def test_constructors_refuse_missing_evidence() -> None:
    s = _subject()
    with pytest.raises(ValueError, match="hypothesis"):
        NotAbsorbed(subject=s, reason="r", certificate={"proof": "Y"},
                    unmet_hypotheses=("rows of W_up nonzero",))
    with pytest.raises(ValueError, match="proof"):
        NotAbsorbed(subject=s, reason="r", certificate={})
    with pytest.raises(ValueError, match="rests on one of"):
        Impossible(subject=s, reason="r", chain=("index_set_necessary",), witness={"x": 1})
    with pytest.raises(ValueError, match="finite"):
        AbsorbableUpToRounding(subject=s, reason="r", S=(0,), roundoffs=float("nan"),
                               rounding={"within_rounding_bound": True})
    with pytest.raises(ValueError, match="rounding bound"):
        AbsorbableUpToRounding(subject=s, reason="r", S=(0,), roundoffs=3.0,
                               rounding={"within_rounding_bound": False})
    with pytest.raises(ValueError, match="no theorem"):
        Undetermined(subject=s, reason="r", chain=("degree",))
    with pytest.raises(ValueError, match="reason"):
        Undetermined(subject=s, reason=" ")


def test_exact_index_set_is_exact_on_the_stored_values() -> None:
    Wu = np.array([[1.0, 0.0], [0.0, 1.0]])
    exact = verdicts.exact_index_set(Wu, -np.eye(2), [0, 1], None)
    assert exact is not None and exact.S == (0, 1)
    # one ulp off in one entry: no exact check, whatever the tolerance
    off = -np.eye(2)
    off[0, 0] = np.nextafter(-1.0, 0.0)
    assert verdicts.exact_index_set(Wu, off, [0, 1], None) is None


def test_absorbed_is_made_in_one_place() -> None:
    """The literal "absorbed" is the verdict type's alone (besides the Lean checker's own
    output strings): nothing else names or builds the kind by hand."""
    hits = []
    for path in sorted((REPO / "python" / "absorb").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel in ("python/absorb/verdicts.py", "python/absorb/lean/checker.py"):
            continue
        if re.search(r"""["']absorbed["']""", path.read_text(encoding="utf-8")):
            hits.append(rel)
    assert [h for h in hits if not h.startswith("python/absorb/experiments/")] == []


def _design_verdicts() -> dict[str, str]:
    text = (REPO / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    start = text.index("- `absorb check --activation NAME")
    block = text[start:text.index("- `absorb search …`", start)]
    return dict(re.findall(r"^  - `([a-z_]+)`: (.*?)(?=^  - |\Z)", block,
                           flags=re.MULTILINE | re.DOTALL))


def test_design_md_documents_every_kind_and_its_fields() -> None:
    documented = _design_verdicts()
    assert set(documented) == {k.kind for k in verdicts.KINDS}
    for kind in verdicts.KINDS:
        first = documented[kind.kind].split(".")[0]  # "`S`, `proof` and `condition_exact`"
        assert set(re.findall(r"`([a-z_A-Z]+)`", first)) == set(kind.FIELDS), kind.kind
    text = (REPO / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    common = text[text.index("JSON fields\n  of every verdict"):text.index("By verdict:")]
    assert set(verdicts.Verdict.COMMON) <= set(re.findall(r"`([a-z_]+)`", common))


@pytest.mark.parametrize("kind", ["not_absorbed", "impossible", "undetermined", "absorbed"])
def test_every_kind_carries_its_fields(kind: str) -> None:
    rng = np.random.default_rng(1)
    blocks = {"not_absorbed": random_block(get_activation("relu"), 3, 8, rng),
              "impossible": random_block(get_activation("tanh"), 3, 8, rng),
              "undetermined": random_block(get_activation("glu"), 3, 8, rng),
              "absorbed": Block(get_activation("relu"), np.eye(2), -np.eye(2))}
    v = decide(blocks[kind], rng=rng)
    assert v.kind == kind and v.exit_code == 0
    out = v.to_json()
    assert set(type(v).FIELDS) | set(v.COMMON) <= set(out)
    assert out["theorem"] == (out["chain"][0] if out["chain"] else None)  # type: ignore[index]
    assert v.text_lines()[1].startswith(f"verdict: {kind}")


# --------------------------------------------------------------------------------------------
# the failure kinds of issue 15


def _tiny_skip_json(write_json: Callable[..., Path]) -> Path:
    return write_json({"W_up": [["1", "0"], ["0", "1"], ["1", "1"]],
                       "W_down": [["-1", "0", "1/3"], ["0", "-1", "1/5"]],
                       "A_skip": [[TINY, "0"], ["0", TINY]]})


def test_tiny_exact_skip_is_not_zero(write_json: Callable[..., Path]) -> None:
    """A skip of 10⁻⁴⁰⁰·I given exactly is nonzero: never the trivial `absorbed` of A = 0."""
    path = _tiny_skip_json(write_json)
    block = load_block(path, get_activation("relu"))
    data = json.loads(path.read_text())
    assert oracle_index_sets(data["W_up"], data["W_down"], data["A_skip"]) == []
    v = decide(block, rng=np.random.default_rng(0))
    assert v.kind in ("not_absorbed", "undetermined")


def test_homogeneous_block_with_a_tiny_exact_skip_is_impossible(
        write_json: Callable[..., Path]) -> None:
    block = load_block(_tiny_skip_json(write_json), get_activation("relu2"))
    v = decide(block, rng=np.random.default_rng(0))
    assert v.kind == "impossible" and v.theorem == "degree"
    # the witness's exact gap (2 − 4)·A x is nonzero, though floats would round it to 0
    gap = [Fraction(q) for q in v["witness"]["expected_gap_exact"]]  # type: ignore[index]
    assert any(g != 0 for g in gap) and all(abs(g) < Fraction(1, 10**399) for g in gap)


def _two_sets() -> tuple[Block, tuple[int, ...]]:
    """Units {2, 3} form an exact index set; units {0, 1} one only up to float64 rounding
    (the order in which a search that stops at the first set within tolerance meets the
    inexact one first)."""
    B = np.array([[1.0, 0.3], [-0.2, 0.7]])
    W_up = np.vstack([B, np.eye(2), [[0.4, -1.1]]])
    W_down = np.hstack([-np.linalg.inv(B), -np.eye(2), [[0.9], [0.2]]])
    return Block(get_activation("relu"), W_up, W_down), (2, 3)


def test_of_two_index_sets_the_exact_one_is_found() -> None:
    block, exact = _two_sets()
    assert oracle_index_sets(block.W_up, block.W_down, np.eye(2)) == [exact]
    v = decide(block, rng=np.random.default_rng(0))
    assert v.kind == "absorbed" and tuple(v["S"]) == exact  # type: ignore[arg-type]


def test_of_two_index_sets_never_the_inexact_one_as_absorbed() -> None:
    block, exact = _two_sets()
    v = decide(block, rng=np.random.default_rng(0))
    assert v.kind in ("absorbed", "absorbable_up_to_rounding")
    if v.kind == "absorbed":
        assert tuple(v["S"]) == exact  # type: ignore[arg-type]


def test_linear_rank_is_exact_not_at_float_tolerance() -> None:
    """L = A + W_down W_up = diag(1, 2⁻⁵²) has exact rank 2 > n = 1: not absorbed (a float
    rank at tolerance says 1, and the block was called absorbed)."""
    A = np.diag([1.0, 2.0**-52])
    block = Block(get_activation("identity"), np.zeros((1, 2)), np.zeros((2, 1)), A_skip=A)
    L = [[Fraction(v) for v in row] for row in A]
    assert oracle_rank(L) == 2 and np.linalg.matrix_rank(A) == 1
    v = decide(block, rng=np.random.default_rng(0))
    assert v.kind == "not_absorbed" and v["certificate"]["rank"] == 2  # type: ignore[index]


@pytest.mark.parametrize("tol", ["1", "10", "1e100", "1e200", "0.02", "0", "-1e-9", "nan", "inf",
                                 "x"])
def test_tol_outside_a_storage_precision_is_refused(tol: str,
                                                    cli: Callable[..., CliResult]) -> None:
    # refused while parsing: before the (nonexistent) weights file is even looked at
    res = cli("check", "--activation", "relu", "--weights", "/nonexistent.npz", "--tol", tol)
    assert res.code == 2 and res.out == "" and res.err.count("\n") == 1
    assert "--tol" in res.err and "nonexistent" not in res.err


def test_tol_never_makes_a_failure_absorbed(cli: Callable[..., CliResult]) -> None:
    res = cli("check", "--activation", "relu", "--d", "4", "--n", "16", "--tol", "1e-2",
              "--json", "--no-search")
    assert res.code == 0 and res.json()["verdict"] != "absorbed"


@pytest.mark.parametrize("name", [a.name for a in CATALOG.values() if a.bound is not None])
@pytest.mark.parametrize("biases", [False, True])
def test_bounded_activations_are_impossible_with_a_checkable_witness(name: str,
                                                                     biases: bool) -> None:
    rng = np.random.default_rng(5)
    block = random_block(get_activation(name), 3, 6, rng, biases=biases)
    v = decide(block, rng=rng)
    assert v.kind == "impossible" and v.theorem == "bounded"
    w = v["witness"]
    assert isinstance(w, dict)
    # re-derived from the weights: C = B·max row sum |W_down| + max |b_down| (rounded up here
    # by a generous factor), and ‖f(tv)‖_max > C at every t ≥ t* listed
    x = np.array(w["x"])
    bound = float(np.max(np.sum(np.abs(block.W_down), axis=1))) + (
        0.0 if block.b_down is None else float(np.max(np.abs(block.b_down))))
    assert float(Fraction(w["residual_free_bound"])) >= bound * (1 - 1e-12)
    assert w["steps"] and all(s["t"] >= float(Fraction(w["t_star"])) * (1 - 1e-12)
                              for s in w["steps"])
    for s in w["steps"]:
        fx = np.max(np.abs(block(s["t"] * x)))
        assert fx == pytest.approx(s["f_norm"]) and fx > float(Fraction(w["residual_free_bound"]))


# every catalog entry, generic weights: the verdict THEORY.md gives (table written here)
THEORY_VERDICTS = {
    ("relu", False): "not_absorbed", ("gelu", False): "not_absorbed",
    ("gelu_tanh", False): "not_absorbed", ("silu", False): "not_absorbed",
    ("softplus", False): "not_absorbed", ("relu2", False): "impossible",
    ("reglu", False): "impossible", ("swiglu", False): "impossible",
    ("geglu", False): "impossible", ("geglu_tanh", False): "impossible",
    ("tanh", False): "impossible", ("sigmoid", False): "impossible",
    ("identity", False): "not_absorbed", ("glu", False): "undetermined",
    ("relu", True): "not_absorbed", ("gelu_tanh", True): "not_absorbed",
    ("relu2", True): "undetermined", ("swiglu", True): "undetermined",
    ("tanh", True): "impossible", ("sigmoid", True): "impossible",
}


@pytest.mark.parametrize(("name", "biases"), list(THEORY_VERDICTS))
def test_every_catalog_entry_gets_the_theory_verdict(name: str, biases: bool) -> None:
    rng = np.random.default_rng(2)
    d, n = (3, 2) if name == "identity" else (3, 8)  # identity: rank 3 > n = 2
    v = decide(random_block(get_activation(name), d, n, rng, biases=biases), rng=rng)
    assert v.kind == THEORY_VERDICTS[name, biases]


def test_export_refuses_what_the_checker_cannot_state(cli: Callable[..., CliResult],
                                                      tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    gated = cli("check", "--activation", "swiglu", "--d", "2", "--n", "3", "--export-lean",
                str(out))
    assert gated.code == 2 and "gated" in gated.err and not out.exists()
    silu = cli("check", "--activation", "silu", "--d", "3", "--n", "8", "--biases",
               "--certificate-out", str(out), "--json")
    assert silu.code == 0, silu.err
    doc = json.loads(out.read_text())
    # the bias-free ReLU block of bias_blowup, said so; no bias silently dropped from a
    # block the file claims to be
    assert doc["activation"] == "relu" and "b_up" not in doc and "Y" in doc
    assert "bias_blowup" in silu.json()["certificate_file"]["block"]  # type: ignore[index]
    assert all(re.fullmatch(r"-?[0-9]+(/[0-9]+)?", q) for row in doc["W_up"] for q in row)
    # a stack is not one block: refused, not silently ignored
    stack = tmp_path / "stack.json"
    stack.write_text(json.dumps({"layers": [{"W_up": [[1, 0], [0, 1]], "W_down": [[-1, 0],
                                                                                  [0, -1]]}] * 2}))
    refused = cli("check", "--activation", "relu", "--weights", str(stack), "--export-lean",
                  str(tmp_path / "s.json"))
    assert refused.code == 2 and "single blocks" in refused.err
    assert not (tmp_path / "s.json").exists()


def test_distance_is_a_lower_bound_over_every_index_set() -> None:
    rng = np.random.default_rng(9)
    block = random_block(get_activation("relu"), 2, 6, rng)
    v = decide(block, rng=rng)
    cert = v["certificate"]
    assert isinstance(cert, dict) and cert["distance"] is not None
    Wu = [[Fraction(x) for x in row] for row in block.W_up]
    Wd = [[Fraction(x) for x in row] for row in block.W_down]
    best = min(
        sum(((sum((Wd[r][i] * Wu[i][c] for i in S), Fraction(0)) + (r == c)) ** 2
             for r in range(2) for c in range(2)), Fraction(0))
        for k in range(7) for S in itertools.combinations(range(6), k))
    assert Fraction(cert["distance"]) ** 2 * 2 <= best  # ‖A‖_F² = 2


def test_distance_from_a_dual_certificate_far_below_the_float_range() -> None:
    """A valid exact Y with entries 2⁻¹¹⁰⁰ (d = n = 1, W_up = W_down = t = 2⁻⁵⁵⁰, A = 1):
    −⟨A,Y⟩ = −y lies y below [0, t²y], so every S has |E_S| ≥ y/|Y| = 1 (and S = {} has
    exactly 1). |Y|² squared in float underflowed to a zero divisor (a crash)."""
    t, y = Fraction(1, 2**550), Fraction(1, 2**1100)
    W = np.array([[t]], dtype=object)
    Y = np.array([[y]], dtype=object)
    chk = check_dual(W, W, Y)
    assert chk.valid and chk.margin == y
    found = replace(find_index_set(W, W), dual=DualCertificate(Y, chk, "test", None))
    distance, source = _distance(found, None, 1)
    assert source.startswith("dual certificate")
    assert distance is not None and 0.99 < distance <= 1.0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the float relaxation overflows
def test_exact_search_finding_a_set_is_absorbed_when_floats_overflow() -> None:
    """Weights near 2⁵²⁰: the float search overflows, the exact search on the stored values
    finds S; the verdict is absorbed (it was undetermined)."""
    big = 2.0**520
    block = Block(get_activation("relu"), np.array([[big, 0.0], [0.0, big], [1.0, 1.0]]),
                  np.array([[-1 / big, 0.0, 0.3], [0.0, -1 / big, 0.2]]))
    assert oracle_index_sets(block.W_up, block.W_down, np.eye(2)) == [(0, 1)]
    v = decide(block, rng=np.random.default_rng(0))
    assert v.kind == "absorbed" and tuple(v["S"]) == (0, 1)  # type: ignore[arg-type]


def test_near_collinear_rows_are_decided_exactly() -> None:
    """Rows collinear to within 1e-13 but not exactly: the float filter flags them, the exact
    check clears them, and index_set_necessary applies (exactly collinear rows: it does not)."""
    rng = np.random.default_rng(3)
    block = random_block(get_activation("relu"), 3, 8, rng)
    W_up = block.W_up.copy()
    W_up[5] = 2.0 * W_up[1]
    W_up[5, 0] = np.nextafter(W_up[5, 0], np.inf)  # one ulp: not a multiple of row 1
    near = decide(Block(block.activation, W_up, block.W_down), rng=rng)
    assert near.kind == "not_absorbed"
    W_up[5] = 2.0 * W_up[1]  # exactly collinear (a power-of-two multiple is exact)
    same = decide(Block(block.activation, W_up, block.W_down), rng=rng)
    assert same.kind == "undetermined"
    assert "rows of W_up nonzero and pairwise non-collinear" in same["unmet_hypotheses"]  # type: ignore[operator]


@pytest.mark.parametrize("seed", range(4))
def test_float16_block_with_an_exact_set_beside_a_near_one_is_absorbed(seed: int) -> None:
    """float16 weights: units {0, 1} meet the condition only within float16 rounding, units
    {2, 3} exactly; the verdict is absorbed with an exact set (it was up to rounding)."""
    rng = np.random.default_rng(seed)
    W_up = (rng.integers(-16, 17, (7, 2)) / 16).astype(np.float16).astype(np.float64)
    W_down = (rng.integers(-16, 17, (2, 7)) / 16).astype(np.float16).astype(np.float64)
    W_up[2:4], W_down[:, 2:4] = np.eye(2), -np.eye(2)
    B = np.array([[1.25, 0.375], [-0.5, 0.875]])
    W_up[:2] = B
    W_down[:, :2] = (-np.linalg.inv(B)).astype(np.float16)
    exact = oracle_index_sets(W_up, W_down, np.eye(2))
    assert (2, 3) in exact and (0, 1) not in exact
    v = decide(Block(get_activation("relu"), W_up, W_down), rng=rng)
    assert v.kind == "absorbed" and tuple(v["S"]) in exact  # type: ignore[arg-type]


quarters = st.integers(-4, 4).map(lambda k: k / 4)


ODD_PART_LINEAR = [a.name for a in CATALOG.values() if a.odd_part_linear and not a.gated]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ODD_PART_LINEAR), st.integers(1, 3), st.integers(1, 6), st.booleans(),
       st.booleans(), st.booleans(), st.data())
def test_no_false_absorbed_and_no_false_not_absorbed(name: str, d: int, n: int, planted: bool,
                                                     skip: bool, biases: bool,
                                                     data: st.DataObject) -> None:
    """Small dyadic blocks (exact in floats) of every odd-part-linear σ, with and without a
    planted set, a skip matrix and biases: absorbed exactly when the oracle finds an index
    set, with one of its sets; never not_absorbed (nor anything else) when one exists."""
    def matrix(rows: int, cols: int) -> np.ndarray:
        return np.array(data.draw(st.lists(st.lists(quarters, min_size=cols, max_size=cols),
                                           min_size=rows, max_size=rows)))

    W_up, W_down = matrix(n, d), matrix(d, n)
    A = matrix(d, d) if skip else np.eye(d)
    if planted and n >= d:
        W_up[:d], W_down[:, :d] = np.eye(d), -A
    b = (np.array(data.draw(st.lists(quarters, min_size=n, max_size=n))) if biases else None)
    block = Block(get_activation(name), W_up, W_down, b_up=b, A_skip=A if skip else None)
    sets = oracle_index_sets(W_up, W_down, A)
    v = decide(block, rng=np.random.default_rng(0))
    if v.kind == "absorbed":
        assert not np.any(A) or tuple(v["S"]) in sets  # type: ignore[arg-type]
    else:
        assert not sets and np.any(A)


thirds = st.integers(-3, 3).map(lambda k: str(Fraction(k, 3)))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 5), st.booleans(), st.data())
def test_exact_input_agrees_with_the_oracle(d: int, n: int, planted: bool,
                                            data: st.DataObject) -> None:
    """Rational "p/q" input (thirds: not floats at all), read as exact rationals: absorbed iff
    the oracle finds an index set."""
    import tempfile

    def matrix(rows: int, cols: int) -> list[list[str]]:
        return data.draw(st.lists(st.lists(thirds, min_size=cols, max_size=cols),
                                  min_size=rows, max_size=rows))

    W_up, W_down = matrix(n, d), matrix(d, n)
    if planted and n >= d:
        for i in range(d):
            W_up[i] = ["1" if j == i else "0" for j in range(d)]
            for r in range(d):
                W_down[r][i] = "-1" if r == i else "0"
    sets = oracle_index_sets(W_up, W_down, np.eye(d, dtype=int))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "w.json"
        path.write_text(json.dumps({"W_up": W_up, "W_down": W_down}))
        block = load_block(path, get_activation("relu"))
    v = decide(block, rng=np.random.default_rng(0))
    assert (v.kind == "absorbed") == bool(sets)
    if sets:
        assert tuple(v["S"]) in sets  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.integers(0, 4), st.data())
def test_exact_linear_rank_agrees_with_the_oracle(d: int, r: int, data: st.DataObject) -> None:
    """Rank of random low-rank rational matrices (products of d×r and r×d thirds, a zero
    column sometimes) by the verdicts' fraction-free elimination, against the oracle."""
    def matrix(rows: int, cols: int) -> list[list[Fraction]]:
        return [[Fraction(v) for v in row] for row in data.draw(
            st.lists(st.lists(thirds, min_size=cols, max_size=cols), min_size=rows,
                     max_size=rows))]

    B, C = matrix(d, r), matrix(r, d)
    L = [[sum((B[i][k] * C[k][j] for k in range(r)), Fraction(0)) for j in range(d)]
         for i in range(d)]
    assert verdicts.exact_linear_rank(np.array(L, dtype=object), 1) == oracle_rank(L)


def test_search_prediction_reads_the_same_table_and_verdict() -> None:
    """`absorb search`'s prediction: a bounded block has a floor at every width (bounded); at
    the block's own width the prediction is check's verdict (absorbed: expect zero)."""
    from absorb.commands.search import prediction

    rng = np.random.default_rng(0)
    tanh = random_block(get_activation("tanh"), 2, 3, rng)
    for width in (3, 7):
        pred = prediction(tanh, width)
        assert pred["expect"] == "floor" and pred["theorem"] == "bounded"
    planted = Block(get_activation("gelu"), np.vstack([np.eye(2), [[1.0, 2.0]]]),
                    np.hstack([-np.eye(2), [[0.5], [0.25]]]))
    pred = prediction(planted, 3)
    assert pred["expect"] == "zero" and pred["verdict"] == "absorbed"
    assert prediction(planted, 9)["theorem"] == "index_set_sufficient"  # n + 2d = 7 <= 9


BEYOND = "1" + "0" * 400  # an exact entry past the float range (its float view is ±inf)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(("activation", "A", "b_up", "allowed"), [
    ("relu", [[1, 0], [0, 1]], None, {"absorbed"}),
    ("relu", [[BEYOND, 0], [0, 1]], None, {"absorbed"}),
    ("tanh", [[BEYOND, 0], [0, 1]], None, {"impossible"}),  # exact C and t*: no float step
    ("relu2", [[1, 0], [0, 1]], None, {"undetermined"}),  # the degree witness is float
    ("relu2", [[1, 0], [0, 1]], [BEYOND, 0], {"undetermined"}),  # no search on ±inf
])
def test_exact_entries_beyond_the_float_range_are_decided_or_undetermined(
        activation: str, A: list[list[object]], b_up: list[object] | None, allowed: set[str],
        cli: Callable[..., CliResult], write_json: Callable[..., Path]) -> None:
    """Legal exact input past 1e308 is never refused nor a crash (text and JSON output): the
    exact paths decide it, a verdict that needs a float step is ``undetermined``."""
    # W_down W_up = -A (S = {0, 1}), W_up[0, 0] past the float range
    a00 = Fraction(int(str(A[0][0])), int(BEYOND))
    doc: dict[str, object] = {"W_up": [[BEYOND, 0], [0, 1]], "W_down": [[str(-a00), 0], [0, -1]],
                              "A_skip": A}
    if b_up is not None:
        doc["b_up"] = b_up
    path = write_json(doc)
    res = cli("check", "--activation", activation, "--weights", str(path), "--json")
    assert res.code == 0, res.err
    assert res.json()["verdict"] in allowed
    text = cli("check", "--activation", activation, "--weights", str(path))
    assert text.code == 0 and "verdict:" in text.out, text.err


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(("activation", "allowed"), [("relu", {"absorbed"}),
                                                     ("relu2", {"undetermined"})])
def test_a_stack_with_exact_entries_beyond_the_float_range(
        activation: str, allowed: set[str], cli: Callable[..., CliResult],
        write_json: Callable[..., Path]) -> None:
    """A stack of exact layers past 1e308: the exact per-layer match decides; the float-only
    limit witness of depth_degree is not run (``undetermined``), never a crash."""
    layer = {"W_up": [[BEYOND, 0], [0, 1]], "W_down": [["-1/" + BEYOND, 0], [0, -1]]}
    res = cli("check", "--activation", activation, "--weights",
              str(write_json({"layers": [layer, layer]})), "--json")
    assert res.code == 0, res.err
    assert res.json()["verdict"] in allowed
