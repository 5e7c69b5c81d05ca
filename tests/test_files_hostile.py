"""Files in, files out, under attack: hostile checkpoints, Hub caches, scan caches and output
paths, each built here in tmp_path. Every case ends in a one-line refusal (exit 2) before any
work, or in the right answer; nothing is read outside the named input, nothing of the user's
is overwritten without --force, no cached verdict is used without its re-check, nothing
hangs, and nothing is left behind (README, "Security and files")."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file
from tests.conftest import REPO, CliResult
from tests.test_checkpoint import BERT_CONFIG, BERT_DOWN, BERT_UP, mlp_tensors, write
from tests.test_cli_robustness import _one_line_error, _read_only_folder
from tests.test_scan import DOWN, LAYERS, PATTERNS, UP, results
from tests.test_scan import model as model  # the scan tests' six layers, two planted

from absorb.errors import AbsorbError
from absorb.scan import runners
from absorb.scan.inspect import inspect_checkpoint

Cli = Callable[..., CliResult]
RELU = ("--up", UP, "--down", DOWN, "--activation", "relu")


def _layers(rng: np.random.Generator, count: int = 2, d: int = 3, n: int = 10,
            dtype: Any = np.float64) -> dict[str, np.ndarray]:
    return {name.format(i=i): rng.standard_normal(shape).astype(dtype)
            for i in range(count) for name, shape in ((UP, (n, d)), (DOWN, (d, n)))}


def _subprocess(argv: list[str], cwd: Path, timeout: float = 120) -> CliResult:
    """``python -m absorb ARGV`` with this tree first on the path; a hang fails the test
    (TimeoutExpired) instead of blocking the suite."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO / "python"), str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "absorb", *argv], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout, env=env, check=False)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


# ---------------------------------------------------------------- inputs: sharded indexes


def _index(folder: Path, weight_map: dict[str, str]) -> Path:
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return index


@pytest.mark.parametrize("where", ["../secret/x.safetensors", "ABSOLUTE", "sub/../../x.safetensors",
                                   "link.safetensors"])
def test_shards_outside_the_folder_are_refused(where: str, tmp_path: Path,
                                               rng: np.random.Generator, cli: Cli) -> None:
    secret = tmp_path / "secret"
    write(secret, _layers(rng), name="x.safetensors")
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    if where == "ABSOLUTE":
        where = str(secret / "x.safetensors")
    if where == "link.safetensors":
        (ckpt / where).symlink_to(secret / "x.safetensors")
    _index(ckpt, {k: where for k in _layers(rng)})
    res = cli("inspect", str(ckpt), *RELU)
    line = _one_line_error(res)
    assert "refused" in line and "layer" not in res.out


def test_a_symlink_out_of_a_plain_folder_is_refused(tmp_path: Path, rng: np.random.Generator,
                                                    cli: Cli) -> None:
    write(tmp_path / "elsewhere", _layers(rng))
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "model.safetensors").symlink_to(tmp_path / "elsewhere" / "model.safetensors")
    assert "outside the checkpoint folder" in _one_line_error(cli("inspect", str(ckpt), *RELU))
    # a link that stays inside the folder is read
    (ckpt / "model.safetensors").unlink()
    os.replace(tmp_path / "elsewhere" / "model.safetensors", ckpt / "weights.bin")
    (ckpt / "model.safetensors").symlink_to("weights.bin")
    assert cli("inspect", str(ckpt), *RELU).code == 0


def test_a_single_file_wins_over_an_index_as_in_transformers(
        tmp_path: Path, rng: np.random.Generator) -> None:
    """transformers' from_pretrained loads ``model.safetensors`` when the folder has it, before
    looking for ``model.safetensors.index.json``; so does the scan."""
    single, sharded = _layers(rng), _layers(rng)
    ckpt = tmp_path / "both"
    write(ckpt, single)
    write(ckpt, sharded, name="shard.safetensors")
    _index(ckpt, {k: "shard.safetensors" for k in sharded})
    alone = write(tmp_path / "alone", single)
    both = inspect_checkpoint(ckpt, **PATTERNS)
    assert both["files"] == [str(ckpt / "model.safetensors")]
    assert results(both) == results(inspect_checkpoint(alone, **PATTERNS))


