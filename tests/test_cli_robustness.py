"""The command line never crashes on a user's mistake: each case runs the real CLI (a fresh
interpreter where the point is what a user's shell sees) and checks exit code, the one-line
message and that nothing was written."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import REPO, CliResult, run_subprocess

from absorb import DISTRIBUTION
from absorb.budget import Cost, human_bytes, require, search_cost
from absorb.cli import build_parser
from absorb.commands.options import seed_type
from absorb.errors import AbsorbError

Cli = Callable[..., CliResult]
BLOCK = ["--activation", "relu", "--d", "2", "--n", "3"]


def _one_line_error(res: CliResult, code: int = 2) -> str:
    assert res.code == code, (res.code, res.err)
    assert "Traceback" not in res.err
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.err
    return lines[0]


def test_version_comes_from_the_package_metadata() -> None:
    res = run_subprocess(["--version"])
    assert res.code == 0, res.err
    assert res.out.strip() == f"absorb {metadata.version(DISTRIBUTION)}"


def test_the_console_script_imports_the_cli_inside_its_interrupt_guard() -> None:
    import importlib
    import tomllib

    target = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["absorb"]
    module, func = target.split(":")
    assert module == "absorb.__main__"
    source = (REPO / "python" / "absorb" / "__main__.py").read_text()
    assert "\nfrom absorb.cli" not in source and "\nimport numpy" not in source
    assert callable(getattr(importlib.import_module(module), func))


def test_every_option_says_what_it_does_and_its_default() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        text = p.format_help()
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name} {action.option_strings or action.dest}: no help"
            if action.option_strings and action.default not in (None, False) and (
                    action.default is not argparse.SUPPRESS):
                assert f"(default: {action.default})" in " ".join(text.split()), (
                    name, action.dest)


# --------------------------------------------------------------------------- Ctrl-C


def test_ctrl_c_during_report_exits_130_in_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "report"
    out.mkdir()  # an empty folder the user named: it must stay as it was
    err_path = tmp_path / "stderr"
    with err_path.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "absorb", "report", "--out", str(out)],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            # Wait until the run is under way (imports done, progress on stderr).
            deadline = time.monotonic() + 120
            while not err_path.read_text() and time.monotonic() < deadline:
                assert proc.poll() is None, err_path.read_text()
                time.sleep(0.1)
            time.sleep(0.5)
            assert proc.poll() is None, "the report finished before it could be interrupted"
            proc.send_signal(signal.SIGINT)
            stdout, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    stderr = err_path.read_text()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and stdout == ""
    assert stderr.rstrip().splitlines()[-1] == "interrupted"
    assert list(out.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report", "stderr"]


# --------------------------------------------------------------------------- budgets


def _capped(argv: list[str]) -> CliResult:
    """The CLI with 16 GiB of planning budget (ABSORB_MAX_MEMORY) whatever the machine, and a
    hard 4 GiB address-space limit so that a refusal that fails cannot exhaust the host."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    proc = subprocess.run([sys.executable, "-m", "absorb", *argv], capture_output=True,
                          text=True, cwd=REPO, timeout=300, check=False, preexec_fn=limit,
                          env={**os.environ, "ABSORB_MAX_MEMORY": str(16 << 30)})
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.parametrize(
    ("extra", "needs"),
    [
        (["--samples", "1e8"], "GiB of memory; 12.8 GiB is available"),
        (["--width-factor", "1e9"], "iB of memory; 12.8 GiB is available"),
        (["--steps", "1e12"], "floating-point operations"),
        (["--restarts", "1e12"], "floating-point operations"),
    ],
)
def test_absurd_search_options_are_refused_up_front(extra: list[str], needs: str) -> None:
    line = _one_line_error(_capped(["search", "--activation", "relu", "--d", "4", "--n", "16",
                                    *extra, "--json"]))
    assert "would need at least" in line and needs in line


def test_a_check_whose_certificate_would_not_fit_is_refused_up_front() -> None:
    # n > d²: the relaxation needs the eigendecomposition of the n×n Gram matrix (3n² floats)
    line = _one_line_error(_capped(["check", "--activation", "relu", "--d", "100", "--n",
                                    "600000", "--json"]))
    assert "relaxation certificate" in line and "TiB of memory; 12.8 GiB is available" in line


@pytest.mark.parametrize("value", ["1e300", "inf", "0", "-5", "nan", "soon"])
def test_a_timeout_the_os_cannot_wait_for_is_refused(value: str, cli: Cli) -> None:
    line = _one_line_error(cli("verify", "--root", str(REPO), "--timeout", value))
    assert "--timeout" in line


@pytest.mark.parametrize("size", ["1e400", "1.5", "nan", "2x"])
def test_sizes_must_be_whole_finite_numbers(size: str, cli: Cli) -> None:
    _one_line_error(cli("search", *BLOCK, "--samples", size))


