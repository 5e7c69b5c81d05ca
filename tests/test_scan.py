"""Model scans: Dask and a local pool give the serial results; a scan resumes from its cache;
the plan refuses what would not fit; the output folder holds the summary of every layer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.conftest import CliResult, chromium_colors, needs_chromium, plant
from tests.test_checkpoint import write

from absorb.budget import Cost
from absorb.errors import AbsorbError
from absorb.scan import plan, runners
from absorb.scan.inspect import inspect_checkpoint
from absorb.scan.plan import Worker, makespan, plan_scan, worker_count
from absorb.serialize import plain

UP, DOWN = "mlp.{i}.up.weight", "mlp.{i}.down.weight"
PATTERNS = {"up": UP, "down": DOWN, "activation": "relu"}
LAYERS = 6
PLANTED = (1, 4)


@pytest.fixture
def model(tmp_path: Path, rng: np.random.Generator) -> Path:
    """Six ReLU layers (d = 3, n = 10): two with a planted index set, the others generic,
    in float64 so that the planted ones are absorbable up to rounding at least."""
    tensors = {}
    for i in range(LAYERS):
        if i in PLANTED:
            block, _ = plant("relu", 3, 10, 4, rng)
            up, down = block.W_up, block.W_down
        else:
            up, down = rng.standard_normal((10, 3)), rng.standard_normal((3, 10))
        tensors[UP.format(i=i)], tensors[DOWN.format(i=i)] = up, down
    return write(tmp_path / "model", tensors, dtype=np.float64)


def results(res: dict[str, object]) -> list[Any]:
    """The layers as JSON, without their timings (which differ run to run)."""
    rows = plain(res["layers"])
    for row in rows:
        del row["cost"]
    return list(rows)


def test_dask_and_pool_give_the_serial_results(model: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    serial = inspect_checkpoint(model, **PATTERNS)
    verdicts = [r["verdict"] for r in serial["layers"]]  # type: ignore[attr-defined]
    assert len(set(verdicts)) > 1  # planted and generic layers: not one verdict everywhere
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        on_dask = inspect_checkpoint(model, scheduler=cluster.scheduler_address,
                                     cache_dir=tmp_path / "cache", **PATTERNS)
    assert results(on_dask) == results(serial)
    # what the cluster cached, a serial run reads back unchanged
    from_cache = inspect_checkpoint(model, cache_dir=tmp_path / "cache", **PATTERNS)
    assert from_cache["scan"]["cached_layers"] == LAYERS  # type: ignore[index]
    assert results(from_cache) == results(serial)
    scan = on_dask["scan"]
    assert scan["plan"]["workers"] == 2 and "Dask" in scan["runner"]  # type: ignore[index]
    pooled = inspect_checkpoint(model, workers=2, **PATTERNS)
    assert results(pooled) == results(serial)
    assert pooled["scan"]["plan"]["slots"] == 2  # type: ignore[index]


def test_an_interrupted_scan_resumes_from_its_cache(model: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    serial = inspect_checkpoint(model, **PATTERNS)
    computed: list[str] = []
    real = runners.run_task

    def counted(task: Any) -> Any:
        computed.append(task.label)
        return real(task)

    monkeypatch.setattr(runners, "run_task", counted)
    cache = tmp_path / "cache"

    def stop_after_three(row: dict[str, object]) -> None:
        if len(computed) == 3:
            raise KeyboardInterrupt  # as Ctrl-C after the third layer

    with pytest.raises(KeyboardInterrupt):
        inspect_checkpoint(model, cache_dir=cache, on_layer=stop_after_three, **PATTERNS)
    assert computed == ["0", "1", "2"]
    assert len(list(cache.glob("*.json"))) == 3
    computed.clear()
    resumed = inspect_checkpoint(model, cache_dir=cache, **PATTERNS)
    assert computed == ["3", "4", "5"]  # the cached layers were not computed again
    assert results(resumed) == results(serial)
    assert [r["cost"]["cached"] for r in resumed["layers"]] == [True] * 3 + [False] * 3  # type: ignore[attr-defined]
    computed.clear()
    again = inspect_checkpoint(model, cache_dir=cache, keep_certificates=False, **PATTERNS)
    assert computed == [] and again["scan"]["cached_layers"] == LAYERS  # type: ignore[index]
    # another seed is another result: not taken from the cache
    inspect_checkpoint(model, cache_dir=cache, seed=1, **PATTERNS)
    assert len(computed) == LAYERS


def test_certificates_survive_the_cache(tmp_path: Path, rng: np.random.Generator) -> None:
    """A GELU layer's dual certificate Y (a float64 matrix on a dyadic grid) comes back from
    the cache with the same exact values."""
    from tests.test_checkpoint import BERT_CONFIG, BERT_DOWN, BERT_UP, mlp_tensors

    path = write(tmp_path / "m", mlp_tensors(rng, BERT_UP, BERT_DOWN), BERT_CONFIG)
    first = inspect_checkpoint(path, cache_dir=tmp_path / "c")
    second = inspect_checkpoint(path, cache_dir=tmp_path / "c")
    assert second["scan"]["cached_layers"] == 2  # type: ignore[index]
    assert [r["certificate"] for r in first["layers"]] == [  # type: ignore[attr-defined]
        r["certificate"] for r in second["layers"]]  # type: ignore[attr-defined]
    assert list((tmp_path / "c").glob("*.npy"))  # Y stored as exact floats, not strings


def test_the_plan_refuses_workers_that_do_not_fit(model: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan, "cores", lambda: 8)  # four workers are not capped here
    one = inspect_checkpoint(model, **PATTERNS)
    peak = max(r["cost"]["predicted_peak_bytes"] for r in one["layers"])  # type: ignore[attr-defined]
    memory = int(2.5 * peak / 0.8)  # two layers at a time fit, four do not
    with pytest.raises(AbsorbError, match=r"4 worker\(s\) x .*: use --workers 2 or fewer"):
        inspect_checkpoint(model, workers=4, memory=memory, **PATTERNS)


def test_makespan() -> None:
    assert makespan([3.0, 3.0, 2.0, 2.0, 2.0], 2) == 7.0
    assert makespan([5.0, 1.0], 4) == 5.0
    assert makespan([], 3) == 0.0


def test_out_folder_summary_and_resume(model: Path, tmp_path: Path, cli: Any) -> None:
    out = tmp_path / "scan"
    args = ("inspect", str(model), "--up", UP, "--down", DOWN, "--activation", "relu",
            "--out", str(out))
    first: CliResult = cli(*args, "--json")
    assert first.code == 0, first.err
    page = (out / "summary.html").read_text()
    for i in range(LAYERS):
        assert f"<tr><td>{i}</td>" in page
    assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((out / "inspect.json").read_text())
    assert saved["layers"] == first.json()["layers"]
    again: CliResult = cli(*args)
    assert again.code == 0 and f"written: {out / 'summary.html'}" in again.out
    assert json.loads((out / "inspect.json").read_text())["scan"]["cached_layers"] == LAYERS
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    bad: CliResult = cli(*args[:-1], str(foreign))
    assert bad.code == 2 and "holds other files" in bad.err and bad.err.count("\n") == 1
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


def test_json_lines_stream_each_layer(model: Path, cli: Any) -> None:
    res: CliResult = cli("inspect", str(model), "--up", UP, "--down", DOWN, "--activation",
                         "relu", "--jsonl")
    assert res.code == 0, res.err
    lines = [json.loads(line) for line in res.out.splitlines()]
    assert sorted(line["label"] for line in lines[:-1]) == [str(i) for i in range(LAYERS)]
    assert "layers" not in lines[-1] and lines[-1]["scan"]["computed_layers"] == LAYERS


def test_missing_dask_is_exit_3(model: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed
    res: CliResult = cli("inspect", str(model), "--up", UP, "--down", DOWN, "--activation",
                         "relu", "--scheduler", "tcp://127.0.0.1:1")
    assert res.code == 3 and "needs the scan extra: pip install -e '.[scan]'" in res.err
    both: CliResult = cli("inspect", str(model), "--up", UP, "--down", DOWN, "--activation",
                          "relu", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2")
    assert both.code == 2 and "exclude each other" in both.err


def test_tasks_name_the_weights_and_never_hold_them(model: Path) -> None:
    """What goes through a scheduler is a few hundred bytes whatever the layer's size."""
    import pickle

    from absorb.checkpoints import Checkpoint
    from absorb.checkpoints.detection import explicit_plan
    from absorb.scan.tasks import LayerTask

    with Checkpoint(model) as ckpt:
        plan = explicit_plan(ckpt, up=UP, down=DOWN, gate=None, activation="relu")
        spec = next(iter(plan.specs(ckpt)))
        task = LayerTask(str(model), str(model), spec.label, dict(spec.keys), plan.layout,
                         "relu", ckpt.digest(spec.keys), 0, False, None)
    assert len(pickle.dumps(task)) < 1024
    assert task.rng().random() == task.rng().random()  # one generator per layer content


