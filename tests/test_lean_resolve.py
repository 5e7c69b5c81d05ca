"""The static resolution check of the Lean tree (``absorb audit --lean-sources``).

Parser and pipeline tests run on small synthetic Lean snippets and a synthetic source tree and
need nothing else.  The tests against the pinned Mathlib/Batteries sources run where
``$ABSORB_LEAN_SOURCES`` names the unpacked archive (``.ci/run`` sets it) and skip otherwise:
planted breaks on a copy of the repository's Lean files (one resolution run for all of them),
and the repository's own tree, which must resolve completely.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import CliResult

from absorb.lean.resolve import (
    SOURCES_ENV,
    ModuleGraph,
    additive_name,
    core_names,
    header_imports,
    index_module,
    references,
    resolve,
)
from absorb.lean.resolve.check import index_of
from absorb.lean.resolve.lexer import identifiers
from absorb.lean.source import strip_comments_and_strings

REPO = Path(__file__).resolve().parents[1]
LEAN_FILES = ("Absorb", "Absorb.lean", "AbsorbCheck.lean", "AbsorbExercises",
              "AbsorbExercises.lean", "lakefile.lean")


def _index(src: str) -> frozenset[str]:
    return index_module(strip_comments_and_strings(src)).declared


def _refs(src: str, keywords: frozenset[str] = frozenset()) -> dict[str, Any]:
    """name → its reference (the last one) for a snippet."""
    return {r.name: r for r in references(strip_comments_and_strings(src),
                                          keywords | core_names().keywords)}


# --------------------------------------------------------------------------- lexer and index


def test_identifiers_follow_lean_character_classes() -> None:
    code = "Aᵀ ⬝ᵥ x + h.1 + .inl y + ?_ + @foo.bar' + ℝ + x₁ + exact?"
    assert [i.name for i in identifiers(code)] == ["A", "x", "h", "y", "foo.bar'", "ℝ", "x₁",
                                                   "exact?"]


def test_header_imports_with_lines_stop_at_the_first_command() -> None:
    code = strip_comments_and_strings("/- doc -/\nimport A.B\n-- c\nimport C\n\nopen X\nimport D\n")
    assert [(i.module, i.line) for i in header_imports(code)] == [("A.B", 2), ("C", 4)]


def test_index_resolves_namespaces_structures_inductives_aliases_and_exports() -> None:
    src = """
namespace Foo
/-- doc `theorem fake` -/
@[simp] theorem bar : True := trivial
lemma Baz.qux : True := trivial
protected def prot : Nat := 0
structure Pt (α : Type) extends Base α where
  /-- x -/
  x : α
  y z : α
  norm (k : Nat) : α
variable (n : Nat)
@[ext] structure Named where
  make ::
  val : Nat
inductive Color | red | green
  | blue : Color
@[deprecated (since := "2025-01-01")] alias bar' := bar
protected alias bar'' := bar
alias ⟨mp_of, _⟩ := Iff.rfl
instance (priority := 100) instFoo : Inhabited Nat := ⟨0⟩
instance : Inhabited Bool := ⟨true⟩
end Foo
export Foo (bar)
theorem _root_.top : True := trivial
irreducible_def secret : Nat := 1
"""
    assert _index(src) == {
        "Foo.bar", "Foo.Baz.qux", "Foo.prot", "Foo.Pt", "Foo.Pt.mk", "Foo.Pt.toBase",
        "Foo.Pt.x", "Foo.Pt.y", "Foo.Pt.z", "Foo.Pt.norm", "Foo.Named", "Foo.Named.mk",
        "Foo.Named.make", "Foo.Named.val", "Foo.Named.ext", "Foo.Named.ext_iff", "Foo.Color",
        "Foo.Color.red", "Foo.Color.green", "Foo.Color.blue", "Foo.bar'", "Foo.bar''",
        "Foo.mp_of",
        "Foo.instFoo", "bar", "top", "secret", "secret_def"}


def test_to_additive_names_explicit_and_translated_are_generated_not_declared() -> None:
    src = """
namespace Finset
@[to_additive]
theorem prod_mul_distrib : True := trivial
@[to_additive (attr := simp) sum_pos_of_pos]
theorem one_lt_prod : True := trivial
end Finset
@[simps] def myEquiv : Nat := 0
"""
    idx = index_module(strip_comments_and_strings(src))
    assert idx.generated == {"Finset.sum_add_distrib", "Finset.sum_pos_of_pos",
                             "sum_pos_of_pos"}
    assert "Finset.sum_add_distrib" not in idx.declared
    assert idx.simps == {"myEquiv"}


@pytest.mark.parametrize(("name", "additive"), [
    ("mul_one", "add_zero"), ("Monoid.npow", "AddMonoid.nsmul"), ("one_le_mul", "nonneg_add"),
    ("inv_mul_cancel", "neg_add_cancel"), ("prod_div", "sum_sub"), ("Pi.mulSingle", "Pi.single"),
    ("le_refl", "le_refl"),
])
def test_additive_name_follows_mathlibs_dictionary(name: str, additive: str) -> None:
    assert additive_name(name) == additive


# --------------------------------------------------------------------------- references


def test_references_carry_namespaces_and_opens() -> None:
    src = """
