"""docs/ARCHITECTURE.md and docs/DESIGN.md against the code: every module of the tree has its
row and every row its module; the documented exit codes are the code's."""

from __future__ import annotations

import re
from pathlib import Path

from absorb import errors

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "python" / "absorb"


def _module_rows() -> dict[str, set[str]]:
    """The "Modules" table of ARCHITECTURE.md: module (``pkg/`` for a package) → submodules."""
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("### Modules", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and re.fullmatch(r"`[\w/]+`", cells[0]):
            rows[cells[0].strip("`")] = set(re.findall(r"`(\w+)`", cells[1]))
    return rows


def _tree() -> dict[str, set[str]]:
    """The package as the same mapping: top-level modules, and packages with their modules."""
    out: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        if path.stem != "__init__":
            out[path.stem] = set()
    for folder in sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()):
        out[folder.name + "/"] = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    return out


def test_architecture_md_lists_every_module_and_only_those() -> None:
    documented, tree = _module_rows(), _tree()
    missing = sorted(set(tree) - set(documented))
    stale = sorted(set(documented) - set(tree))
    assert not missing, f"docs/ARCHITECTURE.md (### Modules) has no row for {missing}"
    assert not stale, f"docs/ARCHITECTURE.md (### Modules) lists {stale}, not in the tree"
    for name, subs in tree.items():
        assert documented[name] == subs, (
            f"docs/ARCHITECTURE.md, row {name}: submodules not listed "
            f"{sorted(subs - documented[name])}, listed but absent "
            f"{sorted(documented[name] - subs)}")


def test_design_md_exit_codes_are_the_codes() -> None:
    text = (REPO / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    sentence = text[text.index("Exit codes:"):text.index("Bad input\nis refused")]
    documented = {int(c) for c in re.findall(r"(?:^|[:,] )(\d+) ", sentence)}
    codes = {0} | {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    assert documented == codes, f"DESIGN.md documents {sorted(documented)}, the code has " \
                                f"{sorted(codes)} (absorb/errors.py)"


def test_architecture_md_lists_every_lean_module() -> None:
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Lean side", 1)[1].split("**The checker", 1)[0]
    documented = set(re.findall(r"^\| `([\w.]+)` \|", section, flags=re.MULTILINE))
    tree = {".".join(p.relative_to(REPO / "Absorb").with_suffix("").parts)
            for p in (REPO / "Absorb").rglob("*.lean")}
    assert not tree - documented, \
        f"docs/ARCHITECTURE.md (Lean side) has no row for {sorted(tree - documented)}"
    assert not documented - tree, \
        f"docs/ARCHITECTURE.md (Lean side) lists {sorted(documented - tree)}, not in Absorb/"


def test_quoted_report_time_is_the_results_files() -> None:
    """README and TEACHING quote the `absorb report` time that benchmarks/results.md holds (the
    benchmark regenerates that file; a stale quote fails here)."""
    results = (REPO / "benchmarks" / "results.md").read_text(encoding="utf-8")
    found = re.findall(r"### `absorb report` on defaults: ([0-9.]+) s end to end", results)
    assert len(found) == 1, "benchmarks/results.md must hold one `absorb report` section"
    seconds = found[0]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    teaching = (REPO / "docs" / "TEACHING.md").read_text(encoding="utf-8")
    quoted = re.findall(r"`absorb report` on defaults takes ([0-9.]+) s", readme)
    assert quoted == [seconds], f"README quotes {quoted} s, results.md says {seconds} s"
    assert re.findall(r"absorb report --out report --seed 0\s+# ([0-9.]+) s", teaching) \
        == [seconds], f"docs/TEACHING.md must quote {seconds} s from benchmarks/results.md"
