"""Exact at every boundary (issue 25): every numpy dtype the readers accept is read as the
numbers it stores, the storage format is the file's, and verdicts on extreme and adversarial
weights agree with the exact oracle of ``test_oracle`` (Fractions only, independent of the
package), through ``check``, ``inspect``, stack files and the exported file's re-check.

The cases are hypothesis-generated at small sizes (the oracle enumerates all 2ⁿ sets);
``ABSORB_ORACLE_EXAMPLES`` raises the number of examples as in ``test_oracle``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import sys
from collections.abc import Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from absorb.activations import get_activation
from absorb.certificates import find_index_set
from absorb.certificates.enumeration import (
    MAX_CONFIRMATIONS,
    draw_primes,
    exact_meet_in_the_middle,
)
from absorb.cli import main
from absorb.errors import AbsorbError
from absorb.exact import primes_below
from absorb.formats import stored_array
from absorb.stacks import load_stack
from absorb.weights import load_block
from test_oracle import (
    INTEGER_STORAGES,
    LONG_DOUBLE,
    Case,
    Matrix,
    _all_sets,
    _is_zero,
    _safetensors,
    _terms_of,
    budget,
    judge,
    np_array,
    oracle,
    stored,
    to_storage,
)

Q = Fraction
RELU = get_activation("relu")
LONG_BITS = int(np.finfo(np.longdouble).nmant) + 1
EXTENDED = LONG_BITS > 53  # long double wider than float64 (x86's 80-bit format)


@pytest.fixture(autouse=True)
def _long_integers() -> Iterator[None]:
    """Entries like 2^±16000 have integers of ~4800 digits: hypothesis shows them (repr) when
    it reports an example, past Python's default limit on int-to-string conversion."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    yield
    sys.set_int_max_str_digits(limit)


