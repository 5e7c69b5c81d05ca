"""A new user's first hour with the command line: output piped into a reader that stops early,
one JSON error shape from every command, and `--help` texts that state every default, the
same as the README. (The light install is tested where the report runs: tests/test_report.py.)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.conftest import REPO, CliResult

from absorb.cli import build_parser
from absorb.commands import COMMANDS
from absorb.errors import EXIT_BROKEN_PIPE, EXIT_INTERNAL

Cli = Callable[..., CliResult]

# --------------------------------------------------------------------------- pipes


def _into_a_closed_pipe(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``absorb ARGV`` with stdout a pipe whose reader has already gone (``| head`` that has
    read what it wanted): every write to stdout fails with EPIPE, deterministically."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "absorb", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=300,
                              check=False)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("argv", [
    ["activations"],
    ["activations", "--json"],
    ["check", "--activation", "relu", "--d", "2", "--n", "3", "--no-search", "--json"],
])
def test_a_reader_that_stops_early_ends_the_command_quietly(argv: list[str]) -> None:
    proc = _into_a_closed_pipe(argv)
    assert proc.returncode == EXIT_BROKEN_PIPE, proc.stderr
    assert proc.stderr == ""  # no traceback, no "Exception ignored", no "internal error"


def test_an_error_into_a_closed_pipe_still_says_what_went_wrong() -> None:
    """The error line goes to stderr before stdout's JSON object, so it survives the pipe."""
    proc = _into_a_closed_pipe(["check", "--activation", "nosuch", "--d", "2", "--n", "3",
                                "--json"])
    assert proc.returncode == EXIT_BROKEN_PIPE
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "nosuch" in lines[0]


def test_head_reads_what_it_wants_and_the_command_stops() -> None:
    """A real reader, as `head -c 100`: the JSON of a d = 96 block (its certificate Y makes it
    about 150 kB, more than a pipe holds) is cut short, and the command ends quietly."""
    reader = ("import subprocess, sys; "
              "p = subprocess.Popen([sys.executable, '-m', 'absorb', 'check', '--activation', "
              "'relu', '--d', '96', '--n', '400', '--no-search', '--json'], "
              "stdout=subprocess.PIPE, stderr=subprocess.PIPE); "
              "first = p.stdout.read(100); p.stdout.close(); err = p.stderr.read(); "
              "print(p.wait(), len(first), repr(err.decode()))")
    proc = subprocess.run([sys.executable, "-c", reader], capture_output=True, text=True,
                          cwd=REPO, timeout=300, check=True)
    assert proc.stdout.split() == [str(EXIT_BROKEN_PIPE), "100", "''"]


# --------------------------------------------------------------------------- JSON errors


def _no_toolchain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))


#: One failing invocation per command (an error that comes after the options are parsed), and
#: the exit code it must have; a command added to COMMANDS needs its case here.
ERRORS: dict[str, tuple[list[str], int]] = {
    "activations": (["activations", "--json", "--no-such-option"], 2),
    "check": (["check", "--activation", "nosuch", "--d", "2", "--n", "3", "--json"], 2),
    "search": (["search", "--activation", "relu", "--json"], 2),
    "inspect": (["inspect", "{tmp}/absent.safetensors", "--json"], 2),
    "audit": (["audit", "--root", "{tmp}", "--json"], 2),
    "verify": (["verify", "--root", str(REPO), "--json"], 3),
    "report": (["report", "--out", "{tmp}/file.txt", "--json"], 2),
    "stack": (["stack", "--weights", "{tmp}/absent.json", "--json"], 2),
    "blueprint": (["blueprint", "--out", "{tmp}/bp", "--verify", "--root", str(REPO),
                   "--json"], 3),
}


def _the_error_object(res: CliResult, code: int) -> None:
    assert res.code == code, res.err
    lines = res.err.splitlines()
    assert len(lines) == 1 and lines[0].split(": ", 1)[0] in ("error", "internal error")
    assert json.loads(res.out) == {"error": lines[0].split(": ", 1)[1], "exit": code}
    assert res.out.count("\n") == 1  # one object, nothing else on stdout


def test_every_command_has_an_error_case() -> None:
    assert set(ERRORS) == {c.NAME for c in COMMANDS}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_every_error_is_one_json_shape(name: str, cli: Cli, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _no_toolchain(monkeypatch, tmp_path)
    (tmp_path / "file.txt").write_text("mine")
    argv, code = ERRORS[name]
    _the_error_object(cli(*[a.replace("{tmp}", str(tmp_path)) for a in argv]), code)


def test_errors_before_parsing_and_internal_errors_have_the_same_shape(
        cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    _the_error_object(cli("--json", "nosuchcommand"), 2)
    _the_error_object(cli("check", "--json", "--activation"), 2)  # a missing value

    import absorb.theory

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(absorb.theory, "decide", broken)
    res = cli("check", "--activation", "relu", "--d", "2", "--n", "3", "--json")
    _the_error_object(res, EXIT_INTERNAL)
    assert res.err.strip() == "internal error: RuntimeError: boom"


def test_only_the_command_line_writes_error_objects() -> None:
    """The shape lives in one place (absorb.cli._fail): no other module builds an object with
    an exit code in it."""
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "python" / "absorb").rglob("*.py")
                 if p.name != "cli.py"
                 and re.search(r"""["'](exit|exit_code)["']\s*:""", p.read_text("utf-8"))]
    assert offenders == []


