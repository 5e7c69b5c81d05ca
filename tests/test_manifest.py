"""The theorem manifest: complete, consistent with DESIGN.md/ARCHITECTURE.md, and the only place
on the Python side that spells a Lean declaration name."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from absorb import experiments, manifest
from absorb.errors import AbsorbError
from absorb.experiments import EXPERIMENTS

REPO = Path(__file__).resolve().parents[1]
TOML = REPO / "python" / "absorb" / "theorems.toml"


def _lean_name_table() -> str:
    """The "Fixed Lean declaration names" table of docs/ARCHITECTURE.md."""
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    start = text.index("Fixed Lean declaration names")
    return text[start : text.index("## Python side", start)]


def _design_ids() -> list[str]:
    return re.findall(r"^\| `([a-z_]+)` \|", _lean_name_table(), flags=re.MULTILINE)


def _architecture_lean_names() -> dict[str, list[str]]:
    text = _lean_name_table()
    out: dict[str, list[str]] = {}
    for tid, cell in re.findall(r"^\| `([a-z_]+)` \| (.*) \|$", text, flags=re.MULTILINE):
        out[tid] = re.findall(r"`(Absorb\.[A-Za-z_.']+)`", cell)
    return out


def test_every_design_id_has_exactly_one_entry() -> None:
    ids = [t.id for t in manifest.THEOREMS]
    assert len(ids) == len(set(ids))
    assert ids == list(manifest.THEOREM_IDS)
    assert set(ids) == set(_design_ids())


def test_lean_names_cover_the_architecture_table() -> None:
    # The architecture table names each theorem's main declarations; the manifest may add
    # instances and variants, but must keep every one of them, in the same order.
    table = _architecture_lean_names()
    for thm in manifest.THEOREMS:
        assert list(thm.lean[: len(table[thm.id])]) == table[thm.id], thm.id
        if not thm.lean:
            assert "not formalized" in thm.lean_note.lower()


def test_every_theorem_states_itself() -> None:
    # Lean names, experiments and doc rows: tests/test_contributing.py, piece by piece
    for thm in manifest.THEOREMS:
        assert thm.statement and thm.paper and thm.hypotheses, thm.id


def test_experiments_are_registered_both_ways() -> None:
    experiments.check_registry()
    for thm in manifest.THEOREMS:
        for name in thm.experiments:
            assert name in EXPERIMENTS
    with pytest.raises(AbsorbError, match="not registered"):
        experiments.check_registry(set(EXPERIMENTS) - {"odd_part_catalog"})
    with pytest.raises(AbsorbError, match="unused"):
        experiments.check_registry({*EXPERIMENTS, "stray"})


def test_manifest_imports_nothing_of_the_experiments() -> None:
    """No import cycle: loading the manifest (and the theory that reads it) leaves the
    experiments unloaded; the registry checks itself against the manifest, not vice versa."""
    code = ("import sys, absorb.manifest, absorb.theory; "
            "print(any(m.startswith('absorb.experiments') or m.startswith('absorb.report') "
            "for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_get_theorem() -> None:
    assert manifest.get_theorem("degree").paper == "Proposition 5"
    with pytest.raises(AbsorbError, match="known: reduction"):
        manifest.get_theorem("nope")


def _mutated(edit: str, old: str, new: str) -> str:
    """The manifest with the first match of the regular expression ``old`` replaced."""
    text = TOML.read_text(encoding="utf-8")
    mutated, count = re.subn(old, new, text, count=1)
    assert count == 1, edit
    return mutated


_RELAXATION_LEAN = r'lean = \["Absorb\.not_indexSetCond_of_relaxation"[^\n]*\]'


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (_RELAXATION_LEAN, "lean = []", "no lean_note"),
        (_RELAXATION_LEAN, 'lean = []\nlean_note = "not formalized"', "with `lean` set"),
        (r'experiments = \["odd_part_catalog"\]', "experiments = []", "names no experiment"),
        (r"\[relaxation_certificate\]", "[relaxation_certificates]", "missing IDs"),
        (r'title = "Absorbable weights form a null set"', 'title = ""', "title"),
        (_RELAXATION_LEAN, 'lean = ["Absorb.not_absorbable_reglu"]', "used by two theorems"),
        (r"\[degree\]", "[degree]\nextra = 1", "unknown keys"),
        (r"\[reduction\]", "[reduction]]", "theorems.toml"),
    ],
)
def test_validation_rejects_broken_manifests(old: str, new: str, message: str) -> None:
    with pytest.raises(AbsorbError, match=message):
        manifest.parse_manifest(_mutated(message, old, new))


def test_manifest_file_parses_with_tomllib_and_roundtrips() -> None:
    data = tomllib.loads(TOML.read_text(encoding="utf-8"))
    for thm in manifest.THEOREMS:
        assert thm.to_json()["lean"] == data[thm.id]["lean"]


def test_no_other_python_file_spells_a_lean_name() -> None:
    names = manifest.lean_declarations()
    offenders = []
    for path in sorted((REPO / "python").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        offenders += [(path.name, n) for n in names if n in text or n.rsplit(".", 1)[1] in text]
    assert offenders == []
