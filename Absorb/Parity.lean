import Absorb.Activations
import Mathlib.Analysis.SpecialFunctions.Exp
import Mathlib.Analysis.SpecialFunctions.Trigonometric.Basic
import Mathlib.Tactic.Linarith
import Mathlib.Tactic.LinearCombination
import Mathlib.Tactic.Ring
import Mathlib.Tactic.NormNum
import Mathlib.Tactic.NormNum.OfScientific

/-!
# Odd-part-linear activations

An activation `σ` is *odd-part-linear* (`Absorb.OddPartLinear σ`) when `σ z - σ (-z) = z` for
every `z`, i.e. its odd part `(σ z - σ (-z)) / 2` is `z / 2`. This is the property of ReLU and
GELU that the "if" half of the paper's Theorems 8 and 10 uses (`THEORY.md`, **odd_part**;
Mijoski–Karbevski, arXiv 2604.23705): a hidden unit whose input is negated changes by a
*linear* term, which can cancel the skip connection.

The whole family `σ z = z · F z` with `F z + F (-z) = 1` is odd-part-linear (ours): ReLU
(`F` = the step function), GELU (`F = Φ`, the standard normal CDF, or any `Φ` with
`Φ z + Φ (-z) = 1`), its tanh approximation, and SiLU/Swish (`F` = the logistic sigmoid).
ReLU² and the sigmoid itself are not.

## Main results

* `Absorb.oddPartLinear_of_mul_self` : `F z + F (-z) = 1` for all `z` implies that
  `z ↦ z · F z` is odd-part-linear.
* `Absorb.oddPartLinear_relu`, `Absorb.oddPartLinear_geluWith`, `Absorb.oddPartLinear_silu`,
  `Absorb.oddPartLinear_geluTanh` : the instances.
* `Absorb.sigmoid_add_sigmoid_neg` : `sigmoid z + sigmoid (-z) = 1`.
* `Absorb.not_oddPartLinear_reluSq`, `Absorb.not_oddPartLinear_sigmoid` : the negative facts.
-/

noncomputable section

namespace Absorb

