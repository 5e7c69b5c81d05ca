"""Which layers a checkpoint holds, in which layout, with which activation.

Detection reads tensor names (the table of ``architectures``), shapes (from the file
headers) and ``config.json`` (``model_type``, the activation, the model dimension d).
The weight orientation is checked against d from ``config.json``, else against the bias
shapes (b_up has n entries, b_down d), and is never swapped silently: a layout that does not
fit the shapes, or names that fit layouts the evidence cannot tell apart, is an AbsorbError
naming what was found.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from absorb.activations import Activation, get_activation
from absorb.checkpoints.architectures import (
    ARCHITECTURES,
    LAYER,
    Architecture,
    Layout,
    Stack,
    catalog_activation,
    get_architecture,
    hidden_width,
    model_dimension,
)
from absorb.checkpoints.reading import FLOAT_DTYPES, Checkpoint
from absorb.errors import AbsorbError

LAYOUT_TEXT = {"linear": "nn.Linear (weight is out x in)",
               "conv1d": "Conv1D (weight is in x out)"}


def _regex(pattern: str, anchored: bool) -> re.Pattern[str]:
    """The pattern's tensor names; the layer index is any run of (Unicode) digits, so that a
    name whose index is not written as :func:`_layer_index` accepts is seen and refused."""
    body = re.escape(pattern).replace(re.escape(LAYER), r"(?P<i>\d+)")
    return re.compile(("" if anchored else r"(?P<prefix>(?:.+\.)?)") + body)


def _layer_index(key: str, digits: str) -> int:
    """The layer index of a tensor name: ASCII digits without leading zeros, the way the name
    is rebuilt from the index (``str(i)``); anything else (``٣``, ``01``) is refused rather
    than read as another layer's number."""
    if not (digits.isascii() and digits == str(int(digits))):
        raise AbsorbError(f"tensor {key!r}: layer index {digits!r} is not a plain ASCII "
                          "number without leading zeros; refused")
    return int(digits)


def bias_key(weight_key: str) -> str | None:
    """``….bias`` beside a ``….weight`` key (None for other names)."""
    return weight_key[: -len("weight")] + "bias" if weight_key.endswith(".weight") else None


@dataclass(frozen=True)
class Match:
    """A stack found in a checkpoint: the key prefix before the patterns and its layers."""

    stack: Stack
    prefix: str
    layers: tuple[int, ...]

    def keys(self, layer: int) -> dict[str, str]:
        return {role: self.prefix + p.replace(LAYER, str(layer))
                for role, p in self.stack.patterns().items()}

    def label(self, layer: int) -> str:
        return str(layer) if self.stack.name is None else f"{self.stack.name}.{layer}"


def find_stack(keys: Iterable[str], stack: Stack, *, anchored: bool) -> Match | None:
    """The layers of ``stack`` present in ``keys``; None when its up weight matches nothing.

    Every role must be present for the same layers, under one prefix (AbsorbError otherwise).
    """
    found: dict[str, dict[str, set[int]]] = {}
    for role, pattern in stack.patterns().items():
        rx = _regex(pattern, anchored)
        by_prefix: dict[str, set[int]] = {}
        for key in keys:
            if (m := rx.fullmatch(key)) is not None:
                by_prefix.setdefault(m.groupdict().get("prefix") or "", set()).add(
                    _layer_index(key, m["i"]))
        found[role] = by_prefix
    if not found["up"]:
        return None
    if len(found["up"]) > 1:
        raise AbsorbError(f"tensors matching {stack.up!r} under several prefixes "
                          f"({', '.join(repr(p) for p in sorted(found['up']))}); pass --up/--down "
                          "with full names")
    ((prefix, layers),) = found["up"].items()
    for role, by_prefix in found.items():
        missing = layers - by_prefix.get(prefix, set())
        if missing:
            pattern = prefix + stack.patterns()[role]
            raise AbsorbError(f"layer {min(missing)}: no tensor matches the {role} pattern "
                              f"{pattern!r}")
        extra = by_prefix.get(prefix, set()) - layers
        if extra:
            raise AbsorbError(f"layer {min(extra)}: no tensor matches the up pattern "
                              f"{prefix + stack.up!r}")
    return Match(stack, prefix, tuple(sorted(layers)))


