"""Weights files: round trips, exact rationals, and every bad-input rule."""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from absorb import weights
from absorb.activations import get_activation
from absorb.errors import AbsorbError
from absorb.weights import load_block, rational_rank, read_check_document

RELU = get_activation("relu")


def _good(d: int = 2, n: int = 3) -> dict[str, np.ndarray]:
    gen = np.random.default_rng(1)
    return {"W_up": gen.standard_normal((n, d)), "W_down": gen.standard_normal((d, n))}


def test_npz_round_trip(tmp_path: Path) -> None:
    arrays = {**_good(), "b_up": np.arange(3.0), "b_down": np.ones(2),
              "A_skip": np.array([[2.0, 1.0], [0.0, 1.0]])}
    np.savez(tmp_path / "w.npz", **arrays)
    block = load_block(tmp_path / "w.npz", RELU)
    for key, value in arrays.items():
        np.testing.assert_array_equal(getattr(block, key), value)
    assert block.exact is None


def test_json_numbers_are_the_rationals_they_spell(tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text('{"W_up": [[0.5, 1], [2, 0.1]], "W_down": [[1, 0], '
                                     '[0, 1e-400]]}')
    block = load_block(tmp_path / "w.json", RELU)
    assert block.exact is not None
    assert block.exact.W_up[1, 1] == Fraction(1, 10)  # the decimal as written, not the double
    assert block.exact.W_down[1, 1] == Fraction(1, 10**400)  # not 0.0
    np.testing.assert_array_equal(block.W_up, [[0.5, 1.0], [2.0, 0.1]])  # floats: nearest


def test_json_rationals_are_exact(write_json: Callable[..., Path]) -> None:
    path = write_json({"W_up": [["1/3", 0.1], [2, "-7/2"]], "W_down": [[1, 0], [0, 1]]})
    block = load_block(path, RELU)
    assert block.exact is not None
    assert block.exact.W_up[0, 0] == Fraction(1, 3)
    assert block.exact.W_up[0, 1] == Fraction(1, 10)
    assert block.exact.W_up[1, 1] == Fraction(-7, 2)
    assert block.W_up[0, 0] == pytest.approx(1 / 3, rel=1e-16)
    integers = load_block(write_json({"W_up": [[1, 2]], "W_down": [[3], [4]]}, "i.json"), RELU)
    assert integers.exact is not None and integers.exact.W_down[1, 0] == 4


def test_rational_rank() -> None:
    q = np.array([[Fraction(1, 3), Fraction(2, 3)], [Fraction(1), Fraction(2)]], dtype=object)
    assert rational_rank(q) == 1
    eye = np.array([[Fraction(int(i == j)) for j in range(3)] for i in range(3)], dtype=object)
    assert rational_rank(eye) == 3
    assert rational_rank(np.zeros((2, 2), dtype=int).astype(object)) == 0


JSON_ERRORS = [
    ({"W_up": [[1, 2]]}, "missing keys W_down"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "W_extra": [1]}, "unexpected keys W_extra"),
    ({"W_up": [[1, 2]], "W_down": [[1, 1]]}, "W_down has shape 1x2, expected 2x1"),
    ({"W_up": [[1, 2], [3]], "W_down": [[1, 1], [1, 1]]}, "ragged"),
    ({"W_up": [[[1]]], "W_down": [[1]]}, "more than 2 dimensions"),
    ({"W_up": [["abc", 1]], "W_down": [[1], [1]]}, r"W_up\[0\]\[0\]: string 'abc' is not"),
    ({"W_up": [["1/0", 1]], "W_down": [[1], [1]]}, "denominator 0"),
    ({"W_up": [[1, "0.25"]], "W_down": [[1], [1]]}, r"W_up\[0\]\[1\]: string '0.25'"),
    ({"W_up": [["+1/2", 1]], "W_down": [[1], [1]]}, "not a rational"),
    ({"W_up": [[" 1", 1]], "W_down": [[1], [1]]}, "not a rational"),
    ({"W_up": [[True, 1]], "W_down": [[1], [1]]}, "true is not a number"),
    ({"W_up": [[None, 1]], "W_down": [[1], [1]]}, "null is not a number"),
    ({"W_up": None, "W_down": [[1], [1]]}, "W_up: null is not a number"),
    ({"W_up": [[1e308 * 10, 1]], "W_down": [[1], [1]]}, "NaN and Infinity are refused"),
    ({"W_up": [[1, [2]]], "W_down": [[1], [1]]}, "more than 2 dimensions"),
    ({"W_up": [[1, 2], 3], "W_down": [[1], [1]]}, "mixes numbers and lists"),
    ({"W_up": [], "W_down": []}, "matrix"),
    ({"W_up": [[]], "W_down": [[]]}, "zero size"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "W_gate": [[1, 1]]}, "not gated"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "S": [0], "Y": [[1, 0], [0, 1]]}, "not both"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "S": [0, 0]}, "repeats"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "S": [1]}, "index >= n"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "S": [-1]}, "non-negative"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "Y": [[1]]}, "Y has shape"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "S": [0.0]}, "non-negative integers"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "S": [True]}, "non-negative integers"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "format": "other/2"}, "format"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "activation": "relu"}, "belongs to format"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "format": "absorb-check/2", "S": [0],
      "activation": "tanh"}, "activation must be one of relu, gelu"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "format": "absorb-check/2",
      "activation": "relu"}, "needs S or Y"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "format": "absorb-check/1", "S": [0],
      "b_up": [1]}, "no biases"),
    ({"W_up": [[1, 2]], "W_down": [[1], [1]], "format": "absorb-check/2", "S": [0],
      "activation": "relu", "W_gate": [[1, 2]]}, "unexpected keys W_gate"),
    ([1, 2], "expected a JSON object"),
]


