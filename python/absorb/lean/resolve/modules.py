"""Where a Lean module's source is, and what it imports.

A module ``A.B.C`` is the file ``A/B/C.lean`` of one of three places: the project's tree
(its ``lean_lib`` roots), the pinned sources (``mathlib4/`` for ``Mathlib``, ``batteries/``
for ``Batteries``, as the archive unpacks them), or core Lean (``Init``, ``Std``, ``Lean``,
``Lake``), whose sources are not in the archive: a core import resolves without being read.
Mathlib's own dependencies that the archive leaves out (Aesop, Qq, ProofWidgets, …) are
*external*: Mathlib imports them and they end a closure unread.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from absorb.errors import AbsorbError
from absorb.lean.resolve.lexer import is_identifier
from absorb.lean.source import strip_comments_and_strings

#: The environment variable that names the unpacked source tree.
SOURCES_ENV = "ABSORB_LEAN_SOURCES"
CORE_ROOTS = frozenset({"Init", "Std", "Lean", "Lake"})
#: Top-level module name → folder of the archive holding it.
TREE_ROOTS = {"Mathlib": "mathlib4", "Batteries": "batteries"}
#: Packages Mathlib requires whose sources the archive does not hold (lake-manifest.json).
EXTERNAL_ROOTS = frozenset({"Aesop", "Qq", "ProofWidgets", "Plausible", "ImportGraph",
                            "LeanSearchClient", "Cli"})

_HEADER_LINE_RE = re.compile(r"^[ \t]*(?:(import)\s+(.*)|(prelude)\b.*|(module)\b.*)$")


#: Blanked code and syntax keywords of source-tree modules, by :meth:`ModuleGraph.stamp`.
_TREE_CACHE: dict[tuple[Path, int, int], tuple[str, tuple[frozenset[str], frozenset[str]]]] = {}


@dataclass(frozen=True)
class Import:
    """One ``import`` of a file: the module and the 1-based line it is on."""

    module: str
    line: int


def header_imports(code: str) -> tuple[Import, ...]:
    """The imports of the header of ``code`` (comments blanked): the ``import`` lines before
    the first other command."""
    out: list[Import] = []
    for lineno, line in enumerate(code.splitlines(), start=1):
        if not line.strip():
            continue
        m = _HEADER_LINE_RE.match(line)
        if m is None:
            break
        if m.group(1):
            out.extend(Import(mod, lineno) for mod in m.group(2).split()
                       if mod not in ("runtime", "all"))
    return tuple(out)


def sources_dir(arg: str | os.PathLike[str] | None) -> Path | None:
    """The source tree: ``arg`` if given, else ``$ABSORB_LEAN_SOURCES``, else ``None``.
    A given tree must hold ``mathlib4/Mathlib`` and ``batteries/Batteries``."""
    text = os.fspath(arg) if arg is not None else os.environ.get(SOURCES_ENV, "")
    if not text:
        return None
    path = Path(text)
    missing = [f"{d}/{r}" for r, d in TREE_ROOTS.items() if not (path / d / r).is_dir()]
    if missing:
        origin = "--lean-sources" if arg is not None else f"${SOURCES_ENV}"
        raise AbsorbError(f"{origin}={text}: not an unpacked source tree (no {', '.join(missing)})")
    return path


@dataclass
class ModuleGraph:
    """Module lookup and header imports over the project and the source tree, read lazily and
    once per run."""

    project: Path
    project_roots: frozenset[str]
    sources: Path
    _imports: dict[str, tuple[Import, ...]] = field(default_factory=dict)
    _code: dict[str, str] = field(default_factory=dict)
    _atoms: dict[str, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)

    def kind(self, module: str) -> str:
        """``project``, ``tree``, ``core``, ``external`` — or ``missing`` (no such file)."""
        head = module.split(".", 1)[0]
        if head in CORE_ROOTS:
            return "core"
        path = self.path(module)
        if path is not None and path.is_file():
            return "project" if head in self.project_roots else "tree"
        if head in EXTERNAL_ROOTS:
            return "external"
        return "missing"

    def path(self, module: str) -> Path | None:
        """The file ``module`` would be in (``None`` for core and external modules)."""
        head = module.split(".", 1)[0]
        rel = Path(*module.split(".")).with_suffix(".lean")
        if head in self.project_roots:
            return self.project / rel
        if head in TREE_ROOTS:
            return self.sources / TREE_ROOTS[head] / rel
        return None

    def stamp(self, module: str) -> tuple[Path, int, int] | None:
        """For a module of the source tree, a key that changes with its file (path, mtime,
        size): the tree is reference data, so what is read from it is kept per process."""
        path = self.path(module)
        if path is None or self.kind(module) != "tree":
            return None
        st = path.stat()
        return path, st.st_mtime_ns, st.st_size

    def code(self, module: str) -> str:
        """The module's source with comments and strings blanked (read once)."""
        if module not in self._code:
            stamp = self.stamp(module)
            if stamp is not None and stamp in _TREE_CACHE:
                code, atoms = _TREE_CACHE[stamp]
            else:
                path = self.path(module)
                assert path is not None
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError) as exc:
                    raise AbsorbError(f"{path}: cannot read ({exc})") from None
                code = strip_comments_and_strings(text)
                atoms = syntax_keywords(code, text)
                if stamp is not None:
                    _TREE_CACHE[stamp] = code, atoms
            self._code[module] = code
            self._atoms[module] = atoms
        return self._code[module]

    def keywords(self, module: str, own: bool = False) -> frozenset[str]:
        """The identifier-like atoms the module's syntax declarations add (tactic names,
        ``ℝ``, ``at``, …): words that are keywords, never constants, where it is imported;
        with ``own``, also those of its ``local`` notations (keywords in the module itself)."""
        if self.kind(module) not in ("project", "tree"):
            return frozenset()
        self.code(module)
        exported, local = self._atoms[module]
        return exported | local if own else exported

    def tree_modules(self) -> list[str]:
        """Every module of the source tree (for saying where a name missing from a closure is
        declared instead)."""
        out = []
        for head, folder in TREE_ROOTS.items():
            base = self.sources / folder
            out += [".".join(p.relative_to(base).with_suffix("").parts)
                    for p in sorted((base / head).rglob("*.lean"))]
        return out

    def imports(self, module: str) -> tuple[Import, ...]:
        """The header imports of a project or tree module (none for core and external)."""
        if module not in self._imports:
            readable = self.kind(module) in ("project", "tree")
            self._imports[module] = header_imports(self.code(module)) if readable else ()
        return self._imports[module]

    def closure(self, module: str) -> frozenset[str]:
        """Every module ``module`` reaches through imports, itself included; core and external
        modules end a path, missing ones are left out (they are reported where imported)."""
        seen = {module}
        todo = [module]
        while todo:
            for imp in self.imports(todo.pop()):
                if imp.module not in seen and self.kind(imp.module) != "missing":
                    seen.add(imp.module)
                    todo.append(imp.module)
        return frozenset(seen)


