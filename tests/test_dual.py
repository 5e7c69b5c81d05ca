"""Dual certificates, the independent re-check, the cost-planned index-set search, storage
precision and the checker files of ``absorb check`` (THEORY.md: dual certificate, bias_blowup)."""

from __future__ import annotations

import importlib.util
import json
import tracemalloc
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from tests.conftest import CliResult, exact_planted_json, plant

from absorb import certificates
from absorb.activations import get_activation
from absorb.blocks import Block, random_block
from absorb.certificates import (
    brute_force_index_set,
    check_dual,
    dual_certificate,
    find_index_set,
    gram,
    plan_search,
    relaxation_cost,
)
from absorb.certificates import index_set_search as search_module
from absorb.certificates import real_relaxation as relaxation_module
from absorb.certificates.devices import using_device
from absorb.certificates.prepared import prepare
from absorb.theory import decide

REPO = Path(__file__).resolve().parents[1]


def as_q(M: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.vectorize(Fraction, otypes=[object])(M)
    return out


def by_hand(W_up: np.ndarray, W_down: np.ndarray, Y: list[list[Fraction]],
            A: np.ndarray | None = None) -> bool:
    """The certificate condition written out directly (no numpy algebra, exact)."""
    d, n = W_down.shape
    Aq = [[Fraction(int(i == j)) for j in range(d)] for i in range(d)] if A is None else \
        [[Fraction(float(v)) for v in row] for row in A]
    c = [sum(Fraction(float(W_down[j, i])) * Y[j][k] * Fraction(float(W_up[i, k]))
             for j in range(d) for k in range(d)) for i in range(n)]
    v = -sum(Aq[j][k] * Y[j][k] for j in range(d) for k in range(d))
    return bool(v < sum(min(x, Fraction(0)) for x in c) or v > sum(max(x, Fraction(0))
                                                                  for x in c))


def outside_zonotope(W_up: np.ndarray, W_down: np.ndarray) -> float:
    """min over s ∈ [0,1]ⁿ of ‖Σ s_i a_i b_iᵀ + I‖_max, by a direct LP (the test's own)."""
    d, n = W_down.shape
    K = np.einsum("ji,ik->jki", W_down, W_up).reshape(d * d, n)
    a = np.eye(d).ravel()
    # variables (s, t): minimize t with −t ≤ K s + a ≤ t
    A_ub = np.block([[K, -np.ones((d * d, 1))], [-K, -np.ones((d * d, 1))]])
    b_ub = np.concatenate([-a, a])
    res = linprog(np.r_[np.zeros(n), 1.0], A_ub=A_ub, b_ub=b_ub,
                  bounds=[(0, 1)] * n + [(0, None)], method="highs")
    assert res.status == 0
    return float(res.fun)


# --------------------------------------------------------------------------------------------
# the independent re-check


def test_recheck_accepts_the_certificate_and_rejects_tampered_ones() -> None:
    rng = np.random.default_rng(1)
    W_up, W_down = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    cert = dual_certificate(W_up, W_down)
    assert cert is not None and cert.check.valid
    Y = [[Fraction(q) for q in row] for row in cert.to_json()["Y"]]  # type: ignore[attr-defined]
    assert by_hand(W_up, W_down, Y)
    assert check_dual(W_up, W_down, Y, exact=False).valid  # the proven float64 bound agrees
    # tampered: a zero Y, and the same Y on a block that has an index set
    zero = [[Fraction(0)] * 3 for _ in range(3)]
    assert not check_dual(W_up, W_down, zero).valid
    planted, _ = plant("relu", 3, 6, 3, rng)
    assert not check_dual(planted.W_up, planted.W_down, Y).valid
    assert not check_dual(planted.W_up, planted.W_down, Y, exact=False).valid
    # tampered: one entry moved until the condition, written out by hand, fails
    for step in (Fraction(1, 2**k) for k in range(0, 30, 3)):
        bad = [row[:] for row in Y]
        bad[0][0] += step * 1000
        assert check_dual(W_up, W_down, bad).valid == by_hand(W_up, W_down, bad)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.integers(1, 7))
