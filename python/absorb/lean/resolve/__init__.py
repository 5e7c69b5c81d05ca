"""The static resolution check of the Lean library against the pinned Mathlib and Batteries
sources (no toolchain): imports, import closures, and the constants proofs name.

* :mod:`~absorb.lean.resolve.lexer`: Lean identifiers as Lean's tokenizer reads them.
* :mod:`~absorb.lean.resolve.modules`: module files (project, source tree, core), headers,
  closures, and the keywords a module's syntax declares.
* :mod:`~absorb.lean.resolve.index`: the declarations of a module.
* :mod:`~absorb.lean.resolve.references`: the constants a project file names, with their scope.
* :mod:`~absorb.lean.resolve.check`: the check itself and its report; ``core_names.toml`` the
  allowlist of core names with where each was confirmed.

Dependencies run one way: ``lexer`` ← ``modules``, ``index``, ``references`` ← ``check``.
"""

from absorb.lean.resolve.check import CoreNames, Problem, core_names, resolve
from absorb.lean.resolve.index import ModuleIndex, additive_name, index_module
from absorb.lean.resolve.modules import SOURCES_ENV, ModuleGraph, header_imports, sources_dir
from absorb.lean.resolve.references import Reference, references

__all__ = [
    "SOURCES_ENV",
    "CoreNames",
    "ModuleGraph",
    "ModuleIndex",
    "Problem",
    "Reference",
    "additive_name",
    "core_names",
    "header_imports",
    "index_module",
    "references",
    "resolve",
    "sources_dir",
]
