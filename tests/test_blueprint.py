"""The blueprint is generated from the manifest and builds with plasTeX where it is installed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from absorb import blueprint
from absorb.manifest import THEOREMS


def test_content_names_every_theorem_and_its_lean_declarations() -> None:
    tex = blueprint.content_tex(THEOREMS, {})
    for thm in THEOREMS:
        assert f"\\label{{thm:{thm.id}}}" in tex
        for name in thm.lean:
            assert name in tex
        for used in thm.uses:
            assert f"thm:{used}" in tex


def test_chapters_by_theme_hold_every_theorem_once() -> None:
    """One chapter per theme of the paper (not one "Results" chapter); every manifest theorem
    in exactly one of them; a theorem without Lean says why once, not "Not formalized: not
    formalized"; the page says how to see the dependency graph (it needs HTTP)."""
    tex = blueprint.content_tex(THEOREMS, {})
    chapters = blueprint.chapters(THEOREMS)
    assert len(chapters) >= 4
    placed = [t.id for _, thms in chapters for t in thms]
    assert sorted(placed) == sorted(t.id for t in THEOREMS)
    for title, _ in chapters:
        assert f"\\chapter{{{blueprint.escape(title)}}}" in tex
    assert "\\chapter{Results}" not in tex
    assert "Not formalized: not formalized" not in tex and "Not formalized:}" not in tex
    assert "http.server" in tex


def test_leanok_only_where_a_build_proved_the_theorem() -> None:
    assert "\\leanok" not in blueprint.content_tex(THEOREMS, {}).replace(
        "\\texttt{\\textbackslash leanok}", ""
    )
    proved = {THEOREMS[0].id: True}
    tex = blueprint.theorem_tex(THEOREMS[0], proved=True)
    assert tex.count("\\leanok") == 2  # statement and proof
    others = blueprint.content_tex(THEOREMS[1:], proved)
    assert "\\leanok\n" not in others


def test_latex_specials_are_escaped() -> None:
    assert blueprint.escape("W_down[:,S] 50% & x^2 {a}") == (
        r"W\_down[:,S] 50\% \& x\^{}2 \{a\}"
    )


def test_manifest_uses_form_an_acyclic_graph() -> None:
    order = {thm.id: k for k, thm in enumerate(THEOREMS)}
    seen: set[str] = set()
    for thm in THEOREMS:
        assert all(u in order for u in thm.uses)
        seen.add(thm.id)
    # A topological order exists: depth-first search finds no back edge.
    state: dict[str, int] = {}
    uses = {thm.id: thm.uses for thm in THEOREMS}

    def visit(tid: str) -> None:
        assert state.get(tid) != 1, f"cycle through {tid}"
        if state.get(tid) == 2:
            return
        state[tid] = 1
        for u in uses[tid]:
            visit(u)
        state[tid] = 2

    for tid in seen:
        visit(tid)


@pytest.mark.skipif(
    not (Path(sys.executable).with_name("plastex").exists() or shutil.which("plastex")),
    reason="plasTeX not installed (pip install -e '.[blueprint]')",
)
def test_blueprint_builds_to_html_with_a_dependency_graph(tmp_path: Path) -> None:
    web = blueprint.build_web(tmp_path)
    pages = "".join(p.read_text(encoding="utf-8") for p in web.glob("*.html"))
    for thm in THEOREMS:
        assert thm.title.split()[0] in pages
    graph = (web / "dep_graph_document.html").read_text(encoding="utf-8")
    for thm in THEOREMS:
        for used in thm.uses:
            assert f"{used}" in graph and f"{thm.id}" in graph


def _absorb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "absorb", *args], capture_output=True,
                          text=True, cwd=cwd)


def test_cli_refuses_a_foreign_nonempty_folder(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    run = _absorb("blueprint", "--out", str(tmp_path), "--sources-only", cwd=tmp_path)
    assert run.returncode == 2 and run.stderr.startswith("error:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_cli_writes_sources_without_leanok(tmp_path: Path) -> None:
    out = tmp_path / "bp"
    run = _absorb("blueprint", "--out", str(out), "--sources-only", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["leanok"] == []
    content = (out / "src" / "content.tex").read_text(encoding="utf-8")
    assert content.count("\\begin{") == 2 * len(THEOREMS)  # one statement, one proof each
    # A second run into its own earlier output is allowed.
    assert _absorb("blueprint", "--out", str(out), "--sources-only", cwd=tmp_path).returncode == 0
