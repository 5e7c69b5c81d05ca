"""The words of the report, shared by the HTML and the Markdown renderings: badge labels and their
legend, the compiled-vs-audited banner, the Lean summary, and the map of the open problem."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Formal states: (label shown, CSS class, meaning).  "audited" is deliberately neither green
#: nor filled: a static reading is not a proof.
FORMAL: Mapping[str, tuple[str, str, str]] = {
    "proved": ("✔ proved (compiled)", "f-proved",
               "Lean compiled the proof; it uses only the standard axioms."),
    "audited": ("◌ audited, not compiled", "f-audited",
                "The Lean declaration exists and contains no sorry/admit/native_decide, but no "
                "Lean toolchain ran: the proof was NOT checked."),
    "missing": ("✘ missing", "f-problem", "A Lean declaration the manifest names was not found."),
    "sorry": ("✘ sorry", "f-problem", "The proof has a gap (sorry) or depends on sorryAx."),
    "admit": ("✘ admit", "f-problem", "The proof has a gap (admit)."),
    "axiom": ("✘ axiom", "f-problem", "The proof relies on an extra axiom."),
    "native_decide": ("✘ native_decide", "f-problem",
                      "The proof trusts compiled code (native_decide)."),
    "error": ("✘ build error", "f-problem", "Lean failed to compile the declaration."),
    "not formalized": ("— not formalized", "f-none",
                       "No Lean statement exists; only the numerical evidence speaks."),
    "not checked": ("? not checked", "f-none", "No Lean sources were found to look at."),
}

#: Numerical states of an experiment and of a theorem.
NUMERICAL: Mapping[str, tuple[str, str, str]] = {
    "agrees": ("✔ agrees", "n-agrees",
               "The numbers behave as the theorem predicts (negative results only beside a "
               "positive control that the same code gets right)."),
    "disagrees": ("✘ disagrees", "n-disagrees",
                  "The numbers contradict the prediction, or a positive control failed."),
    "open": ("? open", "n-open", "An exploration of an open question: numbers, no theorem."),
    "error": ("⚠ error", "n-error",
              "The experiment crashed before it finished; its evidence is missing, not negative."),
}

#: Kinds of experiment.
KINDS: Mapping[str, tuple[str, str, str]] = {
    "test": ("test", "k-test", "Tests the theorem on instances that satisfy its hypotheses."),
    "control": ("control", "k-control",
                "A hypothesis is dropped (the conclusion must fail) or a positive control: the "
                "same code on an instance where the answer is known to be yes."),
    "open": ("exploration", "k-open", "Explores an open question; not counted in the verdict."),
}


def formal_label(status: str) -> tuple[str, str]:
    """(label, CSS class) of a formal state; unknown states are shown as problems."""
    label, css, _ = FORMAL.get(status, (f"✘ {status}", "f-problem", ""))
    return label, css


def numerical_label(status: str) -> tuple[str, str]:
    label, css, _ = NUMERICAL[status]
    return label, css


def kind(e: Mapping[str, Any]) -> str:
    return "open" if e["open"] else "control" if e["control"] else "test"


def banner(report: Mapping[str, Any]) -> tuple[str, str, str]:
    """(CSS class, headline, explanation) of the formal source, in words a student cannot
    misread: compiled means Lean checked the proofs; audited means nobody did."""
    root = report.get("lean_root") or "?"
    lean = report.get("lean")
    if report["formal_source"] == "verify" and isinstance(lean, dict):
        if lean.get("build", {}).get("ok"):
            return ("compiled", "COMPILED — Lean checked the proofs.",
                    f"`lake build` ran on the Lean tree {root}. A theorem marked “proved "
                    "(compiled)” was compiled and uses only the standard axioms.")
        return ("failed", "COMPILED, BUILD FAILED — some proofs do not compile.",
                f"`lake build` ran on the Lean tree {root} and reported errors (listed below).")
    if report["formal_source"] == "audit":
        return ("audited", "NOT COMPILED — the Lean proofs were only read, not checked.",
                "No Lean toolchain was found, so `lake build` did not run. absorb read the Lean "
                f"files of the tree {root} as text: the declarations exist and contain no sorry, "
                "admit or native_decide. That does NOT show that the proofs are correct; run "
                "`absorb verify` where Lean is installed to compile them.")
    return ("none", "NOT CHECKED — no Lean sources were found.",
            "Nothing formal is claimed by this report; pass --root DIR to name a Lean tree.")


def overview(report: Mapping[str, Any]) -> str:
    """The report's counts in words, for someone who reads nothing else: how many theorems a
    Lean build compiled (and why not), how many agree numerically, how many are not
    formalized, and how many explorations are shown without being counted."""
    theorems: Sequence[Mapping[str, Any]] = report["theorems"]
    total = len(theorems)
    formal = [str(t["formal"]["status"]) for t in theorems]
    numerical = [str(t["numerical"]["status"]) for t in theorems]
    why = {"verify": "lake build ran", "audit": "no Lean toolchain: the proofs were only read",
           "none": "no Lean sources"}.get(str(report["formal_source"]), "")
    parts = [f"{formal.count('proved')} of {total} theorems compiled ({why})",
             f"{numerical.count('agrees')} of {total} agree numerically"]
    parts += [f"{numerical.count(s)} {s}" for s in ("disagrees", "error") if s in numerical]
    parts.append(f"{formal.count('not formalized')} not formalized")
    explorations = sum(bool(e["open"]) for t in theorems for e in t["numerical"]["experiments"])
    parts.append(f"{explorations} explorations of open questions shown, not counted")
    return "; ".join(parts) + "."


def pointer_to_map(e: Mapping[str, Any]) -> str:
    """What an experiment shown in the map is, in words: an exploration of the open problem
    (badge ``open``, not counted) or a construction beyond the theorem (counted)."""
    return ("Exploration of the open problem (not counted)" if e["open"]
            else "Construction beyond the theorem (counted with it)")


def errored_line(report: Mapping[str, Any]) -> str | None:
    """One sentence naming the crashed experiments, or None."""
    names = report.get("errored") or []
    if not names:
        return None
    return (f"{len(names)} experiment(s) crashed: {', '.join(map(str, names))}. They are marked "
            "“⚠ error” below, with the cause; their evidence is missing, not negative.")


def fmt(value: object) -> str:
    if isinstance(value, bool):
        return "✓" if value else "✗"
    if isinstance(value, float):
        return f"{value:.3g}"
    if value is None:
        return "—"
    if isinstance(value, list):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    return str(value)


def columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(k for r in rows for k in r))


def lean_rows(report: Mapping[str, Any]) -> tuple[str, list[dict[str, object]]]:
    """A one-line summary of the Lean side and the rows of its problems (findings of the audit;
    errors, sorries and checker disagreements of verify)."""
    lean = report.get("lean")
    if not isinstance(lean, dict):
        return "no Lean sources at hand: formal status not checked", []
    ok = "no problems found" if lean.get("ok") else "PROBLEMS FOUND"
    if report["formal_source"] == "audit":
        rows = [{"kind": f["kind"], "file": f["file"], "line": f["line"], "text": f["text"]}
                for f in lean["findings"]]
        return (f"static audit ({ok}): {lean['files']} files, {lean['declarations']} "
                f"declarations, {len(rows)} findings"), rows
    build = lean["build"]
    rows = [{"kind": "error" if not d["sorry"] else "sorry", "file": d["file"],
             "line": d["line"], "text": str(d["message"]).splitlines()[0]}
            for d in [*build["errors"], *build["sorry"]]]
    rows += [{"kind": "checker", "file": c["input"], "line": None,
              "text": f"expected {c['expected']}, got {c['output']}"}
             for c in lean["checker"] if not c["agrees"]]
    return (f"lake build + axiom audit ({ok}): build {'passed' if build['ok'] else 'FAILED'} "
            f"in {build['seconds']} s, {len(lean['checker'])} checker runs"), rows


# --------------------------------------------------------------------------------------------
# the map of the open problem (deep stacks)

#: (kind, heading, what is known, theorem IDs whose experiments are its evidence).
MAP_REGIONS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("proved", "Proved at any depth: degree k ≠ 1 and gated g(0) = 0",
     "A depth-L stack of residual blocks equals no residual-free stack of the same depth, kind "
     "and width (the scaling and t → 0⁺ limits pass through every layer).",
     ("depth_degree", "depth_linearization")),
    ("proved", "Proved: a narrow first layer (n₁ < 2d)",
     "ReLU stacks without biases: if the residual-free stack's first hidden width is below 2d, "
     "it differs from every residual stack whose blocks keep det(I + W D U) ≠ 0 for every 0/1 "
     "diagonal D (on a cone, fewer than d units of the first layer are active, so the "
     "residual-free stack has rank < d there). Through bias_blowup the same holds for GELU, "
     "tanh-GELU, SiLU and softplus stacks with any biases.",
     ("depth_narrow",)),
    ("proved", "Proved: width 2d and depth L, decided exactly per stack",
     "ReLU stacks without biases, identity skips. If every block is injective, no residual-free "
     "stack with a hidden width below 2d equals the stack (depth_injective). At depth 2, if every "
     "realized det(I + W D U) ≠ 0 and the kink columns outside any d supports take more than m "
     "directions, no residual-free stack of widths (2d, m) equals it (depth_two_kinks). In the "
     "plane, injective blocks and more than 2·L·d kink rays exclude every residual-free stack of "
     "depth L and widths 2d (depth_kink_rays). These are conditions on one stack, decided "
     "exactly with a certificate that `absorb stack --recheck` re-checks; how often they hold "
     "is measured, not proved (the map in the open region below).",
     ("depth_injective", "depth_two_kinks", "depth_kink_rays")),
    ("constructed", "Constructed: the image-cone mechanism",
     "Per-layer index sets are sufficient, not necessary: if block 1 has an index set, its "
     "sign-flip block maps ℝ^d onto a cone K, and block 2 only has to be matched on K, so some "
     "depth-2 stacks whose second block has no index set are absorbed.",
     ()),
    ("open", "Open: n ≥ 2d and no index set in block 1",
     "Whether generic ReLU/GELU residual stacks of this shape equal some residual-free stack is "
     "the paper's open question. The numbers here are evidence, never a theorem. The map "
     "(stack_kink_map) reports, per setting of random stacks, how often the exact conditions "
     "above hold and what stays open — non-injective or folding blocks, the single-sector "
     "folded regime (where exact absorptions exist), widths above 2d, and d ≥ 3 beyond "
     "injectivity (the kink enumeration is implemented in the plane).",
     ()),
)

MAP_KIND_LABEL: Mapping[str, tuple[str, str]] = {
    "proved": ("theorem", "m-proved"),
    "constructed": ("construction", "m-constructed"),
    "open": ("open", "m-open"),
}


def _region_of(e: Mapping[str, Any]) -> str | None:
    text = f"{e['name']} {e['description']}".lower()
    if "cone" in text:
        return "Constructed: the image-cone mechanism"
    if e["open"]:
        return "Open: n ≥ 2d and no index set in block 1"
    for _, heading, _, ids in MAP_REGIONS:
        if e["theorem"] in ids:
            return heading
    return None


def open_problem_map(
    report: Mapping[str, Any],
) -> list[tuple[str, str, str, list[Mapping[str, Any]], list[Mapping[str, Any]]]]:
    """The regions of the map: (kind, heading, text, theorems present in the report, their
    evidence).  Evidence: the experiments of the region's theorems, open explorations, and
    experiments about the image cone, each in exactly one region."""
    theorems = report["theorems"]
    exps = [e for t in theorems for e in t["numerical"]["experiments"]]
    out = []
    for region_kind, heading, text, ids in MAP_REGIONS:
        thms = [t for t in theorems if t["id"] in ids]
        evidence = [e for e in exps if _region_of(e) == heading]
        out.append((region_kind, heading, text, thms, evidence))
    return out


def in_map(e: Mapping[str, Any]) -> bool:
    """Experiments shown in full in the map section (open explorations and the image cone);
    under their theorem only a pointer to the map remains."""
    region = _region_of(e)
    return region is not None and not region.startswith("Proved")
