"""``absorb inspect`` on small checkpoints written here: reading, sharding, bfloat16, errors.

The writers below put real tensor names and a real-looking ``config.json`` in a folder;
tests/test_checkpoints_arch.py uses them for every architecture of the table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from tests.conftest import CliResult, plant

from absorb.checkpoints import Checkpoint, detect
from absorb.checkpoints.inspection import load_layer
from absorb.checkpoints.writing import save_bf16
from absorb.errors import AbsorbError
from absorb.scan.inspect import inspect_checkpoint

Tensors = dict[str, np.ndarray]
BERT_UP = "bert.encoder.layer.{i}.intermediate.dense"
BERT_DOWN = "bert.encoder.layer.{i}.output.dense"
BERT_CONFIG = {"architectures": ["BertModel"], "model_type": "bert", "hidden_act": "gelu",
               "hidden_size": 4, "intermediate_size": 12, "num_hidden_layers": 2}


def mlp_tensors(rng: np.random.Generator, up: str, down: str, *, d: int = 4, n: int = 12,
                layers: int = 2, gate: str | None = None, biases: bool = True,
                conv1d: bool = False) -> Tensors:
    """Weights named ``{up}.weight`` etc. for each layer (``{i}``), stored as nn.Linear
    (out × in) or, with ``conv1d``, GPT-2's Conv1D (in × out); with decoys around them."""
    out: Tensors = {"embeddings.word_embeddings.weight": rng.standard_normal((7, d))}
    for i in range(layers):
        shapes = {up: (n, d), down: (d, n), **({gate: (n, d)} if gate else {})}
        for name, shape in shapes.items():
            w = rng.standard_normal(shape)
            out[name.format(i=i) + ".weight"] = w.T.copy() if conv1d else w
            if biases and name != gate:
                out[name.format(i=i) + ".bias"] = rng.standard_normal(shape[0])
        # decoys with similar names: attention projections and layer norms
        out[f"decoy.{i}.attention.output.dense.weight"] = rng.standard_normal((d, d))
        out[f"decoy.{i}.ln.weight"] = np.ones(d)
    return out


def write(folder: Path, tensors: Tensors, config: Mapping[str, object] | None = None,
          dtype: type = np.float32, name: str = "model.safetensors") -> Path:
    """One safetensors file (and config.json) in ``folder``; returns the file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.astype(dtype) for k, v in tensors.items()}, str(folder / name))
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    return folder / name


def write_bf16(path: Path, tensors: Tensors) -> dict[str, np.ndarray]:
    """A BF16 file (``save_bf16``); returns the stored values as float64, computed here
    independently: float32 with the low 16 bits cleared."""
    save_bf16(tensors, path)
    return {k: (v.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
            .astype(np.float64) for k, v in tensors.items()}


def write_sharded(folder: Path, tensors: Tensors, config: Mapping[str, object]) -> Path:
    """Two shards split by key order, and model.safetensors.index.json with the weight_map."""
    folder.mkdir(parents=True, exist_ok=True)
    keys = sorted(tensors)
    wmap = {}
    for part, chunk in enumerate((keys[::2], keys[1::2]), start=1):
        name = f"model-{part:05d}-of-00002.safetensors"
        save_file({k: tensors[k].astype(np.float32) for k in chunk}, str(folder / name))
        wmap.update(dict.fromkeys(chunk, name))
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": wmap}))
    (folder / "config.json").write_text(json.dumps(config))
    return index


def expected_block(tensors: Tensors, up: str, down: str, i: int,
                   conv1d: bool = False) -> dict[str, np.ndarray | None]:
    """W_up (n × d), W_down (d × n), biases of layer i, as float64 nn.Linear arrays."""
    def w(name: str) -> np.ndarray:
        arr = tensors[name.format(i=i) + ".weight"].astype(np.float64)
        return arr.T if conv1d else arr

    def b(name: str) -> np.ndarray | None:
        arr = tensors.get(name.format(i=i) + ".bias")
        return None if arr is None else arr.astype(np.float64)

    return {"W_up": w(up), "W_down": w(down), "b_up": b(up), "b_down": b(down)}


def loaded_blocks(path: Path, **kwargs: str) -> list[dict[str, np.ndarray | None]]:
    """The arrays of every layer's Block as inspect builds them."""
    with Checkpoint(path) as ckpt:
        plan = detect(ckpt, **kwargs)
        out = []
        for spec in plan.specs(ckpt):
            block = load_layer(ckpt, spec, plan)
            out.append({k: getattr(block, k) for k in ("W_up", "W_down", "b_up", "b_down")})
        return out