@pytest.mark.parametrize(("data", "message"), JSON_ERRORS)
def test_bad_json_is_a_one_line_error(data: object, message: str,
                                      write_json: Callable[..., Path]) -> None:
    with pytest.raises(AbsorbError, match=message) as info:
        load_block(write_json(data), RELU)
    assert "\n" not in str(info.value)


def test_exact_entries_beyond_the_float_range_are_read_exactly(
        write_json: Callable[..., Path]) -> None:
    """A JSON entry past 1e308 is legal exact input: kept exactly, its float view ±inf (only
    the exact paths decide such a block); non-finite floats in a float file stay refused."""
    block = load_block(write_json({"W_up": [[10**400, 1]], "W_down": [[-1], ["-1/3"]]}), RELU)
    assert block.exact is not None and block.exact.W_up[0, 0] == 10**400
    assert block.W_up[0, 0] == np.inf and block.W_down[1, 0] == -1 / 3


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(AbsorbError, match="no such file"):
        load_block(tmp_path / "none.npz", RELU)
    (tmp_path / "w.txt").write_text("1")
    with pytest.raises(AbsorbError, match=r"unknown weights format '\.txt'"):
        load_block(tmp_path / "w.txt", RELU)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(AbsorbError, match="not valid JSON"):
        load_block(tmp_path / "bad.json", RELU)
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 garbage")
    with pytest.raises(AbsorbError, match=r"not a readable \.npz"):
        load_block(tmp_path / "bad.npz", RELU)
    (tmp_path / "dir.npz").mkdir()
    with pytest.raises(AbsorbError, match="is a directory"):
        load_block(tmp_path / "dir.npz", RELU)


def test_bad_npz_arrays(tmp_path: Path) -> None:
    good = _good()
    np.savez(tmp_path / "obj.npz", W_up=np.array([{"a": 1}], dtype=object), W_down=good["W_down"])
    with pytest.raises(AbsorbError, match="object array"):
        load_block(tmp_path / "obj.npz", RELU)
    np.savez(tmp_path / "str.npz", W_up=np.array([["a", "b"]]), W_down=good["W_down"])
    with pytest.raises(AbsorbError, match="non-numeric"):
        load_block(tmp_path / "str.npz", RELU)
    nan = good["W_up"].copy()
    nan[0, 0] = np.nan
    np.savez(tmp_path / "nan.npz", W_up=nan, W_down=good["W_down"])
    with pytest.raises(AbsorbError, match="W_up contains NaN or Inf"):
        load_block(tmp_path / "nan.npz", RELU)
    np.savez(tmp_path / "gate.npz", **good)
    with pytest.raises(AbsorbError, match="gated and needs W_gate"):
        load_block(tmp_path / "gate.npz", get_activation("swiglu"))