def test_recheck_matches_the_condition_and_brute_force(seed: int, d: int, n: int) -> None:
    """Random integer Y on small integer weights: the re-check says what the formula says, and
    a valid Y never coexists with an index set."""
    gen = np.random.default_rng(seed)
    W_up = gen.integers(-2, 3, size=(n, d)).astype(float)
    W_down = gen.integers(-2, 3, size=(d, n)).astype(float)
    Y = [[Fraction(int(v)) for v in row] for row in gen.integers(-3, 4, size=(d, d))]
    chk = check_dual(W_up, W_down, Y)
    assert chk.valid == by_hand(W_up, W_down, Y)
    if chk.valid:
        assert brute_force_index_set(as_q(W_up), as_q(W_down)) is None
    # the float path (Cauchy–Schwarz bound first, then |W_downᵀ||Y|) never accepts what the
    # exact path rejects, and its margin is a lower bound on the exact one
    fchk = check_dual(W_up, W_down, Y, exact=False)
    if fchk.valid:
        assert chk.valid and fchk.margin <= chk.margin


# --------------------------------------------------------------------------------------------
# the LP certificate


@pytest.mark.parametrize(("d", "n"), [(2, 4), (2, 6), (3, 9), (3, 11)])
def test_lp_finds_a_certificate_exactly_when_minus_a_is_outside(d: int, n: int) -> None:
    """n ≥ d²: r² = 0 tells nothing; the LP certificate exists iff −A ∉ zonotope."""
    rng = np.random.default_rng(10 * d + n)
    certified = 0
    for _ in range(8):
        W_up, W_down = rng.standard_normal((n, d)), rng.standard_normal((d, n))
        distance = outside_zonotope(W_up, W_down)
        cert = dual_certificate(W_up, W_down)
        if distance > 1e-6:
            assert cert is not None and cert.check.valid
            assert brute_force_index_set(W_up, W_down) is None
            certified += 1
        elif distance < 1e-12:
            assert cert is None
    assert certified >= 4  # generic instances are mostly outside (THEORY.md: ~98 %)


def test_planted_has_no_certificate_and_the_search_finds_it() -> None:
    """Positive control at the same size: −A lies in the zonotope, nothing may certify."""
    rng = np.random.default_rng(3)
    d, n = 3, 11
    W_up = rng.integers(-3, 4, size=(n, d)).astype(float)
    W_down = rng.integers(-3, 4, size=(d, n)).astype(float)
    W_up[:d] = np.eye(d)
    W_down[:, :d] = -np.eye(d) - np.outer(W_down[:, d], W_up[d])  # S = {0..d}, exactly
    assert outside_zonotope(W_up, W_down) < 1e-9
    assert dual_certificate(W_up, W_down) is None
    res = find_index_set(W_up, W_down)
    assert res.status == "found" and res.dual is None
    # planted in float64 arithmetic, the stored numbers miss the condition by ~1e-16: a
    # certificate may prove "no exact S", but its margin is within the tolerance, so the
    # search still runs and finds the S that holds to 1e-9
    block, _ = plant("relu", d, n, 4, rng)
    found = find_index_set(block.W_up, block.W_down)
    assert found.status == "found"
    if found.dual is not None:
        y_l1 = float(sum(abs(v) for v in found.dual.Y.ravel()))
        assert float(found.dual.check.margin) <= 1e-9 * y_l1


# --------------------------------------------------------------------------------------------
# Gram products, cost model