@dataclass(frozen=True)
class Dims:
    """d and n as ``config.json`` states them (value, key), where it does."""

    d: tuple[int, str] | None = None
    n: tuple[int, str] | None = None

    @classmethod
    def of(cls, config: Mapping[str, Any] | None) -> Dims:
        return cls(model_dimension(config), hidden_width(config))

    def check(self, where: str, as_layout: str, d: int, n: int) -> None:
        """AbsorbError when the weights' (d, n) contradict the config (never a swap)."""
        for got, stated, other in ((d, self.d, n), (n, self.n, d)):
            if stated is not None and stated[0] != got:
                flip = (" (the transposed layout would fit: pass the right --arch)"
                        if other == stated[0] else "")
                raise AbsorbError(f"{where}: {as_layout}, n = {n}, but config.json "
                                  f"{stated[1]} = {stated[0]}{flip}")

    def to_json(self) -> dict[str, object]:
        return {name: None if v is None else {"value": v[0], "source": f"config.json {v[1]}"}
                for name, v in (("d", self.d), ("n", self.n))}


@dataclass(frozen=True)
class LayerSpec:
    """One layer's tensor keys (weights and the biases present), d and n, and stored dtype."""

    label: str
    layer: int
    stack: str | None
    keys: dict[str, str]
    d: int
    n: int
    dtype: str


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def layer_spec(ckpt: Checkpoint, match: Match, layer: int, layout: Layout,
               dims: Dims) -> LayerSpec:
    """Keys, d and n of one layer, its orientation checked (from the headers only)."""
    keys = match.keys(layer)
    where = f"layer {match.label(layer)}"
    info = {role: ckpt.info(k) for role, k in keys.items()}
    shapes = {role: s for role, (_, s) in info.items()}
    for role, shape in shapes.items():
        if len(shape) != 2:
            raise AbsorbError(f"{where}: {keys[role]} has shape {_shape_text(shape)}, "
                              "expected a matrix")
        if 0 in shape:
            raise AbsorbError(f"{where}: {keys[role]} has shape {_shape_text(shape)}: a layer "
                              "of width or dimension 0 has nothing to decide; refused")
    up = shapes["up"]
    n, d = up if layout == "linear" else up[::-1]
    if shapes["down"] != up[::-1]:
        raise AbsorbError(f"{where}: {keys['up']} is {_shape_text(up)} and {keys['down']} is "
                          f"{_shape_text(shapes['down'])}; the down weight must be the up "
                          "weight's shape transposed")
    if "gate" in shapes and shapes["gate"] != up:
        raise AbsorbError(f"{where}: {keys['gate']} is {_shape_text(shapes['gate'])}, the up "
                          f"weight {_shape_text(up)}; they must agree")
    biases = {f"{role}_bias": b for role, k in keys.items()
              if (b := bias_key(k)) is not None and b in ckpt.keys}
    if "gate_bias" in biases:
        raise AbsorbError(f"{biases['gate_bias']}: a gate bias is not supported "
                          "(g(W_gate x + c))")
    as_layout = f"as {LAYOUT_TEXT[layout]}, {keys['up']} ({_shape_text(up)}) gives d = {d}"
    dims.check(where, as_layout, d, n)
    for role, size in (("up_bias", n), ("down_bias", d)):
        if role in biases and ckpt.info(biases[role])[1] != (size,):
            got = _shape_text(ckpt.info(biases[role])[1])
            raise AbsorbError(f"{where}: {as_layout} and n = {n}, but {biases[role]} has shape "
                              f"{got}, expected {size}")
    info |= {role: ckpt.info(k) for role, k in biases.items()}
    for role, (dtype, _) in info.items():
        if dtype not in FLOAT_DTYPES:
            raise AbsorbError(f"{where}: {({**keys, **biases})[role]}: unsupported tensor "
                              f"dtype {dtype} (need one of {', '.join(FLOAT_DTYPES)}); no layer "
                              "was decided")
    dtypes = sorted({dt for role, (dt, _) in info.items() if not role.endswith("_bias")})
    return LayerSpec(match.label(layer), layer, match.stack.name, {**keys, **biases}, d, n,
                     "/".join(dtypes))


