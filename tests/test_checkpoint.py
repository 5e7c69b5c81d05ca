"""``inspect_checkpoint`` on small safetensors checkpoints written here."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from tests.conftest import plant

from absorb.activations import get_activation
from absorb.blocks import Block
from absorb.checkpoint import inspect_checkpoint
from absorb.errors import AbsorbError
from absorb.theory import decide

UP = "encoder.layer.{i}.intermediate.dense.weight"
DOWN = "encoder.layer.{i}.output.dense.weight"
GELU = get_activation("gelu")


def _bert(path: Path, rng: np.random.Generator, layers: int = 3, d: int = 4, n: int = 12,
          biases: bool = False, dtype: type = np.float32) -> dict[str, np.ndarray]:
    tensors: dict[str, np.ndarray] = {"embeddings.word_embeddings.weight": np.ones((5, d), dtype)}
    for i in range(layers):
        tensors[UP.format(i=i)] = rng.standard_normal((n, d)).astype(dtype)
        tensors[DOWN.format(i=i)] = rng.standard_normal((d, n)).astype(dtype)
        if biases:
            bias = UP.format(i=i)[: -len("weight")] + "bias"
            tensors[bias] = rng.standard_normal(n).astype(dtype)
    save_file(tensors, str(path))
    return tensors


def test_every_layer_gets_the_check_verdict(tmp_path: Path, rng: np.random.Generator) -> None:
    tensors = _bert(tmp_path / "m.safetensors", rng)
    res = inspect_checkpoint(tmp_path / "m.safetensors", up=UP, down=DOWN, activation=GELU)
    layers = res["layers"]
    assert isinstance(layers, list) and [row["layer"] for row in layers] == [0, 1, 2]
    for row in layers:
        i = row["layer"]
        block = Block(GELU, tensors[UP.format(i=i)].astype(np.float64),
                      tensors[DOWN.format(i=i)].astype(np.float64))
        expected = decide(block, rng=np.random.default_rng(0), search=False)
        assert row["verdict"] == expected["verdict"] == "not_absorbed"
        assert row["certificate"]["relaxation_residual"] == pytest.approx(
            expected["certificate"]["relaxation_residual"])  # type: ignore[index]
        assert (row["d"], row["n"]) == (4, 12)


def test_biases_are_read_and_block_the_necessity_theorem(tmp_path: Path,
                                                          rng: np.random.Generator) -> None:
    _bert(tmp_path / "b.safetensors", rng, layers=2, biases=True)
    res = inspect_checkpoint(tmp_path / "b.safetensors", up=UP, down=DOWN, activation=GELU)
    for row in res["layers"]:  # type: ignore[attr-defined]
        assert row["biases"] is True and row["verdict"] == "undetermined"
        assert "no biases" in row["unmet_hypotheses"] and row["search"] is None
        assert row["certificate"]["relaxation_residual"] > 0


def test_planted_layer_is_absorbed_and_biases_are_read(tmp_path: Path,
                                                       rng: np.random.Generator) -> None:
    block, _ = plant("relu", 2, 6, 3, rng, biases=True)
    save_file({"mlp.0.up.weight": block.W_up, "mlp.0.up.bias": block.b_up,  # type: ignore[dict-item]
               "mlp.0.down.weight": block.W_down, "mlp.0.down.bias": block.b_down},
              str(tmp_path / "p.safetensors"))
    res = inspect_checkpoint(tmp_path / "p.safetensors", up="mlp.{i}.up.weight",
                             down="mlp.{i}.down.weight", activation=get_activation("relu"))
    (row,) = res["layers"]  # type: ignore[misc]
    assert row["verdict"] == "absorbed" and row["biases"] is True
    assert row["keys"]["up_bias"] == "mlp.0.up.bias"
    assert row["max_abs_error"] < 1e-8


def test_gated_checkpoint(tmp_path: Path, rng: np.random.Generator) -> None:
    d, n = 3, 5
    save_file({f"model.layers.{i}.mlp.{k}.weight": rng.standard_normal(s)
               for i in range(2) for k, s in (("up_proj", (n, d)), ("gate_proj", (n, d)),
                                              ("down_proj", (d, n)))},
              str(tmp_path / "llama.safetensors"))
    res = inspect_checkpoint(tmp_path / "llama.safetensors",
                             up="model.layers.{i}.mlp.up_proj.weight",
                             down="model.layers.{i}.mlp.down_proj.weight",
                             gate="model.layers.{i}.mlp.gate_proj.weight",
                             activation=get_activation("swiglu"))
    assert [row["verdict"] for row in res["layers"]] == ["impossible"] * 2  # type: ignore[attr-defined]


def test_half_precision_tensors(tmp_path: Path, rng: np.random.Generator) -> None:
    tensors = _bert(tmp_path / "h.safetensors", rng, layers=1, dtype=np.float16)
    res = inspect_checkpoint(tmp_path / "h.safetensors", up=UP, down=DOWN, activation=GELU)
    assert res["layers"][0]["verdict"] == "not_absorbed"  # type: ignore[index]
    # bfloat16 (no numpy dtype): written by hand as the high halves of float32 values
    up = tensors[UP.format(i=0)].astype(np.float32)
    down = tensors[DOWN.format(i=0)].astype(np.float32)
    raw = {k: (v.view(np.uint32) >> 16).astype("<u2").tobytes() for k, v in
           (("u.weight", up), ("d.weight", down))}
    header, offset = {}, 0
    for k, arr in (("u.weight", up), ("d.weight", down)):
        header[k] = {"dtype": "BF16", "shape": list(arr.shape),
                     "data_offsets": [offset, offset + len(raw[k])]}
        offset += len(raw[k])
    head = json.dumps(header).encode()
    (tmp_path / "b.safetensors").write_bytes(struct.pack("<Q", len(head)) + head
                                             + raw["u.weight"] + raw["d.weight"])
    res = inspect_checkpoint(tmp_path / "b.safetensors", up="u.weight", down="d.weight",
                             activation=GELU)
    (row,) = res["layers"]  # type: ignore[misc]
    assert row["layer"] is None and row["verdict"] == "not_absorbed"
    # float16 values are exactly representable in bfloat16 only up to rounding: compare loosely
    from absorb.checkpoint import _bf16

    np.testing.assert_allclose(_bf16(tmp_path / "b.safetensors", "u.weight"), up, rtol=1e-2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"up": "nothing.{i}.weight", "down": DOWN}, "layer 0: no tensor matches --up"),
        ({"up": "x.{i}.weight", "down": "y.{i}.weight"}, "no tensor matches the pattern"),
        ({"up": UP, "down": "encoder.layer.0.output.dense.weight"}, "lacks {i}"),
        ({"up": "absent.weight", "down": "absent2.weight"}, "no tensor named"),
        ({"up": UP, "down": UP}, "layer 0: W_down has shape 12x4, expected 4x12"),
        ({"up": UP, "down": DOWN, "gate": UP}, "gelu takes no --gate"),
    ],
)
def test_bad_patterns(kwargs: dict[str, str], message: str, tmp_path: Path,
                      rng: np.random.Generator) -> None:
    _bert(tmp_path / "m.safetensors", rng)
    with pytest.raises(AbsorbError, match=message):
        inspect_checkpoint(tmp_path / "m.safetensors", activation=GELU, **kwargs)


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(AbsorbError, match="no such file"):
        inspect_checkpoint(tmp_path / "none.safetensors", up=UP, down=DOWN, activation=GELU)
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 20)
    with pytest.raises(AbsorbError, match="not a readable safetensors file"):
        inspect_checkpoint(tmp_path / "junk.safetensors", up=UP, down=DOWN, activation=GELU)
    save_file({"u.weight": np.full((4, 2), np.nan), "d.weight": np.ones((2, 4))},
              str(tmp_path / "nan.safetensors"))
    with pytest.raises(AbsorbError, match=r"u\.weight contains NaN"):
        inspect_checkpoint(tmp_path / "nan.safetensors", up="u.weight", down="d.weight",
                           activation=GELU)
    save_file({"u.weight": np.ones((4, 2), np.int32), "d.weight": np.ones((2, 4))},
              str(tmp_path / "int.safetensors"))
    with pytest.raises(AbsorbError, match="unsupported tensor dtype I32"):
        inspect_checkpoint(tmp_path / "int.safetensors", up="u.weight", down="d.weight",
                           activation=GELU)