namespace Absorb
open Matrix Real
theorem t : True := by
  exact foo
open Finset in
theorem Sub.u : True := bar
end Absorb
theorem v : True := baz
"""
    refs = _refs(src)
    assert refs["foo"].scopes == ("Absorb.t", "Absorb", "")
    assert refs["foo"].opens[:2] == ("Matrix", "Real")
    assert refs["bar"].scopes == ("Absorb.Sub.u", "Absorb.Sub", "Absorb", "")
    assert "Finset" in refs["bar"].opens
    assert refs["baz"].scopes == ("v", "") and refs["baz"].opens == ()
    assert refs["foo"].line == 5


def test_local_names_are_not_references() -> None:
    src = """
variable {d n : ℕ} (W : Fin n → ℝ)
theorem t (x y : ℝ) {ε} (hx : 0 < x) [inst : Foo] : ∀ z ∈ S, ∃ w : ℝ, P z w := by
  intro a b
  obtain ⟨c, hc⟩ := lemma_one x
  rcases hx with ⟨e, he⟩ | hf
  have key : x = x := rfl
  have := lemma_two
  cases hm : m with
  | none => exact absurd hm hc
  | some k => exact fun q ⟨r, hr⟩ => lemma_three q r hr k this key
  refine Finset.sum_congr rfl fun i hi => ?_
  set s := x + y with hs
  simp only [hs, ε, d, n, W, inst, a, b, e, he, hf, i, hi, s] at key ⊢
  exact { toFun := id, map_add' := lemma_four (α := ℝ) }
"""
    refs = _refs(src, frozenset({"ℝ", "ℕ", "set"}))
    assert set(refs) == {"Fin", "Foo", "S", "P", "lemma_one", "lemma_two", "m", "absurd",
                         "lemma_three", "Finset.sum_congr", "id", "lemma_four"}


def test_field_notation_on_a_local_checks_only_its_fields() -> None:
    refs = _refs("theorem t (h : a ≤ b) : True := by\n  exact h.trans_lt' (foo.le)\n")
    assert refs["h.trans_lt'"].on_local and not refs["foo.le"].on_local


def test_match_arms_bind_but_first_alternatives_do_not() -> None:
    src = """
def f : Bool → Option Nat → Nat
  | true, some k => k
  | _, _ => zero_const
theorem g : True := by
  first | exact lemma_a | exact fun x => lemma_b x
"""
    refs = _refs(src)
    assert "k" not in refs and {"zero_const", "lemma_a", "lemma_b"} <= set(refs)


def test_syntax_atoms_are_keywords() -> None:
    refs = _refs("theorem t : True := by\n  my_tactic [foo]\n", frozenset({"my_tactic"}))
    assert set(refs) == {"True", "foo"}


# --------------------------------------------------------------------------- a synthetic tree

LAKEFILE = """import Lake
open Lake DSL
package absorb
@[default_target]
lean_lib Absorb where
  roots := #[`Absorb, `AbsorbCheck]
lean_exe «absorb-check» where
  root := `AbsorbCheck
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def synthetic(tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """A tiny source tree and project; ``run(**overrides)`` writes the project files (path →
    text, replacing the defaults) and returns the resolution report."""
    sources = tmp_path / "src"
    _write(sources, {
        "mathlib4/Mathlib/Foo.lean": "import Batteries.Bar\nnamespace Foo\n"
                                     "theorem bar_pos : True := trivial\nend Foo\n",
        "mathlib4/Mathlib/Other.lean": "theorem only_elsewhere : True := trivial\n",
        "batteries/Batteries/Bar.lean": "theorem bat_lemma : True := trivial\n",
    })

    def run(**files: str) -> dict[str, Any]:
        project = tmp_path / "proj"
        shutil.rmtree(project, ignore_errors=True)
        base = {
            "lakefile.lean": LAKEFILE,
            "Absorb.lean": "import Absorb.Basic\n",
            "Absorb/Basic.lean": "import Mathlib.Foo\nnamespace Absorb\nopen Foo\n"
                                 "theorem t (h : True) : True := by\n  exact bar_pos\nend Absorb\n",
            "AbsorbCheck.lean": "import Batteries.Bar\ndef main : IO Unit := pure ()\n",
        }
        _write(project, {**base, **{k.replace("__", "/").replace("_lean", ".lean"): v
                                    for k, v in files.items()}})
        return resolve(project, sources)

    return run


def _problems(res: dict[str, Any]) -> list[str]:
    return [f"{p['file']}:{p['line']}: {p['message']}" for p in res["problems"]]


def test_synthetic_project_resolves(synthetic: Callable[..., dict[str, Any]]) -> None:
    res = synthetic()
    assert res["ok"] and _problems(res) == []
    rows = {r["file"]: r for r in res["files"]}
    assert rows["Absorb/Basic.lean"]["closure"] == 3  # itself, Mathlib.Foo, Batteries.Bar
    assert rows["Absorb/Basic.lean"]["names"] == 3  # True twice, bar_pos


def test_synthetic_missing_import_names_file_and_line(
        synthetic: Callable[..., dict[str, Any]]) -> None:
    res = synthetic(Absorb__Basic_lean="import Mathlib.Foo\nimport Mathlib.Gone\n")
    assert _problems(res) == [
        "Absorb/Basic.lean:2: import 'Mathlib.Gone' does not exist at the pinned revision"]


def test_synthetic_name_outside_the_closure_and_typo(
        synthetic: Callable[..., dict[str, Any]]) -> None:
    res = synthetic(Absorb__Basic_lean="import Mathlib.Foo\nopen Foo\n"
                                       "theorem t : True := only_elsewhere\n"
                                       "theorem u : True := bar_poz\n")
    assert _problems(res) == [
        "Absorb/Basic.lean:3: name 'only_elsewhere' not declared in the import closure "
        "(declared in Mathlib.Other, not imported)",
        "Absorb/Basic.lean:4: name 'bar_poz' not declared in the import closure"]


def test_synthetic_typo_is_caught_in_every_proof_position(
        synthetic: Callable[..., dict[str, Any]]) -> None:
    positions = ["exact typo_exact", "apply typo_apply", "refine typo_refine ?_",
                 "rw [typo_rw]", "simp only [typo_simp] at h", "simpa using typo_simpa",
                 "nlinarith [typo_nlinarith h]", "have := typo_have h",
                 "obtain ⟨x, hx⟩ := typo_obtain", "exact Foo.typo_dot", "exact bar_pos.typo_field"]
    body = "".join(f"theorem t{k} (h : True) : True := by\n  {p}\n"
                   for k, p in enumerate(positions))
    res = synthetic(Absorb__Basic_lean=f"import Mathlib.Foo\nopen Foo\n{body}")
    flagged = {re.search(r"name '([^']+)'", p).group(1)  # type: ignore[union-attr]
               for p in _problems(res)}
    assert flagged == {"typo_exact", "typo_apply", "typo_refine", "typo_rw", "typo_simp",
                       "typo_simpa", "typo_nlinarith", "typo_have", "typo_obtain",
                       "Foo.typo_dot", "bar_pos.typo_field"}


def test_synthetic_import_of_a_package_outside_the_tree_is_unverified(
        synthetic: Callable[..., dict[str, Any]]) -> None:
    res = synthetic(Absorb__Basic_lean="import Mathlib.Foo\nimport Aesop\n")
    assert res["ok"]
    assert [(u["file"], u["line"], u["name"]) for u in res["unverified"]] == [
        ("Absorb/Basic.lean", 2, "Aesop")]


def test_synthetic_checker_reaching_mathlib(synthetic: Callable[..., dict[str, Any]]) -> None:
    res = synthetic(AbsorbCheck_lean="import Absorb.Basic\n")
    assert _problems(res) == [
        "AbsorbCheck.lean:1: the closure of executable 'absorb-check' reaches Mathlib module "
        "'Mathlib.Foo' (AbsorbCheck → Absorb.Basic → Mathlib.Foo)"]


def test_cli_audit_says_why_resolution_is_skipped(
        cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SOURCES_ENV, raising=False)
    res = cli("audit", "--root", str(REPO))
    assert "resolution: skipped (no Lean source tree: set $ABSORB_LEAN_SOURCES" in res.out


def test_cli_audit_refuses_a_folder_that_is_no_source_tree(
        cli: Callable[..., CliResult], tmp_path: Path) -> None:
    res = cli("audit", "--root", str(REPO), "--lean-sources", str(tmp_path))
    assert res.code == 2 and "not an unpacked source tree" in res.err
    assert "Traceback" not in res.err


def test_cli_audit_fails_on_a_synthetic_break(
        cli: Callable[..., CliResult], synthetic: Callable[..., dict[str, Any]],
        tmp_path: Path) -> None:
    synthetic(Absorb__Basic_lean="import Mathlib.Gone\n")
    res = cli("audit", "--root", str(tmp_path / "proj"), "--lean-sources", str(tmp_path / "src"))
    assert res.code == 4
    assert "Absorb/Basic.lean:1: import 'Mathlib.Gone' does not exist" in res.out


# --------------------------------------------------------------------------- the pinned sources


@pytest.fixture(scope="session")
def lean_sources() -> Path:
    text = os.environ.get(SOURCES_ENV, "")
    if not text:
        pytest.skip(f"${SOURCES_ENV} is unset: no pinned Mathlib/Batteries sources to resolve "
                    "against (.ci/run unpacks them)")
    return Path(text)


PLANTS = {  # file → (text inserted, after which line)
    "Absorb/Reduction.lean": ("import Mathlib.Tactic.NoSuchModule\n", 1),
    "Absorb/Basic.lean": ("theorem planted_outside (x : ℝ) : 0 < Real.exp x := Real.exp_pos x\n"
                          "theorem planted_typo (a b : ℝ) : a + b = b + a := by\n"
                          "  rw [add_comn]\n", None),
    "AbsorbCheck.lean": ("import Mathlib.Logic.Basic\n", 1),
}


@pytest.fixture(scope="session")
def planted(lean_sources: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One resolution run over a copy of the repository's Lean files with every plant in."""
    root = tmp_path_factory.mktemp("planted")
    for name in LEAN_FILES:
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, root / name)
    for rel, (text, after) in PLANTS.items():
        lines = (root / rel).read_text(encoding="utf-8").splitlines(keepends=True)
        at = len(lines) if after is None else after
        (root / rel).write_text("".join([*lines[:at], text, *lines[at:]]), encoding="utf-8")
    return resolve(root, lean_sources)


def _line_of(rel: str, text: str) -> int:
    lines = (REPO / rel).read_text(encoding="utf-8").splitlines()
    after = PLANTS[rel][1]
    return (len(lines) if after is None else after) + 1 + text.count("\n")


def test_planted_missing_import_fails_with_file_and_line(planted: dict[str, Any]) -> None:
    assert ("Absorb/Reduction.lean:2: import 'Mathlib.Tactic.NoSuchModule' does not exist at "
            "the pinned revision") in _problems(planted)


def test_planted_name_declared_only_outside_the_closure(planted: dict[str, Any]) -> None:
    line = _line_of("Absorb/Basic.lean", "")
    hits = [p for p in _problems(planted)
            if p.startswith(f"Absorb/Basic.lean:{line}: name 'Real.exp_pos'")]
    assert hits and re.search(r"declared in Mathlib\.[\w.]+, not imported", hits[0])


def test_planted_typo_in_a_rewrite(planted: dict[str, Any]) -> None:
    line = _line_of("Absorb/Basic.lean", "x\n\n")
    assert (f"Absorb/Basic.lean:{line}: name 'add_comn' not declared in the import closure"
            in _problems(planted))


def test_planted_mathlib_import_in_the_checker_closure(planted: dict[str, Any]) -> None:
    assert any(p.startswith("AbsorbCheck.lean:2: the closure of executable 'absorb-check' "
                            "reaches Mathlib module") for p in _problems(planted))


def test_planted_copy_checks_thousands_of_names(planted: dict[str, Any]) -> None:
    rows = {r["file"]: r for r in planted["files"]}
    assert sum(r["names"] for r in rows.values()) > 3000
    assert rows["AbsorbCheck.lean"]["closure"] > 2  # Mathlib.Logic.Basic and what it imports


def test_core_allowlist_names_are_not_declared_by_the_sources(lean_sources: Path) -> None:
    """No name on the core allowlist is declared in the closure of the library (else the
    list would hide which module it comes from), and every entry says where it was confirmed
    in core's sources."""
    graph = ModuleGraph(REPO, frozenset({"Absorb", "AbsorbCheck", "AbsorbExercises"}),
                        lean_sources)
    modules = graph.closure("Absorb") | graph.closure("AbsorbExercises")
    declared = set().union(*(index_of(graph, m).declared for m in modules
                             if graph.kind(m) == "tree"))
    core = core_names()
    assert all(where.startswith("src/") for where in core.names.values())
    assert not set(core.names) & declared


def test_repository_tree_resolves(lean_sources: Path) -> None:
    """The repository's Lean tree: every import and every named constant resolves against the
    pinned sources, and the checker executable stays free of Mathlib."""
    res = resolve(REPO, lean_sources)
    assert _problems(res) == []