# ---------------------------------------------------------------- inputs: the Hub cache

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub_home(tmp_path: Path, rng: np.random.Generator,
             monkeypatch: pytest.MonkeyPatch) -> Path:
    """HF_HOME whose org/tiny-bert snapshot holds links into blobs/, as the Hub makes them."""
    pytest.importorskip("huggingface_hub")
    home = tmp_path / "hf"
    repo = home / "hub" / "models--org--tiny-bert"
    blobs = repo / "blobs"
    staged = write(tmp_path / "staged", mlp_tensors(rng, BERT_UP, BERT_DOWN), BERT_CONFIG)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    blobs.mkdir()
    for file in (staged, staged.parent / "config.json"):
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
        os.replace(file, blobs / digest)
        (snapshot / file.name).symlink_to(Path("..") / ".." / "blobs" / digest)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    return repo


def test_the_hub_caches_own_links_are_read(hub_home: Path) -> None:
    res = inspect_checkpoint("org/tiny-bert")
    assert len(res["layers"]) == 2  # type: ignore[arg-type]
    assert all(Path(f).is_symlink() for f in res["files"])  # type: ignore[attr-defined]


@pytest.mark.parametrize("rev", ["../../file", "main/../..", ".hidden", "a//b", "x\ny"])
def test_a_revision_that_is_not_a_name_is_refused(rev: str, hub_home: Path) -> None:
    with pytest.raises(AbsorbError, match="is not a branch, tag or commit name"):
        inspect_checkpoint(f"org/tiny-bert@{rev}")


@pytest.mark.parametrize("ref", ["../../../../outside", COMMIT[:-1] + "/", "not-a-commit"])
def test_a_tampered_ref_does_not_lead_out_of_the_cache(ref: str, hub_home: Path,
                                                       tmp_path: Path,
                                                       rng: np.random.Generator) -> None:
    write(tmp_path / "outside", mlp_tensors(rng, BERT_UP, BERT_DOWN), BERT_CONFIG)
    write(hub_home / "snapshots" / "not-a-commit", mlp_tensors(rng, BERT_UP, BERT_DOWN),
          BERT_CONFIG)
    (hub_home / "refs" / "main").write_text(ref)
    with pytest.raises(AbsorbError, match="org/tiny-bert"):
        inspect_checkpoint("org/tiny-bert")


# ---------------------------------------------------------------- inputs: special files


@pytest.mark.parametrize("name", ["model.safetensors", "model.safetensors.index.json",
                                  "config.json"])
def test_a_fifo_is_refused_not_waited_on(name: str, tmp_path: Path,
                                         rng: np.random.Generator) -> None:
    ckpt = tmp_path / "ckpt"
    if name != "model.safetensors":
        write(ckpt, _layers(rng), name="shard.safetensors")
    ckpt.mkdir(exist_ok=True)
    os.mkfifo(ckpt / name)
    res = _subprocess(["inspect", str(ckpt), *RELU], tmp_path, timeout=60)
    assert res.code == 2 and "not a regular file" in res.err, res.err
    named = _subprocess(["inspect", str(ckpt / name), *RELU], tmp_path, timeout=60)
    assert named.code == 2 and "not a regular file" in named.err, named.err


@pytest.mark.parametrize("name", ["model.safetensors.index.json", "config.json"])
def test_a_folder_where_a_json_file_goes_is_refused(name: str, tmp_path: Path,
                                                    rng: np.random.Generator,
                                                    cli: Cli) -> None:
    """A folder named config.json or *.index.json: one line, exit 2 (it was an internal
    error, exit 1: IsADirectoryError from opening the folder's descriptor)."""
    ckpt = tmp_path / "ckpt"
    write(ckpt, _layers(rng), name="shard.safetensors")
    (ckpt / name).mkdir()
    assert "not a regular file" in _one_line_error(cli("inspect", str(ckpt), *RELU))


# ---------------------------------------------------------------- inputs: JSON and headers


