"""The cross-validation report: complete, deterministic, safe with its output folder, and
rendered by a real browser where one is installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from absorb import report
from absorb.errors import AbsorbError
from absorb.manifest import THEOREM_IDS, THEOREMS

FORMAL = {"proved", "audited", "missing", "sorry", "admit", "native_decide", "axiom", "error",
          "not formalized", "not checked"}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    out = tmp_path_factory.mktemp("rep") / "report"
    return out, report.write_report(out, seed=0, progress=False)


def test_report_covers_every_theorem(written: tuple[Path, dict[str, object]]) -> None:
    out, result = written
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [t["id"] for t in data["theorems"]] == list(THEOREM_IDS)
    for t, thm in zip(data["theorems"], THEOREMS, strict=True):
        assert t["statement"] == thm.statement and t["lean"] == list(thm.lean)
        assert t["formal"]["status"] in FORMAL
        assert t["numerical"]["status"] in {"agrees", "disagrees"}
        assert [e["name"] for e in t["numerical"]["experiments"]] == list(thm.experiments)
    by_id = {t["id"]: t for t in data["theorems"]}
    assert by_id["index_set_necessary"]["formal"]["status"] == "not formalized"
    assert all(t["numerical"]["status"] == "agrees" for t in data["theorems"])
    assert result["files"] == sorted(p.name for p in out.iterdir() if p.name != report.MARKER)


def test_report_files_and_figures(written: tuple[Path, dict[str, object]]) -> None:
    out, _ = written
    pngs = sorted(out.glob("fig_*.png"))
    assert {p.name for p in pngs} >= {
        "fig_degree_best_fit.png", "fig_linearization_gap.png", "fig_degree_scaling_witness.png",
    }
    for p in pngs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "report.md").read_text(encoding="utf-8")
    for tid in THEOREM_IDS:
        assert f"## `{tid}`" in md
    assert "open (exploration, no theorem)" in md
    assert "## Lean library" in md and "static audit" in md


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.srcs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "h2" and a.get("id"):
            self.ids.append(str(a["id"]))
        if tag == "img":
            self.srcs.append(str(a.get("src")))


def test_html_is_self_contained(written: tuple[Path, dict[str, object]]) -> None:
    out, _ = written
    parser = _Collect()
    parser.feed((out / "index.html").read_text(encoding="utf-8"))
    assert parser.ids == ["lean", *THEOREM_IDS]
    assert parser.srcs and all(s.startswith("data:image/png;base64,") for s in parser.srcs)
    assert len(parser.srcs) == len(list(out.glob("fig_*.png")))


def test_report_is_byte_deterministic(
    written: tuple[Path, dict[str, object]], tmp_path: Path
) -> None:
    out, _ = written
    again = tmp_path / "again"
    report.write_report(again, seed=0, progress=False)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(p.name for p in again.iterdir())
    for name in names:
        assert (out / name).read_bytes() == (again / name).read_bytes(), name


def test_refuses_a_foreign_nonempty_folder(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious", encoding="utf-8")
    with pytest.raises(AbsorbError, match="not empty"):
        report.write_report(out, progress=False)
    assert [p.name for p in out.iterdir()] == ["thesis.tex"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_rerun_replaces_only_its_own_files(
    written: tuple[Path, dict[str, object]], tmp_path: Path
) -> None:
    out = tmp_path / "rep"
    shutil.copytree(written[0], out)
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    marker = json.loads((out / report.MARKER).read_text(encoding="utf-8"))
    marker["files"].append("fig_retired.png")
    (out / report.MARKER).write_text(json.dumps(marker), encoding="utf-8")
    (out / "fig_retired.png").write_bytes(b"old")
    (out / "report.md").write_text("stale", encoding="utf-8")
    report.write_report(out, seed=0, progress=False)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert not (out / "fig_retired.png").exists()
    assert (out / "report.md").read_bytes() == (written[0] / "report.md").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


def test_interrupted_run_leaves_nothing(
    written: tuple[Path, dict[str, object]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    done = json.loads((written[0] / "report.json").read_text(encoding="utf-8"))
    monkeypatch.setattr(report, "build_report", lambda *args: done)  # skip the slow part
    monkeypatch.setattr(report, "_plot", interrupted)
    with pytest.raises(KeyboardInterrupt):
        report.write_report(tmp_path / "out", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_out_that_is_a_file_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    with pytest.raises(AbsorbError, match="not a folder"):
        report.write_report(tmp_path / "f", progress=False)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed")
def test_html_renders_in_headless_chromium(
    written: tuple[Path, dict[str, object]], tmp_path: Path
) -> None:
    from PIL import Image

    shot = tmp_path / "shot.png"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", f"--screenshot={shot}",
             "--window-size=1280,2000", (written[0] / "index.html").as_uri()],
            check=True, capture_output=True, timeout=120,
        )
    with Image.open(shot) as img:
        assert img.size == (1280, 2000)
        rgb = img.convert("RGB")
        # a rendered page: many colors (text, badges, plots), not a blank or error page
        assert len(rgb.getcolors(maxcolors=1 << 20) or []) > 50
        # the green "agrees" badge color is on screen
        assert any(c == (26, 127, 55) for _, c in rgb.getcolors(maxcolors=1 << 20) or [])


def test_formal_badges_from_verify_with_a_toolchain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `lake` on PATH the report takes the formal status from verify (a fake toolchain
    that builds cleanly and reports one declaration as depending on sorryAx)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    sorry_decl = THEOREMS[1].lean[0]
    lake = bindir / "lake"
    lake.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        "  build) echo 'Build completed successfully (3 jobs).';;\n"
        "  env) sed -n \"s/^#print axioms \\(.*\\)$/'\\1' depends on axioms: [propext]/p\" \"$3\" |"
        f" sed \"s/'{sorry_decl}' depends on axioms: \\[propext\\]/'{sorry_decl}' depends on"
        " axioms: [sorryAx]/\";;\n"
        "  exe) echo '{}';;\n"
        "esac\n",
        encoding="utf-8",
    )
    lake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "lakefile.lean").write_text("-- fake\n", encoding="utf-8")
    monkeypatch.setattr(report, "_run_experiments", lambda seed, progress: {
        n: {"name": n, "description": "", "summary": "", "agrees": True, "control": False,
            "open": False, "table": [], "figure": None}
        for t in THEOREMS for n in t.experiments})
    result = report.write_report(tmp_path / "out", progress=False, root=root)
    status = {t["id"]: t["formal"]["status"] for t in result["theorems"]}  # type: ignore[index,union-attr]
    assert result["formal_source"] == "verify"
    assert status[THEOREMS[1].id] == "sorry"
    assert status["index_set_necessary"] == "not formalized"
    assert {s for tid, s in status.items()
            if tid not in (THEOREMS[1].id, "index_set_necessary")} == {"proved"}
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "lake build + axiom audit (NOT ok)" in html  # the fake checker prints no verdict
