"""The table of known MLP layouts: tensor-name patterns, weight layout, activation.

Patterns are the distinguishing tail of the tensor names, ``{i}`` standing for the layer
index; any prefix (``bert.``, ``model.``, ``transformer.``, none for a base model) may come
before them. The layout says how a weight is stored:

* ``linear`` — PyTorch ``nn.Linear``, ``weight`` is out × in: up (and gate) n × d, down d × n;
* ``conv1d`` — GPT-2's ``Conv1D``, ``weight`` is in × out: ``c_fc.weight`` d × n,
  ``c_proj.weight`` n × d (read transposed).

The activation is read from ``config.json`` (the first of ``act_keys`` present) with the
Hugging Face name (``gelu``, ``gelu_new``, ``silu``, …), else ``default_act`` is assumed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from absorb.activations import CATALOG
from absorb.errors import AbsorbError

Layout = Literal["linear", "conv1d"]
LAYER = "{i}"

# Hugging Face activation names → catalog σ (ungated blocks), and gate activation g → catalog
# gated entry (g(W_gate x) ⊙ W_up x): read from the catalog entries' ``config_names``.
UNGATED = {hf: a.name for a in CATALOG.values() if not a.gated for hf in a.config_names}
GATED = {hf: a.name for a in CATALOG.values() if a.gated for hf in a.config_names}
# config.json keys holding the model dimension d, and the hidden width n, in the order
# they are looked for.
DIM_KEYS = ("hidden_size", "n_embd", "d_model", "dim", "n_embed")
WIDTH_KEYS = ("intermediate_size", "ffn_dim", "d_ff", "n_inner", "ffn_hidden_size", "hidden_dim")


@dataclass(frozen=True)
class Stack:
    """One stack of layers: the patterns of its up, down and (gated) gate weights."""

    name: str | None
    up: str
    down: str
    gate: str | None = None

    def patterns(self) -> dict[str, str]:
        return {"up": self.up, "down": self.down, **({"gate": self.gate} if self.gate else {})}


@dataclass(frozen=True)
class Architecture:
    """A known layout; ``model_types`` are the ``config.json`` ``model_type`` values it covers."""

    name: str
    family: str
    model_types: tuple[str, ...]
    stacks: tuple[Stack, ...]
    layout: Layout
    gated: bool
    act_keys: tuple[str, ...]
    default_act: str

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "family": self.family, "layout": self.layout,
                "gated": self.gated, "model_types": list(self.model_types)}


def _one(name: str, family: str, types: tuple[str, ...], up: str, down: str,
         gate: str | None = None, *, layout: Layout = "linear",
         act_keys: tuple[str, ...] = ("hidden_act",), act: str = "gelu") -> Architecture:
    return Architecture(name, family, types, (Stack(None, up, down, gate),), layout,
                        gate is not None, act_keys, act)


def _t5(name: str, gated: bool) -> Architecture:
    ff = "DenseReluDense."
    up, gate = (ff + "wi_1.weight", ff + "wi_0.weight") if gated else (ff + "wi.weight", None)
    stacks = tuple(Stack(part, f"{part}.block.{{i}}.layer.{k}.{up}",
                         f"{part}.block.{{i}}.layer.{k}.{ff}wo.weight",
                         None if gate is None else f"{part}.block.{{i}}.layer.{k}.{gate}")
                   for part, k in (("encoder", 1), ("decoder", 2)))
    return Architecture(name, "T5 v1.1 / Flan-T5 / mT5 (gated)" if gated else "T5 v1.0",
                        ("t5", "mt5", "umt5", "longt5"), stacks, "linear", gated,
                        ("feed_forward_proj",), "gated-gelu" if gated else "relu")


ARCHITECTURES: tuple[Architecture, ...] = (
    _one("bert", "BERT / RoBERTa / MiniLM / ELECTRA / XLM-R",
         ("bert", "roberta", "xlm-roberta", "electra", "camembert"),
         "encoder.layer.{i}.intermediate.dense.weight", "encoder.layer.{i}.output.dense.weight"),
    _one("distilbert", "DistilBERT", ("distilbert",), "transformer.layer.{i}.ffn.lin1.weight",
         "transformer.layer.{i}.ffn.lin2.weight", act_keys=("activation",)),
    _one("gpt2", "GPT-2 (Conv1D)", ("gpt2",), "h.{i}.mlp.c_fc.weight", "h.{i}.mlp.c_proj.weight",
         layout="conv1d", act_keys=("activation_function",), act="gelu_new"),
    _one("gpt_neo", "GPT-Neo (nn.Linear)", ("gpt_neo",), "h.{i}.mlp.c_fc.weight",
         "h.{i}.mlp.c_proj.weight", act_keys=("activation_function",), act="gelu_new"),
    _one("gptj", "GPT-J", ("gptj",), "h.{i}.mlp.fc_in.weight", "h.{i}.mlp.fc_out.weight",
         act_keys=("activation_function",), act="gelu_new"),
    _one("gpt_neox", "GPT-NeoX / Pythia", ("gpt_neox",), "layers.{i}.mlp.dense_h_to_4h.weight",
         "layers.{i}.mlp.dense_4h_to_h.weight"),
    _one("falcon", "Falcon", ("falcon", "RefinedWeb", "RefinedWebModel"),
         "h.{i}.mlp.dense_h_to_4h.weight", "h.{i}.mlp.dense_4h_to_h.weight",
         act_keys=("activation",)),
    _one("bloom", "BLOOM", ("bloom",), "h.{i}.mlp.dense_h_to_4h.weight",
         "h.{i}.mlp.dense_4h_to_h.weight", act_keys=(), act="gelu_new"),
    _one("opt", "OPT", ("opt",), "decoder.layers.{i}.fc1.weight", "decoder.layers.{i}.fc2.weight",
         act_keys=("activation_function",), act="relu"),
    _t5("t5", gated=False),
    _t5("t5_gated", gated=True),
    _one("llama", "LLaMA / Mistral / Qwen (SwiGLU)",
         ("llama", "mistral", "qwen2", "qwen3", "olmo", "olmo2", "stablelm", "granite"),
         "layers.{i}.mlp.up_proj.weight", "layers.{i}.mlp.down_proj.weight",
         "layers.{i}.mlp.gate_proj.weight", act="silu"),
    _one("gemma", "Gemma (GeGLU)", ("gemma", "gemma2", "gemma3_text"),
         "layers.{i}.mlp.up_proj.weight", "layers.{i}.mlp.down_proj.weight",
         "layers.{i}.mlp.gate_proj.weight", act_keys=("hidden_activation",),
         act="gelu_pytorch_tanh"),
    _one("phi", "Phi-1 / Phi-1.5 / Phi-2", ("phi",), "layers.{i}.mlp.fc1.weight",
         "layers.{i}.mlp.fc2.weight", act="gelu_new"),
)
BY_NAME: Mapping[str, Architecture] = {a.name: a for a in ARCHITECTURES}


def get_architecture(name: str) -> Architecture:
    """The table entry called ``name``; AbsorbError listing the known names otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise AbsorbError(f"unknown architecture {name!r} (known: {', '.join(BY_NAME)})") from None