def assert_same_blocks(got: dict[str, np.ndarray | None],
                       want: dict[str, np.ndarray | None]) -> None:
    for key, value in want.items():
        if value is None:
            assert got[key] is None, key
        else:
            np.testing.assert_array_equal(got[key], value, err_msg=key)  # type: ignore[arg-type]


def test_folder_file_and_config(tmp_path: Path, rng: np.random.Generator) -> None:
    tensors = mlp_tensors(rng, BERT_UP, BERT_DOWN)
    file = write(tmp_path / "bert", tensors, BERT_CONFIG, dtype=np.float64)
    for path in (file, file.parent):
        res = inspect_checkpoint(path)
        assert res["architecture"]["name"] == "bert"  # type: ignore[index]
        assert res["activation"] == "gelu" and "hidden_act" in str(res["activation_source"])
        layers = res["layers"]
        assert isinstance(layers, list) and [r["layer"] for r in layers] == [0, 1]
        for row in layers:
            assert (row["d"], row["n"], row["biases"]) == (4, 12, True)
            assert row["keys"]["up_bias"] == BERT_UP.format(i=row["layer"]) + ".bias"
            assert row["cost"]["predicted_peak_bytes"] > 0
    for i, got in enumerate(loaded_blocks(file)):
        assert_same_blocks(got, expected_block(tensors, BERT_UP, BERT_DOWN, i))


def test_sharded_checkpoint(tmp_path: Path, rng: np.random.Generator) -> None:
    tensors = mlp_tensors(rng, BERT_UP, BERT_DOWN, layers=3)
    index = write_sharded(tmp_path / "sharded", tensors, BERT_CONFIG)
    assert len(list(index.parent.glob("*.safetensors"))) == 2
    for path in (index, index.parent):
        res = inspect_checkpoint(path)
        assert len(res["files"]) == 2  # type: ignore[arg-type]
        assert [r["layer"] for r in res["layers"]] == [0, 1, 2]  # type: ignore[attr-defined]
    stored = {k: v.astype(np.float32) for k, v in tensors.items()}
    for i, got in enumerate(loaded_blocks(index)):
        assert_same_blocks(got, expected_block(stored, BERT_UP, BERT_DOWN, i))
    # a shard named in the weight_map but missing is a clear error
    next(index.parent.glob("model-00002*")).unlink()
    with pytest.raises(AbsorbError, match=r"shard model-00002-of-00002\.safetensors .* missing"):
        inspect_checkpoint(index)


def test_bfloat16_weights_are_read_exactly(tmp_path: Path, rng: np.random.Generator) -> None:
    up, down = "gpt_neox.layers.{i}.mlp.dense_h_to_4h", "gpt_neox.layers.{i}.mlp.dense_4h_to_h"
    tensors = mlp_tensors(rng, up, down)
    folder = tmp_path / "pythia-bf16"
    folder.mkdir()
    stored = write_bf16(folder / "model.safetensors", tensors)
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "gpt_neox", "hidden_act": "gelu", "hidden_size": 4,
         "intermediate_size": 12, "torch_dtype": "bfloat16"}))
    for i, got in enumerate(loaded_blocks(folder)):
        want = expected_block(stored, up, down, i)
        assert_same_blocks(got, want)
        # bfloat16 keeps 8 significant bits: the values differ from the float32 originals
        assert 0 < np.max(np.abs(want["W_up"] - tensors[up.format(i=i) + ".weight"])) < 1e-1  # type: ignore[operator]
    res = inspect_checkpoint(folder)
    assert {r["dtype"] for r in res["layers"]} == {"BF16"}  # type: ignore[attr-defined]


