"""CONTRIBUTING.md's checklists hold: every activation and every theorem has all its pieces,
and a missing one is named (the checklist to follow is in the message). The guide itself only
names files that exist."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from absorb import manifest
from absorb.activations import CATALOG, Activation
from absorb.experiments import EXPERIMENTS
from absorb.lean.source import scan_lean

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "CONTRIBUTING.md"


def _text(relative: str) -> str:
    return (REPO / relative).read_text(encoding="utf-8")


@functools.cache
def _lean_declared() -> frozenset[str]:
    """Every declaration of the Lean library (``Absorb/``), fully qualified, as the project's
    own source reader resolves them (:func:`absorb.lean.source.scan_lean`)."""
    names: set[str] = set()
    for path in sorted((REPO / "Absorb").rglob("*.lean")):
        rel = path.relative_to(REPO).as_posix()
        names |= {d.name for d in scan_lean(path.read_text(encoding="utf-8"), rel).declarations}
    return frozenset(names)


@functools.cache
def _checker_names() -> frozenset[str]:
    """The activation names the Lean checker's reader accepts (``Activation.name`` in
    Absorb/Checker/Reader.lean, one ``| .x => "x"`` arm each)."""
    reader = _text("Absorb/Checker/Reader.lean")
    body = reader[reader.index("def Activation.name"):]
    body = body[:body.index("\n\n")]
    return frozenset(re.findall(r'^\s*\| \.\w+ => "(\w+)"', body, flags=re.MULTILINE))


def activation_gaps(act: Activation, declared: frozenset[str]) -> list[str]:
    """What CONTRIBUTING.md's "Add an activation" asks for and ``act`` lacks (``declared``: the
    Lean library's declarations)."""
    gaps = []
    if act.family == "homogeneous" and act.degree is None:
        gaps.append("`degree` (a homogeneous entry)")
    if act.gated and (act.gate not in CATALOG or act.g0 is None):
        gaps.append("`gate` naming a catalog entry and `g0` (a gated entry)")
    if not act.gated and (act.gate is not None or act.g0 is not None):
        gaps.append("no `gate`/`g0` on an ungated entry")
    if not act.verdict:
        gaps.append("the `verdict` text")
    unknown = [t for t in act.theorems if t not in manifest.THEOREM_IDS]
    if unknown:
        gaps.append(f"`theorems` that are manifest IDs (unknown: {unknown})")
    if act.unit is None:
        gaps.append("its `unit` (fused value and derivative, for the fits)")
    if act.odd_part_linear and not act.gated and act.derivative is None:
        gaps.append("its `derivative` σ′ (an odd-part-linear ungated σ: the stack Jacobian)")
    if act.lean_name is not None and act.lean_name not in declared:
        gaps.append(f"its Lean definition {act.lean_name} (`lean_name`) declared in Absorb/")
    if act.checker_name is not None and act.checker_name not in _checker_names():
        gaps.append(f"its `checker_name` {act.checker_name!r} read by the Lean checker "
                    "(`Activation.name` in Absorb/Checker/Reader.lean)")
    return gaps


def theorem_gaps(thm: manifest.Theorem, declared: frozenset[str]) -> list[str]:
    """What CONTRIBUTING.md's "Add a theorem" asks for and ``thm`` lacks."""
    gaps = []
    if not thm.lean and not thm.lean_note:
        gaps.append("Lean declarations (`lean` in theorems.toml) or a `lean_note`")
    absent = [n for n in thm.lean if n not in declared]
    if absent:
        gaps.append(f"the Lean declarations {absent} in Absorb/")
    if not thm.experiments:
        gaps.append("an experiment (`experiments` in theorems.toml)")
    unregistered = [e for e in thm.experiments if e not in EXPERIMENTS]
    if unregistered:
        gaps.append(f"the experiments {unregistered} registered in absorb.experiments")
    tid = re.escape(thm.id)
    if not re.search(rf"^##+ .*`{tid}`", _text("docs/THEORY.md"), flags=re.MULTILINE):
        gaps.append("its section in docs/THEORY.md")
    design = _text("docs/DESIGN.md")
    ids = design[design.index("Theorem IDs"):design.index("Each has one manifest entry")]
    if f"`{thm.id}`" not in ids:
        gaps.append("its ID in the list of docs/DESIGN.md (\"Theorem IDs\")")
    row = rf"^\| `{tid}` \| `Absorb\."
    if not re.search(row, _text("docs/ARCHITECTURE.md"), flags=re.MULTILINE):
        gaps.append("its row in the Lean-name table of docs/ARCHITECTURE.md")
    if thm.lean and not re.search(row, _text("README.md"), flags=re.MULTILINE):
        gaps.append("its row in the Lean table of README.md")
    return gaps


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_activation_is_complete(name: str) -> None:
    gaps = activation_gaps(CATALOG[name], _lean_declared())
    assert not gaps, (f"activation {name!r} is missing: {'; '.join(gaps)} "
                      "(CONTRIBUTING.md, \"Add an activation\")")


def test_every_checker_name_of_the_lean_reader_is_a_catalog_entry() -> None:
    named = {a.checker_name for a in CATALOG.values() if a.checker_name is not None}
    assert _checker_names() == named, (
        "the Lean checker's activations (Absorb/Checker/Reader.lean) and the catalog's "
        "`checker_name`s differ")


@pytest.mark.parametrize("tid", manifest.THEOREM_IDS)
def test_every_theorem_is_complete(tid: str) -> None:
    gaps = theorem_gaps(manifest.get_theorem(tid), _lean_declared())
    assert not gaps, f"theorem {tid!r} is missing: {'; '.join(gaps)} (CONTRIBUTING.md, " \
                     "\"Add a theorem\")"


def test_a_partly_added_activation_and_theorem_are_named() -> None:
    """The checks can fail, and say what is missing."""
    relu = CATALOG["relu"]
    half = Activation("new_sigma", "homogeneous", relu.fn, None, None, None, True, "",
                      ("no_such_theorem",), checker_name="new_sigma",
                      lean_name="Absorb.newSigma")
    gaps = " | ".join(activation_gaps(half, _lean_declared()))
    for piece in ("`degree`", "`verdict`", "no_such_theorem", "`unit`", "`derivative`",
                  "Absorb.newSigma", "Reader.lean"):
        assert piece in gaps
    thm = manifest.get_theorem("degree")
    bare = manifest.Theorem(**{**vars(thm), "id": "brand_new", "lean": ("Absorb.nowhere",),
                               "experiments": ("not_registered",)})
    gaps = " | ".join(theorem_gaps(bare, _lean_declared()))
    for piece in ("Absorb.nowhere", "not_registered", "THEORY.md", "DESIGN.md",
                  "ARCHITECTURE.md", "README.md"):
        assert piece in gaps


def test_the_guide_has_its_checklists_and_names_only_existing_files() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings == ["Add an activation", "Add a theorem", "Add an architecture",
                        "Add an experiment", "Add a command"]
    paths = set(re.findall(r"`((?:python|tests|docs|Absorb)/[\w/.]*|README\.md)`", text))
    missing = sorted(p for p in paths if not (REPO / p).exists())
    assert not missing, f"CONTRIBUTING.md names files that do not exist: {missing}"
