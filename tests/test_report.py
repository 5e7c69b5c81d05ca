"""The cross-validation report: run as the quick start runs it, on the core install alone;
complete, deterministic, safe with its output folder, honest about what was compiled and what
crashed, and rendered by a real browser where one is installed."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from html import escape as esc_html
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from tests.conftest import REPO, CliResult, chromium_colors, needs_chromium

from absorb import experiments, report, theory
from absorb.errors import AbsorbError
from absorb.experiments import degree
from absorb.lean_project import find_root
from absorb.manifest import THEOREM_IDS, THEOREMS
from absorb.report import build, figures, text
from absorb.report import write as report_write

Cli = Callable[..., CliResult]


#: The extras' packages: the report (the quick start's light install) must run without them.
OPTIONAL = ("torch", "dask", "distributed", "huggingface_hub", "plasTeX", "leanblueprint",
            "nbclient", "nbformat", "ipykernel", "jupyter_client", "lean_dojo", "pytest",
            "hypothesis")

#: `absorb report` in a fresh interpreter where importing an optional package fails, and which
#: lists the modules it imported (name and file) after it started.
LIGHT_REPORT = """
import json, os, sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in OPTIONAL:
            raise ImportError(f"the report imported {name}, which the core install lacks")
before = set(sys.modules)
sys.meta_path.insert(0, Refuse())
from absorb.__main__ import main
code = main()
new = {m: getattr(sys.modules[m], "__file__", None) for m in sorted(set(sys.modules) - before)}
with open(os.environ["ABSORB_TEST_MODULES"], "w") as f:
    json.dump(new, f)
sys.exit(code)
"""


@pytest.fixture(scope="module")
def light_run(tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[Path, dict[str, Any], dict[str, str | None]]:
    """`absorb report --out DIR --json` as the quick start runs it (from the repository, on
    the light install: every optional package refused), its JSON and the modules it imported."""
    base = tmp_path_factory.mktemp("rep")
    out, modules = base / "report", base / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", f"OPTIONAL = {OPTIONAL!r}\n" + LIGHT_REPORT, "report", "--out",
         str(out), "--json"], capture_output=True, text=True, cwd=REPO, timeout=900,
        env={**os.environ, "ABSORB_TEST_MODULES": str(modules)}, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, json.loads(proc.stdout), json.loads(modules.read_text())


@pytest.fixture(scope="module")
def written(light_run: tuple[Path, dict[str, Any], dict[str, str | None]]
            ) -> tuple[Path, dict[str, Any]]:
    assert light_run[1]["lean_root"] == str(find_root(REPO))
    return light_run[0], light_run[1]


def _core_files() -> set[str]:
    """Every file of the distributions the core install brings: pyproject's dependencies
    and, recursively, theirs (extras excluded)."""
    import tomllib
    from importlib import metadata

    def name(requirement: str) -> str:
        found = re.match(r"[A-Za-z0-9._-]+", requirement)
        assert found is not None, requirement
        return re.sub(r"[-_.]+", "-", found.group(0)).lower()

    core = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    todo, seen = [name(r) for r in core], set()
    files: set[str] = set()
    while todo:
        dist_name = todo.pop()
        if dist_name in seen:
            continue
        seen.add(dist_name)
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:  # excluded by its marker here: never imported
            continue
        files |= {str(Path(str(dist.locate_file(f))).resolve()) for f in dist.files or ()}
        todo += [name(r) for r in dist.requires or () if "extra ==" not in r]
    return files


def test_the_report_runs_on_the_core_install_alone(
    light_run: tuple[Path, dict[str, Any], dict[str, str | None]]
) -> None:
    """The quick start's `pip install .` is enough for `absorb report`: no optional package was
    imported (the run refused them all), and every module it imported is the standard
    library's, absorb's own, or a file of pyproject's core dependencies (or theirs)."""
    import sysconfig

    modules = light_run[2]
    assert not {m.split(".")[0] for m in modules} & set(OPTIONAL)
    stdlib = [str(Path(sysconfig.get_paths()[k]).resolve()) for k in ("stdlib", "platstdlib")]
    package = str((REPO / "python" / "absorb").resolve())
    core = _core_files()
    outside = sorted(
        m for m, f in modules.items()
        if f is not None and not str(Path(f).resolve()).startswith((*stdlib, package))
        and str(Path(f).resolve()) not in core)
    assert outside == [], f"imported by the report, not in the core dependencies: {outside}"
    assert any(m.startswith("matplotlib") for m in modules)  # the check saw third parties


