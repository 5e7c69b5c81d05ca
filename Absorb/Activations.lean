import Mathlib.Analysis.SpecialFunctions.Trigonometric.Basic

/-!
# The activations of the paper

Definitions only; their properties (oddness of the odd part, homogeneity, continuity) are
proved in the modules that use them.

## Main definitions

* `Absorb.relu`, `Absorb.reluSq`, `Absorb.sigmoid`, `Absorb.silu`.
* `Absorb.geluWith Φ` : `z ↦ z · Φ(z)`. The exact GELU is `geluWith Φ` for `Φ` the standard
  normal CDF; we keep `Φ` a parameter (with the hypotheses `Φ z + Φ (-z) = 1` and
  continuity where needed) rather than importing Mathlib's Gaussian measure, so that the
  statements cover the exact GELU and every symmetric-CDF variant at once.
* `Absorb.geluTanh` : the tanh approximation `z ↦ z · (1 + tanh(√(2/π)(z + 0.044715 z³)))/2`.
* `Absorb.OddPartLinear σ` : `σ z - σ (-z) = z` for all `z`, i.e. the odd part of `σ` is
  `z/2`.
-/

noncomputable section

namespace Absorb

/-- ReLU, `z ↦ max z 0`. -/
def relu (z : ℝ) : ℝ := max z 0

/-- Squared ReLU, `z ↦ (max z 0)²`, positively homogeneous of degree 2. -/
def reluSq (z : ℝ) : ℝ := (max z 0) ^ 2

/-- The logistic sigmoid `z ↦ 1 / (1 + e^{-z})`. -/
def sigmoid (z : ℝ) : ℝ := 1 / (1 + Real.exp (-z))

/-- SiLU (Swish), `z ↦ z · sigmoid z`; the gate of SwiGLU. -/
def silu (z : ℝ) : ℝ := z * sigmoid z

/-- GELU-like activation `z ↦ z · Φ(z)` for a CDF-like `Φ`; the exact GELU when `Φ` is the
standard normal CDF. -/
def geluWith (Φ : ℝ → ℝ) (z : ℝ) : ℝ := z * Φ z

/-- The tanh approximation of GELU. -/
def geluTanh (z : ℝ) : ℝ :=
  z * ((1 + Real.tanh (Real.sqrt (2 / Real.pi) * (z + 0.044715 * z ^ 3))) / 2)

/-- `σ` is *odd-part-linear*: `σ z - σ (-z) = z` for every `z`. ReLU, GELU and SiLU are;
tanh, ReLU² and the sigmoid are not. -/
def OddPartLinear (σ : ℝ → ℝ) : Prop := ∀ z, σ z - σ (-z) = z

end Absorb

end
