import Absorb.Degree
import Mathlib.Tactic.Ring
import Mathlib.Tactic.Linarith
import Mathlib.Tactic.NormNum

/-!
# Exercises: the degree argument (paper Proposition 5)

Read `Absorb/Degree.lean` first, in particular `Absorb.not_absorbable_of_two_smul` and
`Absorb.not_absorbable_reluSq`.
-/

namespace AbsorbExercises

open Absorb

/-- The cubed ReLU, `z ↦ (max z 0)³`, positively homogeneous of degree 3. -/
noncomputable def reluCube (z : ℝ) : ℝ := (max z 0) ^ 3

/-- **Exercise 1.** The cubed ReLU scales by `8` when its input is doubled.
Hint: `Absorb.relu z` is `max z 0` by definition, so `show relu (2 * z) ^ 3 = 8 * relu z ^ 3`
restates the goal; then rewrite with `Absorb.relu_two_mul` and finish with `ring`. -/
theorem reluCube_two_mul (z : ℝ) : reluCube (2 * z) = 8 * reluCube z := by
  sorry

/-- **Exercise 2.** A skip block with cubed-ReLU activation is never absorbable (degree 3 ≠ 1).
Hint: one line, with `Absorb.not_absorbable_of_scaling` and Exercise 1. -/
theorem not_absorbable_reluCube {d n : ℕ} {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (W : UngatedWeights d n) :
    ¬ Absorbable (ungated reluCube d n) (skipMap A (ungated reluCube d n) W) := by
  sorry

/-- **Exercise 3.** Where does the degree argument break for ReLU itself? Prove that ReLU
scales by exactly `2`, so the hypothesis `c ≠ 2` of `Absorb.not_absorbable_of_scaling` fails.
Hint: `Absorb.relu_two_mul`. -/
theorem relu_scaling_factor_eq_two : ∃ c : ℝ, (∀ z, relu (2 * z) = c * relu z) ∧ c = 2 := by
  sorry

end AbsorbExercises
