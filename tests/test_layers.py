"""The package's layers point only down, and no modules import each other in a circle.

The import graph is built from the source with ``ast``: every ``import``/``from … import`` of
an ``absorb`` module, at module level or inside a function (a lazy import is still a
dependency). A module may import modules of its own layer or of lower layers; the imports
among all modules form no circle. :data:`LAYERS` is the one table of the layers;
docs/ARCHITECTURE.md shows it and a test here keeps the two equal.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "python" / "absorb"

#: Layers, lowest first: each names the modules or packages (a package covers its submodules)
#: that sit in it. The most specific name wins (``stacks.fit`` is a numerical fit, the rest
#: of ``stacks`` sits with the checkpoints).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("absorb", "errors", "numbers", "exact", "formats", "activations", "blocks",
              "budget", "atomic_files", "rationals", "marquardt", "weights", "manifest",
              "lean_project", "serialize", "html_style")),
    ("certificates and fits", ("certificates", "fits", "stacks.fit", "lean")),
    ("verdicts", ("verdicts", "theory")),
    ("checkpoints, stacks, scan", ("checkpoints", "stacks", "scan")),
    ("experiments", ("experiments",)),
    ("report", ("report", "blueprint")),
    ("commands", ("commands", "cli", "__main__")),
)


def module_names() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(name: str, path: Path, modules: set[str]) -> Iterator[tuple[str, int]]:
    """(imported absorb module, line) for every import in the file, module-level or not;
    ``from absorb.pkg import sub`` is an import of the submodule ``absorb.pkg.sub``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "absorb":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            if base.split(".")[0] != "absorb":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield (sub if sub in modules else base), node.lineno


def graph() -> dict[str, list[tuple[str, int]]]:
    """Each module's imports, with the packages an import runs on the way: importing
    ``absorb.a.b`` first runs ``absorb/a/__init__.py`` (unless the importer is inside ``a``)."""
    names = module_names()
    out: dict[str, list[tuple[str, int]]] = {}
    for name, path in names.items():
        deps = []
        for module, line in imports(name, path, set(names)):
            parts = module.split(".")
            for end in range(2, len(parts) + 1):
                dep = ".".join(parts[:end])
                if dep != name and not name.startswith(dep + ".") and dep in names:
                    deps.append((dep, line))
        out[name] = list(dict.fromkeys(deps))
    return out


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the most specific entry naming the module."""
    best: tuple[int, int] | None = None
    for index, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            full = "absorb" if entry == "absorb" else f"absorb.{entry}"
            covers = module == full or (entry != "absorb" and module.startswith(full + "."))
            if covers and (best is None or len(full) > best[0]):
                best = (len(full), index)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/test_layers.py "
                             "and to the layer table of docs/ARCHITECTURE.md")
    return best[1]


def test_every_module_has_a_layer_and_every_entry_a_module() -> None:
    names = module_names()
    for name in names:
        layer_of(name)
    for _, entries in LAYERS:
        for entry in entries:
            full = "absorb" if entry == "absorb" else f"absorb.{entry}"
            assert full in names, f"LAYERS names {full}, which is not in the tree"


def test_no_import_points_to_a_higher_layer() -> None:
    upward = []
    for name, deps in graph().items():
        for dep, line in deps:
            if layer_of(dep) > layer_of(name):
                upward.append(f"{name} (layer {LAYERS[layer_of(name)][0]!r}, line {line}) "
                              f"imports {dep} (layer {LAYERS[layer_of(dep)][0]!r})")
    assert not upward, "imports pointing up a layer:\n" + "\n".join(upward)


def test_no_circle_of_imports() -> None:
    edges = {name: sorted({dep for dep, _ in deps}) for name, deps in graph().items()}
    state: dict[str, int] = {}
    circles: list[str] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in edges.get(node, []):
            if state.get(dep) == 1:
                circle = [*path[path.index(dep):], dep]
                circles.append(" -> ".join(circle))
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for node in edges:
        if node not in state:
            visit(node, [node])
    assert not circles, "circles of imports:\n" + "\n".join(circles)


def test_the_checker_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    """The graph counts an import inside a function, and resolves relative imports."""
    source = tmp_path / "absorb" / "theory" / "x.py"
    source.parent.mkdir(parents=True)
    source.write_text("def f():\n    from absorb.cli import main\n    from ..fits import fit\n",
                      encoding="utf-8")
    found = list(imports("absorb.theory.x", source, {"absorb.fits.fit"}))
    assert found == [("absorb.cli", 2), ("absorb.fits.fit", 3)]
    assert layer_of("absorb.cli") > layer_of("absorb.theory.x")


def test_architecture_md_shows_the_layer_table() -> None:
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"\|\s*\d", line)]
    shown = []
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        shown.append((cells[1], tuple(re.findall(r"`([^`]+)`", cells[2]))))
    assert shown == [(name, entries) for name, entries in LAYERS], (
        "the layer table of docs/ARCHITECTURE.md differs from LAYERS in tests/test_layers.py")


def test_the_benchmark_scripts_import_no_circle() -> None:
    """benchmarks/run.py imports its section scripts; they share benchmarks/tables.py and never
    import run.py back."""
    folder = REPO / "benchmarks"
    scripts = {p.stem: p for p in folder.glob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in scripts.items():
        edges[name] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in scripts:
                edges[name].add(node.module)
            elif isinstance(node, ast.Import):
                edges[name] |= {a.name for a in node.names if a.name in scripts}
    back = sorted(f"{a} -> {b} -> {a}" for a in edges for b in edges[a] if a in edges.get(b, ()))
    assert not back, f"benchmark scripts import each other: {back}"
    assert "tables" in edges["run"] and not edges["tables"]


def test_only_the_commands_see_argparse() -> None:
    """Options are parsed at the top: no module below the command layer imports argparse."""
    top = LAYERS.index(next(layer for layer in LAYERS if layer[0] == "commands"))
    offenders = []
    for name, path in module_names().items():
        if layer_of(name) == top:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            imported = ([a.name for a in node.names] if isinstance(node, ast.Import)
                        else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if "argparse" in imported:
                offenders.append(f"{name} (line {node.lineno})")
    assert not offenders, f"argparse below the commands: {offenders}"