_SYNTAX_CMD_RE = re.compile(
    r"^[^\n]*\b(?:syntax|macro|elab|notation3?|infixl|infixr|infix|prefix|postfix"
    r"|binder_predicate)\b[^\n]*(?:\n[ \t]+\S[^\n]*)*", re.MULTILINE)
_LOCAL_RE = re.compile(r"\s*(?:@\[[^\]]*\]\s*)?local\b")
_STRING_RE = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def syntax_keywords(code: str, text: str) -> tuple[frozenset[str], frozenset[str]]:
    """Identifier-like atoms of the syntax commands of a file, those its importers see and
    those of its ``local`` notations: the command is found in the blanked ``code`` (so a
    comment mentioning ``notation`` is no command) and its string literals are read from
    ``text`` at the same offsets."""
    exported: set[str] = set()
    local: set[str] = set()
    for m in _SYNTAX_CMD_RE.finditer(code):
        into = local if _LOCAL_RE.match(m.group()) else exported
        for s in _STRING_RE.finditer(text, m.start(), m.end()):
            atom = s.group(1).strip()
            if is_identifier(atom):
                into.add(atom)
    return frozenset(exported), frozenset(local)


def modules_of(files: Iterable[Path], project: Path) -> Mapping[str, Path]:
    """Module name of each project file (``Absorb/Basic.lean`` → ``Absorb.Basic``)."""
    return {".".join(p.relative_to(project).with_suffix("").parts): p for p in files}