def _cli(*argv: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    text = out.getvalue()
    return code, json.loads(text) if text.strip() else {}, err.getvalue()


# ------------------------------------------------------------------ reading, value by value


@st.composite
def _dyadic(draw: st.DrawFn, bits: int, lo: int, hi: int) -> Fraction:
    """m·2^e with |m| < 2^bits and e in [lo, hi]."""
    m = draw(st.integers(-(2**bits - 1), 2**bits - 1))
    return Q(m) * Q(2) ** draw(st.integers(lo, hi))


@budget(60)
@given(data=st.data(), storage=st.sampled_from((*INTEGER_STORAGES, LONG_DOUBLE, "float16",
                                                "float32", "float64")))
def test_every_dtype_is_read_as_the_numbers_it_stores(data: st.DataObject,
                                                      storage: str) -> None:
    """stored_array keeps every entry exactly: integers at the ends of their range and around
    2⁵³, long doubles beyond float64's precision and range, subnormals."""
    if storage in INTEGER_STORAGES:
        info = np.iinfo(storage)
        edge = st.sampled_from([int(info.min), int(info.max), 2**53 + 1, -(2**53) - 1, 2**53,
                                0, 1])
        values = data.draw(st.lists(st.one_of(edge, st.integers(int(info.min),
                                                                int(info.max))),
                                    min_size=1, max_size=6))
        want = [Q(v) for v in values if info.min <= v <= info.max]
    else:
        info_f = np.finfo(np.longdouble if storage == LONG_DOUBLE else storage)
        bits = int(info_f.nmant) + 1
        lo, hi = int(info_f.minexp) - bits, int(info_f.maxexp) - bits
        raw = data.draw(st.lists(_dyadic(bits, lo, hi), min_size=1, max_size=6))
        want = []
        for x in raw:
            try:
                want.append(stored(x, storage))
            except OverflowError:
                continue
    assume(want)
    arr = np_array(want, storage)
    got = stored_array(arr, "W")
    assert got.format == storage
    exact = got.exact if got.exact is not None else [Q(float(v)) for v in got.view]
    assert [Q(v) for v in exact] == want
    if got.exact is None:  # the view is the stored value itself
        assert all(math.isfinite(v) for v in got.view)


@pytest.mark.parametrize(("dtype", "what"), [(bool, "boolean"), (np.complex128, "complex"),
                                             ("U2", "string"), ("S2", "bytes"),
                                             ("datetime64[s]", "datetime")])
def test_refused_dtypes_say_why(tmp_path: Path, dtype: Any, what: str) -> None:
    np.savez(tmp_path / "w.npz", W_up=np.zeros((2, 2), dtype=dtype), W_down=-np.eye(2))
    with pytest.raises(AbsorbError, match=f"W_up: non-numeric array \\({what}"):
        load_block(tmp_path / "w.npz", RELU)


def test_exact_values_past_the_size_limit_are_refused(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An array whose float64 view would round is kept exactly up to MAX_EXACT_ENTRIES
    entries; past it the reader refuses (one line, exit 2) instead of rounding."""
    import absorb.formats

    monkeypatch.setattr(absorb.formats, "MAX_EXACT_ENTRIES", 3)
    path = tmp_path / "w.npz"
    np.savez(path, W_up=np.ones((2, 2), dtype=np.int64),
             W_down=np.array([[2**53 + 1, 0], [0, -1]], dtype=np.int64))
    code, _, err = _cli("check", "--activation", "relu", "--weights", str(path))
    assert code == 2 and "W_down: 4 int64 entries" in err and len(err.strip().splitlines()) == 1
    np.savez(path, W_up=np.ones((2, 2), dtype=np.int64),
             W_down=np.array([[2**53, 0], [0, -1]], dtype=np.int64))  # float64 holds 2⁵³
    code, res, err = _cli("check", "--activation", "relu", "--weights", str(path), "--json")
    assert code == 0 and res["storage"]["dtype"] == "int64", err


def test_nan_in_a_long_double_is_refused(tmp_path: Path) -> None:
    W = np.array([[np.longdouble("nan")]], dtype=np.longdouble)
    np.savez(tmp_path / "w.npz", W_up=W, W_down=-np.ones((1, 1)))
    code, _, err = _cli("check", "--activation", "relu", "--weights", str(tmp_path / "w.npz"))
    assert code == 2 and "NaN" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------ verdicts against the oracle


@st.composite
def extreme_blocks(draw: st.DrawFn, storages: Sequence[str]) -> Case:
    """Small ReLU/GELU blocks in an npz storage, planted (S exact before storing), off by one
    unit of the format, or random, at the magnitudes where float64 would round: integers
    around 2⁵³ and at the ends of int64/uint64, long doubles like 1 + 2⁻⁶⁰ and 2^±16000,
    float64 subnormals and 1e308."""
    storage = draw(st.sampled_from(storages))
    act = draw(st.sampled_from(["relu", "gelu"]))
    d, n = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    small = st.integers(-4, 4).map(Q)
    if storage.startswith("uint"):
        small = st.integers(0, 4).map(Q)
    W_up = [[draw(small) for _ in range(d)] for _ in range(n)]
    W_down = [[draw(small) for _ in range(n)] for _ in range(d)]
    name, big = "1", Q(1)
    if storage in ("int64", "uint64"):
        name, big = draw(st.sampled_from([("2^53+1", Q(2**53 + 1)), ("2^53-1", Q(2**53 - 1)),
                                          ("2^62+3", Q(2**62 + 3)), ("2^31+1", Q(2**31 + 1)),
                                          ("3", Q(3))]))
    elif storage == LONG_DOUBLE:
        name, big = draw(st.sampled_from([("1+2^-60", 1 + Q(1, 2**60)),
                                          ("3*2^-16000", Q(2) ** -16000 * 3),
                                          ("2^16000", Q(2) ** 16000), ("1", Q(1))]))
    elif storage == "float64":
        name, big = draw(st.sampled_from([("3*2^-1074", Q(2) ** -1074 * 3),
                                          ("2^1020", Q(2) ** 1020),
                                          ("1+2^-52", 1 + Q(1, 2**52)), ("1", Q(1))]))
    i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))
    if storage.startswith("int") or storage.startswith("uint"):
        W_down[j][i] = W_down[j][i] * big  # an entry where float64 would round
    else:
        W_up[i] = [x * big for x in W_up[i]]
        W_down = [[x / big if k == i else x for k, x in enumerate(r)] for r in W_down]
    mode = draw(st.sampled_from(["planted", "off", "random"]))
    S = [k for k in range(n) if draw(st.booleans())]
    A = [[-x for x in r] for r in _terms_of(W_up, W_down, S)]
    if mode == "random":
        A = [[draw(small) for _ in range(d)] for _ in range(d)]
    elif mode == "off":  # the smallest nonzero change the skip's format allows
        A[0][0] += Q(1) if storage in INTEGER_STORAGES else (abs(A[0][0]) or Q(1)) / 2**80
    case = Case(act, W_up, W_down, A, None, None, None, storage, "npz",
                f"{mode}, {storage}, big {name}")
    try:
        stored_case = to_storage(case)
    except OverflowError:
        assume(False)
    return stored_case


INT_STORAGES = ("int8", "int16", "int32", "int64", "uint8", "uint32", "uint64")


@budget(60)
@given(case=extreme_blocks(INT_STORAGES), seed=st.integers(0, 2**32))
def test_integer_blocks_against_the_oracle(case: Case, seed: int) -> None:
    """Integers of every width: 2⁵³ + 1 is not 2⁵³ (no false absorbed, no false index set)."""
    judge(case, 0, seed)


@pytest.mark.skipif(not EXTENDED, reason="long double is float64 on this platform")
@budget(12)
@given(case=extreme_blocks((LONG_DOUBLE,)), seed=st.integers(0, 2**32))
def test_long_double_blocks_against_the_oracle(case: Case, seed: int) -> None:
    """Long doubles beyond float64's precision (1 + 2⁻⁶⁰) and range (2^±16000)."""
    judge(case, 0, seed)


@budget(40)
@given(case=extreme_blocks(("float64",)), seed=st.integers(0, 2**32))
def test_float64_extremes_against_the_oracle(case: Case, seed: int) -> None:
    """Subnormal entries and skips (3·2⁻¹⁰⁷⁴), 2¹⁰²⁰: decided, never refused."""
    judge(case, 0, seed)


def _int_case(W_up: Matrix, W_down: Matrix, A: Matrix | None, storage: str) -> Case:
    return to_storage(Case("relu", W_up, W_down, A, None, None, None, storage, "npz", storage))


BIG = Q(2**53)


@pytest.mark.parametrize(("case", "verdict"), [
    # 2⁵³ + 1 − 2⁵³ = 1: the set {0, 1} holds exactly (float64 would say 0)
    (_int_case([[Q(1)], [Q(1)]], [[-(BIG + 1), BIG]], None, "int64"), "absorbed"),
    # W_down[:,{0,1}] W_up = −1 − 1 = −2 ≠ −1 unless read as float64 (2⁵³ + 1 → 2⁵³)
    (_int_case([[Q(1), Q(0)], [Q(1), Q(0)], [Q(0), Q(1)]],
               [[-(BIG + 1), BIG - 1, Q(0)], [Q(0), Q(0), Q(-1)]], None, "int64"), None),
    (_int_case([[Q(1)], [Q(2)]], [[BIG + 1, BIG]], [[-(BIG * 3 + 1)]], "uint64"), None),
    (_int_case([[Q(1), Q(0)], [Q(0), Q(1)]], [[Q(-1), Q(0)], [Q(0), Q(-1)]],
               [[Q(2) ** -1074 * 5, Q(0)], [Q(0), Q(2) ** -1074 * 5]], "float64"), None),
])
def test_the_cases_of_the_issue(case: Case, verdict: str | None) -> None:
    got = judge(case)
    assert verdict is None or got == verdict


def test_a_float_block_within_rounding_carries_the_exact_answer(tmp_path: Path) -> None:
    """fl(0.1) + fl(0.9) = 1 − 2⁻⁵⁴·(…) ≠ 1: {0, 1} meets the condition up to float64
    rounding, not exactly, and the exact search (4 subsets) says so beside the verdict."""
    case = to_storage(Case("relu", [[Q(1), Q(0)], [Q(1), Q(0)], [Q(0), Q(1)]],
                           [[Q(-0.1), Q(-0.9), Q(0)], [Q(0), Q(0), Q(-1)]], None, None, None,
                           None, "float64", "npz", "tenths"))
    assert not oracle(case).exact_sets
    assert judge(case) == "absorbable_up_to_rounding"
    np.savez(tmp_path / "w.npz", W_up=np_array(case.W_up, "float64"),
             W_down=np_array(case.W_down, "float64"))
    code, res, err = _cli("check", "--activation", "relu", "--weights", str(tmp_path / "w.npz"),
                          "--json", "--no-search")
    assert code == 0, err
    assert "admit no exact index set" in res["stored_weights_exactly"]


@pytest.mark.skipif(not EXTENDED, reason="long double is float64 on this platform")
def test_a_long_double_skip_of_1e_minus_4000_is_not_zero(tmp_path: Path) -> None:
    """A gated block with A = 1e-4000·I: float64 would make A = 0 and the block absorbed;
    A ≠ 0 is decided on the exact value."""
    tiny = np.array([[np.longdouble("1e-4000")]], dtype=np.longdouble)
    np.savez(tmp_path / "w.npz", W_up=np.ones((1, 1)), W_down=np.ones((1, 1)),
             W_gate=np.ones((1, 1)), A_skip=tiny)
    code, res, err = _cli("check", "--activation", "swiglu", "--weights",
                          str(tmp_path / "w.npz"), "--json", "--no-search")
    assert code == 0, err
    # A ≠ 0 exactly (the oracle: gated, g(0) = 0, no biases), so linearization applies
    assert res["verdict"] == "impossible" and res["theorem"] == "linearization"


@pytest.mark.skipif(not EXTENDED, reason="long double is float64 on this platform")
@pytest.mark.parametrize(("x", "y", "verdict"), [
    (1 + Q(1, 2**60), -(1 - Q(1, 2**60)), "not_absorbed"),
    (1 + Q(1, 2**60), -(1 - Q(1, 2**60) + Q(1, 2**63)), "not_absorbed"),
    (Q(2) ** -1100, -(Q(2) ** 1100), "not_absorbed"),  # beyond float64: exact all the same
])
def test_the_export_writes_the_stored_long_double(tmp_path: Path, x: Fraction, y: Fraction,
                                                  verdict: str) -> None:
    """The exported file holds the long doubles exactly (not their float64 roundings), and
    re-reading it decides the same; its certificate re-checks on the exact weights. (Unit 0
    gives x·y·E₁₁, unit 1 E₁₂ − E₂₂: −I is outside their span, so a certificate exists.)"""
    case = to_storage(Case("relu", [[x, Q(0)], [Q(0), Q(1)]], [[y, Q(1)], [Q(0), Q(-1)]],
                           None, None, None, None, LONG_DOUBLE, "npz", "export"))
    assert oracle(case).absorbable is (verdict == "absorbed")
    np.savez(tmp_path / "w.npz", W_up=np_array(case.W_up, LONG_DOUBLE),
             W_down=np_array(case.W_down, LONG_DOUBLE))
    out = tmp_path / "out.json"
    code, res, err = _cli("check", "--activation", "relu", "--weights", str(tmp_path / "w.npz"),
                          "--json", "--no-search", "--export-lean", str(out))
    assert code == 0, err
    assert res["verdict"] == verdict and res["storage"]["dtype"] == LONG_DOUBLE
    doc = json.loads(out.read_text())
    assert [[Q(v) for v in r] for r in doc["W_up"]] == case.W_up
    assert [[Q(v) for v in r] for r in doc["W_down"]] == case.W_down
    code2, res2, err2 = _cli("check", "--activation", "relu", "--weights", str(out), "--json",
                             "--no-search")
    assert code2 == 0, err2
    assert res2["verdict"] == verdict
    assert res2["given_certificate"]["valid"]  # the exported Y, re-checked exactly


@pytest.mark.skipif(not EXTENDED, reason="long double is float64 on this platform")
def test_an_export_beyond_the_number_grammar_is_refused(tmp_path: Path) -> None:
    """2^±16000 needs about 4800 digits, past the checker's 4096: refused, nothing written
    (the verdict itself is decided exactly)."""
    big = np.ldexp(np.longdouble(1), 16000)
    np.savez(tmp_path / "w.npz", W_up=np.array([[1 / big, 0], [0, 1]], dtype=np.longdouble),
             W_down=np.array([[-big, 0], [0, -1]], dtype=np.longdouble))
    out = tmp_path / "out.json"
    argv = ("check", "--activation", "relu", "--weights", str(tmp_path / "w.npz"), "--json")
    code, res, _ = _cli(*argv, "--no-search")
    assert code == 0 and res["verdict"] == "absorbed"
    code, _, err = _cli(*argv, "--export-lean", str(out))
    assert code == 2 and "4096 digits" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


# ------------------------------------------------------------------ stacks and checkpoints


@budget(30)
@given(case=extreme_blocks(("int64", "uint64", "float64", LONG_DOUBLE)))
def test_stack_files_keep_every_layer_exact(case: Case) -> None:
    """An npz stack holds each layer in its own dtype; every layer is read as stored (the
    exact values, or a float view that is them), and ``check`` decides the stack."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.npz"
        layers = {"W_up_0": np_array(case.W_up, case.storage),
                  "W_down_0": np_array(case.W_down, case.storage),
                  "W_up_1": np.eye(case.d, dtype=np.float32),
                  "W_down_1": -np.eye(case.d, dtype=np.float32) / 2}
        np.savez(path, **layers)
        blocks = load_stack(path, RELU)
        first = blocks[0]
        assert first.dtype == case.storage and blocks[1].dtype == "float32"
        for key, want in (("W_up", case.W_up), ("W_down", case.W_down)):
            got = (getattr(first.exact, key) if first.exact is not None
                   else getattr(first, key))
            assert [[Q(v) for v in row] for row in got] == want
        code, _, err = _cli("check", "--activation", "relu", "--weights", str(path),
                              "--json", "--no-search")
        assert code == 0, err


def test_safetensors_storage_is_the_header_dtype(tmp_path: Path) -> None:
    """An F64 layer whose values happen to fit bfloat16 (W_up = I, W_down = −(1 − 2⁻⁷)I) is
    float64 storage: not absorbable (the oracle), not 'one bfloat16 rounding away'."""
    W_up, W_down = np.eye(2), -(1 - 2.0**-7) * np.eye(2)
    case = to_storage(Case("relu", [[Q(x) for x in r] for r in W_up],
                           [[Q(x) for x in r] for r in W_down], None, None, None, None,
                           "float64", "safetensors", "header dtype"))
    assert oracle(case).absorbable is False
    _safetensors(tmp_path / "c.safetensors", {"l.0.up.weight": ("F64", W_up),
                                              "l.0.down.weight": ("F64", W_down)})
    code, res, err = _cli("inspect", str(tmp_path / "c.safetensors"), "--up", "l.{i}.up.weight",
                          "--down", "l.{i}.down.weight", "--activation", "relu", "--json")
    assert code == 0, err
    layer = res["layers"][0]
    assert layer["storage"]["dtype"] == "float64"
    assert layer["verdict"] == "not_absorbed"


# ------------------------------------------------------------------ the adversarial search


def _collision(K: list[list[int]], R: list[list[int]], P: int) -> tuple[Any, Any, Any]:
    Wd = np.array([[Q(k * P) for k in row] for row in K], dtype=object)
    Wu = np.array([[Q(r, P) for r in row] for row in R], dtype=object)
    return Wu, Wd, np.array([[Q(int(i == j)) for j in range(2)] for i in range(2)],
                            dtype=object)


def _brute(Wu: Any, Wd: Any, A: Any) -> set[tuple[int, ...]]:
    """Every S with W_down[:,S] W_up[S,:] = −A (the oracle's enumeration, in Fractions)."""
    W_up = [[Q(x) for x in r] for r in Wu]
    W_down = [[Q(x) for x in r] for r in Wd]
    case = Case("relu", W_up, W_down, [[Q(x) for x in r] for r in A], None, None, None,
                "exact", "json", "collision")
    return {S for S, M in _all_sets(case).items() if _is_zero(M)}


@budget(30)
@given(n=st.integers(2, 10), which=st.sampled_from(["fixed", "drawn"]),
       K=st.lists(st.integers(-3, 3), min_size=20, max_size=20),
       R=st.lists(st.integers(-3, 3), min_size=20, max_size=20), seed=st.integers(0, 2**20))
def test_collision_inputs_are_decided_exactly(n: int, which: str, K: list[int], R: list[int],
                                              seed: int) -> None:
    """W_down = P·K and W_up = R/P, P the product of the fingerprint primes (the fixed ones of
    earlier versions, or those this seed draws): every half-sum collides, and the search
    still answers what the oracle says, its cost bounded by the exact keys."""
    P = math.prod(primes_below(1 << 21, 3) if which == "fixed" else draw_primes(seed, 1))
    k = [K[2 * i : 2 * i + 2] for i in range(n)]
    Wu, Wd, A = _collision([[k[i][0] for i in range(n)], [k[i][1] for i in range(n)]],
                           [R[2 * i : 2 * i + 2] for i in range(n)], P)
    res = exact_meet_in_the_middle(Wu, Wd, A, 1 << 30, seed)
    truth = _brute(Wu, Wd, A)
    assert (res.status == "found") == bool(truth)
    if res.S is not None:
        assert res.S in truth


def test_the_seed_is_reported_and_replays(tmp_path: Path) -> None:
    """The exact search's seed is in the JSON, drawn from --seed: same seed, same output."""
    rng = np.random.default_rng(3)
    np.savez(tmp_path / "w.npz", W_up=rng.integers(-2, 3, (12, 2)).astype(np.float32),
             W_down=rng.integers(-2, 3, (2, 12)).astype(np.float32))
    argv = ("check", "--activation", "relu", "--weights", str(tmp_path / "w.npz"), "--json",
            "--no-search")
    runs = [_cli(*argv, "--seed", s)[1] for s in ("5", "5", "6")]
    assert runs[0] == runs[1]
    seeds = [r["index_set_search"]["seed"] if "index_set_search" in r
             else (r.get("certificate") or {}).get("seed") for r in runs]
    assert seeds[0] == seeds[1]
    assert runs[0]["verdict"] == runs[2]["verdict"]


def test_past_the_confirmation_bound_the_exact_keys_decide() -> None:
    """With primes the input was built for, the search confirms MAX_CONFIRMATIONS matches and
    then finishes on exact keys (no limit, no undetermined)."""
    seed = 11
    P = math.prod(draw_primes(seed, 1))
    n = 14
    K = [[2 * ((i + j) % 3 + 1) for i in range(n)] for j in range(2)]  # even: no set exists
    R = [[(i % 3) + 1, ((i * 7) % 5) + 1] for i in range(n)]
    res = exact_meet_in_the_middle(*_collision(K, R, P), 1 << 30, seed)
    assert res.status == "none" and "exact keys" in res.detail
    assert f"{MAX_CONFIRMATIONS} fingerprint matches" in res.detail
    planted = _collision(K, R, P)
    Wu, Wd, _ = planted
    S = [0, 3, 5]
    A = -(Wd[:, S] @ Wu[S, :])
    found = exact_meet_in_the_middle(Wu, Wd, A, 1 << 30, seed)
    assert found.status == "found" and found.S is not None
    assert set(found.S) in [set(s) for s in _brute(Wu, Wd, A)]


@budget(20)
@given(k=st.lists(st.integers(-8, 8), min_size=20, max_size=20),
       planted=st.lists(st.booleans(), min_size=10, max_size=10))
def test_coarse_weights_against_brute_force(k: list[int], planted: list[bool]) -> None:
    """Entries k/8 (many equal half-sums): the whole search agrees with the oracle."""
    n = 10
    Wu = np.array([[Q(k[2 * i], 8), Q(k[2 * i + 1], 8)] for i in range(n)], dtype=object)
    Wd = np.array([[Q(k[(2 * i + 3) % 20], 8) for i in range(n)],
                   [Q(k[(2 * i + 5) % 20], 8) for i in range(n)]], dtype=object)
    S = [i for i in range(n) if planted[i]]
    A = -(Wd[:, S] @ Wu[S, :]) if S else np.array([[Q(1, 128), Q(0)], [Q(0), Q(1, 128)]],
                                                  dtype=object)
    assume(any(v != 0 for v in A.ravel()))
    res = find_index_set(Wu, Wd, A, dual=False, seed=1)
    truth = _brute(Wu, Wd, A)
    assert (res.status == "found") == bool(truth)
    if res.S is not None:
        assert tuple(sorted(res.S)) in truth