@pytest.mark.parametrize(("text", "message"), [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"model_type": "bert", "hidden_size": ' + "7" * 5000 + "}", "run of 5000 digits"),
    ('{"model_type": "bert", "x": ' + '{"a": ' * 600 + "1" + "}" * 600 + "}",
     "nested too deeply"),
])
def test_pathological_config_and_index_json(text: str, message: str, tmp_path: Path,
                                            rng: np.random.Generator, cli: Cli) -> None:
    ckpt = tmp_path / "cfg"
    write(ckpt, mlp_tensors(rng, BERT_UP, BERT_DOWN))
    (ckpt / "config.json").write_text(text)
    assert message in _one_line_error(cli("inspect", str(ckpt)))
    sharded = tmp_path / "idx"
    write(sharded, _layers(rng), name="a.safetensors")
    (sharded / "model.safetensors.index.json").write_text(text)
    assert message in _one_line_error(cli("inspect", str(sharded), *RELU))


@pytest.mark.parametrize("value", [["gelu"], None, 3])
def test_an_activation_that_is_not_a_name_is_refused(value: object, tmp_path: Path,
                                                     rng: np.random.Generator,
                                                     cli: Cli) -> None:
    write(tmp_path / "m", mlp_tensors(rng, BERT_UP, BERT_DOWN), {**BERT_CONFIG,
                                                                 "hidden_act": value})
    line = _one_line_error(cli("inspect", str(tmp_path / "m")))
    assert "hidden_act" in line and "is not an activation name" in line


@pytest.mark.parametrize("index", ["\u0661", "\uff11", "01"])
def test_a_layer_index_that_is_not_plain_ascii_is_refused(index: str, tmp_path: Path,
                                                          rng: np.random.Generator,
                                                          cli: Cli) -> None:
    """'١' (Arabic-Indic one), '１' (fullwidth) and '01' would all be read as layer 1 by
    int(), and the name rebuilt from 1 is another tensor."""
    tensors = _layers(rng)
    tensors[UP.format(i=index)] = rng.standard_normal((10, 3))
    tensors[DOWN.format(i=index)] = rng.standard_normal((3, 10))
    write(tmp_path / "m", tensors)
    line = _one_line_error(cli("inspect", str(tmp_path / "m"), *RELU))
    assert repr(index) in line and "plain ASCII" in line


def test_a_zero_width_layer_is_refused(tmp_path: Path, rng: np.random.Generator,
                                       cli: Cli) -> None:
    tensors = _layers(rng)
    tensors[UP.format(i=2)], tensors[DOWN.format(i=2)] = np.zeros((0, 3)), np.zeros((3, 0))
    write(tmp_path / "m", tensors)
    assert "width or dimension 0" in _one_line_error(cli("inspect", str(tmp_path / "m"),
                                                         *RELU))


def test_an_int8_layer_is_refused_before_any_layer_is_decided(
        tmp_path: Path, rng: np.random.Generator, cli: Cli,
        monkeypatch: pytest.MonkeyPatch) -> None:
    tensors = _layers(rng, count=3)
    tensors[UP.format(i=2)] = rng.integers(-5, 5, (10, 3)).astype(np.int8)
    path = tmp_path / "m"
    path.mkdir()
    save_file(tensors, str(path / "model.safetensors"))

    def never(task: object) -> None:
        raise AssertionError("a layer was decided")

    monkeypatch.setattr(runners, "run_task", never)
    out = tmp_path / "scan"
    line = _one_line_error(cli("inspect", str(path), *RELU, "--out", str(out)))
    assert "unsupported tensor dtype I8" in line and "layer 2" in line
    assert not out.exists()


# ---------------------------------------------------------------- outputs: probed up front


@pytest.fixture
def small_model(tmp_path: Path, rng: np.random.Generator) -> Path:
    return write(tmp_path / "small", _layers(rng), dtype=np.float64)


def _places(tmp_path: Path) -> dict[str, Path]:
    """Output paths that cannot be written: under a file, through a dangling link, in a
    read-only place."""
    (tmp_path / "file").write_text("mine")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "x")
    return {"under a file": tmp_path / "file" / "out", "dangling link": tmp_path / "dangling",
            "read-only": _read_only_folder(tmp_path) / "out"}