def test_explicit_patterns_still_work(tmp_path: Path, rng: np.random.Generator) -> None:
    block, _ = plant("relu", 2, 6, 3, rng, biases=True)
    path = write(tmp_path / "p", {"mlp.0.up.weight": block.W_up, "mlp.0.up.bias": block.b_up,
                                  "mlp.0.down.weight": block.W_down,
                                  "mlp.0.down.bias": block.b_down},  # type: ignore[dict-item]
                 dtype=np.float64)
    res = inspect_checkpoint(path, up="mlp.{i}.up.weight", down="mlp.{i}.down.weight",
                             activation="relu")
    (row,) = res["layers"]  # type: ignore[misc]
    # planted through a float pseudo-inverse: an index set up to float64 rounding only
    assert row["verdict"] == "absorbable_up_to_rounding" and row["biases"] is True
    assert row["keys"]["up_bias"] == "mlp.0.up.bias"
    assert row["corrected_construction_check"]["max_abs_error"] < 1e-8
    assert res["architecture"] is None and res["layout"] == "linear"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"up": "nothing.{i}.weight", "down": BERT_DOWN + ".weight", "activation": "gelu"},
         "no tensor matches the pattern 'nothing"),
        ({"up": BERT_UP + ".weight", "down": "x.{i}.weight", "activation": "gelu"},
         "layer 0: no tensor matches the down pattern"),
        ({"up": BERT_UP + ".weight", "down": BERT_UP + ".weight", "activation": "gelu"},
         "must be the up weight's shape transposed"),
        ({"up": BERT_UP + ".weight", "down": BERT_DOWN + ".weight", "gate": BERT_UP + ".weight",
          "activation": "gelu"}, "gelu takes no --gate"),
        ({"up": BERT_UP + ".weight", "down": BERT_DOWN + ".weight"}, "need --activation"),
        ({"arch": "llama"}, "--arch llama: no tensor matches"),
        ({"arch": "nonesuch"}, "unknown architecture 'nonesuch' .known: bert"),
        ({"activation": "swiglu"}, "--activation swiglu is gated but the bert MLP is not"),
    ],
)
def test_bad_requests(kwargs: dict[str, str], message: str, tmp_path: Path,
                      rng: np.random.Generator) -> None:
    path = write(tmp_path / "m", mlp_tensors(rng, BERT_UP, BERT_DOWN), BERT_CONFIG)
    with pytest.raises(AbsorbError, match=message):
        inspect_checkpoint(path, **kwargs)  # type: ignore[arg-type]


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(AbsorbError, match="no such file or folder"):
        inspect_checkpoint(tmp_path / "none.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 20)
    with pytest.raises(AbsorbError, match="not a readable safetensors file"):
        inspect_checkpoint(tmp_path / "junk.safetensors")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(AbsorbError, match=r"no \.safetensors file .*pytorch_model\.bin"):
        inspect_checkpoint(tmp_path / "bin")
    nan = write(tmp_path / "nan", {"l.0.up.weight": np.full((4, 2), np.nan),
                                   "l.0.down.weight": np.ones((2, 4))})
    with pytest.raises(AbsorbError, match=r"l\.0\.up\.weight contains NaN"):
        inspect_checkpoint(nan, up="l.{i}.up.weight", down="l.{i}.down.weight",
                           activation="gelu")
    ints = write(tmp_path / "int", {"l.0.up.weight": np.ones((4, 2)),
                                    "l.0.down.weight": np.ones((2, 4))}, dtype=np.int32)
    with pytest.raises(AbsorbError, match="unsupported tensor dtype I32"):
        inspect_checkpoint(ints, up="l.{i}.up.weight", down="l.{i}.down.weight",
                           activation="gelu")
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "m.safetensors.index.json").write_text('{"metadata": {}}')
    with pytest.raises(AbsorbError, match="no weight_map"):
        inspect_checkpoint(tmp_path / "idx")


def test_a_layer_that_does_not_fit_is_refused_up_front(tmp_path: Path,
                                                       rng: np.random.Generator) -> None:
    path = write(tmp_path / "m", mlp_tensors(rng, BERT_UP, BERT_DOWN), BERT_CONFIG)
    with pytest.raises(AbsorbError, match=r"layer 0 \(d=4, n=12\) would need .* of "
                                          "memory; .* is available"):
        inspect_checkpoint(path, memory=1000)


def test_cli_text_and_json(tmp_path: Path, rng: np.random.Generator, cli: object) -> None:
    path = write(tmp_path / "m", mlp_tensors(rng, BERT_UP, BERT_DOWN), BERT_CONFIG)
    run = cli  # the conftest fixture: main() in-process
    text: CliResult = run("inspect", str(path))  # type: ignore[operator]
    assert text.code == 0, text.err
    assert "bert (BERT" in text.out and "x + MLP(x)" in text.out
    assert "biases used: up_bias (bert.encoder.layer.0.intermediate.dense.bias)" in text.out
    assert "distance >=" in text.out and "layers" in text.err  # summary; tqdm on stderr
    # the summary row of a biased GELU layer: a distance and a dual-certificate margin
    assert re.search(r"^0 +4 +12 +not_absorbed +\d\.\d+ +\d", text.out, re.MULTILINE)
    res = run("inspect", str(path), "--json").json()  # type: ignore[operator]
    assert [row["layer"] for row in res["layers"]] == [0, 1]
    assert {row["storage"]["dtype"] for row in res["layers"]} == {"float32"}
    res = run("inspect", str(path), "--json", "--tol", "1e-3").json()  # type: ignore[operator]
    assert {row["storage"]["tol"] for row in res["layers"]} == {1e-3}
    bad: CliResult = run("inspect", str(path), "--arch", "gpt2")  # type: ignore[operator]
    assert bad.code == 2 and bad.err.startswith("error: --arch gpt2: no tensor matches")
