import Lake
open Lake DSL

/-! Build file of the `absorb` Lean library: Lean v4.19.0 with Mathlib v4.19.0. -/

package absorb where
  leanOptions := #[⟨`autoImplicit, false⟩, ⟨`relaxedAutoImplicit, false⟩]

require mathlib from git
  "https://github.com/leanprover-community/mathlib4" @ "v4.19.0"

/-- The formal library: one module per argument of the paper, and the checker's three modules
(`Absorb.Checker.Reader`, `Absorb.Checker.Decide`, `Absorb.Checker.Soundness`, all imported by
the root `Absorb`). `AbsorbCheck` (the checker's `main`) is a root too, so that `lake build`
type-checks everything, the soundness theorems included. -/
@[default_target]
lean_lib Absorb where
  roots := #[`Absorb, `AbsorbCheck]

/-- `lake exe absorb-check FILE.json`: the exact checker over ℚ. Its root `AbsorbCheck` imports
only the reader (core Lean) and the decision module (Batteries' `Rat`), so linking it compiles
no Mathlib module: a first `lake exe absorb-check` builds a handful of native objects, not the
thousands of Mathlib's. Not a default target; `lake exe absorb-check` builds it on demand. -/
lean_exe «absorb-check» where
  root := `AbsorbCheck

/-- Course exercises (`sorry` for students to fill). Not a default target: `lake build` never
builds them and `absorb audit` reports their `sorry`s as exercises, not as library findings.
Build them with `lake build AbsorbExercises`. -/
lean_lib AbsorbExercises where
  roots := #[`AbsorbExercises]
