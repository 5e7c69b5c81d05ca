import Absorb.Checker.Decide

/-!
# `lake exe absorb-check FILE.json`

The executable root of the exact checker. It imports only the reader
(`Absorb.Checker.Reader`, core Lean) and the decision procedure (`Absorb.Checker.Decide`,
Batteries' `Rat`), so linking it compiles no Mathlib module; the soundness theorems live in
`Absorb.Checker.Soundness`, which `lake build` checks.

It reads `FILE.json` (format `absorb-check/2`: the activation, `W_up`, `W_down`, optional
`A_skip`, `b_up`, `b_down`, and an index set `S` or a dual certificate `Y`; see
`Absorb.Checker.Reader`), runs `Absorb.Checker.processInput` and prints one line of JSON on
stdout:

* the report, exit code `0`: its `"verdict"` is `Absorb.Checker.Verdict.name` of
  `Absorb.Checker.verdict I` for the very input `I` built from the file — `"absorbed"` or
  `"condition_fails"` for `S`; `"not_absorbable"`, `"no_index_set"`, `"hypothesis_fails"` or
  `"certificate_fails"` for `Y` — so the theorems of `Absorb.Checker.Soundness` apply to what
  is printed;
* `{"error": "...", "exit": 2}` for a missing, unreadable or malformed file, or a usage error,
  with `error: ...` on stderr and exit code `2`.
-/

namespace AbsorbCheck

/-- The text of the file at `path`, or an error message when it cannot be read. -/
def readText (path : String) : IO (Except String String) := do
  try
    let text ← IO.FS.readFile (System.FilePath.mk path)
    return Except.ok text
  catch e =>
    return Except.error s!"cannot read {path}: {e}"

/-- Reports bad input: the error object on stdout, one line on stderr, exit code `2`. -/
def refuse (msg : String) : IO UInt32 := do
  IO.println (Absorb.Checker.errorJson msg)
  IO.eprintln s!"error: {msg}"
  return 2

/-- Checks the file at `path`: prints the report (exit code `0`) or refuses it (exit code
`2`). -/
def runFile (path : String) : IO UInt32 := do
  let text ← readText path
  match text >>= Absorb.Checker.processInput with
  | Except.ok line =>
    IO.println line
    return 0
  | Except.error msg => refuse msg

end AbsorbCheck

/-- `absorb-check FILE.json`: decide the block in `FILE.json` exactly over `ℚ` and print the
JSON report. Exit code `0` when a verdict was printed, `2` on bad input or a usage error. -/
def main (args : List String) : IO UInt32 :=
  match args with
  | [path] => AbsorbCheck.runFile path
  | _ => AbsorbCheck.refuse "usage: absorb-check FILE.json"