def test_budget_arithmetic() -> None:
    cost = search_cost(4, 16, 16, samples=100_000_000, steps=1500, restarts=4)
    # over 3 scales: inputs, targets, held-out (3d) and four hidden arrays, 8 bytes each
    assert cost.bytes == 8 * 3 * 100_000_000 * (3 * 4 + 4 * 16)
    assert cost.flops == 6.0 * 4 * 1500 * 3 * 100_000_000 * 16 * 4
    require(Cost(1e9, 1e9), "a small job", memory=16 << 30)
    with pytest.raises(AbsorbError, match=r"at least 9\.31 GiB of memory; 6\.4 GiB"):
        require(Cost(1e10, 0), "a big job", memory=8 << 30)
    assert human_bytes(1536) == "1.5 KiB"


def test_memory_error_is_one_line_exit_2(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    import absorb.theory

    def exhausted(*args: object, **kwargs: object) -> None:
        np.empty(1 << 45)  # 256 TiB: numpy's own MemoryError (_ArrayMemoryError), as a real one

    monkeypatch.setattr(absorb.theory, "decide", exhausted)
    line = _one_line_error(cli("check", *BLOCK, "--json"))
    assert line.startswith("error: out of memory")


# --------------------------------------------------------------------------- seeds


@pytest.mark.parametrize("seed", ["-1", "1.5", "abc", "1e3", "", "0x10"])
@pytest.mark.parametrize(
    "argv",
    [
        ["check", *BLOCK],
        ["search", *BLOCK, "--restarts", "1", "--steps", "5", "--samples", "16"],
        ["report", "--out", "{tmp}/r"],
        ["inspect", "{tmp}/c.safetensors", "--activation", "relu"],
    ],
)
def test_bad_seeds_exit_2_everywhere(argv: list[str], seed: str, cli: Cli,
                                     tmp_path: Path) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    line = _one_line_error(cli(*argv, "--seed", seed))
    assert "--seed" in line
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing started


def test_bad_seed_through_a_fresh_interpreter() -> None:
    _one_line_error(run_subprocess(["report", "--out", "/nonexistent/r", "--seed", "-1"]))


def test_any_non_negative_integer_is_a_seed(cli: Cli) -> None:
    huge = str(2**256 + 12345)
    first = cli("check", *BLOCK, "--json", "--seed", huge)
    assert first.code == 0, first.err
    assert cli("check", *BLOCK, "--json", "--seed", huge).out == first.out
    assert seed_type(huge) == int(huge) and seed_type("0") == 0
    np.random.default_rng(seed_type(huge))  # what numpy accepts


# --------------------------------------------------------------------------- files and patterns


def test_a_directory_named_like_a_weights_file_is_not_a_file(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "x.npz").mkdir()
    line = _one_line_error(cli("check", "--activation", "relu", "--weights",
                               str(tmp_path / "x.npz")))
    assert "is a directory, not a file" in line
    line = _one_line_error(cli("check", "--activation", "relu", "--weights",
                               str(tmp_path / "y.npz")))
    assert "no such file" in line


@pytest.mark.parametrize("flag", ["--up", "--down", "--gate"])
def test_a_layer_pattern_without_i_is_refused(flag: str, cli: Cli, tmp_path: Path) -> None:
    line = _one_line_error(cli("inspect", str(tmp_path / "c.safetensors"), "--activation",
                               "relu", flag, "model.layers.0.mlp.weight"))
    assert "{i}" in line


def test_verify_json_is_an_object_even_when_a_tool_is_missing(tmp_path: Path) -> None:
    env_path = str(tmp_path)  # no lake, no elan
    proc = subprocess.run([sys.executable, "-m", "absorb", "verify", "--root", str(REPO),
                           "--json"], capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "PATH": env_path, "HOME": str(tmp_path)},
                          check=False)
    assert proc.returncode == 3, proc.stderr
    obj = json.loads(proc.stdout)
    assert obj["exit"] == 3 and "lake" in obj["error"] and set(obj) == {"error", "exit"}
    assert proc.stderr.strip() == f"error: {obj['error']}"


# --------------------------------------------------------------------------- benchmarks


def test_benchmarks_never_write_the_committed_results_unless_asked(tmp_path: Path) -> None:
    results = REPO / "benchmarks" / "results.md"
    before = results.read_bytes()
    mine = tmp_path / "notes.md"
    mine.write_text("my notes\n")
    for out in (results, tmp_path, mine, tmp_path / "no" / "such.md"):
        proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "run.py"), "--out",
                               str(out)], capture_output=True, text=True, cwd=tmp_path,
                              timeout=120, check=False)
        assert proc.returncode == 2 and proc.stderr.startswith("error: "), proc.stderr
        assert proc.stdout == ""  # refused before measuring anything
    assert results.read_bytes() == before and mine.read_text() == "my notes\n"


