import Absorb.Checker

/-!
# `lake exe absorb-check FILE.json`

The executable root of the exact checker. It reads `FILE.json` (an ungated block with rational
weights and either a candidate index set `S` or a dual certificate `Y`; format in
`Absorb/Checker.lean`), runs `Absorb.Checker.processInput` and prints one line of JSON on
stdout:

* the verdict object, exit code `0`: `"verdict": "absorbed"` or `"condition_fails"` for `S`,
  `"no_index_set"` or `"certificate_fails"` for `Y`;
* `{"error": "..."}` for a missing, unreadable or malformed file (unknown keys, absurd number
  exponents included), or a usage error, exit code `2`.

The verdict is `Absorb.Checker.verdict` of the very input built from the file, a function of
`Absorb.Checker.check` / `Absorb.Checker.checkDual`, so the soundness theorems apply to what is
printed: `"absorbed"` gives the index-set condition
(`Absorb.Checker.indexSetCond_of_verdict_eq_absorbed`, then
`Absorb.Checker.absorbable_of_check`), `"no_index_set"` proves that no index set exists
(`Absorb.Checker.not_indexSetCond_of_verdict_eq_noIndexSet`,
`Absorb.Checker.not_indexSetCond_map_ratCast_of_checkDual`).
-/

namespace AbsorbCheck

/-- The text of the file at `path`, or an error message when it cannot be read. -/
def readText (path : String) : IO (Except String String) := do
  try
    let text ← IO.FS.readFile (System.FilePath.mk path)
    return Except.ok text
  catch e =>
    return Except.error s!"cannot read {path}: {e}"

/-- Checks the file at `path`: prints the verdict (exit code `0`) or the error object (exit
code `2`). -/
def runFile (path : String) : IO UInt32 := do
  let text ← readText path
  match text >>= Absorb.Checker.processInput with
  | Except.ok verdict =>
    IO.println verdict.compress
    return 0
  | Except.error msg =>
    IO.println (Absorb.Checker.errorJson msg).compress
    return 2

end AbsorbCheck

/-- `absorb-check FILE.json`: decide the index-set condition (candidate `S`) or the dual
certificate (`Y`) of the block in `FILE.json` exactly over `ℚ` and print the JSON verdict.
Exit code `0` when a verdict was printed, `2` on bad input or a usage error. -/
def main (args : List String) : IO UInt32 :=
  match args with
  | [path] => AbsorbCheck.runFile path
  | _ => do
    IO.println (Absorb.Checker.errorJson "usage: absorb-check FILE.json").compress
    return 2