# --------------------------------------------------------------------------- --help defaults


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _option_help(sub: argparse.ArgumentParser, option: str) -> str:
    """The option's help as --help prints it (defaults filled in), on one line."""
    action = next(a for a in sub._actions if option in a.option_strings)
    return " ".join(sub._get_formatter()._expand_help(action).split())


def test_every_option_states_its_default() -> None:
    """An option that takes a value states what happens without it, exactly once: argparse's
    ``(default: X)``, or the help's own words where the default is not one value."""
    missing = []
    for name, sub in _subparsers().items():
        for action in sub._actions:
            takes_value = action.nargs != 0 and not isinstance(action, argparse._HelpAction)
            if not action.option_strings or action.required or not takes_value:
                continue
            text = _option_help(sub, action.option_strings[0])
            if text.count("(default: ") != 1:
                missing.append(f"{name} {action.option_strings[0]}: {text!r}")
    assert missing == []


def test_the_readmes_defaults_are_the_help_texts() -> None:
    """Where the README states an option's default (`` `CMD --OPTION …` … (default: X)``), the
    command's --help states the same."""
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    subs = _subparsers()
    stated = re.findall(r"`(\w+) (--[\w-]+)[^`]*`[^`()]*\(default: ([^)]*)\)", readme)
    assert len(stated) >= 2, stated
    for command, option, default in stated:
        assert command in subs, command
        assert f"(default: {default})" in _option_help(subs[command], option), (command, option)


def test_the_search_defaults_in_its_help_are_the_codes() -> None:
    from absorb.activations import get_activation
    from absorb.blocks import random_block
    from absorb.fits.fit import DEFAULT_STEPS, default_samples
    from absorb.stacks.fit import STACK_SAMPLES, STACK_STEPS

    sub = _subparsers()["search"]
    assert (f"(default: {DEFAULT_STEPS['lm']} for lm, {DEFAULT_STEPS['adam']} for adam, "
            f"{STACK_STEPS} for a stack)") in _option_help(sub, "--steps")
    block = random_block(get_activation("relu"), 2, 3, np.random.default_rng(0))
    per_unit = default_samples(block, 40, "lm") // 40
    low, high = default_samples(block, 1, "lm"), default_samples(block, 10**6, "lm")
    assert (f"(default: {per_unit} per unit, {low} to {high}, for lm; "
            f"{default_samples(block, 3, 'adam')} for adam; {STACK_SAMPLES} for a stack)"
            ) in _option_help(sub, "--samples")


# --------------------------------------------------------------------------- search's control


def test_a_failed_positive_control_is_loud_at_any_budget(cli: Cli) -> None:
    """One restart of two LM steps do not fit the planted control: the text, the JSON and the
    exit code say so (the numbers are then no evidence either way)."""
    small = ("search", "--activation", "gelu", "--d", "4", "--n", "16", "--restarts", "1",
             "--steps", "2")
    text = cli(*small)
    assert text.code == 4
    assert "POSITIVE CONTROL FAILED" in text.out and "summary: POSITIVE CONTROL FAILED" in text.out
    assert text.err.splitlines()[-1].startswith("error: POSITIVE CONTROL FAILED")
    res = cli(*small, "--json")
    ctrl = res.json()["control"]
    assert res.code == 4 and isinstance(ctrl, dict)
    assert ctrl["recovered"] is False and ctrl["max_relative_error"] > ctrl["found_tol"]
    assert str(ctrl["failure"]).startswith("POSITIVE CONTROL FAILED")
    assert res.err.splitlines()[-1] == f"error: {ctrl['failure']}"


def test_a_recovered_control_is_said_to_be_recovered(cli: Cli) -> None:
    res = cli("search", "--activation", "relu", "--d", "2", "--n", "3", "--restarts", "1",
              "--steps", "20", "--samples", "64", "--json")
    ctrl = res.json()["control"]
    assert res.code == 0 and isinstance(ctrl, dict)
    assert ctrl["recovered"] is True and ctrl["max_relative_error"] <= ctrl["found_tol"]
    assert ctrl["failure"] is None and "POSITIVE CONTROL" not in str(res.json()["summary"])


# --------------------------------------------------------------------------- proof texts


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_a_proof_without_a_certificate_says_why(seed: int, cli: Cli, write_json: Any) -> None:
    """Integer weights with r² = 0 and no index set: the exact search decides, and the proof
    says why no dual certificate stands beside it (it once ended "no dual certificate: ")."""
    rng = np.random.default_rng(seed)
    path = write_json({"W_up": rng.integers(-4, 5, (6, 2)).tolist(),
                       "W_down": rng.integers(-4, 5, (2, 6)).tolist()})
    res = cli("check", "--activation", "relu", "--weights", str(path), "--no-search", "--json")
    cert = res.json()["certificate"]
    assert res.code == 0 and res.json()["verdict"] == "not_absorbed" and isinstance(cert, dict)
    proof = str(cert["proof"])
    assert "no dual certificate (" in proof and not re.search(r":\s*($|[;),])", proof), proof
    text = cli("check", "--activation", "relu", "--weights", str(path), "--no-search")
    assert not re.search(r":\s*$", text.out, flags=re.MULTILINE), text.out
