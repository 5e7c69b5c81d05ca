"""Fuzzing the file readers: malformed .npz / .json / .safetensors bytes must end in a clean
AbsorbError (exit 2 at the CLI), never another exception and never a hang."""

from __future__ import annotations

import io
import json
import re
import zipfile
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import save
from tests.conftest import run_subprocess

from absorb.activations import get_activation
from absorb.errors import AbsorbError
from absorb.numbers import loads, number_literal, rational_string
from absorb.scan.inspect import inspect_checkpoint
from absorb.weights import load_block

RELU = get_activation("relu")
FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def _valid_npz() -> bytes:
    rng = np.random.default_rng(0)
    buf = io.BytesIO()
    np.savez(buf, W_up=rng.standard_normal((4, 2)), W_down=rng.standard_normal((2, 4)))
    return buf.getvalue()


def _valid_json() -> bytes:
    return json.dumps({"W_up": [[1, 0], [0, 1], [1, 1]],
                       "W_down": [["-1", "0", "1/3"], ["0", "-1", "2/5"]]}).encode()


def _valid_safetensors() -> bytes:
    rng = np.random.default_rng(1)
    return save({"l.0.up.weight": rng.standard_normal((4, 2)),
                       "l.0.down.weight": rng.standard_normal((2, 4))})


def _mutate(data: bytes, edits: list[tuple[int, int]], cut: int) -> bytes:
    """Overwrite bytes at the given (position, value) pairs, then truncate at ``cut``."""
    out = bytearray(data)
    for pos, val in edits:
        out[pos % len(out)] = val
    return bytes(out[: max(cut, 1)] if cut < len(out) else out)


_EDITS = st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=8)


def _load(path: Path) -> None:
    """A reader either accepts the bytes or raises AbsorbError; anything else fails the test."""
    try:
        if path.suffix == ".safetensors":
            inspect_checkpoint(path, up="l.{i}.up.weight", down="l.{i}.down.weight",
                               activation=RELU.name)
        else:
            load_block(path, RELU)
    except AbsorbError as exc:
        assert str(exc) and "\n" not in str(exc)


@pytest.mark.parametrize(
    ("suffix", "valid"),
    [(".npz", _valid_npz), (".json", _valid_json), (".safetensors", _valid_safetensors)],
)
@FUZZ
@given(edits=_EDITS, cut=st.integers(0, 4096))
def test_mutated_files_fail_cleanly(
    suffix: str, valid: object, edits: list[tuple[int, int]], cut: int, tmp_path: Path
) -> None:
    assert callable(valid)
    path = tmp_path / f"w{suffix}"
    path.write_bytes(_mutate(valid(), edits, cut))
    _load(path)


@pytest.mark.parametrize("suffix", [".npz", ".json", ".safetensors"])
@FUZZ
@given(data=st.binary(max_size=512))
def test_random_bytes_fail_cleanly(suffix: str, data: bytes, tmp_path: Path) -> None:
    path = tmp_path / f"w{suffix}"
    path.write_bytes(data)
    _load(path)


def test_the_valid_seeds_are_accepted(tmp_path: Path) -> None:
    # The fuzzing starts from files the readers accept, so mutations probe real parsing paths.
    for suffix, valid in [(".npz", _valid_npz), (".json", _valid_json)]:
        path = tmp_path / f"w{suffix}"
        path.write_bytes(valid())
        assert load_block(path, RELU).n in (3, 4)
    path = tmp_path / "w.safetensors"
    path.write_bytes(_valid_safetensors())
    report = inspect_checkpoint(path, up="l.{i}.up.weight", down="l.{i}.down.weight",
                                activation=RELU.name)
    assert len(report["layers"]) == 1  # type: ignore[arg-type]


def test_zip_bomb_npz_is_refused_before_loading(tmp_path: Path) -> None:
    # A tiny compressed file whose header claims a huge array: refused from the header alone.
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1))
    header["shape"] = (1 << 20, 1 << 10)
    body = io.BytesIO()
    np.lib.format.write_array_header_1_0(body, header)
    body.write(b"\0" * 1024)
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("W_up.npy", body.getvalue())
        zf.writestr("W_down.npy", body.getvalue())
    with pytest.raises(AbsorbError):
        load_block(path, RELU)


def test_cli_on_garbage_exits_2_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "w.npz"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    res = run_subprocess(["check", "--activation", "relu", "--weights", str(path), "--json"])
    assert res.code == 2 and json.loads(res.out) == {"error": res.err[7:].strip(), "exit": 2}
    assert res.err.startswith("error: ") and "Traceback" not in res.err


# --------------------------------------------------------------------------- the number grammar


@settings(max_examples=150, deadline=None)
@given(text=st.from_regex(r"-?(0|[1-9][0-9]{0,40})(\.[0-9]{1,40})?([eE][+-]?[0-9]{1,4})?",
                          fullmatch=True))
def test_number_literals_are_the_decimals_they_spell(text: str) -> None:
    """Differential: the grammar's value of a JSON literal is the decimal's exact value
    (Python's Decimal), or a refusal exactly when the exponent is beyond ±4096."""
    exponent = int(re.split("[eE]", text)[1]) if re.search("[eE]", text) else 0
    if abs(exponent) > 4096:
        with pytest.raises(AbsorbError, match="exponent"):
            number_literal(text)
        return
    value = number_literal(text)
    assert value == Fraction(Decimal(text))
    assert isinstance(value, int) == (re.fullmatch(r"-?[0-9]+", text) is not None)


@settings(max_examples=150, deadline=None)
@given(text=st.one_of(st.text(alphabet="-+/0123456789 .eE_", max_size=12), st.text(max_size=8)))
def test_string_entries_follow_the_grammar_exactly(text: str) -> None:
    match = re.fullmatch(r"-?[0-9]+(/[0-9]+)?", text, flags=re.ASCII)
    if match is None or (match.group(1) is not None and int(text.split("/")[1]) == 0):
        with pytest.raises(AbsorbError):
            rational_string(text)
    else:
        assert rational_string(text) == Fraction(text)


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet='[]{}",:-+.0123456789eEnulltruefalsNaInfiy ', max_size=40))
def test_any_text_decodes_or_is_refused_cleanly(text: str) -> None:
    try:
        loads(text)
    except AbsorbError as exc:
        assert str(exc) and "\n" not in str(exc)