def test_the_plan_checks_each_dask_worker_against_its_memory_limit() -> None:
    costs = [("layer 0 (d=8, n=32)", Cost(1e6, 1e9)), ("layer 1 (d=8, n=32)", Cost(1e6, 1e9))]
    fits = plan_scan(costs, 0.0, [Worker("tcp://a", 2, 10**7), Worker("tcp://b", 1, 10**7)],
                     "Dask", 1e9, memory=10**9)
    assert fits.to_json()["slots"] == 3 and fits.wall_seconds == pytest.approx(2.0)
    with pytest.raises(AbsorbError, match=r"Dask worker tcp://a runs 4 task\(s\) at a time"):
        plan_scan(costs, 0.0, [Worker("tcp://a", 4, 4 * 10**6)], "Dask", 1e9, memory=10**9)


def test_workers_are_capped_at_the_cores_and_the_layers(model: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """--workers beyond the cores, or beyond the layers, starts no more processes than help,
    and the plan says why; --workers 1000 on one core runs in this process."""
    monkeypatch.setattr(plan, "cores", lambda: 4)
    assert worker_count(1000, 8) == (4, ("--workers 1000 capped at the 4 cores of this "
                                         "machine",))
    assert worker_count(3, 2) == (2, ("--workers 3 capped at the 2 layer(s) to decide",))
    assert worker_count(2, 0) == (1, ("--workers 2 capped at the 0 layer(s) to decide",))
    assert worker_count(4, 8) == (4, ())
    monkeypatch.setattr(plan, "cores", lambda: 1)
    res = inspect_checkpoint(model, workers=1000, **PATTERNS)
    scan = res["scan"]
    assert scan["runner"] == "this process"  # type: ignore[index]
    assert scan["plan"]["notes"] == [  # type: ignore[index]
        "--workers 1000 capped at the 1 cores of this machine"]


def test_the_plan_says_when_workers_cannot_help(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two local workers on two cores: BLAS-bound layers take as long as in one process (the
    note says so); overhead-bound layers overlap (no note, half the time)."""
    monkeypatch.setattr(plan, "cores", lambda: 2)
    two = [Worker(f"local-{i}", 1, None) for i in range(2)]
    blas = [(f"layer {i}", Cost(1e3, 1e9)) for i in range(4)]
    busy = plan_scan(blas, 0.0, two, "2 local processes", 1e9, memory=10**9)
    assert busy.serial_seconds == pytest.approx(4.0)
    assert busy.wall_seconds == pytest.approx(4.0 + plan.POOL_START_SECONDS)
    assert "predicted to save little" in busy.text() and len(busy.to_json()["notes"]) == 1  # type: ignore[arg-type]
    light = [(f"layer {i}", Cost(1e3, 0.0, 10.0)) for i in range(4)]
    quick = plan_scan(light, 0.0, two, "2 local processes", 1e9, memory=10**9)
    assert quick.wall_seconds == pytest.approx(20.0 + plan.POOL_START_SECONDS)
    assert quick.notes == ()
    serial = plan_scan(light, 0.0, [Worker("local", 1, None)], "this process", 1e9,
                       memory=10**9)
    assert serial.wall_seconds == pytest.approx(40.0) and serial.notes == ()


def test_dask_workers_on_one_host_share_its_cores() -> None:
    """Every task's BLAS uses all of its host's cores: two one-thread workers on one host
    finish two layers no sooner than one process; on two hosts, in half the time."""
    costs = [("layer 0", Cost(1e3, 1e9)), ("layer 1", Cost(1e3, 1e9))]
    one_host = [Worker("tcp://127.0.0.1:4001", 1, 0), Worker("tcp://127.0.0.1:4002", 1, 0)]
    two_hosts = [Worker("tcp://10.0.0.1:4001", 1, 0), Worker("tcp://10.0.0.2:4001", 1, 0)]
    assert plan_scan(costs, 0.0, one_host, "Dask", 1e9).wall_seconds == pytest.approx(2.0)
    assert plan_scan(costs, 0.0, two_hosts, "Dask", 1e9).wall_seconds == pytest.approx(1.0)


def test_the_layer_cost_counts_the_repair_and_the_overhead() -> None:
    """A float layer's predicted work includes the branch of a layer absorbable up to
    rounding (the least-norm repair, the construction check) beside its relaxation, and
    every layer carries a fixed overhead: what a planted layer's time was missing."""
    from absorb.activations import get_activation
    from absorb.certificates import relaxation_cost
    from absorb.certificates.rounding import repair_cost
    from absorb.checkpoints.detection import LayerSpec
    from absorb.checkpoints.inspection import LAYER_OVERHEAD_SECONDS, layer_cost

    d, n = 1024, 4096
    spec = LayerSpec("0", 0, None, {}, d, n, "float32")
    cost = layer_cost(spec, get_activation("gelu"))
    extra = cost.flops - relaxation_cost(d, n).flops
    assert extra >= repair_cost(d, d).flops > 0
    assert cost.overhead >= LAYER_OVERHEAD_SECONDS > 0
    assert cost.at(1e10) == pytest.approx(cost.flops / 1e10 + cost.overhead)
    gated = layer_cost(spec, get_activation("swiglu"))
    assert gated.flops < relaxation_cost(d, n).flops and gated.overhead > 0


def test_small_layers_are_decided_on_one_blas_thread() -> None:
    """A small layer's many small products run on one BLAS thread (on busy cores the threads'
    waits cost more than the second thread gives); a large layer keeps the default count."""
    from threadpoolctl import threadpool_info

    from absorb.scan.tasks import SMALL_LAYER_WORK, blas_for

    def counts() -> list[int]:
        return [int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]

    before = counts()
    with blas_for(64, 256):
        assert counts() == [1] * len(before)
    assert counts() == before
    with blas_for(SMALL_LAYER_WORK, 2):
        assert counts() == before
def test_the_progress_bar_counts_a_layer_when_it_names_it(
        model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each redraw that names a finished layer already counts it: after the k-th layer the bar
    shows k done, never k - 1 (tqdm skips a redraw within its minimum interval, so the count
    must change before the forced redraw of the layer's name, not after it)."""
    import re

    inspect_checkpoint(model, progress=True, **PATTERNS)
    err = capsys.readouterr().err
    shown = re.findall(r"(\d+)/(\d+) \[[^\]]*, (\S+) (\w+); about [^\]]*\]", err)
    finished = list(dict.fromkeys(label for _, _, label, _ in shown))
    assert sorted(finished) == [str(i) for i in range(LAYERS)]  # every layer named
    for done, total, label, _ in shown:
        assert (int(done), int(total)) == (finished.index(label) + 1, LAYERS), (label, done)


def _layers(distances: list[float], margins: list[float | None]) -> dict[str, object]:
    return {"checkpoint": "m", "layers": [
        {"label": str(i), "verdict": "not_absorbed",
         "certificate": {"distance": d, "dual": {"margin_float": m}}}
        for i, (d, m) in enumerate(zip(distances, margins, strict=True))]}


def test_the_summary_figure_reads_a_narrow_range_on_a_linear_axis() -> None:
    """Distances within 0.03 % of each other (a generic model's layers): a linear axis from 0
    whose tick labels are plain values (no "+4.01e-1" offset) and the range written on the
    panel; values over many decades keep their log axis; no value at all, no axis to read."""
    import matplotlib.pyplot as plt

    from absorb.scan import summary

    narrow = [0.4010 * (1 + 3e-4 * i / 7) for i in range(8)]
    fig = summary.figure(_layers(narrow, [10.0 ** -i for i in range(8)]))
    try:
        fig.canvas.draw()
        dist, margin, _ = fig.axes[:3]
        assert dist.get_yscale() == "linear" and margin.get_yscale() == "log"
        assert dist.get_ylim()[0] == 0.0 and dist.yaxis.get_offset_text().get_text() == ""
        ticks = [float(t.get_text().replace("−", "-")) for t in dist.get_yticklabels()]
        assert min(ticks) <= min(narrow) <= max(narrow) <= max(ticks)  # values read off it
        notes = [t.get_text() for t in dist.texts]
        assert notes == [f"8 layers: {min(narrow):.6g} to {max(narrow):.6g} (spread 0.03 %)"]
    finally:
        plt.close(fig)
    empty = summary.figure(_layers(narrow, [None] * 8))
    try:
        assert [t.get_text() for t in empty.axes[1].texts] == [
            "no layer has a certificate margin above 0"]
        assert list(empty.axes[1].get_yticks()) == []
    finally:
        plt.close(empty)


@needs_chromium
@pytest.mark.parametrize("width", [1280, 700])
def test_the_summary_page_renders_styled_in_headless_chromium(
        model: Path, tmp_path: Path, cli: Any, width: int) -> None:
    """summary.html of a real scan, in a real browser: the report's stylesheet (its pale header
    cells), the figure beside the table (the verdicts' colours)."""
    from absorb.scan.summary import COLOURS

    out = tmp_path / "scan"
    res: CliResult = cli("inspect", str(model), "--up", UP, "--down", DOWN, "--activation",
                         "relu", "--out", str(out))
    assert res.code == 0, res.err
    page = (out / "summary.html").read_text()
    assert "<style>" in page and "<th>verdict</th>" in page
    colors = chromium_colors(out / "summary.html", tmp_path / "shot.png", width)
    assert len(colors) > 50 and (246, 248, 250) in colors  # th{background:#f6f8fa}
    strip = {tuple(int(COLOURS["not_absorbed"][k:k + 2], 16) for k in (1, 3, 5))}
    assert strip <= colors  # the verdict strip of summary.png, drawn in the page
