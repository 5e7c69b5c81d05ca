"""``inspect org/name[@revision]`` from a Hugging Face cache folder built here, offline.

No test touches the network: HF_HUB_OFFLINE=1 throughout, and the cache is a folder in
the Hub's layout (models--org--name/refs/main, snapshots/<commit>/...) made by the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.conftest import CliResult
from tests.test_checkpoint import BERT_CONFIG, BERT_DOWN, BERT_UP, mlp_tensors, write
from tests.test_scan import results

from absorb.checkpoints.hub import parse_hub_id
from absorb.errors import AbsorbError
from absorb.scan.inspect import inspect_checkpoint

pytest.importorskip("huggingface_hub")

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub(tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HF_HOME with org/tiny-bert cached at COMMIT (refs/main points to it); offline."""
    home = tmp_path / "hf"
    repo = home / "hub" / "models--org--tiny-bert"
    write(repo / "snapshots" / COMMIT, mlp_tensors(rng, BERT_UP, BERT_DOWN), BERT_CONFIG)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    return repo / "snapshots" / COMMIT


def test_parse_hub_id() -> None:
    assert parse_hub_id("org/name") == ("org/name", None)
    assert parse_hub_id("EleutherAI/pythia-70m@v1.0") == ("EleutherAI/pythia-70m", "v1.0")
    assert parse_hub_id("name") is None and parse_hub_id("a/b/c") is None
    assert parse_hub_id("/abs/path") is None
    assert parse_hub_id("dir/model.safetensors") is None
    assert parse_hub_id("dir/model.safetensors.index.json") is None


def test_a_model_id_is_read_from_the_cache(hub: Path) -> None:
    local = inspect_checkpoint(hub)
    for ref in ("org/tiny-bert", f"org/tiny-bert@{COMMIT}", "org/tiny-bert@main"):
        res = inspect_checkpoint(ref)
        assert res["checkpoint"] == ref and results(res) == results(local)
        assert res["architecture"]["name"] == "bert"  # type: ignore[index]


def test_a_local_path_wins_over_an_id(hub: Path, tmp_path: Path,
                                      rng: np.random.Generator) -> None:
    # ./org/tiny-bert exists: it is read, not the cached model (it has 3 layers, not 2)
    write(tmp_path / "org" / "tiny-bert", mlp_tensors(rng, BERT_UP, BERT_DOWN, layers=3),
          BERT_CONFIG)
    assert len(inspect_checkpoint("org/tiny-bert")["layers"]) == 3  # type: ignore[arg-type]


def test_a_missing_model_offline_is_one_line_exit_2(hub: Path, cli: Any) -> None:
    for ref in ("org/absent", "org/tiny-bert@nonesuch"):
        res: CliResult = cli("inspect", ref)
        assert res.code == 2, res.err
        assert res.err.startswith(f"error: {ref}: no such local path") and \
            res.err.count("\n") == 1
        # what to do, in this tool's terms: not the library's `local_files_only=False`
        repo, _, revision = ref.partition("@")
        assert "HF_HUB_OFFLINE is set, so nothing is downloaded" in res.err
        assert f"run `absorb inspect {ref}` once without HF_HUB_OFFLINE" in res.err
        assert f"`hf download {repo}{' --revision ' + revision if revision else ''}`" in res.err
        assert "local_files_only" not in res.err and "local folder" in res.err


def test_a_model_the_hub_cannot_serve_is_one_line_exit_2(tmp_path: Path) -> None:
    """Online, with the Hub unreachable (an endpoint on 127.0.0.1 where nothing listens): the
    library's reason, then what to do, in one line."""
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    proc = subprocess.run([sys.executable, "-m", "absorb", "inspect", "org/absent"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
                          env={**env, "HF_HOME": str(tmp_path / "hf"),
                               "HF_ENDPOINT": "http://127.0.0.1:9"})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: org/absent: no such local path")
    assert "it could not be downloaded (" in proc.stderr
    assert "check the model id and the network" in proc.stderr
    assert "`hf download org/absent`" in proc.stderr and "local_files_only" not in proc.stderr


def test_without_huggingface_hub_an_id_is_exit_3(hub: Path, cli: Any,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    res: CliResult = cli("inspect", "org/tiny-bert")
    assert res.code == 3 and "needs the hub extra: pip install -e '.[hub]'" in res.err
    # a plain path needs no extra
    assert cli("inspect", str(hub)).code == 0


def test_a_worker_without_the_path_reads_the_model_from_its_hub_cache(hub: Path) -> None:
    """A Dask worker on another machine gets the driver's path, which it may not have: it
    resolves the Hub id in its own cache and checks the tensors' digest."""
    from dataclasses import replace

    from absorb.checkpoints import Checkpoint, detect
    from absorb.scan.tasks import LayerTask, run_task

    with Checkpoint(hub) as ckpt:
        plan = detect(ckpt)
        spec = next(iter(plan.specs(ckpt)))
        digest = ckpt.digest(spec.keys)
    task = LayerTask("org/tiny-bert", str(hub.parent / "elsewhere"), spec.label,
                     dict(spec.keys), plan.layout, plan.activation.name, digest, 0, False, None)
    assert run_task(task).verdict["verdict"] == run_task(replace(task, path=str(hub))).verdict[
        "verdict"]
    with pytest.raises(AbsorbError, match="differ from those the scan was planned on"):
        run_task(replace(task, digest="0" * 64))