def test_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    np.savez(tmp_path / "w.npz", **_good())
    monkeypatch.setitem(weights.MAX_FILE_BYTES, ".npz", 100)
    with pytest.raises(AbsorbError, match="more than the limit 100"):
        load_block(tmp_path / "w.npz", RELU)


def test_entry_limit_is_checked_from_the_headers(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # compressed zeros: a small file whose arrays are large once loaded
    np.savez_compressed(tmp_path / "big.npz", W_up=np.zeros((2000, 500)),
                        W_down=np.zeros((500, 2000)))
    assert (tmp_path / "big.npz").stat().st_size < 100_000
    monkeypatch.setattr(weights, "MAX_ENTRIES", 10**5)
    monkeypatch.setattr(np, "load", None)  # the data must not be read at all
    with pytest.raises(AbsorbError, match="W_up has 1000000 entries, more than the limit"):
        load_block(tmp_path / "big.npz", RELU)


def test_singular_skip_and_checker_keys_are_read(write_json: Callable[..., Path]) -> None:
    """One block needs no invertible A; the checker's S and format keys are accepted."""
    from absorb.weights import load_check_input

    data = {"format": "absorb-check/1", "W_up": [[1, 2]], "W_down": [["1/3"], [1]],
            "A_skip": [[1, 2], [2, 4]], "S": [0]}
    block, extra = load_check_input(write_json(data), RELU)
    assert block.exact is not None and block.A_skip is not None
    assert extra.S == (0,) and extra.Y is None



TEXT_ERRORS = [
    ('{"W_up": [[1, 2]], "W_down": [[1], [1]], "W_up": [[3, 4]]}', "duplicate key 'W_up'"),
    ('{"W_up": [[1, 2]], "W_down": [[1], [1]], "S": [0], "Y": {"a": 1, "a": 2}}',
     "duplicate key 'a'"),
    ('{"W_up": [[1, 2]], "W_down": [[1], [NaN]]}', "NaN is not a number"),
    ('{"W_up": [[1, 2]], "W_down": [[1], [-Infinity]]}', "-Infinity is not a number"),
    ('{"W_up": [[1, 2e4097]], "W_down": [[1], [1]]}',
     r"exponent beyond ±4096 \(line 1 column 15\)"),
    ('{"W_up": [[1, 2]], "W_down": [[1], [1' + "0" * 5000 + ']]}', "run of 5001 digits"),
    ('{"W_up": [[1, 2]], "W_down": [[1], ["1/' + "7" * 5000 + '"]]}', "run of 5000 digits"),
    ('{"W_up": [[1, 2]], "W_down": [[1], [1]], "A_skip": ' + "[" * 100_000 + "]" * 100_000
     + "}", "nested too deeply"),
    ('{"W_up": [[1, 2]], "W_down": [[1], [1]], "A_skip": ' + "[" * 500 + "1" + "]" * 500
     + "}", "more than 2 dimensions"),
]


@pytest.mark.parametrize(("text", "message"), TEXT_ERRORS,
                         ids=[m for _, m in TEXT_ERRORS])
def test_bad_json_text_is_a_one_line_error(text: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text(text)
    with pytest.raises(AbsorbError, match=message) as info:
        load_block(tmp_path / "w.json", RELU)
    assert "\n" not in str(info.value) and str(info.value).startswith(str(tmp_path))


def test_huge_but_legal_literals_are_exact(tmp_path: Path) -> None:
    """Exponents up to ±4096 and 4096-digit runs are read exactly (no float on the way)."""
    (tmp_path / "w.json").write_text(
        '{"W_up": [[1e-4096, 2]], "W_down": [[-0.000], ["-' + "9" * 4096 + "/1"
        + "0" * 4095 + '"]],'
        ' "A_skip": [[1.5e+0001, 0], [0, 1E-0]]}')
    block = load_block(tmp_path / "w.json", RELU)
    assert block.exact is not None and block.exact.A_skip is not None
    assert block.exact.W_up[0, 0] == Fraction(1, 10**4096)
    assert block.exact.W_down[1, 0] == -Fraction(10**4096 - 1, 10**4095)
    assert list(block.exact.A_skip[0]) == [15, 0] and block.exact.A_skip[1, 1] == 1
    assert block.W_up[0, 0] == 0.0  # the float view rounds; the exact one does not


def test_checker_file_must_name_the_activation_it_is_checked_with(
        write_json: Callable[..., Path]) -> None:
    from absorb.weights import load_check_input

    path = write_json({"format": "absorb-check/2", "activation": "gelu", "W_up": [[1, 2]],
                       "W_down": [[1], [1]], "S": [0]})
    assert load_check_input(path, get_activation("gelu"))[1].activation == "gelu"
    with pytest.raises(AbsorbError, match="for activation gelu, not relu"):
        load_check_input(path, RELU)


CONFORMANCE = Path(__file__).parent / "conformance"
VECTORS = sorted(p for p in CONFORMANCE.glob("*.json") if not p.name.endswith(".expected.json"))


def test_there_are_conformance_vectors_of_both_outcomes() -> None:
    outcomes = [json.loads(p.with_suffix(".expected.json").read_text())["accepted"]
                for p in VECTORS]
    assert outcomes.count(True) >= 10 and outcomes.count(False) >= 20


@pytest.mark.parametrize("vector", VECTORS, ids=[p.stem for p in VECTORS])
def test_conformance_vector(vector: Path) -> None:
    """The shared vectors (docs/DESIGN.md, "Weights files"): the Python reader of the checker's
    format accepts or refuses each document as its ``.expected.json`` says (the Lean checker is
    held to the same files)."""
    expected = json.loads(vector.with_suffix(".expected.json").read_text())
    assert set(expected) <= {"accepted", "reason", "checker"}
    if expected["accepted"]:
        doc = read_check_document(vector.read_text(), vector.name)
        assert doc.weights["W_up"].shape == (doc.n, doc.d)
        assert all(isinstance(x, Fraction) for M in doc.weights.values() for x in M.flat)
        return
    with pytest.raises(AbsorbError) as info:
        read_check_document(vector.read_text(), vector.name)
    message = str(info.value)
    assert "\n" not in message and expected["reason"].lower() in message.lower(), message


def test_conformance_values_are_exact() -> None:
    """What the accepted vectors denote, entry by entry (no float on the way)."""
    def entry(name: str) -> Fraction:
        doc = read_check_document((CONFORMANCE / f"{name}.json").read_text())
        return Fraction(doc.weights["W_down"][0, 2])

    assert entry("accept_1e-400") == Fraction(1, 10**400)
    assert entry("accept_1e4096") == 10**4096
    assert entry("accept_1E-4096_signed") == Fraction(-1, 4 * 10**4095)
    assert entry("accept_exponent_leading_zeros") == 10**4096
    assert entry("accept_string_p_q") == Fraction(-22, 7)
    assert entry("accept_4096_digit_integer") == 10**4096 - 1
    doc = read_check_document((CONFORMANCE / "accept_exact_decimals.json").read_text())
    assert doc.weights["W_down"][0, 2] == Fraction(1, 10)
    assert list(doc.weights["A_skip"].flat) == [Fraction(5, 4), Fraction(-1, 2), 3, 100]
    assert doc.S == (0, 1) and doc.Y is None and doc.activation == "relu"
    # signed zeros (-0, -0.0, -0e7, "-0", "-0/1", "-0/5", and -0 in S) are plain zeros
    doc = read_check_document(
        (CONFORMANCE / "checker_relu_absorbed_signed_zeros.json").read_text())
    zeros = [doc.weights["W_up"][0, 1], doc.weights["W_up"][1, 0], doc.weights["W_down"][0, 1],
             doc.weights["W_down"][1, 0], doc.weights["A_skip"][0, 1], doc.weights["A_skip"][1, 0]]
    assert zeros == [0] * 6 and all(type(z) is Fraction for z in zeros) and doc.S == (0, 1)