@dataclass(frozen=True)
class ResolvedActivation:
    """The catalog name for an architecture's MLP, where it came from, and any caveat."""

    name: str
    source: str
    note: str | None = None


def hf_activation(arch: Architecture, config: Mapping[str, Any] | None) -> tuple[str, str]:
    """The Hugging Face activation name and where it was read (config key or default)."""
    for key in arch.act_keys:
        if config is None or key not in config:
            continue
        value = config[key]
        if not isinstance(value, str):
            raise AbsorbError(f"config.json {key} = {json.dumps(value)[:60]} is not an "
                              "activation name; pass --activation NAME")
        return value, f"config.json {key} = {value!r}"
    return arch.default_act, (f"{arch.name} default {arch.default_act!r} "
                              f"({'no config.json' if config is None else 'not in config.json'})")


def catalog_activation(arch: Architecture, config: Mapping[str, Any] | None) -> ResolvedActivation:
    """The catalog entry for the architecture's MLP (AbsorbError when the catalog lacks it)."""
    value, source = hf_activation(arch, config)
    act = value
    if "feed_forward_proj" in arch.act_keys:
        # T5: "relu", "gelu" or "gated-<act>"; Hugging Face runs "gated-gelu" with gelu_new.
        gated = act.startswith("gated-")
        if gated != arch.gated:
            raise AbsorbError(f"config.json feed_forward_proj = {value!r} does not fit the "
                              f"{arch.name} tensor names ({'gated' if arch.gated else 'ungated'})")
        act = act.removeprefix("gated-")
        if gated and act == "gelu":
            return ResolvedActivation(
                GATED["gelu_new"], source,
                f"config.json says {value!r}; Hugging Face's T5 runs that gate with gelu_new "
                "(the tanh approximation of GELU), and so does the check")
    table = GATED if arch.gated else UNGATED
    if act in table:
        return ResolvedActivation(table[act], source)
    raise AbsorbError(f"{arch.name}: activation {act!r} ({source}) is not in the catalog; "
                      "pass --activation NAME")


def _config_int(config: Mapping[str, Any] | None, keys: tuple[str, ...]) -> tuple[int, str] | None:
    for key in keys:
        value = (config or {}).get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, key
    return None


def model_dimension(config: Mapping[str, Any] | None) -> tuple[int, str] | None:
    """d from ``config.json`` and the key it came from; None where no key holds it."""
    return _config_int(config, DIM_KEYS)


def hidden_width(config: Mapping[str, Any] | None) -> tuple[int, str] | None:
    """n from ``config.json`` and the key it came from (GPT-2's ``n_inner`` may be null)."""
    return _config_int(config, WIDTH_KEYS)