/-- **odd_part** (used by the paper's Theorems 8 and 10; the family is ours): if
`F z + F (-z) = 1` for every `z`, then `σ z = z · F z` is odd-part-linear:
`σ z - σ (-z) = z F z + z F (-z) = z`. -/
theorem oddPartLinear_of_mul_self {F : ℝ → ℝ} (hF : ∀ z, F z + F (-z) = 1) :
    OddPartLinear (fun z => z * F z) := by
  intro z
  show z * F z - -z * F (-z) = z
  linear_combination z * hF z

/-- **odd_part**, GELU (paper Theorem 10): `geluWith Φ z = z · Φ z` is odd-part-linear as soon
as `Φ z + Φ (-z) = 1` for every `z`, which holds for the standard normal CDF (the exact
GELU) and for every CDF of a symmetric distribution. -/
theorem oddPartLinear_geluWith {Φ : ℝ → ℝ} (hΦ : ∀ z, Φ z + Φ (-z) = 1) :
    OddPartLinear (geluWith Φ) := by
  intro z
  exact oddPartLinear_of_mul_self hΦ z

/-- **odd_part**, ReLU (paper Theorem 8): `max z 0 - max (-z) 0 = z`. -/
theorem oddPartLinear_relu : OddPartLinear relu := by
  intro z
  show max z 0 - max (-z) 0 = z
  rcases le_total z 0 with h | h
  · have e1 : max z 0 = 0 := max_eq_right h
    have e2 : max (-z) 0 = -z := max_eq_left (neg_nonneg.mpr h)
    linarith
  · have e1 : max z 0 = z := max_eq_left h
    have e2 : max (-z) 0 = 0 := max_eq_right (neg_nonpos.mpr h)
    linarith

/-- `1 / a * a = 1` for `a ≠ 0` (a local helper: Mathlib's `one_div_mul_cancel` on `ℝ`). -/
private theorem one_div_mul_cancel_real {a : ℝ} (ha : a ≠ 0) : 1 / a * a = 1 := by
  exact one_div_mul_cancel ha

/-- The logistic sigmoid satisfies `sigmoid z + sigmoid (-z) = 1`, i.e.
`1 / (1 + e^{-z}) + 1 / (1 + e^{z}) = 1`. Proof: with `s = sigmoid z`, `t = sigmoid (-z)`,
`a = e^{-z}`, `b = e^{z}` one has `s (1 + a) = 1`, `t (1 + b) = 1` and `a b = 1`, and
`s + t - 1` is an explicit combination of these three relations. -/
theorem sigmoid_add_sigmoid_neg (z : ℝ) : sigmoid z + sigmoid (-z) = 1 := by
  have h1 : 1 + Real.exp (-z) ≠ 0 :=
    (by linarith [Real.exp_pos (-z)] : (0 : ℝ) < 1 + Real.exp (-z)).ne'
  have h2 : 1 + Real.exp z ≠ 0 :=
    (by linarith [Real.exp_pos z] : (0 : ℝ) < 1 + Real.exp z).ne'
  have hab : Real.exp (-z) * Real.exp z = 1 := by
    rw [Real.exp_neg z]
    exact inv_mul_cancel₀ (Real.exp_pos z).ne'
  have e1 : sigmoid z * (1 + Real.exp (-z)) = 1 := by
    show 1 / (1 + Real.exp (-z)) * (1 + Real.exp (-z)) = 1
    exact one_div_mul_cancel_real h1
  have e2 : sigmoid (-z) * (1 + Real.exp z) = 1 := by
    show 1 / (1 + Real.exp (-(-z))) * (1 + Real.exp z) = 1
    rw [neg_neg]
    exact one_div_mul_cancel_real h2
  linear_combination (sigmoid (-z) * Real.exp z) * e1 + (1 - sigmoid z) * e2 -
    (sigmoid (-z) * sigmoid z) * hab

/-- **odd_part**, SiLU/Swish: `silu z = z · sigmoid z` is odd-part-linear, since
`sigmoid z + sigmoid (-z) = 1`. -/
theorem oddPartLinear_silu : OddPartLinear silu := by
  intro z
  show z * sigmoid z - -z * sigmoid (-z) = z
  linear_combination z * sigmoid_add_sigmoid_neg z

/-- **odd_part**, the tanh approximation of GELU: `geluTanh z = z · F z` with
`F z = (1 + tanh (√(2/π) (z + 0.044715 z³))) / 2`, and `F z + F (-z) = 1` because the inner
argument and `tanh` are odd. -/
theorem oddPartLinear_geluTanh : OddPartLinear geluTanh := by
  intro z
  have harg : Real.sqrt (2 / Real.pi) * (-z + 0.044715 * (-z) ^ 3) =
      -(Real.sqrt (2 / Real.pi) * (z + 0.044715 * z ^ 3)) := by
    ring
  have ht : Real.tanh (Real.sqrt (2 / Real.pi) * (-z + 0.044715 * (-z) ^ 3)) =
      -Real.tanh (Real.sqrt (2 / Real.pi) * (z + 0.044715 * z ^ 3)) := by
    rw [harg]
    rw [Real.tanh_neg]
  show z * ((1 + Real.tanh (Real.sqrt (2 / Real.pi) * (z + 0.044715 * z ^ 3))) / 2) -
      -z * ((1 + Real.tanh (Real.sqrt (2 / Real.pi) * (-z + 0.044715 * (-z) ^ 3))) / 2) = z
  rw [ht]
  ring

/-- ReLU² is not odd-part-linear: at `z = 2`, `reluSq 2 - reluSq (-2) = 4 ≠ 2`. (It is
positively homogeneous of degree 2 instead; see `Absorb.not_absorbable_reluSq`.) -/
theorem not_oddPartLinear_reluSq : ¬ OddPartLinear reluSq := by
  intro h
  have h2 := h 2
  have e1 : reluSq 2 = 4 := by
    show (max (2 : ℝ) 0) ^ 2 = 4
    have hm : max (2 : ℝ) 0 = 2 := max_eq_left (by norm_num)
    calc (max (2 : ℝ) 0) ^ 2 = (2 : ℝ) ^ 2 := by rw [hm]
      _ = 4 := by norm_num
  have e2 : reluSq (-2) = 0 := by
    show (max (-2 : ℝ) 0) ^ 2 = 0
    have hm : max (-2 : ℝ) 0 = 0 := max_eq_right (by norm_num)
    calc (max (-2 : ℝ) 0) ^ 2 = (0 : ℝ) ^ 2 := by rw [hm]
      _ = 0 := by norm_num
  linarith

/-- The sigmoid is positive. -/
theorem sigmoid_pos (z : ℝ) : 0 < sigmoid z := by
  have h : (0 : ℝ) < 1 + Real.exp (-z) := by linarith [Real.exp_pos (-z)]
  exact div_pos one_pos h

/-- The sigmoid is below `1`: `sigmoid z · (1 + e^{-z}) = 1` with `e^{-z} > 0`. -/
theorem sigmoid_lt_one (z : ℝ) : sigmoid z < 1 := by
  have h1 : 1 + Real.exp (-z) ≠ 0 :=
    (by linarith [Real.exp_pos (-z)] : (0 : ℝ) < 1 + Real.exp (-z)).ne'
  have e1 : sigmoid z * (1 + Real.exp (-z)) = 1 := by
    show 1 / (1 + Real.exp (-z)) * (1 + Real.exp (-z)) = 1
    exact one_div_mul_cancel_real h1
  have hprod : 0 < sigmoid z * Real.exp (-z) := mul_pos (sigmoid_pos z) (Real.exp_pos (-z))
  have hs : sigmoid z = 1 - sigmoid z * Real.exp (-z) := by linear_combination e1
  linarith

/-- The sigmoid is not odd-part-linear: `sigmoid 2 - sigmoid (-2) < 1 < 2`, since the sigmoid
takes values in `(0, 1)`. (Its gated use, plain GLU, has `sigmoid 0 = 1/2 ≠ 0`.) -/
theorem not_oddPartLinear_sigmoid : ¬ OddPartLinear sigmoid := by
  intro h
  have h2 := h 2
  have hlt := sigmoid_lt_one 2
  have hpos := sigmoid_pos (-2)
  linarith

end Absorb

end
