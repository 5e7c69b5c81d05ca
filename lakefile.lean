import Lake
open Lake DSL

/-! Build file of the `absorb` Lean library: Lean v4.19.0 with Mathlib v4.19.0. -/

package absorb where
  leanOptions := #[⟨`autoImplicit, false⟩, ⟨`relaxedAutoImplicit, false⟩]

require mathlib from git
  "https://github.com/leanprover-community/mathlib4" @ "v4.19.0"

/-- The formal library: one module per argument of the paper. -/
@[default_target]
lean_lib Absorb

/-- `lake exe absorb-check FILE.json`: the exact index-set checker over ℚ. -/
@[default_target]
lean_exe «absorb-check» where
  root := `AbsorbCheck
