"""The theorem manifest: one entry per theorem ID of DESIGN.md, read from ``theorems.toml``.

The manifest is the single place on the Python side where Lean declaration names are written;
the CLI, the Lean bridge (:mod:`absorb.lean`), the experiments and the report all read them from
:data:`THEOREMS`.  Loading validates the file: unique IDs, exactly the IDs of DESIGN.md, every
theorem with a Lean declaration or a ``lean_note`` saying why it has none, and at least one
experiment.  The manifest imports nothing of the experiments: the registry
(:func:`absorb.experiments.check_registry`) checks itself against the manifest.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

from absorb.errors import AbsorbError

#: The stable theorem IDs of DESIGN.md, in the order the report presents them.
THEOREM_IDS: tuple[str, ...] = (
    "reduction",
    "degree",
    "linearization",
    "bounded",
    "depth_degree",
    "depth_linearization",
    "depth_narrow",
    "depth_injective",
    "depth_two_kinks",
    "depth_kink_rays",
    "odd_part",
    "index_set_sufficient",
    "index_set_necessary",
    "generic_measure_zero",
    "relaxation_certificate",
    "bias_blowup",
)

_STRING_KEYS = ("title", "statement", "paper")
_LIST_KEYS = ("hypotheses", "lean", "experiments", "uses")
_KNOWN_KEYS = frozenset((*_STRING_KEYS, *_LIST_KEYS, "lean_note", "lean_scope"))


@dataclass(frozen=True)
class Theorem:
    """One manifest entry: a result of THEORY.md with its Lean and Python counterparts."""

    id: str
    title: str
    statement: str
    paper: str
    hypotheses: tuple[str, ...]
    lean: tuple[str, ...]
    lean_note: str
    experiments: tuple[str, ...]
    #: Where the Lean declarations state less than ``statement`` (a narrower hypothesis), what
    #: exactly they cover; empty when they state it all.
    lean_scope: str = ""
    #: The theorem IDs whose results this one builds on (the blueprint's dependency graph).
    uses: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        """Plain-JSON form (lists, strings)."""
        return {
            "id": self.id,
            "title": self.title,
            "statement": self.statement,
            "paper": self.paper,
            "hypotheses": list(self.hypotheses),
            "lean": list(self.lean),
            "lean_note": self.lean_note,
            "lean_scope": self.lean_scope,
            "experiments": list(self.experiments),
            "uses": list(self.uses),
        }


def _string_list(tid: str, key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise AbsorbError(f"theorems.toml: [{tid}].{key} must be a list of non-empty strings")
    if len(set(value)) != len(value):
        raise AbsorbError(f"theorems.toml: [{tid}].{key} repeats an entry")
    return tuple(value)


def _entry(tid: str, table: object) -> Theorem:
    if not isinstance(table, dict):
        raise AbsorbError(f"theorems.toml: [{tid}] must be a table")
    unknown = sorted(set(table) - _KNOWN_KEYS)
    if unknown:
        raise AbsorbError(f"theorems.toml: [{tid}] has unknown keys {unknown}")
    strings: dict[str, str] = {}
    for key in _STRING_KEYS:
        value = table.get(key)
        if not isinstance(value, str) or not value.strip():
            raise AbsorbError(f"theorems.toml: [{tid}].{key} must be a non-empty string")
        strings[key] = value
    lists = {key: _string_list(tid, key, table.get(key, [])) for key in _LIST_KEYS}
    note = table.get("lean_note", "")
    if not isinstance(note, str):
        raise AbsorbError(f"theorems.toml: [{tid}].lean_note must be a string")
    if not lists["lean"] and not note.strip():
        raise AbsorbError(
            f"theorems.toml: [{tid}] has no Lean declaration and no lean_note saying why"
        )
    if lists["lean"] and note:
        raise AbsorbError(f"theorems.toml: [{tid}] has Lean declarations and a lean_note")
    scope = table.get("lean_scope", "")
    if not isinstance(scope, str) or (scope and not lists["lean"]):
        raise AbsorbError(f"theorems.toml: [{tid}].lean_scope must be a string, with `lean` set")
    if not lists["experiments"]:
        raise AbsorbError(f"theorems.toml: [{tid}] names no experiment")
    return Theorem(
        id=tid,
        title=strings["title"],
        statement=strings["statement"],
        paper=strings["paper"],
        hypotheses=lists["hypotheses"],
        lean=lists["lean"],
        lean_note=note,
        experiments=lists["experiments"],
        lean_scope=scope,
        uses=lists["uses"],
    )


def parse_manifest(text: str) -> tuple[Theorem, ...]:
    """Parse and validate manifest TOML text; theorems come back in :data:`THEOREM_IDS` order.

    TOML itself rejects a repeated table, so IDs are unique once parsing succeeds; the set of
    IDs must equal :data:`THEOREM_IDS`, and no Lean name or experiment may serve two theorems.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AbsorbError(f"theorems.toml: {exc}") from None
    missing = [tid for tid in THEOREM_IDS if tid not in data]
    extra = sorted(set(data) - set(THEOREM_IDS))
    if missing or extra:
        raise AbsorbError(f"theorems.toml: missing IDs {missing}, unknown IDs {extra}")
    theorems = tuple(_entry(tid, data[tid]) for tid in THEOREM_IDS)
    for attr in ("lean", "experiments"):
        names = [name for thm in theorems for name in getattr(thm, attr)]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise AbsorbError(f"theorems.toml: {attr} names used by two theorems: {repeated}")
    for thm in theorems:
        unknown = sorted(set(thm.uses) - set(THEOREM_IDS))
        if unknown or thm.id in thm.uses:
            raise AbsorbError(f"theorems.toml: [{thm.id}].uses names {unknown or [thm.id]}")
    return theorems


def load_manifest() -> tuple[Theorem, ...]:
    """Read ``theorems.toml`` from the installed package and validate it."""
    text = resources.files("absorb").joinpath("theorems.toml").read_text(encoding="utf-8")
    return parse_manifest(text)


THEOREMS: tuple[Theorem, ...] = load_manifest()
_BY_ID: Mapping[str, Theorem] = {thm.id: thm for thm in THEOREMS}


def get_theorem(id: str) -> Theorem:
    """The manifest entry of a theorem ID; :class:`AbsorbError` naming the known IDs otherwise."""
    try:
        return _BY_ID[id]
    except KeyError:
        raise AbsorbError(
            f"unknown theorem id {id!r}; known: {', '.join(THEOREM_IDS)}"
        ) from None


def lean_declarations() -> tuple[str, ...]:
    """Every Lean declaration the manifest names, in manifest order."""
    return tuple(name for thm in THEOREMS for name in thm.lean)