@dataclass(frozen=True)
class Plan:
    """What ``inspect`` will read: layout, activation, the stacks found, and why."""

    architecture: Architecture | None
    candidates: tuple[str, ...]
    layout: Layout
    activation: Activation
    activation_source: str
    activation_note: str | None
    matches: tuple[Match, ...]
    dims: Dims
    detected_from: str
    orientation_checked: str

    def specs(self, ckpt: Checkpoint) -> Iterable[LayerSpec]:
        for match in self.matches:
            for layer in match.layers:
                yield layer_spec(ckpt, match, layer, self.layout, self.dims)

    def to_json(self) -> dict[str, object]:
        return {"architecture": None if self.architecture is None
                else self.architecture.to_json(),
                "candidates": list(self.candidates), "layout": self.layout,
                "activation": self.activation.name, "activation_source": self.activation_source,
                "activation_note": self.activation_note,
                "config_sizes": self.dims.to_json(),
                "detected_from": self.detected_from,
                "orientation_checked": self.orientation_checked,
                "patterns": [{"stack": m.stack.name, "prefix": m.prefix,
                              **{r: m.prefix + p for r, p in m.stack.patterns().items()},
                              "layers": list(m.layers)} for m in self.matches]}


def _matches(keys: frozenset[str], arch: Architecture) -> tuple[Match, ...]:
    return tuple(m for s in arch.stacks if (m := find_stack(keys, s, anchored=False)) is not None)


def _orientation_evidence(ckpt: Checkpoint, dims: Dims, first: Match) -> str:
    keys = first.keys(first.layers[0])
    stated = [f"{v[1]} = {v[0]}" for v in (dims.d, dims.n) if v is not None]
    if stated:
        return f"against config.json {' and '.join(stated)}"
    if any((b := bias_key(k)) is not None and b in ckpt.keys for k in keys.values()):
        return "against the bias shapes"
    return "not checked: no config.json sizes and no biases (the architecture's layout)"


def _fits(ckpt: Checkpoint, arch: Architecture, matches: tuple[Match, ...],
          dims: Dims) -> bool:
    """Does the first layer's shape evidence (d, biases) allow ``arch``'s layout?"""
    try:
        layer_spec(ckpt, matches[0], matches[0].layers[0], arch.layout, dims)
    except AbsorbError:
        return False
    return True


def _resolve_activation(arch: Architecture | None, config: Mapping[str, Any] | None,
                        override: str | None) -> tuple[Activation, str, str | None]:
    if override is not None:
        act = get_activation(override)
        if arch is not None and act.gated != arch.gated:
            raise AbsorbError(f"--activation {override} is {'' if act.gated else 'not '}gated "
                              f"but the {arch.name} MLP is {'' if arch.gated else 'not '}gated")
        return act, "--activation", None
    assert arch is not None  # explicit patterns always come with --activation (the CLI checks)
    resolved = catalog_activation(arch, config)
    return get_activation(resolved.name), resolved.source, resolved.note


def _kind(arch: Architecture, config: Mapping[str, Any] | None,
          override: str | None) -> tuple[Layout, str]:
    """(layout, catalog activation) of an architecture under this config and override."""
    if override is not None:
        return arch.layout, override
    try:
        return arch.layout, catalog_activation(arch, config).name
    except AbsorbError:
        return arch.layout, "unsupported activation"


Found = list[tuple[Architecture, tuple[Match, ...]]]