@pytest.fixture(scope="module")
def cached(written: tuple[Path, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The experiments of the module's report, by name, to stand in where a test is about
    something else than the experiments (each copy is fresh)."""
    return {e["name"]: e for t in written[1]["theorems"] for e in t["numerical"]["experiments"]}


def _reuse(monkeypatch: pytest.MonkeyPatch, cached: dict[str, dict[str, Any]],
           live: frozenset[str] = frozenset()) -> None:
    """Run only the experiments in ``live``; the others come from the cached report."""
    real = experiments.run_experiment

    def run(name: str, seed: int) -> Any:
        if name in live:
            return real(name, seed)
        return SimpleNamespace(to_json=lambda: copy.deepcopy(cached[name]))

    monkeypatch.setattr(build, "run_experiment", run)


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.srcs: list[str] = []
        self.captions: list[str] = []
        self._in_caption = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "h2" and a.get("id"):
            self.ids.append(str(a["id"]))
        if tag == "img":
            self.srcs.append(str(a.get("src")))
        if tag == "figcaption":
            self._in_caption = True
            self.captions.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "figcaption":
            self._in_caption = False

    def handle_data(self, data: str) -> None:
        if self._in_caption:
            self.captions[-1] += data


# --------------------------------------------------------------------------------------------
# content


def test_report_covers_every_theorem(written: tuple[Path, dict[str, Any]]) -> None:
    out, result = written
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [t["id"] for t in data["theorems"]] == list(THEOREM_IDS)
    for t, thm in zip(data["theorems"], THEOREMS, strict=True):
        assert t["statement"] == thm.statement and t["lean"] == list(thm.lean)
        assert t["formal"]["status"] in text.FORMAL
        assert t["numerical"]["status"] in {"agrees", "disagrees", "error"}
        assert [e["name"] for e in t["numerical"]["experiments"]] == list(thm.experiments)
        for e in t["numerical"]["experiments"]:
            assert e["status"] in experiments.STATUSES and e["status"] != "error", e["error"]
            assert (e["status"] == "open") == e["open"]
    by_id = {t["id"]: t for t in data["theorems"]}
    assert all(t["formal"]["status"] == "not formalized" for t in by_id.values() if not t["lean"])
    assert data["errored"] == [] and data["lean_root"] == str(REPO)
    assert result["files"] == sorted(p.name for p in out.iterdir() if p.name != report.MARKER)


def test_negative_results_show_their_positive_control(
    written: tuple[Path, dict[str, Any]],
) -> None:
    out, result = written
    html = (out / "index.html").read_text(encoding="utf-8")
    exps = {e["name"]: e for t in result["theorems"] for e in t["numerical"]["experiments"]}
    for negative, control in experiments.POSITIVE_CONTROLS.items():
        assert exps[negative]["positive_control"] == control
        assert exps[negative]["positive_control_status"] == exps[control]["status"]
        if control != negative:
            assert f"href='#exp-{control}'" in html and f"id='exp-{control}'" in html


def test_every_figure_has_a_caption(written: tuple[Path, dict[str, Any]]) -> None:
    out, result = written
    figs = [e["figure"] for t in result["theorems"] for e in t["numerical"]["experiments"]
            if e["figure"]]
    assert len(figs) == len(list(out.glob("fig_*.png"))) >= 6
    for fig in figs:
        assert len(str(fig.get("caption", "")).split()) >= 8, fig["title"]  # says what to see
    parser = _Collect()
    parser.feed((out / "index.html").read_text(encoding="utf-8"))
    assert len(parser.captions) == len(parser.srcs) == len(figs)
    assert all(len(c.split()) >= 8 for c in parser.captions)
    md = (out / "report.md").read_text(encoding="utf-8")
    assert md.count("*Figure: ") == len(figs)


def test_exact_zeros_are_kept_and_marked(written: tuple[Path, dict[str, Any]]) -> None:
    """The degree witness vanishes exactly at λ = 1: the data keeps the 0 (not 1e-18) and the
    caption says how it is drawn."""
    out, result = written
    fig = next(e["figure"] for t in result["theorems"] for e in t["numerical"]["experiments"]
               if e["name"] == "degree_scaling_witness")
    predicted = [s for s in fig["series"] if s["label"].startswith("predicted")]
    assert predicted and all(0.0 in s["y"] for s in predicted)
    assert all(y == 0.0 or y > 1e-12 for s in predicted for y in s["y"])
    parser = _Collect()
    parser.feed((out / "index.html").read_text(encoding="utf-8"))
    assert sum(figures.ZERO_LABEL in c for c in parser.captions) >= 1


def test_zero_on_a_log_axis_is_a_marker_on_the_floor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.axes import Axes

    calls: list[tuple[list[float], list[float], dict[str, Any]]] = []
    real_plot = Axes.plot

    def record(self: Axes, *args: Any, **kwargs: Any) -> Any:
        if len(args) >= 2:
            calls.append((list(args[0]), list(args[1]), kwargs))
        return real_plot(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", record)
    fig: dict[str, Any] = {"title": "t", "xlabel": "x", "ylabel": "y", "xscale": "linear",
                           "yscale": "log", "caption": "c",
                           "series": [{"label": "s", "x": [1, 2, 3, 4],
                                       "y": [1e-3, 0.0, 1e-5, 1.0]}]}
    figures.plot(fig, tmp_path / "f.png")
    floor = figures.log_floor(fig["series"])
    assert floor == 1e-6
    line, marks = calls[0], calls[1]
    assert np.isnan(line[1][1]) and [y for y in line[1] if not np.isnan(y)] == [1e-3, 1e-5, 1.0]
    assert marks[0] == [2.0] and marks[1] == [floor] and marks[2]["marker"] == "v"
    assert figures.has_exact_zero(fig)


def test_files_and_sections(written: tuple[Path, dict[str, Any]]) -> None:
    out, _ = written
    for p in out.glob("fig_*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "report.md").read_text(encoding="utf-8")
    for tid in THEOREM_IDS:
        assert f"## `{tid}`" in md
    assert "## Deep stacks: what is proved, constructed and open" in md
    assert "## Lean library" in md and "static audit" in md
    assert "Reading the table:" in md


def test_html_is_self_contained(written: tuple[Path, dict[str, Any]]) -> None:
    out, _ = written
    parser = _Collect()
    parser.feed((out / "index.html").read_text(encoding="utf-8"))
    assert parser.ids == ["lean", *THEOREM_IDS, "open-problem"]
    assert parser.srcs and all(s.startswith("data:image/png;base64,") for s in parser.srcs)


def test_open_problem_map_holds_the_open_explorations(
    written: tuple[Path, dict[str, Any]],
) -> None:
    _, result = written
    regions = text.open_problem_map(result)
    assert [r[0] for r in regions] == ["proved", "proved", "proved", "constructed", "open"]
    placed = [e["name"] for r in regions for e in r[4]]
    assert len(placed) == len(set(placed))
    open_names = {e["name"] for t in result["theorems"] for e in t["numerical"]["experiments"]
                  if e["open"]}
    assert open_names and open_names <= {e["name"] for e in regions[4][4]} | {
        e["name"] for e in regions[3][4]}
    depth = {e["name"] for t in result["theorems"] if t["id"].startswith("depth_")
             for e in t["numerical"]["experiments"]}
    assert depth <= set(placed)


# --------------------------------------------------------------------------------------------
# compiled vs audited


def test_audited_banner_and_badges_do_not_look_proved(
    written: tuple[Path, dict[str, Any]],
) -> None:
    out, result = written
    assert result["formal_source"] == "audit"
    html = (out / "index.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    head = html[html.index("<body>"): html.index("<h2")]
    assert "NOT COMPILED — the Lean proofs were only read, not checked." in head
    assert "b-audited" in head and "b-compiled" not in head and str(REPO) in head
    assert "NOT COMPILED" in md.split("## ")[0]
    summary = head[head.index("class='summary'"):head.index("</table>")]
    assert "f-proved" not in summary and "proved" not in summary
    assert summary.count("◌ audited, not compiled") == sum(
        t["formal"]["status"] == "audited" for t in result["theorems"])
    for table in (text.FORMAL, text.NUMERICAL, text.KINDS):  # the legend names every badge
        for label, _, meaning in table.values():
            assert label in head and meaning.split(";")[0] in head


def test_formal_badges_from_verify_with_a_toolchain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cached: dict[str, dict[str, Any]]
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
    _reuse(monkeypatch, cached)
    result = report.write_report(tmp_path / "out", progress=False, root=root)
    status = {t["id"]: t["formal"]["status"] for t in result["theorems"]}  # type: ignore[attr-defined]
    assert result["formal_source"] == "verify"
    assert status[THEOREMS[1].id] == "sorry"
    unformalized = {thm.id for thm in THEOREMS if not thm.lean}
    assert all(status[tid] == "not formalized" for tid in unformalized)
    assert {s for tid, s in status.items()
            if tid not in {THEOREMS[1].id, *unformalized}} == {"proved"}
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    head = html[html.index("<body>"): html.index("<h2")]
    assert "COMPILED — Lean checked the proofs." in head and "NOT COMPILED" not in head
    assert "lake build + axiom audit (PROBLEMS FOUND)" in html  # the fake checker says nothing


# --------------------------------------------------------------------------------------------
# evidence states from real computations


def test_a_crash_is_error_never_disagrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cached: dict[str, dict[str, Any]],
    cli: Cli,
) -> None:
    """`theory.decide` raising inside the reduction experiment: the experiment is `error` with
    its cause, its theorem is `error`, the report is still written and marked, exit 1 with one
    line on stderr naming it."""

    def broken(*args: object, **kwargs: object) -> dict[str, object]:
        raise ValueError("boom")

    monkeypatch.setattr(theory, "decide", broken)
    _reuse(monkeypatch, cached, live=frozenset({"reduction_decisions_agree"}))
    out = tmp_path / "rep"
    res = cli("report", "--out", str(out))
    assert res.code == 1
    assert res.err.strip().splitlines()[-1].startswith("error: experiments crashed: "
                                                       "reduction_decisions_agree")
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    by_id = {t["id"]: t for t in data["theorems"]}
    crashed = by_id["reduction"]["numerical"]["experiments"][0]
    assert crashed["status"] == "error" and crashed["error"] == "ValueError: boom"
    assert by_id["reduction"]["numerical"]["status"] == "error"
    assert by_id["degree"]["numerical"]["status"] != "error"
    assert data["errored"] == ["reduction_decisions_agree"]
    html = (out / "index.html").read_text(encoding="utf-8")
    head = html[html.index("<body>"): html.index("<h2")]
    assert "1 experiment(s) crashed: reduction_decisions_agree" in head
    assert "⚠ crashed: ValueError: boom" in html
    assert "⚠ crashed:** `ValueError: boom`" in (out / "report.md").read_text(encoding="utf-8")


def test_disagrees_and_open_from_real_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tolerance of 0 makes the degree witness's round-off discrepancy count: `disagrees`
    (the experiment ran to the end); the open exploration is `open`, not counted."""
    assert experiments.run_experiment("degree_scaling_witness").status == "agrees"
    monkeypatch.setattr(degree, "EXACT_TOL", 0.0)
    result = experiments.run_experiment("degree_scaling_witness")
    assert result.status == "disagrees" and result.error is None
    opened = experiments.run_experiment("depth_open_relu_gelu").to_json()
    assert opened["status"] == "open"
    assert build.theorem_state([result.to_json(), opened]) == "disagrees"


def test_a_negative_result_counts_only_beside_an_agreeing_control(
    cached: dict[str, dict[str, Any]],
) -> None:
    negative = copy.deepcopy(cached["generic_random_draws"])
    assert negative["status"] == "agrees"
    for control_status, expected in (("agrees", "agrees"), ("disagrees", "disagrees"),
                                     ("error", "disagrees"), ("missing", "disagrees")):
        negative["positive_control_status"] = control_status
        assert build.theorem_state([negative]) == expected


# --------------------------------------------------------------------------------------------
# which Lean tree


def _tree(base: Path) -> Path:
    """A copy of the repository's Lean tree (a project of its own)."""
    base.mkdir()
    shutil.copytree(REPO / "Absorb", base / "Absorb")
    for name in ("lakefile.lean", "Absorb.lean", "AbsorbCheck.lean", "lean-toolchain"):
        if (REPO / name).is_file():
            shutil.copy(REPO / name, base / name)
    return base


def test_report_and_audit_read_the_same_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cached: dict[str, dict[str, Any]],
    cli: Cli,
) -> None:
    _reuse(monkeypatch, cached)
    tree = _tree(tmp_path / "course")
    (tree / "notes").mkdir()
    other = _tree(tmp_path / "other")
    empty = tmp_path / "empty"
    empty.mkdir()
    for cwd, args, expected in ((tree / "notes", [], tree), (empty, [], REPO),
                                (empty, ["--root", str(other)], other)):
        monkeypatch.chdir(cwd)
        out = tmp_path / f"rep-{len(list(tmp_path.iterdir()))}"
        res = cli("report", "--out", str(out), *args)
        assert res.code == 0, res.err
        data = json.loads((out / "report.json").read_text(encoding="utf-8"))
        audited = cli("audit", "--json", *args)
        assert Path(data["lean_root"]).resolve() == expected.resolve()
        assert Path(audited.json()["root"]).resolve() == expected.resolve()  # type: ignore[arg-type]
        assert f"<code>{data['lean_root']}</code>" in (out / "index.html").read_text(
            encoding="utf-8")


def test_root_that_is_not_a_lean_tree_is_bad_input(tmp_path: Path, cli: Cli) -> None:
    res = cli("report", "--out", str(tmp_path / "r"), "--root", str(tmp_path))
    assert res.code == 2 and "no Absorb/" in res.err and not (tmp_path / "r").exists()


# --------------------------------------------------------------------------------------------
# the output folder


def test_rendering_is_byte_deterministic(
    written: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same report data, same bytes (figures included); the experiments' own determinism under
    their seed is tested in test_experiments."""
    out, _ = written
    done = json.loads((out / "report.json").read_text(encoding="utf-8"))
    monkeypatch.setattr(report_write, "build_report", lambda *args: copy.deepcopy(done))
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


def test_bad_seed_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(AbsorbError, match="non-negative"):
        report.write_report(tmp_path / "r", seed=-1, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_rerun_replaces_only_its_own_files(
    written: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "rep"
    shutil.copytree(written[0], out)
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    marker = json.loads((out / report.MARKER).read_text(encoding="utf-8"))
    marker["files"].append("fig_retired.png")
    (out / report.MARKER).write_text(json.dumps(marker), encoding="utf-8")
    (out / "fig_retired.png").write_bytes(b"old")
    (out / "report.md").write_text("stale", encoding="utf-8")
    done = json.loads((written[0] / "report.json").read_text(encoding="utf-8"))
    monkeypatch.setattr(report_write, "build_report", lambda *args: done)
    report.write_report(out, seed=0, progress=False)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert not (out / "fig_retired.png").exists()
    assert (out / "report.md").read_bytes() == (written[0] / "report.md").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


def test_interrupted_run_leaves_nothing(
    written: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    done = json.loads((written[0] / "report.json").read_text(encoding="utf-8"))
    monkeypatch.setattr(report_write, "build_report", lambda *args: done)  # skip the slow part
    monkeypatch.setattr(figures, "plot", interrupted)
    with pytest.raises(KeyboardInterrupt):
        report.write_report(tmp_path / "out", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_out_that_is_a_file_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    with pytest.raises(AbsorbError, match="not a folder"):
        report.write_report(tmp_path / "f", progress=False)


# --------------------------------------------------------------------------------------------
# a real browser


@needs_chromium
@pytest.mark.parametrize("width", [1280, 700])
def test_html_renders_in_headless_chromium(
    written: tuple[Path, dict[str, Any]], tmp_path: Path, width: int
) -> None:
    colors = chromium_colors(written[0] / "index.html", tmp_path / "shot.png", width)
    # a rendered page (text, badges), not a blank or error page
    assert len(colors) > 50
    # on the first screen: the pale-yellow "NOT COMPILED" banner and a green badge
    assert (255, 248, 197) in colors and (26, 127, 55) in colors


def test_overview_counts_in_words_at_the_top(written: tuple[Path, dict[str, Any]]) -> None:
    """A skimmer reads the counts first: compiled, agreeing, not formalized, explorations —
    each number recomputed here from the report's data."""
    out, result = written
    thms = result["theorems"]
    line = text.overview(result)
    formal = [t["formal"]["status"] for t in thms]
    numerical = [t["numerical"]["status"] for t in thms]
    assert line.startswith(f"{formal.count('proved')} of {len(thms)} theorems compiled (no "
                           "Lean toolchain")
    assert f"{numerical.count('agrees')} of {len(thms)} agree numerically" in line
    assert f"{formal.count('not formalized')} not formalized" in line
    opened = sum(e["open"] for t in thms for e in t["numerical"]["experiments"])
    assert f"{opened} explorations of open questions shown, not counted" in line
    html = (out / "index.html").read_text(encoding="utf-8")
    assert html.index(esc_html(line)) < html.index("class='banner")
    md = (out / "report.md").read_text(encoding="utf-8")
    assert line in md.split("## ")[0]


def test_map_pointers_say_exploration_or_construction(
    written: tuple[Path, dict[str, Any]],
) -> None:
    """An exploration carries the badge `open` and is called one; a construction shown in the
    map (the image cone) is never called an exploration."""
    out, result = written
    html = (out / "index.html").read_text(encoding="utf-8")
    for t in result["theorems"]:
        for e in t["numerical"]["experiments"]:
            if not text.in_map(e):
                continue
            if e["open"]:
                assert e["status"] in ("open", "error")
            pointer = f"{text.pointer_to_map(e)}: <code>{e['name']}</code>"
            assert pointer in html
            assert ("Exploration" in pointer) == bool(e["open"])


@pytest.mark.parametrize("name", sorted(experiments.EXPERIMENTS))
def test_experiment_is_deterministic_under_its_seed(
    name: str, cached: dict[str, dict[str, Any]],
    experiments_seed0: dict[str, experiments.ExperimentResult],
) -> None:
    """Same seed, same numbers: the report's own run of every experiment at seed 0 (in its own
    interpreter) equals the session's earlier run (tests/conftest.py), after other work in this
    process."""
    a = build.jsonable(experiments_seed0[name].to_json())
    b = {k: v for k, v in cached[name].items() if k != "positive_control_status"}
    assert json.dumps(a, default=str) == json.dumps(b, default=str)


def test_every_data_cell_names_its_column(written: tuple[Path, dict[str, Any]]) -> None:
    """Below 760 px a data table becomes one card per row, each cell labelled with its column
    (CSS reads data-label), so no column hides behind a scrollbar at 700 px."""
    import re

    html = (written[0] / "index.html").read_text(encoding="utf-8")
    assert "@media (max-width:760px)" in html and "content:attr(data-label)" in html
    tables = re.findall(r"<table class='data'>.*?</table>", html, flags=re.S)
    assert tables
    for table in tables:
        heads = re.findall(r"<th>(.*?)</th>", table)
        for row in re.findall(r"<tr>(<td.*?)</tr>", table):
            labels = re.findall(r"data-label='(.*?)'", row)
            assert labels == heads
