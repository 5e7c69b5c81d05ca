import Absorb.Checker

/-!
# `lake exe absorb-check FILE.json`

The executable root of the exact index-set checker. It reads `FILE.json` (an ungated block
with rational weights and a candidate index set `S`; format in `Absorb/Checker.lean`), runs
`Absorb.Checker.processInput` and prints one line of JSON on stdout:

* the verdict object (`"verdict": "absorbed"` or `"condition_fails"`), exit code `0`;
* `{"error": "..."}` for a missing, unreadable or malformed file, or a usage error, exit
  code `2`.

The verdict is `Absorb.Checker.check` of the very block built from the file, so
`Absorb.Checker.absorbable_of_check` (soundness) applies to what is printed.
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

/-- `absorb-check FILE.json`: decide the index-set condition of the block in `FILE.json`
exactly over `ℚ` and print the JSON verdict. Exit code `0` when a verdict was printed, `2`
on bad input or a usage error. -/
def main (args : List String) : IO UInt32 :=
  match args with
  | [path] => AbsorbCheck.runFile path
  | _ => do
    IO.println (Absorb.Checker.errorJson "usage: absorb-check FILE.json").compress
    return 2