def _found(ckpt: Checkpoint, config: Mapping[str, Any] | None) -> tuple[Found, str]:
    """The architectures whose names the checkpoint holds (narrowed by ``model_type``),
    and what decided it."""
    model_type = (config or {}).get("model_type")
    found: Found = []
    partial = []
    for a in ARCHITECTURES:
        try:
            if m := _matches(ckpt.keys, a):
                found.append((a, m))
        except AbsorbError as exc:  # some of a's names, not all: reported if nothing fits
            partial.append(f"{a.name}: {exc}")
    if not found:
        sample = ", ".join(sorted(ckpt.keys)[:4])
        raise AbsorbError(f"unknown layout: no known MLP tensor names (model_type "
                          f"{model_type!r}; tensors like {sample}"
                          + "".join(f"; {p}" for p in partial)
                          + "); pass --arch NAME or --up/--down [--gate] --activation")
    by_type = [(a, m) for a, m in found if model_type in a.model_types]
    if by_type:
        return by_type, f"tensor names and config.json model_type {model_type!r}"
    if any(model_type in a.model_types for a in ARCHITECTURES):
        raise AbsorbError(f"config.json says model_type {model_type!r}, but the tensor names "
                          f"fit {', '.join(a.name for a, _ in found)}; pass --arch NAME")
    return found, "tensor names" + ("" if config is None else
                                    f" (config.json model_type {model_type!r} is not in the "
                                    "table)")


def _pick(ckpt: Checkpoint, found: Found, dims: Dims, config: Mapping[str, Any] | None,
          override: str | None) -> Found:
    """The candidates the shapes allow; AbsorbError when they still differ in layout or
    activation (ambiguous) or when none fits (the first one's mismatch is shown)."""
    fitting = [(a, m) for a, m in found if _fits(ckpt, a, m, dims)] if len(found) > 1 else found
    if not fitting:
        arch, matches = found[0]
        layer_spec(ckpt, matches[0], matches[0].layers[0], arch.layout, dims)
    kinds = {a.name: _kind(a, config, override) for a, _ in fitting}
    if len(set(kinds.values())) > 1:
        arch, matches = fitting[0]
        raise AbsorbError(
            "ambiguous layout: the tensor names fit "
            + " and ".join(f"{a.name} ({a.family}: {', '.join(kinds[a.name])})"
                           for a, _ in fitting)
            + f" ({matches[0].prefix + arch.stacks[0].up}), and the shapes and config.json do "
            "not tell them apart; add the model's config.json beside the weights or pass "
            "--arch NAME")
    return fitting


def detect(ckpt: Checkpoint, *, arch: str | None = None,
           activation: str | None = None) -> Plan:
    """The plan for a checkpoint: ``arch`` (a table name) overrides detection, ``activation``
    (a catalog name) the activation."""
    config = ckpt.config
    dims = Dims.of(config)
    if arch is not None:
        chosen = get_architecture(arch)
        matches = _matches(ckpt.keys, chosen)
        if not matches:
            raise AbsorbError(f"--arch {arch}: no tensor matches {chosen.stacks[0].up!r}")
        candidates, source = [(chosen, matches)], f"--arch {arch}"
    else:
        found, source = _found(ckpt, config)
        candidates = _pick(ckpt, found, dims, config, activation)
        chosen, matches = candidates[0]
    act, act_source, note = _resolve_activation(chosen, config, activation)
    return Plan(chosen, tuple(a.name for a, _ in candidates), chosen.layout, act, act_source,
                note, matches, dims, source, _orientation_evidence(ckpt, dims, matches[0]))


def explicit_plan(ckpt: Checkpoint, *, up: str, down: str, gate: str | None,
                  activation: str) -> Plan:
    """The plan for ``--up/--down [--gate] --activation`` (full key patterns, nn.Linear)."""
    for pattern in (up, down, gate):
        if pattern is not None and pattern.count(LAYER) != 1:
            raise AbsorbError(f"pattern {pattern!r} must contain {LAYER} exactly once")
    act = get_activation(activation)
    if act.gated != (gate is not None):
        need = "needs --gate" if act.gated else "takes no --gate"
        raise AbsorbError(f"activation {act.name} {need}")
    stack = Stack(None, up, down, gate)
    match = find_stack(ckpt.keys, stack, anchored=True)
    if match is None:
        raise AbsorbError(f"no tensor matches the pattern {up!r}")
    dims = Dims.of(ckpt.config)
    return Plan(None, (), "linear", act, "--activation", None, (match,), dims,
                "--up/--down patterns", _orientation_evidence(ckpt, dims, match))