# --------------------------------------------------------------------------- atomic writes


def test_write_atomic_replaces_whole_files_and_leaves_no_temporaries(tmp_path: Path) -> None:
    from absorb.atomic_files import write_atomic

    target = tmp_path / "out.json"
    target.write_text("old")
    write_atomic(target, "new ü")
    assert target.read_text(encoding="utf-8") == "new ü"
    with pytest.raises(IsADirectoryError):
        write_atomic(tmp_path, "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_ctrl_c_during_a_group_of_renames_waits_for_the_group(tmp_path: Path) -> None:
    from absorb.atomic_files import interrupts_deferred, write_atomic

    names = [f"f{k}" for k in range(5)]
    with pytest.raises(KeyboardInterrupt), interrupts_deferred():
        for k, name in enumerate(names):
            write_atomic(tmp_path / name, "new")
            if k == 1:
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the middle of the group
    assert all((tmp_path / n).read_text() == "new" for n in names)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_benchmark_results_default_outside_the_tree(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    import importlib

    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    run = importlib.import_module("run")
    default = run.results_path(None, update=False, quick=True)
    assert default.parent == tmp_path / "absorb-benchmarks" and default.suffix == ".md"
    assert not default.resolve().is_relative_to(REPO)
    assert run.results_path(None, update=True, quick=False) == REPO / "benchmarks" / "results.md"


# --------------------------------------------------------------------------- bad input (issue 15)


def test_every_exit_2_error_under_json_is_also_one_json_object(cli: Cli, tmp_path: Path) -> None:
    """Usage errors, bad files and bad values alike: stdout holds exactly the error object."""
    (tmp_path / "w.json").write_text('{"W_up": [[1]], "W_down": [[1]], "W_up": [[2]]}')
    for argv in (["check", "--activation", "relu", "--weights", str(tmp_path / "w.json")],
                 ["check", "--activation", "nope", "--d", "2", "--n", "3"],
                 ["check", *BLOCK, "--no-such-option"]):
        res = cli(*argv, "--json")
        line = _one_line_error(res)
        assert json.loads(res.out) == {"error": line.removeprefix("error: "), "exit": 2}
        assert res.out.count("\n") == 1
        assert cli(*argv).out == ""  # without --json, stdout stays empty


@pytest.mark.parametrize("value", ["-5", "0", "abc", "1e400", "1.5", "nan", ""])
def test_a_bad_memory_cap_is_refused_by_every_command(value: str, cli: Cli,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ABSORB_MAX_MEMORY", value)
    for argv in (["check", *BLOCK], ["activations"]):
        line = _one_line_error(cli(*argv, "--json"))
        assert "ABSORB_MAX_MEMORY" in line and repr(value) in line


def test_a_good_memory_cap_is_read_as_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    from absorb.budget import available_memory

    for text, value in (("8e9", 8_000_000_000), (" 1024 ", 1024), ("1_000", 1000)):
        monkeypatch.setenv("ABSORB_MAX_MEMORY", text)
        assert available_memory() == value


def _read_only_folder(tmp_path: Path) -> Path:
    """A folder no file can be created in: permission bits where they bind, else (as root,
    whom they do not bind) /sys, a read-only file system in every container."""
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    sys_folder = Path("/sys")
    if not sys_folder.is_dir() or _creatable(sys_folder):
        pytest.skip("no read-only folder available to root here")
    return sys_folder


def _creatable(folder: Path) -> bool:
    try:
        (folder / ".absorb-test").touch()
    except OSError:
        return False
    (folder / ".absorb-test").unlink()
    return True


def test_report_into_a_read_only_folder_fails_before_computing(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import absorb.report

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report was computed")

    monkeypatch.setattr(absorb.report, "write_report", never)
    ro = _read_only_folder(tmp_path)
    for out in (ro, ro / "report", ro / "a" / "b"):
        res = cli("report", "--out", str(out), "--json")
        line = _one_line_error(res)
        assert "cannot write there" in line and json.loads(res.out)["exit"] == 2
    (tmp_path / "file").write_text("x")
    assert "is not a folder" in _one_line_error(cli("report", "--out", str(tmp_path / "file")))
    assert "is not a folder" in _one_line_error(cli("report", "--out",
                                                    str(tmp_path / "file" / "r")))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["file", *(["ro"] if ro.parent == tmp_path else [])])


@pytest.mark.parametrize(("text", "message"), [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"W_up": [[' + "1" * 5000 + ']], "W_down": [[1]]}', "run of 5000 digits"),
    ('{"W_up": [[1]], "W_down": [[1e99999]]}', "exponent beyond"),
])
def test_pathological_json_is_one_line_exit_2(text: str, message: str, cli: Cli,
                                              tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text(text)
    res = cli("check", "--activation", "relu", "--weights", str(tmp_path / "w.json"), "--json")
    assert message in _one_line_error(res)
