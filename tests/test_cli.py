"""The command-line contract: JSON on stdout, exit codes, one-line errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from tests.conftest import REPO, CliResult, exact_planted_json, plant, run_subprocess

from absorb.activations import CATALOG
from absorb.errors import AbsorbError
from absorb.lean import find_lake
from absorb.lean_project import find_root

Cli = Callable[..., CliResult]


def _one_line_error(res: CliResult, code: int = 2) -> None:
    assert res.code == code, res.err
    lines = res.err.strip().splitlines()
    # stdout: nothing, or under --json exactly the error object
    assert res.out == "" or json.loads(res.out) == {"error": lines[0][7:], "exit": code}
    assert len(lines) == 1 and lines[0].startswith("error: "), res.err
    assert "Traceback" not in res.err


def test_activations_json(cli: Cli) -> None:
    res = cli("activations", "--json")
    assert res.code == 0
    rows = res.json()["activations"]
    assert isinstance(rows, list) and len(rows) == len(CATALOG)
    assert {r["name"]: r["degree"] for r in rows}["reglu"] == 2.0
    text = cli("activations")
    assert text.code == 0 and "swiglu" in text.out and "linearization" in text.out
    # a table: the free-text verdict column starts at one offset, after at least two spaces
    lines = text.out.splitlines()[1:]
    starts = {line.rindex(r["verdict"]) for line, r in zip(lines, rows, strict=True)}
    assert len(starts) == 1 and all(line[min(starts) - 2:min(starts)] == "  " for line in lines)


@pytest.mark.parametrize(
    ("args", "verdict"),
    [
        (["--activation", "relu2", "--d", "3", "--n", "4"], "impossible"),
        (["--activation", "geglu", "--d", "3", "--n", "4"], "impossible"),
        (["--activation", "relu", "--d", "4", "--n", "8"], "not_absorbed"),
        (["--activation", "identity", "--d", "3", "--n", "4"], "absorbed"),
        (["--activation", "tanh", "--d", "2", "--n", "3", "--no-search"], "impossible"),
        (["--activation", "glu", "--d", "2", "--n", "3", "--no-search"], "undetermined"),
        (["--activation", "relu2", "--d", "2", "--n", "3", "--biases", "--no-search"],
         "undetermined"),
    ],
)
def test_check_json_contract(args: list[str], verdict: str, cli: Cli) -> None:
    res = cli("check", *args, "--json", "--seed", "3")
    assert res.code == 0, res.err
    obj = res.json()
    assert obj["verdict"] == verdict
    assert {"activation", "d", "n", "verdict", "theorem", "lean"} <= set(obj)
    assert cli("check", *args, "--json", "--seed", "3").out == res.out  # same seed, same output
    text = cli("check", *args, "--seed", "3")
    assert text.code == 0 and f"verdict: {verdict}" in text.out


def test_check_weights_files(cli: Cli, tmp_path: Path, rng: np.random.Generator,
                             write_json: Callable[..., Path]) -> None:
    # planted through a float inverse: an index set only up to float64 rounding
    block, _ = plant("relu", 2, 6, 3, rng)
    np.savez(tmp_path / "p.npz", W_up=block.W_up, W_down=block.W_down)
    obj = cli("check", "--activation", "relu", "--weights", str(tmp_path / "p.npz"),
              "--json").json()
    assert obj["verdict"] == "absorbable_up_to_rounding" and obj["condition_exact"] is False
    assert obj["corrected_construction_check"]["max_relative_error"] < 1e-8  # type: ignore[index]
    data, _ = exact_planted_json(2, 5, rng)
    obj = cli("check", "--activation", "relu", "--weights", str(write_json(data)),
              "--json").json()
    assert obj["verdict"] == "absorbed" and obj["exact"] is True


def test_inspect(cli: Cli, tmp_path: Path, rng: np.random.Generator) -> None:
    save_file({f"l.{i}.{k}": rng.standard_normal(s) for i in range(2)
               for k, s in (("up.weight", (8, 4)), ("down.weight", (4, 8)))},
              str(tmp_path / "c.safetensors"))
    res = cli("inspect", str(tmp_path / "c.safetensors"), "--up", "l.{i}.up.weight",
              "--down", "l.{i}.down.weight", "--activation", "relu", "--json")
    assert res.code == 0, res.err
    layers = res.json()["layers"]
    assert [(r["layer"], r["verdict"]) for r in layers] == [(0, "not_absorbed"),  # type: ignore[attr-defined]
                                                            (1, "not_absorbed")]


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--activation", "nope", "--d", "2", "--n", "3"],
        ["check", "--activation", "relu", "--d", "0", "--n", "3"],
        ["check", "--activation", "relu", "--d", "x", "--n", "3"],
        ["check", "--activation", "relu", "--d", "2"],
        ["check", "--activation", "relu"],
        ["check", "--activation", "relu", "--weights", "w.npz", "--d", "2", "--n", "2"],
        ["check", "--activation", "relu", "--weights", "/nonexistent/w.npz"],
        ["check", "--activation", "relu", "--d", "100000", "--n", "100000"],
        ["check", "--d", "2", "--n", "3"],
        ["search", "--activation", "relu", "--d", "2", "--n", "3", "--width-factor", "-1"],
        ["inspect", "/nonexistent.safetensors", "--up", "a", "--down", "b",
         "--activation", "relu"],
        ["audit", "--root", "/nonexistent"],
        ["frobnicate"],
        [],
    ],
)
def test_bad_input_is_one_line_exit_2(argv: list[str], cli: Cli) -> None:
    _one_line_error(cli(*argv))


def test_bad_weights_through_a_fresh_interpreter(tmp_path: Path) -> None:
    np.savez(tmp_path / "obj.npz", W_up=np.array([None], dtype=object), W_down=np.ones((1, 1)))
    _one_line_error(run_subprocess(["check", "--activation", "relu", "--weights",
                                    str(tmp_path / "obj.npz"), "--json"]))
    (tmp_path / "nan.json").write_text('{"W_up": [[NaN]], "W_down": [[1]]}')
    _one_line_error(run_subprocess(["check", "--activation", "relu", "--weights",
                                    str(tmp_path / "nan.json")]))
    # a singular skip is no error for one block: the verdict says what the theorems give
    (tmp_path / "sing.json").write_text(json.dumps(
        {"W_up": [[1, 0]], "W_down": [[1], [0]], "A_skip": [[1, 1], [1, 1]]}))
    assert run_subprocess(["check", "--activation", "relu", "--weights",
                           str(tmp_path / "sing.json")]).code == 0


def test_python_dash_m_absorb_prints_one_json_object() -> None:
    res = run_subprocess(["check", "--activation", "swiglu", "--d", "2", "--n", "3", "--json"])
    assert res.code == 0, res.err
    assert json.loads(res.out)["theorem"] == "linearization"


def test_help_exits_zero(cli: Cli) -> None:
    res = cli("check", "--help")
    assert res.code == 0 and "--activation" in res.out


def test_root_discovery(tmp_path: Path) -> None:
    assert find_root(REPO / "python" / "absorb") == REPO
    with pytest.raises(AbsorbError, match="pass --root"):
        find_root(tmp_path)


def test_audit_from_a_subdirectory(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO / "tests")
    res = cli("audit", "--json")
    assert res.code == 0, res.err
    ids = {t["id"] for t in res.json()["theorems"]}  # type: ignore[attr-defined]
    assert {"degree", "linearization", "index_set_sufficient"} <= ids


def test_audit_exits_4_on_findings(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "Absorb").mkdir()
    (tmp_path / "Absorb.lean").write_text("import Absorb.Basic\n")
    (tmp_path / "Absorb" / "Basic.lean").write_text("theorem Absorb.foo : True := sorry\n")
    res = cli("audit", "--root", str(tmp_path), "--json")
    assert res.code == 4, res.err
    findings = res.json()["findings"]
    assert any(f["kind"] == "sorry" for f in findings), findings  # type: ignore[index]


@pytest.mark.skipif(find_lake() is not None, reason="a Lean toolchain is installed here")
def test_verify_without_lake_exits_3(cli: Cli) -> None:
    res = cli("verify", "--root", str(REPO), "--json")
    assert res.code == 3 and res.err.startswith("error: ") and len(res.err.splitlines()) == 1
    obj = res.json()  # still one JSON object on stdout, for scripts
    assert obj["exit"] == 3 and "lake" in str(obj["error"])
    _one_line_error(cli("verify", "--root", str(REPO)), code=3)


def test_search_json(cli: Cli) -> None:
    res = cli("search", "--activation", "relu", "--d", "2", "--n", "3", "--restarts", "1",
              "--steps", "20", "--samples", "64", "--json")
    assert res.code == 0, res.err
    obj = res.json()
    assert obj["target"]["activation"] == "relu" and "relative_error" in obj  # type: ignore[index]


def test_internal_errors_exit_1_in_one_line(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    import absorb.theory

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(absorb.theory, "decide", broken)
    res = cli("check", "--activation", "relu", "--d", "2", "--n", "3", "--json")
    assert res.code == 1 and res.json() == {"error": "RuntimeError: boom", "exit": 1}
    assert res.err.strip() == "internal error: RuntimeError: boom"


def test_non_finite_numbers_never_reach_the_json() -> None:
    from absorb.serialize import plain

    assert plain({1.5: [float("inf"), np.float64(2.0)], "q": np.array([1, 2])}) == {
        "1.5": [None, 2.0], "q": [1, 2]}


def test_json_writes_certificate_matrices_in_place_one_at_a_time() -> None:
    """write_json's placeholders never show: the output parses to the same document as the
    matrices serialized eagerly, for several matrices at any depth, and exact "p/q" entries."""
    import io
    from fractions import Fraction

    from absorb.certificates import RationalMatrix
    from absorb.serialize import write_json

    grid = RationalMatrix(np.array([[0.5, -0.25], [3.0, 2.0**-20]]), 20)
    exact = RationalMatrix(np.array([[Fraction(1, 3), Fraction(-2)]], dtype=object), None)
    doc = {"layers": [{"dual": {"Y": grid, "note": 'quote " and \x00 survive'}},
                      {"dual": {"Y": exact}}], "n": np.int64(3)}
    out = io.StringIO()
    write_json(doc, out)
    text = out.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1 and "absorb-matrix" not in text
    parsed = json.loads(text)
    assert parsed["layers"][0]["dual"]["Y"] == [["1/2", "-1/4"], ["3", "1/1048576"]]
    assert parsed["layers"][1]["dual"]["Y"] == [["1/3", "-2"]]
    assert parsed["layers"][0]["dual"]["note"] == 'quote " and \x00 survive'
    assert parsed["n"] == 3
    assert [Fraction(q) for row in parsed["layers"][0]["dual"]["Y"] for q in row] == [
        Fraction(v) for v in grid.values.ravel()]


def test_every_command_is_a_module_and_main_names_none() -> None:
    """One module per command (NAME, HELP, add_options, run) under absorb/commands/, the parser
    built from them alone, and cli.py special-casing no command by name."""
    import argparse

    from absorb.cli import build_parser
    from absorb.commands import COMMANDS

    names = [c.NAME for c in COMMANDS]
    for command in COMMANDS:
        assert command.__name__ == f"absorb.commands.{command.NAME}"
        assert command.HELP and callable(command.add_options) and callable(command.run)
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == names
    source = (REPO / "python" / "absorb" / "cli.py").read_text(encoding="utf-8")
    code = source.split('"""', 2)[2]  # after the module docstring
    named = [n for n in names if f'"{n}"' in code or f"'{n}'" in code]
    assert named == [], f"cli.py special-cases {named}"


def test_stack_command_text_json_and_exit_codes(cli: Cli, tmp_path: Path) -> None:
    """``absorb stack``: the verdict as text and JSON (the folded positive control: undetermined
    with its regime), no certificate to write for it (exit 2, nothing written), bad input 2."""
    stack = str(REPO / "tests" / "fixtures" / "stacks" / "folded_single_sector_d2_n4.json")
    text = cli("stack", "--weights", stack, "--no-search")
    assert text.code == 0 and "verdict: undetermined" in text.out
    assert "single-sector folded" in text.out
    out = cli("stack", "--weights", stack, "--no-search", "--json")
    assert out.code == 0 and out.json()["verdict"] == "undetermined"
    target = tmp_path / "cert.json"
    refused = cli("stack", "--weights", stack, "--no-search", "--certificate-out", str(target))
    assert refused.code == 2 and "no kink certificate" in refused.err and not target.exists()
    both = cli("stack", "--weights", stack, "--recheck", str(target), "--certificate-out",
               str(tmp_path / "x.json"))
    assert both.code == 2 and "exclude each other" in both.err
    assert cli("stack", "--weights", str(tmp_path / "missing.json")).code == 2