def test_blocked_gram_equals_the_plain_product(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    W_up, W_down = rng.standard_normal((300, 7)), rng.standard_normal((7, 300))
    plain = (W_down.T @ W_down) * (W_up @ W_up.T)
    monkeypatch.setattr(relaxation_module, "GRAM_BLOCK_BYTES", 3 * 8 * 300 * 16)  # 16 rows
    G = gram(W_up, W_down)
    np.testing.assert_allclose(G, plain, rtol=1e-12, atol=1e-12)
    assert np.array_equal(G, G.T)


def _duplicated_units(d: int, n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A generic block whose last k units repeat its first k: G is singular even for n ≤ d²."""
    rng = np.random.default_rng(seed)
    W_up, W_down = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    W_up[n - k:], W_down[:, n - k:] = W_up[:k], W_down[:, :k]
    return W_up, W_down


@pytest.mark.parametrize("device", ["cpu", "cpu-torch"])
@pytest.mark.parametrize(("d", "n", "k"), [(6, 30, 2), (3, 16, 0)])
def test_rank_deficient_relaxation_builds_g_once(monkeypatch: pytest.MonkeyPatch, device: str,
                                                 d: int, n: int, k: int) -> None:
    """One Gram build per block: pstrf (after a failed Cholesky, n ≤ d²; directly, n > d²)
    and eigh read G as built — the triangle and diagonal the factorizations overwrote are
    restored — and the relaxation hands G and its eigenpairs on."""
    if device != "cpu" and importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    W_up, W_down = _duplicated_units(d, n, k, seed=8)
    built, pstrf_inputs = [], []
    gram_of, pstrf = relaxation_module.gram, relaxation_module.sla.lapack.dpstrf

    def counted_gram(*args: np.ndarray) -> np.ndarray:
        built.append(args)
        return gram_of(*args)

    def recorded_pstrf(G_t: np.ndarray, **kwargs: object) -> object:
        pstrf_inputs.append(G_t.T.copy())
        return pstrf(G_t, **kwargs)

    monkeypatch.setattr(relaxation_module, "gram", counted_gram)
    monkeypatch.setattr(relaxation_module.sla.lapack, "dpstrf", recorded_pstrf)
    with using_device(device):
        rel, system = relaxation_module.float_relaxation(prepare(W_up, W_down, None), 1e-9)
        fresh = gram_of(W_up, W_down)
    assert len(built) == 1 and rel.rank == min(n - k, d * d) and system.eig is not None
    assert len(pstrf_inputs) == 1 and np.array_equal(pstrf_inputs[0], fresh)
    assert np.array_equal(np.tril(system.G), np.tril(fresh))
    for kept, again in zip(system.eig, relaxation_module.eigenpairs(fresh), strict=True):
        assert np.array_equal(kept, again)


def test_the_float_search_reuses_the_relaxations_g_and_eigenpairs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    W_up, W_down = _duplicated_units(2, 9, 0, seed=9)  # n > d²: r² = 0, reduced search
    built, decomposed = [], []
    gram_of, eigenpairs = relaxation_module.gram, relaxation_module.eigenpairs
    monkeypatch.setattr(relaxation_module, "gram", lambda *a: built.append(1) or gram_of(*a))
    for module in (relaxation_module, search_module):
        monkeypatch.setattr(module, "eigenpairs",
                            lambda G: decomposed.append(1) or eigenpairs(G))
    res = find_index_set(W_up, W_down, method="meet-in-the-middle", dual=False)
    assert res.status == "none" and not res.relaxation.unique
    assert len(built) == 1 and len(decomposed) == 1


def test_relaxation_cost_bounds_the_measured_peak() -> None:
    rng = np.random.default_rng(5)
    d, n = 48, 600
    W_up, W_down = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    tracemalloc.start()
    certificates.relaxation(W_up, W_down)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    cost = relaxation_cost(d, n)
    assert 8 * n * n <= peak <= cost.bytes
    assert cost.flops >= 2 * n * n * d
    big = relaxation_cost(4096, 16384)
    assert big.bytes > 2 * 8 * 16384 * 4096 and big.flops > 2 * 16384**2 * 4096


def test_cost_model_picks_milp_at_d4_n48() -> None:
    plan = plan_search(48, 16)
    assert plan.method == "milp" and plan.bytes > 4 * 2**30  # meet-in-the-middle: ~5 GB
    assert plan_search(20, 16).method == "meet-in-the-middle"
    rng = np.random.default_rng(6)
    block, _ = plant("relu", 4, 48, 6, rng)
    # (with an enumeration cap below 2^25 sums: no exact search for a set that holds exactly)
    res = find_index_set(block.W_up, block.W_down, max_enumeration=1 << 24)
    assert res.status == "found" and res.method == "milp" and res.plan is not None


def test_exact_search_near_n46_reports_its_need_instead_of_memory_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    d, n = 4, 46
    W_up = rng.integers(-3, 4, size=(n, d)).astype(float)
    W_down = rng.integers(-3, 4, size=(d, n)).astype(float)
    monkeypatch.setattr(search_module, "available_memory", lambda: 1 << 26)
    monkeypatch.setattr(search_module, "MILP_TIME_LIMIT", 0.5)
    res = find_index_set(as_q(W_up), as_q(W_down), dual=False)
    # HiGHS's "infeasible" is no exact proof; meet-in-the-middle would need more than allowed
    assert res.status in ("limit", "found")
    if res.status == "limit":
        assert "MiB" in res.detail and res.plan is not None
    # planted: HiGHS finds S, checked exactly
    W_up[:d] = np.eye(d)
    W_down[:, :d] = -np.eye(d) - np.outer(W_down[:, d], W_up[d])
    found = find_index_set(as_q(W_up), as_q(W_down), dual=False)
    assert found.status == "found" and found.S is not None
    assert certificates.check_index_set(W_up, W_down, found.S)


# --------------------------------------------------------------------------------------------
# verdicts


@pytest.mark.parametrize("name", ["gelu", "relu", "gelu_tanh", "silu", "softplus"])
def test_biased_generic_is_not_absorbed_with_its_chain(name: str) -> None:
    rng = np.random.default_rng(8)
    block = random_block(get_activation(name), 3, 7, rng, biases=True)
    r = decide(block, rng=rng)
    assert r["verdict"] == "not_absorbed"
    assert r["chain"] == ["bias_blowup", "index_set_necessary", "relaxation_certificate"]
    dual = r["certificate"]["dual"]  # type: ignore[index]
    assert dual["verified"] == "exact rational arithmetic on the stored weights"
    Y = [[Fraction(q) for q in row] for row in dual["Y"]]
    assert by_hand(block.W_up, block.W_down, Y)
    assert "LayerNorm" in str(r["scope"])


def test_bias_free_gelu_needs_no_blowup() -> None:
    rng = np.random.default_rng(9)
    r = decide(random_block(get_activation("gelu"), 3, 5, rng), rng=rng)
    assert r["verdict"] == "not_absorbed"
    assert r["chain"] == ["index_set_necessary", "relaxation_certificate"]


def test_n_below_d_is_decided_by_rank() -> None:
    rng = np.random.default_rng(10)
    r = decide(random_block(get_activation("relu"), 5, 3, rng, biases=True), rng=rng)
    assert r["verdict"] == "not_absorbed" and r["certificate"]["method"] == "rank"  # type: ignore[index]


def test_planted_biased_is_absorbable_up_to_rounding() -> None:
    # planted through a float pseudo-inverse: the index set holds only up to float64 rounding
    rng = np.random.default_rng(11)
    block, _ = plant("silu", 3, 8, 4, rng, biases=True)
    r = decide(block, rng=rng)
    assert r["verdict"] == "absorbable_up_to_rounding"
    assert r["corrected_construction_check"]["max_relative_error"] < 1e-9  # type: ignore[index]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_low_precision_planted_is_absorbable_up_to_rounding(dtype: type) -> None:
    rng = np.random.default_rng(12)
    block, _ = plant("gelu", 4, 10, 5, rng, biases=True)
    stored = Block(block.activation, block.W_up.astype(dtype).astype(float),
                   block.W_down.astype(dtype).astype(float), b_up=block.b_up,
                   b_down=block.b_down)
    r = decide(stored, rng=rng)
    assert r["verdict"] == "absorbable_up_to_rounding"
    rnd = r["rounding"]
    assert isinstance(rnd, dict) and rnd["within_rounding_bound"]
    u = rnd["unit_roundoff"]
    assert rnd["storage_dtype"] == np.dtype(dtype).name
    # the least-norm change is of the order of the rounding, and makes the condition exact
    assert 0 < rnd["delta_norm_relative_to_W_down"] < 10 * u
    S = rnd["S"]
    fixed = stored.W_down.copy()
    fixed[:, S] += np.array(rnd["delta_W_down_S"])
    np.testing.assert_allclose(fixed[:, S] @ stored.W_up[S], -np.eye(4), atol=1e-12)
    assert r["corrected_construction_check"]["max_relative_error"] < 1e-9  # type: ignore[index]
    # a generic float32 block stays not_absorbed, with its distance reported
    generic = random_block(get_activation("gelu"), 4, 10, rng, biases=True)
    g32 = Block(generic.activation, generic.W_up.astype(np.float32).astype(float),
                generic.W_down.astype(np.float32).astype(float), b_up=generic.b_up)
    rg = decide(g32, rng=rng)
    assert rg["verdict"] == "not_absorbed" and rg["certificate"]["distance"] > 0.1  # type: ignore[index]


def test_exact_input_gives_the_absorbing_block_in_rationals(
        write_json: Callable[..., Path], rng: np.random.Generator) -> None:
    from absorb.weights import load_block

    data, _ = exact_planted_json(3, 8, rng)
    data["b_up"] = ["1/3"] * 8
    block = load_block(write_json(data), get_activation("relu"))
    r = decide(block, rng=rng)
    assert r["verdict"] == "absorbed" and r["condition_exact"] is True
    h = r["absorbing_block"]
    assert isinstance(h, dict) and all(isinstance(v, Fraction) for v in h["W_up"].ravel())
    assert h["b_down"][0] == sum((block.exact.W_down[0, i] * Fraction(1, 3)  # type: ignore[union-attr]
                                  for i in r["S"]), Fraction(0))  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------
# checker files and the README's re-check


def readme_recheck(path: Path) -> tuple[str, Fraction]:
    """The lines of the README section "Re-checking a certificate", run verbatim."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("```python", text.index("## Re-checking a certificate")) + 9
    code = text[start : text.index("```", start)]
    scope: dict[str, object] = {"__name__": "recheck"}
    exec(compile(code.replace("cert.json", str(path)), "README", "exec"), scope)
    return str(scope["verdict"]), scope["margin"]  # type: ignore[return-value]


def test_certificate_out_is_rechecked_by_the_readme_lines(
        cli: Callable[..., CliResult], tmp_path: Path) -> None:
    rng = np.random.default_rng(13)
    d, n = 3, 6
    np.savez(tmp_path / "w.npz", W_up=rng.standard_normal((n, d)).astype(np.float32),
             W_down=rng.standard_normal((d, n)).astype(np.float32), b_up=np.ones(n))
    out = tmp_path / "cert.json"
    res = cli("check", "--activation", "gelu", "--weights", str(tmp_path / "w.npz"),
              "--no-search", "--certificate-out", str(out), "--json")
    assert res.code == 0 and res.json()["verdict"] == "not_absorbed"
    doc = json.loads(out.read_text())
    assert doc["format"] == "absorb-check/2" and doc["activation"] == "gelu"
    # the biases are written, not dropped: the file holds the block the verdict is about
    assert set(doc) == {"format", "activation", "W_up", "W_down", "b_up", "Y"}
    verdict, margin = readme_recheck(out)
    assert verdict == "no index set" and margin > 0
    # the file holds the stored float32 values exactly
    stored = np.load(tmp_path / "w.npz")["W_up"]
    assert Fraction(doc["W_up"][0][0]) == Fraction(float(stored[0, 0]))
    # never overwritten unless asked
    again = cli("check", "--activation", "gelu", "--weights", str(tmp_path / "w.npz"),
                "--certificate-out", str(out))
    assert again.code == 2 and "--force" in again.err
    forced = cli("check", "--activation", "gelu", "--weights", str(tmp_path / "w.npz"),
                 "--no-search", "--certificate-out", str(out), "--force")
    assert forced.code == 0
    # and `check` reads the checker format back, verifying Y itself
    back = cli("check", "--activation", "gelu", "--weights", str(out), "--json")
    assert back.code == 0 and back.json()["given_certificate"]["valid"] is True  # type: ignore[index]


def test_export_lean_writes_S_and_check_reads_it_first(
        cli: Callable[..., CliResult], write_json: Callable[..., Path],
        rng: np.random.Generator) -> None:
    data, _ = exact_planted_json(3, 9, rng)
    path = write_json(data)
    lean = path.parent / "lean.json"
    res = cli("check", "--activation", "relu", "--weights", str(path), "--export-lean",
              str(lean), "--json")
    assert res.code == 0 and res.json()["verdict"] == "absorbed"
    doc = json.loads(lean.read_text())
    assert set(doc) == {"format", "activation", "W_up", "W_down", "S"}
    back = cli("check", "--activation", "relu", "--weights", str(lean), "--json")
    out = back.json()
    assert out["verdict"] == "absorbed" and out["S"] == sorted(doc["S"])
    assert "given index set" in str(out["reason"])
    assert all("/" in q or q.lstrip("-").isdigit()
               for row in out["absorbing_block"]["W_up"] for q in row)  # type: ignore[index]


def test_singular_skip_is_accepted_by_check(cli: Callable[..., CliResult],
                                            write_json: Callable[..., Path]) -> None:
    data = {"W_up": [[1, 0], [0, 1], [1, 1]], "W_down": [[2, 0, 1], [0, 3, 1]],
            "A_skip": [[1, 2], [2, 4]]}
    for act in ("relu2", "relu"):
        res = cli("check", "--activation", act, "--weights", str(write_json(data)), "--json",
                  "--no-search")
        assert res.code == 0, res.err
    assert res.json()["verdict"] in ("not_absorbed", "absorbed")


def test_tol_sets_what_counts_as_rounding(cli: Callable[..., CliResult],
                                          tmp_path: Path) -> None:
    """The same float32-stored planted block: one rounding away by default, not absorbed when
    --tol asks for (nearly) exact weights — with a certificate that no exact S exists."""
    rng = np.random.default_rng(14)
    block, _ = plant("gelu", 3, 9, 4, rng)
    np.savez(tmp_path / "p.npz", W_up=block.W_up.astype(np.float32),
             W_down=block.W_down.astype(np.float32))
    argv = ["check", "--activation", "gelu", "--weights", str(tmp_path / "p.npz"), "--json",
            "--no-search"]
    default = cli(*argv).json()
    assert default["verdict"] == "absorbable_up_to_rounding"
    assert default["storage"]["dtype"] == "float32"  # type: ignore[index]
    strict = cli(*argv, "--tol", "1e-12").json()
    assert strict["verdict"] == "not_absorbed"
    assert strict["certificate"]["dual"] is not None  # type: ignore[index]
    text = cli(*argv[:-2], "--no-search")
    assert text.code == 0 and "unit roundoffs" in text.out and "LayerNorm" in text.out


def _bf16(x: np.ndarray) -> np.ndarray:
    """Round to bfloat16 (nearest, ties to even) and back, on float32 bit patterns."""
    f = np.asarray(x, dtype=np.float32).view(np.uint32)
    r = (f + np.uint32(0x7FFF) + ((f >> 16) & np.uint32(1))) & np.uint32(0xFFFF0000)
    out: np.ndarray = r.astype(np.uint32).view(np.float32).astype(np.float64)
    return out


def test_bfloat16_generic_and_planted() -> None:
    """bfloat16 (u = 2⁻⁸): a generic layer stays not_absorbed, a planted one with |S| > d is
    one rounding away (HiGHS on the inner box finds an S that passes the rounding bound)."""
    rng = np.random.default_rng(15)
    g = random_block(get_activation("gelu"), 32, 128, rng, biases=True)
    generic = Block(g.activation, _bf16(g.W_up), _bf16(g.W_down), b_up=g.b_up)
    r = decide(generic, rng=rng)
    assert r["storage"]["dtype"] == "bfloat16" and r["verdict"] == "not_absorbed"  # type: ignore[index]
    p, _ = plant("gelu", 16, 64, 20, rng, biases=True)
    planted = Block(p.activation, _bf16(p.W_up), _bf16(p.W_down), b_up=p.b_up)
    rp = decide(planted, rng=rng)
    assert rp["verdict"] == "absorbable_up_to_rounding"
    assert rp["rounding"]["within_rounding_bound"]  # type: ignore[index]

