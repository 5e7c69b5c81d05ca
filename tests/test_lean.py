"""The Lean bridge: static audit, output parsers on real-format fixtures, and process handling
against real processes (fake `lake` scripts on a temporary PATH)."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import threading
import time
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from absorb import lean
from absorb.errors import AbsorbError, ToolMissing
from absorb.manifest import THEOREM_IDS, THEOREMS, lean_declarations

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "lean_output"


# --------------------------------------------------------------------------- lexing and scanning


def test_comments_and_strings_are_blanked_but_positions_kept() -> None:
    src = (
        "theorem a : True := trivial -- sorry here is a comment\n"
        "/- outer /- nested sorry -/ still comment admit -/\n"
        '/-- doc: uses `native_decide` -/ def s : String := "sorry \\" admit"\n'
        "def c : Char := 'x'\n"
        "theorem h' : True := sorry\n"
    )
    code = lean.strip_comments_and_strings(src)
    assert len(code) == len(src)
    assert code.count("\n") == src.count("\n")
    assert "sorry" not in code.splitlines()[0]
    assert "sorry" not in code.splitlines()[1] and "admit" not in code.splitlines()[1]
    assert "native_decide" not in code and "admit" not in code
    assert code.splitlines()[4].endswith("sorry")
    assert "h'" in code  # a prime in a name is not a char literal


def test_scan_resolves_nested_namespaces_and_lists_findings() -> None:
    src = "\n".join(
        [
            "namespace Absorb",  # 1
            "theorem top : True := trivial",  # 2
            "noncomputable section",  # 3
            "namespace Checker",  # 4
            "@[simp] lemma inner : True := by",  # 5
            "  sorry",  # 6
            "private def helper (n : ℕ) : ℕ := n",  # 7
            "end Checker",  # 8
            "end",  # 9
            "theorem _root_.outside : True := by native_decide",  # 10
            "axiom cheat : False",  # 11
            "theorem notSorry : True := trivial -- sorry",  # 12
            "end Absorb",  # 13
            "theorem bare : True := by admit",  # 14
        ]
    )
    scanned = lean.scan_lean(src, "Absorb/X.lean")
    names = {d.name: (d.kind, d.line) for d in scanned.declarations}
    assert names == {
        "Absorb.top": ("theorem", 2),
        "Absorb.Checker.inner": ("theorem", 5),
        "Absorb.Checker.helper": ("def", 7),
        "outside": ("theorem", 10),
        "Absorb.cheat": ("axiom", 11),
        "Absorb.notSorry": ("theorem", 12),
        "bare": ("theorem", 14),
    }
    found = [(f.kind, f.line, f.declaration) for f in scanned.findings]
    assert found == [
        ("sorry", 6, "Absorb.Checker.inner"),
        ("native_decide", 10, "outside"),
        ("axiom", 11, "Absorb.cheat"),
        ("admit", 14, "bare"),
    ]
    assert scanned.findings[0].column == 3


def test_end_with_dotted_name_closes_nested_namespaces() -> None:
    src = "namespace A\nnamespace B\ndef x : ℕ := 0\nend A.B\ndef y : ℕ := 1\n"
    assert [d.name for d in lean.scan_lean(src, "f.lean").declarations] == ["A.B.x", "y"]


def test_mismatched_end_is_a_parse_finding() -> None:
    scanned = lean.scan_lean("namespace A\nend B\ndef x : ℕ := 0\nend A\n", "f.lean")
    assert [(f.kind, f.line) for f in scanned.findings] == [("parse", 2)]
    assert [d.name for d in scanned.declarations] == ["A.x"]


def _write_library(root: Path, modules: dict[str, str], imported: list[str]) -> None:
    (root / "Absorb").mkdir()
    for name, text in modules.items():
        (root / "Absorb" / f"{name}.lean").write_text(text, encoding="utf-8")
    (root / "Absorb.lean").write_text(
        "".join(f"import Absorb.{m}\n" for m in imported), encoding="utf-8"
    )


def test_audit_reports_present_missing_findings_and_imports(tmp_path: Path) -> None:
    reduction = next(t for t in THEOREMS if t.id == "reduction")
    first, second = reduction.lean[:2]
    ns, short = first.rsplit(".", 1)
    text = f"namespace {ns}\ntheorem {short} : True := by\n  sorry\nend {ns}\n"
    _write_library(
        tmp_path, {"Reduction": text, "Orphan": "def z : ℕ := 0\n"}, ["Reduction", "Gone"]
    )
    report = lean.audit(tmp_path)
    by_id = {t["id"]: t for t in report["theorems"]}  # type: ignore[union-attr,index]
    assert set(by_id) == set(THEOREM_IDS)
    decls = {d["name"]: d for d in by_id["reduction"]["declarations"]}
    assert decls[first]["status"] == "present" and decls[first]["line"] == 2
    assert decls[second]["status"] == "missing"
    assert by_id["reduction"]["status"] == "missing"
    assert all(by_id[t.id]["status"] == "not_formalized" for t in THEOREMS if not t.lean)
    kinds = {(f["kind"], f["file"], f["line"]) for f in report["findings"]}  # type: ignore[union-attr,index]
    assert kinds == {
        ("sorry", "Absorb/Reduction.lean", 3),
        ("not_imported", "Absorb/Orphan.lean", 0),
        ("missing_module", "Absorb.lean", 2),
    }
    assert report["ok"] is False


def test_audit_ok_when_everything_is_declared_and_clean(tmp_path: Path) -> None:
    lines = []
    for name in lean_declarations():
        ns, short = name.rsplit(".", 1)
        lines += [f"namespace {ns}", f"theorem {short} : True := trivial", f"end {ns}"]
    _write_library(tmp_path, {"All": "\n".join(lines) + "\n"}, ["All"])
    report = lean.audit(tmp_path)
    assert report["findings"] == []
    assert report["ok"] is True


def test_audit_refuses_a_root_without_library(tmp_path: Path) -> None:
    with pytest.raises(AbsorbError, match="Absorb/"):
        lean.audit(tmp_path)


def test_audit_of_the_repository_covers_the_manifest() -> None:
    report = lean.audit(REPO)
    assert [t["id"] for t in report["theorems"]] == list(THEOREM_IDS)  # type: ignore[union-attr,index]
    for f in report["findings"]:  # type: ignore[union-attr]
        assert (REPO / f["file"]).is_file()


# --------------------------------------------------------------------------- output parsers


def test_parse_lake_build_failure() -> None:
    text = (FIXTURES / "lake_build_failed.txt").read_text(encoding="utf-8")
    diags = lean.parse_diagnostics(text)
    errors = [d for d in diags if d.severity == "error" and d.file]
    assert [(d.file, d.line, d.column) for d in errors] == [
        ("Absorb/Degree.lean", 42, 4),
        ("Absorb/Degree.lean", 61, 10),
    ]
    assert errors[0].message.startswith("type mismatch\n  h\nhas type")
    assert errors[0].message.endswith("(2 : ℝ) ^ k = 2 : Prop")
    assert errors[1].message == "unknown identifier 'smul_eq_zero_iff'"
    sorries = [(d.file, d.line) for d in diags if d.sorry]
    assert sorries == [("Absorb/Basic.lean", 120), ("Absorb/Parity.lean", 57)]
    unused = next(d for d in diags if "unused variable" in d.message)
    assert "linter can be disabled" in unused.message and not unused.sorry
    lake_errors = [d.message for d in diags if d.file is None]
    assert lake_errors == ["Lean exited with code 1", "build failed"]
    assert lean.failed_modules(text) == ["Absorb.Degree"]


def test_parse_lake_build_success() -> None:
    text = (FIXTURES / "lake_build_ok.txt").read_text(encoding="utf-8")
    diags = lean.parse_diagnostics(text)
    assert [(d.severity, d.file, d.line) for d in diags] == [
        ("warning", "Absorb/Checker.lean", 140)
    ]
    assert lean.failed_modules(text) == []


def test_parse_plain_lean_output() -> None:
    diags = lean.parse_diagnostics((FIXTURES / "lean_plain.txt").read_text(encoding="utf-8"))
    assert [(d.severity, d.file, d.line, d.column, d.sorry) for d in diags] == [
        ("error", "Absorb/Linearization.lean", 33, 2, False),
        ("warning", "Absorb/Linearization.lean", 70, 0, True),
        ("error", "Absorb/IndexSet.lean", 12, 15, False),
    ]
    assert diags[0].message == "unsolved goals\nx : Fin d → ℝ\nhx : A.mulVec x ≠ 0\n⊢ False"


def test_parse_print_axioms() -> None:
    text = (FIXTURES / "print_axioms.txt").read_text(encoding="utf-8")
    names = [
        "Absorb.absorbable_skipMap_iff_one",
        "Absorb.absorbable_skipMap_iff_one_gated",
        "Absorb.oddPartLinear_relu",
        "Absorb.not_absorbable_reluSq",
        "Absorb.Checker.absorbable_of_check",
        "Absorb.volume_setOf_indexSetCond_eq_zero",
        "Absorb.not_absorbable_geglu",
        "Absorb.residualStack_ne_plainStack_of_gate",
        "Absorb.not_absorbable_swiglu",
    ]
    probe, by_line = lean.axiom_probe(names)
    assert probe.splitlines()[0] == "import Absorb"
    assert by_line[9] == "Absorb.not_absorbable_geglu"  # the fixture's error lines
    reports = lean.parse_axioms_output(text, by_line)
    status = {name: r.status for name, r in reports.items()}
    assert status == {
        "Absorb.absorbable_skipMap_iff_one": "proved",
        "Absorb.absorbable_skipMap_iff_one_gated": "proved",
        "Absorb.oddPartLinear_relu": "proved",
        "Absorb.not_absorbable_reluSq": "sorry",
        "Absorb.Checker.absorbable_of_check": "native_decide",
        "Absorb.volume_setOf_indexSetCond_eq_zero": "axiom",
        "Absorb.not_absorbable_geglu": "missing",
        "Absorb.residualStack_ne_plainStack_of_gate": "error",
        "Absorb.not_absorbable_swiglu": "error",  # no output at all
    }
    assert reports["Absorb.Checker.absorbable_of_check"].axioms == (
        "propext",
        "Classical.choice",
        "Lean.ofReduceBool",
        "Quot.sound",
    )


def test_axioms_with_position_prefix_are_read() -> None:
    text = "P.lean:3:0: info: 'Absorb.oddPartLinear_silu' depends on axioms: [propext]\n"
    reports = lean.parse_axioms_output(text, {3: "Absorb.oddPartLinear_silu"})
    assert reports["Absorb.oddPartLinear_silu"].status == "proved"


def test_theorem_status_is_the_worst_declaration() -> None:
    names = lean_declarations()
    reports = {n: lean.AxiomReport(n, "proved", ("propext",), "") for n in names}
    degree = next(t for t in THEOREMS if t.id == "degree")
    reports[degree.lean[-1]] = lean.AxiomReport(degree.lean[-1], "sorry", ("sorryAx",), "")
    statuses = {t["id"]: t["status"] for t in lean.theorem_statuses(reports)}
    assert statuses["degree"] == "sorry"
    assert statuses["reduction"] == "proved"
    assert all(statuses[t.id] == "not_formalized" for t in THEOREMS if not t.lean)


# --------------------------------------------------------------------------- processes


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


# A reference checker for the fake `lake exe absorb-check`: W_down[:,S] W_up[S,:] = -A over Q;
# a document of another format is refused (exit 2, error object), as the real checker does.
FAKE_CHECKER = """
import json, sys
from fractions import Fraction as Q
j = json.load(open(sys.argv[1]))
if j.get("format") != "absorb-check/2":
    print(json.dumps({"error": "format", "exit": 2})); sys.exit(2)
