import Absorb.IndexSet
import Mathlib.Data.Matrix.Notation
import Mathlib.Algebra.Order.BigOperators.Group.Finset
import Mathlib.Tactic.FinCases
import Mathlib.Tactic.NormNum

/-!
# Exercises: index sets and the dual certificate

Read `Absorb/Basic.lean` (`Absorb.IndexSetCond`) and `Absorb/IndexSet.lean` first.
-/

namespace AbsorbExercises

open Absorb

/-- **Exercise 4.** A concrete index set: for `d = 1`, `n = 2`, `W_up = (1, 2)ᵀ`,
`W_down = (-1, 5)`, the set `S = {0}` satisfies the condition with the identity skip:
`W_down[:,S] W_up[S,:] = (-1)·1 = -1`.
Hint: `intro j k`, then `fin_cases j; fin_cases k`, then `simp` and `norm_num`. -/
theorem indexSetCond_example :
    IndexSetCond (1 : Matrix (Fin 1) (Fin 1) ℚ) !![(1 : ℚ); 2] !![(-1 : ℚ), 5] {0} := by
  sorry

/-- **Exercise 5** (the heart of the dual certificate, `docs/THEORY.md` §10). A sum over a
subset lies between the sum of all negative parts and the sum of all positive parts.
Hint: split each `c i` as `min (c i) 0 + max (c i) 0`; `Finset.sum_le_sum_of_subset_of_nonneg`
handles the positive parts. -/
theorem sum_subset_le_sum_max {n : ℕ} (c : Fin n → ℝ) (S : Finset (Fin n)) :
    ∑ i ∈ S, c i ≤ ∑ i, max (c i) 0 := by
  sorry

end AbsorbExercises