@pytest.mark.parametrize("option", ["--out", "--cache-dir"])
def test_inspect_outputs_are_probed_before_the_work(option: str, small_model: Path,
                                                    tmp_path: Path, cli: Cli,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def never(task: object) -> None:
        raise AssertionError("a layer was decided")

    monkeypatch.setattr(runners, "run_task", never)
    for what, place in _places(tmp_path).items():
        before = sorted(p.name for p in tmp_path.iterdir())
        _one_line_error(cli("inspect", str(small_model), *RELU, option, str(place)))
        assert sorted(p.name for p in tmp_path.iterdir()) == before, what
    res = cli("inspect", str(small_model), *RELU, "--out", str(tmp_path / "s"), "--cache-dir",
              str(tmp_path / "s"))
    assert "name the same path" in _one_line_error(res)


@pytest.mark.parametrize("name", ["inspect.json", "summary.html", "summary.png"])
def test_a_folder_where_a_scan_file_goes_is_refused_before_the_work(
        name: str, small_model: Path, tmp_path: Path, cli: Cli,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An earlier scan's --out whose inspect.json (or summary) is now a folder: refused up
    front (it ended, after every layer, in 'internal error: IsADirectoryError', exit 1)."""
    out = tmp_path / "scan"
    assert cli("inspect", str(small_model), *RELU, "--out", str(out)).code == 0
    (out / name).unlink()
    (out / name / "x").mkdir(parents=True)

    def never(task: object) -> None:
        raise AssertionError("a layer was decided")

    monkeypatch.setattr(runners, "run_task", never)
    assert "is a folder" in _one_line_error(cli("inspect", str(small_model), *RELU, "--out",
                                                str(out)))


@pytest.mark.parametrize("option", ["--certificate-out", "--export-lean"])
def test_check_outputs_are_probed_before_the_work(option: str, tmp_path: Path,
                                                  cli: Cli) -> None:
    block = ("check", "--activation", "relu", "--d", "2", "--n", "3")
    for what, place in _places(tmp_path).items():
        _one_line_error(cli(*block, option, str(place)))
        assert not os.path.exists(place), what
    assert "exists; pass --force" in _one_line_error(cli(*block, option,
                                                         str(tmp_path / "file")))
    assert (tmp_path / "file").read_text() == "mine"


def test_two_outputs_on_one_path_are_refused(tmp_path: Path, cli: Cli) -> None:
    target = tmp_path / "cert.json"
    (tmp_path / "alias").symlink_to(tmp_path)
    for second in (target, tmp_path / "alias" / "cert.json"):
        res = cli("check", "--activation", "relu", "--d", "2", "--n", "3",
                  "--certificate-out", str(target), "--export-lean", str(second))
        assert "name the same path" in _one_line_error(res)
    assert not target.exists()
    weights = tmp_path / "w.json"
    weights.write_text(json.dumps({"W_up": [[1], [2]], "W_down": [[1, 1]]}))
    res = cli("check", "--activation", "relu", "--weights", str(weights), "--force",
              "--certificate-out", str(weights))
    assert "--weights and --certificate-out name the same path" in _one_line_error(res)
    assert json.loads(weights.read_text()) == {"W_up": [[1], [2]], "W_down": [[1, 1]]}


def test_report_out_through_a_dangling_link_is_refused(tmp_path: Path, cli: Cli,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import absorb.report

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report was computed")

    monkeypatch.setattr(absorb.report, "write_report", never)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert "symbolic link to nothing" in _one_line_error(
        cli("report", "--out", str(tmp_path / "dangling")))


def test_a_folder_where_a_report_file_goes_is_refused_before_the_work(
        tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """An earlier report whose report.json became a folder: refused up front (it ended,
    after the whole report, in 'internal error: IsADirectoryError', exit 1)."""
    import absorb.report.write

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report was computed")

    monkeypatch.setattr(absorb.report.write, "build_report", never)
    out = tmp_path / "rep"
    (out / "report.json").mkdir(parents=True)
    (out / absorb.report.write.MARKER).write_text(json.dumps({"files": ["report.json"]}))
    assert "is a folder" in _one_line_error(cli("report", "--out", str(out)))


# ---------------------------------------------------------------- outputs: blueprint


def test_blueprint_never_overwrites_a_users_project(tmp_path: Path, cli: Cli) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    mine = {"src/content.tex": "\\chapter{Mine}\n", "src/web.tex": "\\documentclass{report}\n"}
    for name, text in mine.items():
        (project / name).write_text(text)
    args = ("blueprint", "--sources-only", "--out", str(project))
    assert "holds no earlier blueprint" in _one_line_error(cli(*args))
    assert {n: (project / n).read_text() for n in mine} == mine
    # absorb's own output may be rewritten, until a source is edited by hand
    ours = tmp_path / "ours"
    assert cli("blueprint", "--sources-only", "--out", str(ours)).code == 0
    assert cli("blueprint", "--sources-only", "--out", str(ours)).code == 0
    (ours / "src" / "content.tex").write_text("edited\n")
    assert "edited since" in _one_line_error(cli("blueprint", "--sources-only", "--out",
                                                 str(ours)))
    assert (ours / "src" / "content.tex").read_text() == "edited\n"
    assert cli(*args, "--force").code == 0
    assert "\\chapter{Mine}" not in (project / "src" / "content.tex").read_text()


@pytest.mark.parametrize("where", ["src/content.tex", ".absorb-blueprint"])
@pytest.mark.parametrize("what", ["FIFO", "folder"])
def test_blueprint_over_a_fifo_or_folder_is_refused(where: str, what: str, tmp_path: Path,
                                                    cli: Cli) -> None:
    """An earlier blueprint whose source or marker became a FIFO (reading it for its SHA-256
    hung) or a folder (--force ended in an internal error, exit 1): one line, exit 2 — a
    FIFO is not absorb's file, a folder is refused even with --force."""
    out = tmp_path / "bp"
    args = ("blueprint", "--sources-only", "--out", str(out))
    assert cli(*args).code == 0
    (out / where).unlink()
    if what == "FIFO":
        os.mkfifo(out / where)
        _one_line_error(cli(*args))
        assert cli(*args, "--force").code == 0 and (out / where).is_file()
    else:
        (out / where).mkdir()
        for force in ((), ("--force",)):
            assert "is a folder" in _one_line_error(cli(*args, *force))


def test_blueprint_onto_a_file_is_refused(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "file").write_text("mine")
    for out in (tmp_path / "file", tmp_path / "file" / "bp"):
        assert "not a folder" in _one_line_error(cli("blueprint", "--sources-only", "--out",
                                                     str(out)))
    assert (tmp_path / "file").read_text() == "mine"


# ---------------------------------------------------------------- outputs: SIGTERM


SIGTERM_WRITE = """
import os, signal, sys
import absorb.atomic_files as af
real = os.fsync
def fsync(fd):
    real(fd)
    os.kill(os.getpid(), signal.SIGTERM)  # delivered while the temporary file exists
af.os.fsync = fsync
from absorb.cli import main
sys.exit(main(sys.argv[1:]))
"""

SIGTERM_REPORT = """
import os, signal, sys, time
import absorb.report.write as w
w.build_report = lambda seed, progress, root: {"theorems": [], "errored": []}
def stop(report, names):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
w.render_markdown = stop
from absorb.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _python(code: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO / "python"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=120, env=env, check=False)


def test_sigterm_leaves_no_temporary_file_or_folder(tmp_path: Path) -> None:
    run = _python(SIGTERM_WRITE, ["check", "--activation", "relu", "--d", "2", "--n", "3",
                                  "--certificate-out", str(tmp_path / "cert.json")], tmp_path)
    assert run.returncode == 130 and run.stderr.strip().endswith("interrupted"), run.stderr
    assert list(tmp_path.iterdir()) == []
    report = _python(SIGTERM_REPORT, ["report", "--out", str(tmp_path / "rep")], tmp_path)
    assert report.returncode == 130, report.stderr
    assert list(tmp_path.iterdir()) == []  # no .rep.tmp-* folder


# ---------------------------------------------------------------- the cache is data


def _edit(entry: Path, change: Callable[[Any], Any]) -> None:
    entry.write_text(json.dumps(change(json.loads(entry.read_text()))))


def _absorbed(entry: dict[str, Any]) -> dict[str, Any]:
    verdict = entry["verdict"]
    verdict.update(verdict="absorbed", theorem="index_set_sufficient", S=[0, 1, 2],
                   proof={"kind": "index set"}, condition_exact=True)
    return entry


def _npy_zeros(cache: Path) -> None:
    for npy in cache.glob("*.npy"):
        np.save(npy, np.zeros_like(np.load(npy)))


def _margin(entry: dict[str, Any]) -> dict[str, Any]:
    entry["verdict"]["certificate"]["dual"]["margin_float"] *= 10
    return entry


def _rounding(entry: dict[str, Any]) -> dict[str, Any]:
    entry["verdict"]["distance_in_unit_roundoffs"] = 0.5
    return entry


def _fifo(entry: Path) -> None:
    entry.unlink()
    os.mkfifo(entry)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "edited to absorbed": lambda c: [_edit(e, _absorbed) for e in c.glob("*.json")] and None,
    "Y replaced by zeros": _npy_zeros,
    "Y deleted": lambda c: [e.unlink() for e in c.glob("*.npy")] and None,
    "Y not a matrix": lambda c: [np.save(e, np.zeros(3)) for e in c.glob("*.npy")] and None,
    "margin edited": lambda c: [_edit(e, _margin) for e in c.glob("*.json")
                                if "not_absorbed" in e.read_text()] and None,
    "roundoffs edited": lambda c: [_edit(e, _rounding) for e in c.glob("*.json")
                                   if "up_to_rounding" in e.read_text()] and None,
    "a list": lambda c: [e.write_text("[1, 2]") for e in c.glob("*.json")] and None,
    "fields missing": lambda c: [_edit(e, lambda x: {"version": x["version"], "key": x["key"],
                                                     "digest": x["digest"], "seconds": 1.0,
                                                     "verdict": {"verdict": "not_absorbed"}})
                                 for e in c.glob("*.json")] and None,
    "another layer's digest": lambda c: [_edit(e, lambda x: {**x, "digest": "0" * 64})
                                         for e in c.glob("*.json")] and None,
    "not JSON": lambda c: [e.write_bytes(b"\xff\x00") for e in c.glob("*.json")] and None,
    # a read of a FIFO waits for a writer: it hung the scan
    "a FIFO": lambda c: [_fifo(e) for e in c.glob("*.json")] and None,
    "Y a FIFO": lambda c: [_fifo(e) for e in c.glob("*.npy")] and None,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_cache_entry_is_recomputed_never_trusted(
        damage: str, model: Path, tmp_path: Path, cli: Cli) -> None:
    cache = tmp_path / "cache"
    first = inspect_checkpoint(model, cache_dir=cache, **PATTERNS)
    kinds = {r["verdict"] for r in first["layers"]}  # type: ignore[attr-defined]
    assert {"not_absorbed", "absorbable_up_to_rounding"} <= kinds
    clean = inspect_checkpoint(model, cache_dir=cache, **PATTERNS)
    assert clean["scan"]["cached_layers"] == LAYERS  # type: ignore[index]
    DAMAGE[damage](cache)
    again = inspect_checkpoint(model, cache_dir=cache, **PATTERNS)
    assert results(again) == results(first)
    assert again["scan"]["computed_layers"] > 0  # type: ignore[index]
    # the command line too: exit 0, the right verdicts, and the entries mended
    DAMAGE[damage](cache)
    res = cli("inspect", str(model), *RELU, "--cache-dir", str(cache), "--json")
    assert res.code == 0, res.err
    assert [r["verdict"] for r in res.json()["layers"]] == [  # type: ignore[attr-defined]
        r["verdict"] for r in first["layers"]]  # type: ignore[attr-defined]
    assert inspect_checkpoint(model, cache_dir=cache,
                              **PATTERNS)["scan"]["cached_layers"] == LAYERS  # type: ignore[index]


# ---------------------------------------------------------------- schedulers


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed when the socket is: nothing listens there


@pytest.mark.parametrize("address", ["notaurl", "notanaddress", "inproc://x",
                                     "tcp://127.0.0.1:99999", "http://127.0.0.1:8786",
                                     "CLOSED"])
def test_a_bad_scheduler_is_one_line_without_waiting(address: str, small_model: Path,
                                                     tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    if address == "CLOSED":
        address = f"tcp://127.0.0.1:{_closed_port()}"
    res = _subprocess(["inspect", str(small_model), *RELU, "--scheduler", address], tmp_path,
                      timeout=60)
    assert res.code == 2 and res.err.count("\n") == 1, res.err
    assert res.err.startswith(f"error: --scheduler {address}: ") and "Traceback" not in res.err


@pytest.mark.parametrize("answer", [b"", b"HTTP/1.0 400 Bad Request\r\n\r\n" * 4])
def test_a_port_that_is_no_scheduler_is_refused_without_hanging(answer: bytes,
                                                                small_model: Path,
                                                                tmp_path: Path) -> None:
    """A listener that accepts the connection and then stays silent (or answers as a web
    server would): Dask's client would wait for its handshake forever; refused in one line."""
    pytest.importorskip("distributed")
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return  # the test closed the server
            held.append(conn)
            conn.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    try:
        res = _subprocess(["inspect", str(small_model), *RELU, "--scheduler", address],
                          tmp_path, timeout=60)
    finally:
        server.close()
        for conn in held:
            conn.close()
    assert res.code == 2 and res.err.count("\n") == 1, res.err
    assert res.err.startswith(f"error: --scheduler {address}: no Dask scheduler")


# ---------------------------------------------------------------- scans that fit on disk


def _random_layers(rng: np.random.Generator, d: int, count: int = 2) -> dict[str, np.ndarray]:
    return {name.format(i=i): rng.standard_normal(shape)
            for i in range(count) for name, shape in ((UP, (4 * d, d)), (DOWN, (d, 4 * d)))}


def test_scan_output_does_not_grow_with_d_squared(tmp_path: Path, rng: np.random.Generator,
                                                  cli: Cli) -> None:
    """Records carry the digest and the certificate's summary; Y (d² entries) only with
    --keep-witness, whose SHA-256 is the one the default record states."""
    sizes: dict[tuple[int, bool], int] = {}
    shas: list[object] = []
    for d in (6, 24):
        path = write(tmp_path / f"d{d}", _random_layers(rng, d), dtype=np.float64)
        for keep in (False, True):
            out = tmp_path / f"scan{d}{keep}"
            res = cli("inspect", str(path), *RELU, "--out", str(out),
                      *(["--keep-witness"] if keep else []), "--json")
            assert res.code == 0, res.err
            rows = res.json()["layers"]
            assert all(r["verdict"] == "not_absorbed" for r in rows)  # type: ignore[attr-defined]
            duals = [r["certificate"]["dual"] for r in rows]  # type: ignore[attr-defined]
            assert all(len(r["digest"]) == 64 for r in rows)  # type: ignore[attr-defined]
            if keep:
                assert all(len(y["Y"]) == d for y in duals)
                assert "witnesses kept (--keep-witness): up to" in res.err
                kept = [hashlib.sha256(json.dumps(y["Y"], separators=(",", ":")).encode())
                        .hexdigest() for y in duals]
                assert kept == shas
            else:
                assert all(y["Y"] is None and "margin" in y for y in duals)
                shas = [y["Y_sha256"] for y in duals]
            sizes[d, keep] = (out / "inspect.json").stat().st_size
    # 16 times the entries: the kept witnesses grow with them, the default output does not
    assert sizes[24, True] - sizes[24, False] > 8 * (sizes[6, True] - sizes[6, False])
    assert sizes[24, False] < 1.5 * sizes[6, False]


def test_keep_witness_refused_when_it_would_not_fit(tmp_path: Path, rng: np.random.Generator,
                                                    cli: Cli,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from absorb.scan import driver

    path = write(tmp_path / "m", _random_layers(rng, 6), dtype=np.float64)
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(driver.shutil, "disk_usage",
                        lambda p: usage._replace(free=100))
    res = cli("inspect", str(path), *RELU, "--out", str(tmp_path / "s"), "--keep-witness")
    assert "--keep-witness" in _one_line_error(res) and not (tmp_path / "s").exists()


# ---------------------------------------------------------------- exact checks cost digits


def _long_stack(layers: int, digits: int, rng: np.random.Generator) -> dict[str, object]:
    """A ReLU stack of planted exact layers (d = 2, n = 4): units 0, 1, 2 have b = e_0, e_1,
    (1, 1) and a_j = −e_j − v, a_2 = v, so Σ a_i b_iᵀ = −I; v and unit 3 are rationals of
    ``digits`` digits."""
    def big() -> Fraction:
        return Fraction(int(rng.integers(1, 10)) * 10 ** (digits - 1) + 7,
                        int(rng.integers(1, 10)) * 10 ** (digits - 1) + 3)

    out = []
    for _ in range(layers):
        v = [big(), big()]
        W_up = [[1, 0], [0, 1], [1, 1], [big(), big()]]
        W_down = [[-int(r == j) - v[r] for j in range(2)] + [v[r], big()] for r in range(2)]
        out.append({k: [[str(Fraction(q)) for q in row] for row in M]
                    for k, M in (("W_up", W_up), ("W_down", W_down))})
    return {"layers": out}


def test_the_exact_point_check_is_bounded_by_digits_too(
        tmp_path: Path, rng: np.random.Generator, cli: Cli,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from absorb.stacks import decide

    short, long = _long_stack(4, 3, rng), _long_stack(4, 60, rng)
    for doc, name in ((short, "short.json"), (long, "long.json")):
        (tmp_path / name).write_text(json.dumps(doc))
    cost = {name: decide.exact_check_cost([(2, 4, bits)] * layers, 72)
            for name, layers, bits in (("short", 4, 20), ("long", 4, 400),
                                       ("deep", 1024, 400))}
    assert cost["short"] < cost["long"] and cost["deep"] > decide.MAX_EXACT_CHECK_BITS
    res = cli("check", "--activation", "relu", "--weights", str(tmp_path / "long.json"),
              "--json", "--no-search")
    assert res.code == 0 and res.json()["verdict"] == "absorbed"
    assert res.json()["exact_check"]["equal"] is True
    monkeypatch.setattr(decide, "MAX_EXACT_CHECK_BITS", 1.0)
    capped = cli("check", "--activation", "relu", "--weights", str(tmp_path / "long.json"),
                 "--json", "--no-search")
    assert capped.code == 0 and capped.json()["verdict"] == "absorbed"
    skipped = capped.json()["exact_check"]
    assert skipped["equal"] is None and "bit operations" in skipped["skipped"]


# ---------------------------------------------------------------- the depth scan


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


_TRICKY = st.text(alphabet='[]{}"\\aé\u2028', max_size=6)
_JSON = st.recursive(st.none() | st.integers() | _TRICKY,
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_TRICKY, inner, max_size=3), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(value=_JSON, ascii_only=st.booleans())
def test_the_depth_scan_counts_exactly_the_nesting(value: object, ascii_only: bool) -> None:
    """check_depth refuses a document iff it nests deeper than MAX_DEPTH: brackets and escaped
    quotes inside strings do not count (compared with the depth of the decoded value)."""
    from absorb import numbers

    text = json.dumps(value, ensure_ascii=ascii_only)
    depth = _depth(value)
    saved = numbers.MAX_DEPTH
    try:
        numbers.MAX_DEPTH = depth
        numbers.check_depth(text)
        if depth > 0:
            numbers.MAX_DEPTH = depth - 1
            with pytest.raises(AbsorbError, match="nested too deeply"):
                numbers.check_depth(text)
    finally:
        numbers.MAX_DEPTH = saved
