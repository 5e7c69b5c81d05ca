"""The Lean bridge: a static audit of the Lean library and its verification through ``lake``.

Entry points, all keyed on the manifest (:mod:`absorb.manifest`):

* :func:`audit` reads the Lean sources with no toolchain (:mod:`absorb.lean.source` blanks
  comments and strings and resolves declarations): every ``sorry``, ``admit``,
  ``native_decide`` and ``axiom`` with file and line, modules ``Absorb.lean`` does not import,
  and per manifest theorem whether its declarations exist.  The ``lean_lib`` targets come
  from ``lakefile.lean``; a library that is not a default target (the students' exercises)
  has its findings reported as ``exercises``, which do not fail the audit.
* :func:`absorb.lean.resolve.resolve` (subpackage ``resolve``, for ``absorb audit
  --lean-sources``) resolves every import and every constant the proofs name against the
  pinned Mathlib/Batteries sources, in each file's own import closure.
* :func:`verify` runs ``lake build`` (:mod:`absorb.lean.toolchain`: own process group,
  timeout, clean kill), parses its diagnostics and ``#print axioms`` output
  (:mod:`absorb.lean.output`), classifies each theorem, and runs the compiled checker on
  the shared conformance vectors and on cases decided in Python (:mod:`absorb.lean.checker`).
* :func:`verify_dojo` (:mod:`absorb.lean.dojo`, extra ``dojo``) traces the
  repository with LeanDojo and exports each manifest theorem's tactic-by-tactic goal states.

Module dependencies run one way: ``source`` and ``output`` and ``toolchain`` depend on
nothing here; ``audit`` on ``source``; ``checker`` on ``toolchain``; ``verify`` on
``output``, ``toolchain`` and ``checker``; ``dojo`` on ``toolchain`` and ``audit``;
``resolve`` on ``source`` and ``audit``.
"""

from absorb.lean.audit import (
    LeanLib,
    audit,
    lean_libs,
    lean_sources,
    parse_lakefile_lean,
    parse_lakefile_toml,
)
from absorb.lean.checker import (
    checker_agrees,
    checker_output,
    conformance_vectors,
    python_checker_cases,
    run_checker,
)
from absorb.lean.dojo import verify_dojo
from absorb.lean.output import (
    NATIVE_AXIOMS,
    STANDARD_AXIOMS,
    AxiomReport,
    Diagnostic,
    axiom_probe,
    classify_axioms,
    failed_modules,
    parse_axioms_output,
    parse_diagnostics,
)
from absorb.lean.source import (
    Declaration,
    Finding,
    ScannedFile,
    scan_lean,
    strip_comments_and_strings,
)
from absorb.lean.toolchain import INSTALL_HINT, ProcessResult, find_lake, run_process
from absorb.lean.verify import theorem_statuses, verify

__all__ = [
    "INSTALL_HINT",
    "NATIVE_AXIOMS",
    "STANDARD_AXIOMS",
    "AxiomReport",
    "Declaration",
    "Diagnostic",
    "Finding",
    "LeanLib",
    "ProcessResult",
    "ScannedFile",
    "audit",
    "axiom_probe",
    "checker_agrees",
    "checker_output",
    "classify_axioms",
    "conformance_vectors",
    "failed_modules",
    "find_lake",
    "lean_libs",
    "lean_sources",
    "parse_axioms_output",
    "parse_diagnostics",
    "parse_lakefile_lean",
    "parse_lakefile_toml",
    "python_checker_cases",
    "run_checker",
    "run_process",
    "scan_lean",
    "strip_comments_and_strings",
    "theorem_statuses",
    "verify",
    "verify_dojo",
]