up = [[Q(v) for v in r] for r in j["W_up"]]
down = [[Q(v) for v in r] for r in j["W_down"]]
d, S = len(down), j["S"]
A = j.get("A_skip") or [[int(i == k) for k in range(d)] for i in range(d)]
ok = all(sum(down[i][s] * up[s][k] for s in S) == -Q(A[i][k]) for i in range(d) for k in range(d))
print(json.dumps({"verdict": "absorbed" if ok else "condition_fails", "S": S}))
"""


def _fake_repo(tmp_path: Path, build_fixture: str, build_rc: int) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fixture = FIXTURES / build_fixture
    _script(
        bindir / "lake",
        f"""case "$1" in
  build) cat "{fixture}"; exit {build_rc};;
  env) sed -n "s/^#print axioms \\(.*\\)$/'\\1' depends on axioms: [propext, Quot.sound]/p" "$3";;
  exe) python3 -c "$CHECKER" "$3";;
esac
""",
    )
    root = tmp_path / "repo"
    root.mkdir()
    (root / "lakefile.lean").write_text("-- fake\n", encoding="utf-8")
    return bindir


def test_verify_with_failing_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = _fake_repo(tmp_path, "lake_build_failed.txt", 1)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    result = lean.verify(tmp_path / "repo", timeout=30)
    build = result["build"]
    assert build["returncode"] == 1 and build["ok"] is False  # type: ignore[index]
    assert build["failed_modules"] == ["Absorb.Degree"]  # type: ignore[index]
    assert [e["line"] for e in build["errors"] if e["file"]] == [42, 61]  # type: ignore[index]
    assert result["checker"] == []  # no checker run on a failed build
    assert result["ok"] is False


def test_verify_with_passing_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = _fake_repo(tmp_path, "lake_build_ok.txt", 0)
    monkeypatch.setenv("CHECKER", FAKE_CHECKER)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    result = lean.verify(tmp_path / "repo", timeout=30)
    statuses = {t["id"]: t["status"] for t in result["theorems"]}  # type: ignore[union-attr,index]
    assert statuses == {
        t.id: ("proved" if t.lean else "not_formalized") for t in THEOREMS
    }
    checks = result["checker"]
    assert [(c["input"], c["agrees"]) for c in checks] == [  # type: ignore[index,union-attr]
        ("planted_found.json", True),
        ("planted_wrong_S.json", True),
    ]
    assert result["ok"] is True


def test_verify_reports_a_checker_disagreement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = _fake_repo(tmp_path, "lake_build_ok.txt", 0)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    # a broken checker that accepts everything
    monkeypatch.setenv("CHECKER", "import sys, json; print(json.dumps({'verdict': 'absorbed'}))")
    result = lean.verify(tmp_path / "repo", timeout=30)
    verdicts = {c["input"]: c["agrees"] for c in result["checker"]}  # type: ignore[index,union-attr]
    assert verdicts == {"planted_found.json": False, "planted_wrong_S.json": False}
    assert result["ok"] is False


def test_python_checker_cases_are_decided_correctly() -> None:
    from absorb.certificates import index_set_residual

    cases = lean.python_checker_cases(np.random.default_rng(0))
    verdicts = [expected["checker"]["verdict"] for _, _, expected in cases]  # type: ignore[index]
    assert verdicts == ["absorbed", "condition_fails"]
    for _, payload, expected in cases:
        assert payload["format"] == "absorb-check/2" and payload["activation"] == "relu"
        residual = index_set_residual(payload["W_up"], payload["W_down"], payload["S"])
        assert (residual == 0) == (expected["checker"]["verdict"] == "absorbed")  # type: ignore[index]


def test_checker_agreement_rules() -> None:
    """An accepted vector needs exit 0 and every expected key; a refused one needs a nonzero
    exit and an error object; anything that is not a JSON object never agrees."""
    report = json.dumps({"verdict": "absorbed", "S": [0, 1], "d": 2})
    accepted = {"accepted": True, "checker": {"verdict": "absorbed", "S": [0, 1]}}
    assert lean.checker_agrees(0, "lake noise\n" + report, accepted)[0]
    assert not lean.checker_agrees(2, report, accepted)[0]
    assert not lean.checker_agrees(0, report, {"accepted": True,
                                               "checker": {"verdict": "condition_fails"}})[0]
    assert lean.checker_agrees(0, report, {"accepted": True})[0]
    error = json.dumps({"error": "duplicate key", "exit": 2})
    assert lean.checker_agrees(2, error, {"accepted": False, "reason": "duplicate"})[0]
    assert not lean.checker_agrees(0, error, {"accepted": False})[0]
    assert not lean.checker_agrees(2, report, {"accepted": False})[0]
    assert not lean.checker_agrees(0, "not json", {"accepted": True})[0]


# An oracle for the checker's verdicts, independent of the package: exact Fractions, every index
# set enumerated, the hypotheses of indexSetCond_of_absorbable_relu checked entry by entry.

def _fraction(v: object) -> Fraction:
    assert not isinstance(v, bool) and isinstance(v, int | str | Fraction)
    return Fraction(v)


def _oracle(doc: dict[str, Any]) -> dict[str, object]:
    up = [[_fraction(v) for v in r] for r in doc["W_up"]]
    down = [[_fraction(v) for v in r] for r in doc["W_down"]]
    n, d = len(up), len(up[0])
    A = ([[_fraction(v) for v in r] for r in doc["A_skip"]] if "A_skip" in doc
         else [[Fraction(int(j == k)) for k in range(d)] for j in range(d)])

    def cond(S: tuple[int, ...]) -> list[tuple[int, int]]:
        return [(j, k) for j in range(d) for k in range(d)
                if sum((down[j][i] * up[i][k] for i in S), Fraction(0)) != -A[j][k]]

    if "S" in doc:
        failing = cond(tuple(doc["S"]))
        return {"verdict": "condition_fails" if failing else "absorbed",
                **({"failing_entry": {"row": failing[0][0], "col": failing[0][1]}}
                   if failing else {})}
    Y = [[_fraction(v) for v in r] for r in doc["Y"]]
    c = [sum(down[j][i] * Y[j][k] * up[i][k] for j in range(d) for k in range(d))
         for i in range(n)]
    neg = -sum(A[j][k] * Y[j][k] for j in range(d) for k in range(d))
    lower, upper = sum(min(x, 0) for x in c), sum(max(x, 0) for x in c)
    holds = neg < lower or upper < neg
    if holds:  # the certificate's claim, re-checked by brute force
        assert all(cond(S) for r in range(n + 1) for S in combinations(range(n), r))
    hyp: object = "hold"
    zero_rows = [i for i in range(n) if not any(up[i])]
    collinear = [(i, j) for i in range(n) for j in range(n) if i != j and all(
        up[i][k] * up[j][m] == up[i][m] * up[j][k] for k in range(d) for m in range(d))]
    zero_cols = [i for i in range(n) if not any(down[r][i] for r in range(d))]
    if zero_rows:
        hyp = {"hypothesis": "nonzero_rows", "row": zero_rows[0]}
    elif collinear:
        hyp = {"hypothesis": "noncollinear_rows", "rows": list(collinear[0])}
    elif zero_cols:
        hyp = {"hypothesis": "nonzero_columns", "column": zero_cols[0]}
    verdict = {(True, True): "not_absorbable", (True, False): "no_index_set",
               (False, False): "hypothesis_fails", (False, True): "certificate_fails"}
    return {"verdict": verdict[holds, hyp == "hold"], "hypotheses": hyp,
            "neg_pairing": str(neg), "lower": str(lower), "upper": str(upper)}


CHECKER_VECTORS = [(path, expected) for path, expected in lean.conformance_vectors(REPO)
                   if "checker" in expected]


def test_checker_vectors_cover_every_verdict() -> None:
    verdicts = {expected["checker"]["verdict"] for _, expected in CHECKER_VECTORS}  # type: ignore[index]
    assert verdicts == {"absorbed", "condition_fails", "not_absorbable", "no_index_set",
                        "hypothesis_fails", "certificate_fails"}
    activations = {(json.loads(p.read_text())["activation"], "b_up" in p.read_text())
                   for p, e in CHECKER_VECTORS if e["checker"]["verdict"] == "not_absorbable"}  # type: ignore[index]
    assert activations == {("relu", False), ("gelu", False), ("gelu", True)}


@pytest.mark.parametrize("vector", [p for p, _ in CHECKER_VECTORS],
                         ids=[p.stem for p, _ in CHECKER_VECTORS])
def test_checker_vector_verdicts_match_an_exact_oracle(vector: Path) -> None:
    """What the Lean checker must print on each vector is what an exact brute-force oracle says;
    the dual numbers are also those of the package's own exact dual checker."""
    from absorb.certificates.recheck import check_dual

    doc = json.loads(vector.read_text(encoding="utf-8"), parse_float=Fraction)
    expected = dict(lean.conformance_vectors(REPO))[vector]["checker"]
    oracle = _oracle(doc)
    assert isinstance(expected, dict)
    for key, value in oracle.items():
        if key == "failing_entry":
            assert {k: expected[key][k] for k in ("row", "col")} == value
        else:
            assert expected[key] == value, key
    if "Y" in doc:
        check = check_dual(doc["W_up"], doc["W_down"], doc["Y"], doc.get("A_skip"), exact=True)
        assert (Fraction(expected["neg_pairing"]), Fraction(expected["lower"]),
                Fraction(expected["upper"])) == (check.value, check.lower, check.upper)


