"""The course notebooks run from a clean checkout against the current code, and are stored without
outputs (so that git holds the teaching text, not stale numbers)."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_is_one_notebook_per_lecture() -> None:
    course = (Path(__file__).resolve().parents[1] / "docs" / "course" / "README.md").read_text()
    for path in NOTEBOOKS:
        assert f"notebooks/{path.name}" in course, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The notebook runs, every code cell prints what it did (run headless, a cell whose only
    result is a figure or a bare value shows nothing), and nothing is left behind in the
    temporary folder once its kernel has stopped."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # the kernel's temp folder, and its commands'
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError, naming the cell, when an assertion fails
    cells = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in cells for o in c.outputs if o.get("output_type") == "error"]
    assert not errors
    silent = [k for k, c in enumerate(cells)
              if not any(o.get("output_type") == "stream" and o.get("name") == "stdout"
                         and str(o.get("text", "")).strip() for o in c.outputs)]
    assert silent == [], f"{path.name}: code cells {silent} print nothing"
    assert sorted(p.name for p in temp.iterdir()) == []


ROOT = Path(__file__).resolve().parents[1]


def _extras() -> dict[str, list[str]]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def test_course_commands_name_what_the_install_provides() -> None:
    """Every command of the course's set-up runs after the install it states: the extra
    exists, it brings the tool (`jupyter execute` is nbclient's, `jupyter notebook` the
    notebook package's), and every notebook named exists."""
    import re

    extras = _extras()
    for doc in ("docs/course/README.md", "docs/TEACHING.md"):
        text = (ROOT / doc).read_text()
        installs = re.findall(r'pip install -e "\.\[(\w+)\]"', text)
        assert installs, doc
        for extra in installs:
            assert extra in extras, (doc, extra)
        provided = " ".join(p for extra in installs for p in extras[extra])
        if "jupyter execute" in text:
            assert "nbclient" in provided, doc
        if "jupyter nbconvert" in text:
            assert "nbconvert>=" in provided, doc
        if "jupyter notebook" in text:
            assert "notebook>=" in provided, doc
        for nb in re.findall(r"notebooks/[a-z0-9_]+\.ipynb", text):
            assert (ROOT / nb).is_file(), nb
    assert "python -m nbclient" not in (ROOT / "docs/course/README.md").read_text()


def test_no_install_hint_names_a_strangers_package() -> None:
    """`absorb` on PyPI is an unrelated package: no hint may say `pip install absorb…`; the
    distribution is `absorb-skip`, installed from a checkout with `pip install -e ".[extra]"`."""
    import re
    import tomllib

    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"] == \
        "absorb-skip"
    files = [*ROOT.glob("python/absorb/**/*.py"), *ROOT.glob("docs/**/*.md"),
             ROOT / "README.md", *NOTEBOOKS]
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"pip install\s+['\"]?absorb\b", text), path
        assert "absorb[" not in text, path
