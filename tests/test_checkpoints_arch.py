"""Detection, orientation, biases and verdicts for every architecture of the table.

Each test writes a small checkpoint with the architecture's real tensor names (as in the
Hugging Face safetensors files) and a real-looking config.json, d = 4 and n = 12, 2 layers.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import CliResult, plant
from tests.test_checkpoint import (
    assert_same_blocks,
    expected_block,
    loaded_blocks,
    mlp_tensors,
    write,
)

from absorb.errors import AbsorbError
from absorb.scan.inspect import inspect_checkpoint

D, N = 4, 12


@dataclass(frozen=True)
class Case:
    arch: str
    config: dict[str, object]
    stacks: tuple[tuple[str, str, str | None], ...]  # (up, down, gate) name patterns
    activation: str
    verdict: str
    biases: bool = True
    conv1d: bool = False
    layer_labels: tuple[str, ...] = ("0", "1")
    extra: dict[str, object] = field(default_factory=dict)


CASES = [
    Case("bert", {"model_type": "bert", "hidden_act": "gelu", "hidden_size": D,
                  "intermediate_size": N},
         (("bert.encoder.layer.{i}.intermediate.dense", "bert.encoder.layer.{i}.output.dense",
           None),), "gelu", "not_absorbed"),
    # sentence-transformers MiniLM: a BertModel saved without the "bert." prefix
    Case("bert", {"model_type": "bert", "hidden_act": "gelu", "hidden_size": D},
         (("encoder.layer.{i}.intermediate.dense", "encoder.layer.{i}.output.dense", None),),
         "gelu", "not_absorbed"),
    Case("gpt2", {"model_type": "gpt2", "activation_function": "gelu_new", "n_embd": D,
                  "n_inner": None},
         (("h.{i}.mlp.c_fc", "h.{i}.mlp.c_proj", None),), "gelu_tanh", "not_absorbed",
         conv1d=True),
    Case("gpt_neox", {"model_type": "gpt_neox", "hidden_act": "gelu", "hidden_size": D,
                      "intermediate_size": N, "use_parallel_residual": True},
         (("gpt_neox.layers.{i}.mlp.dense_h_to_4h", "gpt_neox.layers.{i}.mlp.dense_4h_to_h",
           None),), "gelu", "not_absorbed"),
    Case("opt", {"model_type": "opt", "activation_function": "relu", "hidden_size": D,
                 "ffn_dim": N},
         (("model.decoder.layers.{i}.fc1", "model.decoder.layers.{i}.fc2", None),), "relu",
         "not_absorbed"),
    Case("falcon", {"model_type": "falcon", "activation": "gelu", "hidden_size": D,
                    "bias": False},
         (("transformer.h.{i}.mlp.dense_h_to_4h", "transformer.h.{i}.mlp.dense_4h_to_h",
           None),), "gelu", "not_absorbed", biases=False),
    Case("t5", {"model_type": "t5", "feed_forward_proj": "relu", "d_model": D, "d_ff": N},
         (("encoder.block.{i}.layer.1.DenseReluDense.wi",
           "encoder.block.{i}.layer.1.DenseReluDense.wo", None),
          ("decoder.block.{i}.layer.2.DenseReluDense.wi",
           "decoder.block.{i}.layer.2.DenseReluDense.wo", None)),
         "relu", "not_absorbed", biases=False,
         layer_labels=("encoder.0", "encoder.1", "decoder.0", "decoder.1")),
    Case("t5_gated", {"model_type": "t5", "feed_forward_proj": "gated-gelu", "d_model": D,
                      "d_ff": N},
         (("encoder.block.{i}.layer.1.DenseReluDense.wi_1",
           "encoder.block.{i}.layer.1.DenseReluDense.wo",
           "encoder.block.{i}.layer.1.DenseReluDense.wi_0"),
          ("decoder.block.{i}.layer.2.DenseReluDense.wi_1",
           "decoder.block.{i}.layer.2.DenseReluDense.wo",
           "decoder.block.{i}.layer.2.DenseReluDense.wi_0")),
         "geglu_tanh", "impossible", biases=False,
         layer_labels=("encoder.0", "encoder.1", "decoder.0", "decoder.1")),
    Case("llama", {"model_type": "llama", "hidden_act": "silu", "hidden_size": D,
                   "intermediate_size": N},
         (("model.layers.{i}.mlp.up_proj", "model.layers.{i}.mlp.down_proj",
           "model.layers.{i}.mlp.gate_proj"),), "swiglu", "impossible", biases=False),
    Case("llama", {"model_type": "qwen2", "hidden_act": "silu", "hidden_size": D},
         (("model.layers.{i}.mlp.up_proj", "model.layers.{i}.mlp.down_proj",
           "model.layers.{i}.mlp.gate_proj"),), "swiglu", "impossible", biases=False),
    Case("gemma", {"model_type": "gemma", "hidden_act": "gelu",
                   "hidden_activation": "gelu_pytorch_tanh", "hidden_size": D},
         (("model.layers.{i}.mlp.up_proj", "model.layers.{i}.mlp.down_proj",
           "model.layers.{i}.mlp.gate_proj"),), "geglu_tanh", "impossible", biases=False),
    Case("phi", {"model_type": "phi", "hidden_act": "gelu_new", "hidden_size": D},
         (("model.layers.{i}.mlp.fc1", "model.layers.{i}.mlp.fc2", None),), "gelu_tanh",
         "not_absorbed"),
]


def _write_case(case: Case, folder: Path, rng: np.random.Generator) -> dict[str, np.ndarray]:
    tensors: dict[str, np.ndarray] = {}
    for up, down, gate in case.stacks:
        tensors |= mlp_tensors(rng, up, down, d=D, n=N, gate=gate, biases=case.biases,
                               conv1d=case.conv1d)
    write(folder, tensors, case.config, dtype=np.float64)
    return tensors


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.arch}-{c.config['model_type']}")
def test_architecture(case: Case, tmp_path: Path, rng: np.random.Generator) -> None:
    tensors = _write_case(case, tmp_path / case.arch, rng)
    res = inspect_checkpoint(tmp_path / case.arch)
    assert res["architecture"]["name"] == case.arch  # type: ignore[index]
    assert res["layout"] == ("conv1d" if case.conv1d else "linear")
    assert res["activation"] == case.activation
    assert str(res["orientation_checked"]).startswith("against config.json")
    layers = res["layers"]
    assert isinstance(layers, list)
    assert tuple(r["label"] for r in layers) == case.layer_labels
    for row in layers:
        # d and n from the model dimension: a Conv1D layout is not read swapped
        assert (row["d"], row["n"], row["biases"]) == (D, N, case.biases)
        assert row["verdict"] == case.verdict, row["reason"]
        assert ("up_bias" in row["keys"]) == case.biases
    # the Block inspect builds holds exactly the stored weights and biases, as nn.Linear
    got = loaded_blocks(tmp_path / case.arch)
    want = [expected_block(tensors, up, down, i, conv1d=case.conv1d)
            for up, down, _ in case.stacks for i in range(2)]
    for g, w in zip(got, want, strict=True):
        assert_same_blocks(g, w)


def test_tanh_gelu_gates_are_checked_as_such(tmp_path: Path, rng: np.random.Generator) -> None:
    """Gemma's gelu_pytorch_tanh gate is the catalog's geglu_tanh (no stand-in, no note); T5's
    "gated-gelu" is run by Hugging Face with gelu_new, and the output says so."""
    gemma = next(c for c in CASES if c.arch == "gemma")
    _write_case(gemma, tmp_path / "g", rng)
    res = inspect_checkpoint(tmp_path / "g")
    assert res["activation"] == "geglu_tanh" and res["activation_note"] is None
    t5 = next(c for c in CASES if c.arch == "t5_gated")
    _write_case(t5, tmp_path / "t", rng)
    res = inspect_checkpoint(tmp_path / "t")
    assert res["activation"] == "geglu_tanh" and "gelu_new" in str(res["activation_note"])


def test_arch_overrides_detection(tmp_path: Path, rng: np.random.Generator) -> None:
    # LLaMA names without config.json fit llama and gemma: ambiguous, until --arch says which
    case = next(c for c in CASES if c.config["model_type"] == "llama")
    tensors: dict[str, np.ndarray] = {}
    for up, down, gate in case.stacks:
        tensors |= mlp_tensors(rng, up, down, d=D, n=N, gate=gate, biases=False)
    write(tmp_path / "m", tensors)
    with pytest.raises(AbsorbError, match=r"ambiguous layout: .*llama .*swiglu.* and gemma "
                                          r".*geglu.*pass --arch NAME"):
        inspect_checkpoint(tmp_path / "m")
    res = inspect_checkpoint(tmp_path / "m", arch="gemma")
    assert res["activation"] == "geglu_tanh" and "default" in str(res["activation_source"])
    assert [r["verdict"] for r in res["layers"]] == ["impossible"] * 2  # type: ignore[attr-defined]
    # naming the activation settles it too: both layouts are nn.Linear
    res = inspect_checkpoint(tmp_path / "m", activation="swiglu")
    assert res["candidates"] == ["llama", "gemma"] and res["activation_source"] == "--activation"


def test_conv1d_ambiguity_and_its_resolution(tmp_path: Path, rng: np.random.Generator,
                                             cli: object) -> None:
    # GPT-2 (Conv1D) and GPT-Neo (nn.Linear) share the names h.{i}.mlp.c_fc / c_proj; without
    # config.json and biases the shapes 4x12 / 12x4 fit both orientations.
    tensors = mlp_tensors(rng, "h.{i}.mlp.c_fc", "h.{i}.mlp.c_proj", biases=False, conv1d=True)
    write(tmp_path / "nb", tensors)
    out: CliResult = cli("inspect", str(tmp_path / "nb"))  # type: ignore[operator]
    assert out.code == 2 and "ambiguous layout" in out.err and "gpt2" in out.err
    assert "gpt_neo" in out.err and "config.json" in out.err and "Traceback" not in out.err
    # the biases' shapes settle the orientation: b_up has n entries
    with_bias = mlp_tensors(rng, "h.{i}.mlp.c_fc", "h.{i}.mlp.c_proj", conv1d=True)
    write(tmp_path / "b", with_bias)
    res = inspect_checkpoint(tmp_path / "b")
    assert res["architecture"]["name"] == "gpt2"  # type: ignore[index]
    assert res["orientation_checked"] == "against the bias shapes"
    assert [(r["d"], r["n"]) for r in res["layers"]] == [(D, N)] * 2  # type: ignore[attr-defined]


def test_wrong_orientation_is_an_error_not_a_swap(tmp_path: Path,
                                                  rng: np.random.Generator) -> None:
    # Falcon names, but the weights stored transposed (as Conv1D): config's d rules it out
    case = next(c for c in CASES if c.arch == "falcon")
    (up, down, _), = case.stacks
    write(tmp_path / "f", mlp_tensors(rng, up, down, biases=False, conv1d=True), case.config)
    with pytest.raises(AbsorbError, match=r"layer 0: as nn.Linear .* gives d = 12, n = 4, but "
                                          r"config.json hidden_size = 4 \(the transposed"):
        inspect_checkpoint(tmp_path / "f")


def test_unknown_layout(tmp_path: Path, rng: np.random.Generator, cli: object) -> None:
    write(tmp_path / "u", mlp_tensors(rng, "net.blocks.{i}.ff.a", "net.blocks.{i}.ff.b"),
          {"model_type": "mystery", "hidden_size": D})
    out: CliResult = cli("inspect", str(tmp_path / "u"))  # type: ignore[operator]
    assert out.code == 2 and out.err.count("\n") == 1
    assert out.err.startswith("error: unknown layout: no known MLP tensor names (model_type "
                              "'mystery'")


def test_config_contradicting_names(tmp_path: Path, rng: np.random.Generator) -> None:
    write(tmp_path / "c", mlp_tensors(rng, "bert.encoder.layer.{i}.intermediate.dense",
                                      "bert.encoder.layer.{i}.output.dense"),
          {"model_type": "gpt2", "n_embd": D})
    with pytest.raises(AbsorbError, match="model_type 'gpt2', but the tensor names fit bert"):
        inspect_checkpoint(tmp_path / "c")


def test_planted_float64_layer_is_up_to_rounding(tmp_path: Path,
                                                 rng: np.random.Generator) -> None:
    # an OPT-layout layer built to be absorbable through a float pseudo-inverse, stored as
    # float64, beside a generic one: its index set holds up to float64 rounding, not exactly
    planted, S = plant("relu", 3, 8, 4, rng, biases=True)
    generic = mlp_tensors(rng, "model.decoder.layers.{i}.fc1", "model.decoder.layers.{i}.fc2",
                          d=3, n=8, layers=2)
    tensors = {k: v for k, v in generic.items() if ".0." not in k} | {
        "model.decoder.layers.0.fc1.weight": planted.W_up,
        "model.decoder.layers.0.fc1.bias": planted.b_up,
        "model.decoder.layers.0.fc2.weight": planted.W_down,
        "model.decoder.layers.0.fc2.bias": planted.b_down}
    write(tmp_path / "opt", tensors,  # type: ignore[arg-type]
          {"model_type": "opt", "activation_function": "relu", "hidden_size": 3}, np.float64)
    res = inspect_checkpoint(tmp_path / "opt")
    first, second = res["layers"]  # type: ignore[misc]
    assert first["verdict"] == "absorbable_up_to_rounding"
    assert sorted(first["S"]) == sorted(S) and first["biases"] is True
    assert first["corrected_construction_check"]["max_relative_error"] < 1e-9
    assert second["verdict"] == "not_absorbed"


def test_t5_config_must_fit_the_names(tmp_path: Path, rng: np.random.Generator) -> None:
    case = next(c for c in CASES if c.arch == "t5")
    _write_case(case, tmp_path / "t", rng)
    (tmp_path / "t" / "config.json").write_text(json.dumps(
        {**case.config, "feed_forward_proj": "gated-gelu"}))
    with pytest.raises(AbsorbError, match="feed_forward_proj = 'gated-gelu' does not fit"):
        inspect_checkpoint(tmp_path / "t")


def test_width_from_config_is_checked(tmp_path: Path, rng: np.random.Generator) -> None:
    case = CASES[0]  # BERT, config intermediate_size = 12
    (up, down, _), = case.stacks
    write(tmp_path / "w", mlp_tensors(rng, up, down, n=10), case.config)
    with pytest.raises(AbsorbError, match=r"layer 0: .* n = 10, but config\.json "
                                          r"intermediate_size = 12"):
        inspect_checkpoint(tmp_path / "w")


def test_partial_names_are_reported(tmp_path: Path, rng: np.random.Generator) -> None:
    # LLaMA up/down projections without their gates: no layout fits, and the message says why
    tensors = mlp_tensors(rng, "model.layers.{i}.mlp.up_proj", "model.layers.{i}.mlp.down_proj",
                          biases=False)
    write(tmp_path / "p", tensors, {"model_type": "llama", "hidden_size": D})
    with pytest.raises(AbsorbError, match=r"unknown layout: .*llama: layer 0: no tensor matches "
                                          r"the gate pattern 'model\.layers\.\{i\}\.mlp\.gate"):
        inspect_checkpoint(tmp_path / "p")


def test_certificates_kept_for_json_dropped_for_text_and_counted(
        tmp_path: Path, rng: np.random.Generator) -> None:
    """Y stays (and is counted against the memory budget) when JSON will show it; otherwise it
    is dropped after each layer, keeping its margin and how it was verified."""
    from absorb.certificates import RationalMatrix
    from absorb.serialize import plain

    case = CASES[0]
    _write_case(case, tmp_path / "m", rng)
    kept = inspect_checkpoint(tmp_path / "m")
    dropped = inspect_checkpoint(tmp_path / "m", keep_certificates=False)
    for a, b in zip(kept["layers"], dropped["layers"], strict=True):  # type: ignore[call-overload]
        assert a["verdict"] == b["verdict"] == "not_absorbed"
        assert isinstance(a["certificate"]["dual"]["Y"], RationalMatrix)
        assert b["certificate"]["dual"]["Y"] is None
        assert a["certificate"]["dual"]["margin"] == b["certificate"]["dual"]["margin"]
    assert json.loads(json.dumps(plain(kept)))["layers"][0]["certificate"]["dual"]["Y"]
    again = inspect_checkpoint(tmp_path / "m")  # same certificates: matrices compare by value
    assert [r["certificate"] for r in kept["layers"]] == [  # type: ignore[attr-defined]
        r["certificate"] for r in again["layers"]]  # type: ignore[attr-defined]
    from absorb.budget import MEMORY_SHARE

    need = float(str(kept["layers"][1]["cost"]["predicted_peak_bytes"]))  # type: ignore[index]
    just_one_layer = math.ceil((need + 8) / MEMORY_SHARE)  # not the layer plus d² kept floats
    with pytest.raises(AbsorbError, match="earlier certificates kept"):
        inspect_checkpoint(tmp_path / "m", memory=just_one_layer)
    inspect_checkpoint(tmp_path / "m", memory=just_one_layer, keep_certificates=False)


def test_config_names_name_one_entry_each() -> None:
    """The activation tables of checkpoint detection come from the catalog's ``config_names``;
    a config name claimed by two ungated (or two gated) entries would make one of them
    unreachable, and every σ a gated entry uses as its gate is also known ungated."""
    from absorb.activations import CATALOG
    from absorb.checkpoints.architectures import GATED, UNGATED

    for gated, table in ((False, UNGATED), (True, GATED)):
        claims = [n for a in CATALOG.values() if a.gated == gated for n in a.config_names]
        assert len(claims) == len(set(claims)), f"config names claimed twice: {sorted(claims)}"
        assert set(table) == set(claims)
    for hf, name in GATED.items():
        gate = CATALOG[name].gate
        assert hf not in UNGATED or UNGATED[hf] == gate, (hf, name, gate)