BARE_IMPORT = re.compile(r"^\s*import\s+Mathlib\s*(--.*)?$", re.MULTILINE)


def test_no_lean_file_imports_all_of_mathlib() -> None:
    """Each Lean file imports the modules it uses (issue: `import Mathlib` made the checker's
    first build compile all of Mathlib's native code)."""
    files = [REPO / "AbsorbCheck.lean", REPO / "Absorb.lean", REPO / "AbsorbExercises.lean",
             *(REPO / "Absorb").rglob("*.lean"), *(REPO / "AbsorbExercises").rglob("*.lean")]
    offenders = [str(f.relative_to(REPO)) for f in files
                 if f.is_file() and BARE_IMPORT.search(f.read_text(encoding="utf-8"))]
    assert offenders == []
    assert BARE_IMPORT.search("import Absorb.Basic\nimport Mathlib\n")
    assert not BARE_IMPORT.search("import Mathlib.Data.Real.Basic\n")


def test_checker_executable_imports_no_mathlib_module() -> None:
    """`lake exe absorb-check` compiles the closure of AbsorbCheck: the reader and the decision
    module only, neither of which imports Mathlib (the soundness module is `lake build`'s)."""
    imports = {f: re.findall(r"^import\s+(\S+)", (REPO / f).read_text(encoding="utf-8"),
                             re.MULTILINE)
               for f in ("AbsorbCheck.lean", "Absorb/Checker/Decide.lean",
                         "Absorb/Checker/Reader.lean")}
    assert imports == {"AbsorbCheck.lean": ["Absorb.Checker.Decide"],
                       "Absorb/Checker/Decide.lean": ["Batteries.Data.Rat.Basic",
                                                      "Absorb.Checker.Reader"],
                       "Absorb/Checker/Reader.lean": []}


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = _script(tmp_path / "slow", f"sleep 60 & echo $! > {pids}; echo started; wait\n")
    start = time.monotonic()
    result = lean.run_process([str(script)], tmp_path, timeout=1.0, grace=2.0)
    assert result.timed_out and result.returncode is None
    assert time.monotonic() - start < 10
    assert "started" in result.output
    child = int(pids.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_ctrl_c_kills_the_group_and_propagates(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = _script(tmp_path / "slow", f"sleep 60 & echo $! > {pids}; wait\n")
    # SIGINT aimed at the main thread (as the terminal's Ctrl-C reaches it): Python raises
    # KeyboardInterrupt inside run_process's wait.
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(1.0, signal.pthread_kill, args=(main, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            lean.run_process([str(script)], tmp_path, timeout=30, grace=1.0)
    finally:
        timer.cancel()
    child = int(pids.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_sigterm_ignoring_group_is_killed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = _script(
        tmp_path / "stubborn", f"trap '' TERM\n(trap '' TERM; sleep 60) & echo $! > {pids}\nwait\n"
    )
    result = lean.run_process([str(script)], tmp_path, timeout=0.5, grace=0.5)
    assert result.timed_out
    child = int(pids.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_nonzero_exit_is_reported(tmp_path: Path) -> None:
    script = _script(tmp_path / "fails", "echo 'error: build failed' >&2; exit 3\n")
    result = lean.run_process([str(script)], tmp_path, timeout=10)
    assert result.returncode == 3 and not result.timed_out
    assert result.output.strip() == "error: build failed"


def test_missing_binary_raises_tool_missing(tmp_path: Path) -> None:
    with pytest.raises(ToolMissing):
        lean.run_process([str(tmp_path / "no-such-lake")], tmp_path, timeout=5)


def test_verify_without_toolchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert lean.find_lake() is None
    with pytest.raises(ToolMissing, match=r"elan-init\.sh"):
        lean.verify(REPO)


def test_find_lake_falls_back_to_elan_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".elan" / "bin").mkdir(parents=True)
    lake = _script(tmp_path / ".elan" / "bin" / "lake", "exit 0\n")
    assert lean.find_lake() == lake


# --------------------------------------------------------------------------- real toolchain


@pytest.mark.lean
@pytest.mark.skipif(lean.find_lake() is None, reason="no Lean toolchain (lake) installed")
def test_verify_with_real_toolchain() -> None:
    result = lean.verify(REPO)
    assert [t["id"] for t in result["theorems"]] == list(THEOREM_IDS)  # type: ignore[union-attr,index]
    if result["build"]["ok"]:  # type: ignore[index]
        assert all(c["agrees"] for c in result["checker"]), result["checker"]  # type: ignore[union-attr,index]


# --------------------------------------------------------------------------- library vs exercises

LAKEFILE_WITH_EXERCISES = """import Lake
open Lake DSL

package absorb

/-- The library. `lean_lib Fake` in a comment is not a library. -/
@[default_target]
lean_lib Absorb where
  roots := #[`Absorb, `AbsorbCheck]

/-- Exercises for students: may contain `sorry`; not a default target. -/
lean_lib AbsorbExercises where

lean_exe «absorb-check» where
  root := `AbsorbCheck
"""


def _library_with_exercises(root: Path, exercise: str, library_extra: str = "") -> None:
    lines = []
    for name in lean_declarations():
        ns, short = name.rsplit(".", 1)
        lines += [f"namespace {ns}", f"theorem {short} : True := trivial", f"end {ns}"]
    _write_library(root, {"All": library_extra + "\n".join(lines) + "\n"}, ["All"])
    (root / "lakefile.lean").write_text(LAKEFILE_WITH_EXERCISES, encoding="utf-8")
    (root / "AbsorbExercises").mkdir()
    (root / "AbsorbExercises" / "Sheet1.lean").write_text(exercise, encoding="utf-8")
    (root / "AbsorbExercises.lean").write_text("import AbsorbExercises.Sheet1\n",
                                               encoding="utf-8")


def test_lakefile_libraries_and_default_targets() -> None:
    libs = lean.parse_lakefile_lean(LAKEFILE_WITH_EXERCISES)
    assert [(lib.name, lib.roots, lib.default) for lib in libs] == [
        ("Absorb", ("Absorb", "AbsorbCheck"), True),
        ("AbsorbExercises", ("AbsorbExercises",), False),
    ]
    real = lean.lean_libs(REPO)
    assert any(lib.name == "Absorb" and lib.default for lib in real)
    assert all(lib.default for lib in real if lib.name != "AbsorbExercises")
    toml = lean.parse_lakefile_toml(
        'defaultTargets = ["Absorb"]\n[[lean_lib]]\nname = "Absorb"\n'
        '[[lean_lib]]\nname = "AbsorbExercises"\n')
    assert [(lib.name, lib.default) for lib in toml] == [("Absorb", True),
                                                         ("AbsorbExercises", False)]


def test_exercise_sorries_are_listed_but_do_not_fail_the_audit(tmp_path: Path) -> None:
    # A student's sheet restating a manifest theorem with `sorry`.
    name = lean_declarations()[0]
    _library_with_exercises(tmp_path, f"theorem {name}' : True := by\n  sorry\n")
    report = lean.audit(tmp_path)
    assert report["ok"] is True and report["findings"] == []
    assert [(f["kind"], f["file"], f["line"]) for f in report["exercises"]] == [  # type: ignore[union-attr,index]
        ("sorry", "AbsorbExercises/Sheet1.lean", 2)]


def test_the_same_sorry_in_the_library_fails_the_audit(tmp_path: Path) -> None:
    _library_with_exercises(tmp_path, "theorem e : True := trivial\n",
                            library_extra="theorem Absorb.extra : True := by\n  sorry\n")
    report = lean.audit(tmp_path)
    assert report["ok"] is False and report["exercises"] == []
    assert [(f["kind"], f["file"]) for f in report["findings"]] == [  # type: ignore[union-attr,index]
        ("sorry", "Absorb/All.lean")]


def test_declarations_in_exercises_do_not_count_and_importing_them_fails(
    tmp_path: Path,
) -> None:
    name = lean_declarations()[0]
    ns, short = name.rsplit(".", 1)
    _library_with_exercises(tmp_path, f"namespace {ns}\ntheorem {short} : True := trivial\n"
                                      f"end {ns}\n")
    (tmp_path / "Absorb" / "All.lean").write_text(
        "import AbsorbExercises.Sheet1\n", encoding="utf-8")  # the library now lacks them all
    report = lean.audit(tmp_path)
    assert report["ok"] is False
    by_id = {t["id"]: t["status"] for t in report["theorems"]}  # type: ignore[union-attr,index]
    assert "present" not in by_id.values()
    assert [f["kind"] for f in report["findings"]] == ["imports_exercises"]  # type: ignore[union-attr,index]


def test_cli_audit_with_exercise_sorry_exits_0(tmp_path: Path) -> None:
    from tests.conftest import run_subprocess

    _library_with_exercises(tmp_path, "theorem e : True := by\n  sorry\n")
    res = run_subprocess(["audit", "--root", str(tmp_path)])
    assert res.code == 0, res.err
    assert "exercise (does not fail the audit): sorry AbsorbExercises/Sheet1.lean:2" in res.out


# --------------------------------------------------------------------------- LeanDojo backend


def test_verify_dojo_without_the_extra_or_toolchain_exits_3_with_json() -> None:
    from tests.conftest import run_subprocess

    from absorb.lean.dojo import DOJO_HINT, dojo_installed

    if dojo_installed() and lean.find_lake() is not None:
        pytest.skip("LeanDojo and a toolchain are installed: the real run is tested below")
    res = run_subprocess(["verify", "--backend", "dojo", "--root", str(REPO), "--json"])
    assert res.code == 3, res.err
    obj = json.loads(res.out)
    expected = DOJO_HINT if not dojo_installed() else "no Lean toolchain"
    assert obj["exit"] == 3 and expected in obj["error"]
    assert res.err.strip() == f"error: {obj['error']}"


def test_dojo_out_needs_the_dojo_backend(tmp_path: Path) -> None:
    from absorb.cli import main

    assert main(["verify", "--root", str(REPO), "--dojo-out", str(tmp_path / "w")]) == 2
    assert not (tmp_path / "w").exists()


def test_dojo_completeness_reads_code_not_comments() -> None:
    from absorb.lean.dojo import declaration_status

    assert declaration_status("theorem t : True := by\n  trivial -- not sorry\n", "f") == (
        "complete")
    assert declaration_status("theorem t : True := by\n  sorry\n", "f") == "sorry"
    assert declaration_status('theorem t : True := by\n  simp [show "admit" = _]\n', "f") == (
        "complete")
    assert declaration_status("theorem t : 2 = 2 := by native_decide\n", "f") == "native_decide"


def _traced_like_leandojo(root: Path) -> dict[str, object]:
    """What the child process records, built from the static audit of ``root``: each manifest
    theorem's source range (its line to the line before the next declaration) and no steps."""
    report = lean.audit(root)
    records: dict[str, object] = {}
    for t in report["theorems"]:  # type: ignore[union-attr]
        for d in t["declarations"]:  # type: ignore[index]
            if d["status"] != "present" or d["kind"] != "theorem":
                continue
            source = (root / d["file"]).read_text(encoding="utf-8").splitlines()
            starts = sorted(x.line for x in lean.scan_lean("\n".join(source), d["file"])
                            .declarations if x.line > d["line"])
            end = (starts[0] - 1) if starts else len(source)
            records[d["name"]] = {"file": d["file"], "start": [d["line"], 1],
                                  "end": [end, 1], "tactic_proof": None, "steps": []}
    return records


def test_dojo_records_and_walkthrough_export(tmp_path: Path) -> None:
    from absorb.lean.dojo import export_walkthroughs, theorem_record

    lines = []
    for name in lean_declarations():
        ns, short = name.rsplit(".", 1)
        lines += [f"namespace {ns}", f"theorem {short} : True := by", "  trivial", f"end {ns}"]
    lines[2] = "  sorry"  # the first manifest declaration's proof is left open
    _write_library(tmp_path, {"All": "\n".join(lines) + "\n"}, ["All"])
    traced = _traced_like_leandojo(tmp_path)
    first = lean_declarations()[0]
    step = {"index": 0, "tactic": "sorry", "state_before": "⊢ True", "state_after": "no goals",
            "start": [3, 3], "end": [3, 8]}
    traced[first]["steps"] = [step]  # type: ignore[index]
    records = [theorem_record(thm, traced, tmp_path, {}) for thm in THEOREMS]
    status = {r["id"]: r["status"] for r in records}
    owner = next(t.id for t in THEOREMS if first in t.lean)
    assert status[owner] == "sorry"
    assert {s for tid, s in status.items() if tid != owner} <= {"complete", "not_formalized"}
    # LeanDojo traces theorems only: a manifest `def` it lacks is untraced, a theorem missing.
    without = {k: v for k, v in traced.items() if k != first}
    thm = next(t for t in THEOREMS if t.id == owner)
    assert theorem_record(thm, without, tmp_path, {first: "def"})["status"] in (
        "untraced", "complete")
    assert theorem_record(thm, without, tmp_path, {first: "theorem"})["status"] == "missing"
    written = export_walkthroughs(records, tmp_path / "walk")
    assert sorted(written) == sorted(f"{t.id}.json" for t in THEOREMS if t.lean)
    doc = json.loads((tmp_path / "walk" / f"{owner}.json").read_text(encoding="utf-8"))
    assert doc["status"] == "sorry"
    assert doc["declarations"][0]["steps"] == [step]
    # A failed trace: every formalized theorem is an error, nothing counts as complete.
    failed = {theorem_record(thm, None, tmp_path, {})["status"] for thm in THEOREMS if thm.lean}
    assert failed == {"error"}


@pytest.mark.lean
@pytest.mark.skipif(lean.find_lake() is None, reason="no Lean toolchain (lake) installed")
def test_verify_dojo_with_real_toolchain(tmp_path: Path) -> None:
    from absorb.lean.dojo import dojo_installed, verify_dojo

    if not dojo_installed():
        pytest.skip("LeanDojo (extra dojo) is not installed")
    result = verify_dojo(REPO, out=tmp_path / "walk")
    assert [t["id"] for t in result["theorems"]] == list(THEOREM_IDS)  # type: ignore[union-attr,index]
    if result["trace"]["ok"]:  # type: ignore[index]
        assert result["exported"], result


def test_dojo_traces_head_and_names_uncommitted_lean_files(tmp_path: Path) -> None:
    import shutil
    import subprocess

    from absorb.lean.dojo import _uncommitted, head_commit

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    with pytest.raises(AbsorbError, match="not a git repository"):
        head_commit(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "A.lean").write_text("theorem a : True := trivial\n")
    (tmp_path / "notes.txt").write_text("x\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "c"], check=True)
    commit = head_commit(tmp_path)
    assert len(commit) == 40 and _uncommitted(tmp_path) == []
    (tmp_path / "A.lean").write_text("theorem a : True := by sorry\n")
    (tmp_path / "notes.txt").write_text("y\n")
    assert _uncommitted(tmp_path) == ["A.lean"]
