import Absorb.Basic
import Absorb.Activations
import Absorb.Degree
import Absorb.Parity
import Absorb.BiasBlowup
import Absorb.Necessary
import Mathlib.Algebra.Order.BigOperators.Group.Finset
import Mathlib.Analysis.SpecialFunctions.Trigonometric.Basic
import Mathlib.Tactic.Push
import Mathlib.Tactic.Linarith

/-!
# Bounded activations cannot absorb a skip

**bounded** (ours; `THEORY.md`). If the activation `σ` is bounded (`|σ z| ≤ B` for all `z`,
as for tanh and the sigmoid) and the skip matrix `A` is nonzero, then the skip block
`x ↦ A x + W_down σ(W_up x)` (with or without biases) equals no residual-free `σ`-block of any
width: every residual-free block is bounded, coordinate by coordinate, while along the ray
`x = t v` with `(A v)_j ≠ 0` coordinate `j` of the skip block is `t (A v)_j` plus a bounded
term. The proof uses one explicit point, no limit: with bounds `M₁` (absorbing block) and `M₂`
(the skip block's own block) at coordinate `j`, take `t = (M₁ + M₂ + 1) / (A v)_j`; there the
skip block's coordinate is at least `M₁ + 1`.

## Main definitions

* `Absorb.BoundedBlocks K` : every block of kind `K` is bounded in every output coordinate.

## Main results

* `Absorb.not_absorbable_of_boundedBlocks` : the argument for any two kinds of bounded blocks.
* `Absorb.boundedBlocks_ungated`, `Absorb.boundedBlocks_biased` : blocks with a bounded
  activation are bounded.
* `Absorb.not_absorbable_of_bounded` : **bounded**, ungated blocks without biases.
* `Absorb.not_absorbable_biased_of_bounded` : **bounded**, blocks with biases.
* `Absorb.abs_tanh_le_one`, `Absorb.abs_sigmoid_le_one` : tanh and the sigmoid are bounded.
* `Absorb.not_absorbable_tanh`, `Absorb.not_absorbable_sigmoid`,
  `Absorb.not_absorbable_biased_tanh`, `Absorb.not_absorbable_biased_sigmoid` : the instances.
-/

open Matrix

noncomputable section

namespace Absorb

variable {d n m : ℕ}

/-- Every block of kind `K` is bounded in every output coordinate: for all weights `p` and every
coordinate `j` there is `M` with `|K.eval p x j| ≤ M` for every input `x`. -/
def BoundedBlocks (K : BlockKind d) : Prop :=
  ∀ (p : K.Params) (j : Fin d), ∃ M : ℝ, ∀ x, |K.eval p x j| ≤ M

/-- A nonzero square matrix moves some vector in some coordinate: `A ≠ 0` gives `v`, `j` with
`(A v)_j ≠ 0` (otherwise `A` kills every vector, and `Absorb.eq_zero_of_forall_mulVec_eq_zero`
gives `A = 0`). -/
theorem exists_mulVec_apply_ne_zero {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0) :
    ∃ (v : Fin d → ℝ) (j : Fin d), (A *ᵥ v) j ≠ 0 := by
  by_contra h
  push_neg at h
  exact hA (eq_zero_of_forall_mulVec_eq_zero fun v => funext fun j => h v j)

/-- **Bounded blocks cannot absorb a skip** (ours; abstract form of **bounded**). If every block
of kind `K` and every block of kind `K'` is bounded and `A ≠ 0`, then the skip block
`x ↦ A x + K'.eval p x` equals no block of kind `K`. With `(A v)_j = c ≠ 0` and bounds `M₁`,
`M₂` at coordinate `j`, the point `x = ((M₁ + M₂ + 1) / c) • v` gives
`K.eval V x j = (M₁ + M₂ + 1) + K'.eval p x j ≥ M₁ + 1`, contradicting `|K.eval V x j| ≤ M₁`. -/
theorem not_absorbable_of_boundedBlocks {K K' : BlockKind d} (hK : BoundedBlocks K)
    (hK' : BoundedBlocks K') {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0) (p : K'.Params) :
    ¬ Absorbable K (skipMap A K' p) := by
  rintro ⟨V, hV⟩
  obtain ⟨v, j, hv⟩ := exists_mulVec_apply_ne_zero hA
  obtain ⟨M₁, hM₁⟩ := hK V j
  obtain ⟨M₂, hM₂⟩ := hK' p j
  have ht : (M₁ + M₂ + 1) / (A *ᵥ v) j * (A *ᵥ v) j = M₁ + M₂ + 1 := div_mul_cancel₀ _ hv
  have heq : K.eval V (((M₁ + M₂ + 1) / (A *ᵥ v) j) • v) j =
      (M₁ + M₂ + 1) / (A *ᵥ v) j * (A *ᵥ v) j +
        K'.eval p (((M₁ + M₂ + 1) / (A *ᵥ v) j) • v) j := by
    rw [hV, skipMap_apply, Pi.add_apply, mulVec_smul_coord]
  have h1 := (abs_le.1 (hM₁ (((M₁ + M₂ + 1) / (A *ᵥ v) j) • v))).2
  have h2 := (abs_le.1 (hM₂ (((M₁ + M₂ + 1) / (A *ᵥ v) j) • v))).1
  rw [heq, ht] at h1
  linarith

/-- `|∑_i a_i s_i| ≤ ∑_i |a_i| B` when every `|s_i| ≤ B` (the bound of one output coordinate of
a block with a bounded activation). -/
theorem abs_sum_mul_le {ι : Type*} [Fintype ι] (a s : ι → ℝ) {B : ℝ} (hs : ∀ i, |s i| ≤ B) :
    |∑ i, a i * s i| ≤ ∑ i, |a i| * B :=
  (Finset.abs_sum_le_sum_abs _ _).trans (Finset.sum_le_sum fun i _ => by
    rw [abs_mul]
    exact mul_le_mul_of_nonneg_left (hs i) (abs_nonneg (a i)))

/-- Ungated blocks with a bounded activation are bounded: coordinate `j` of
`W_down σ(W_up x)` is at most `∑_i |(W_down)_{j i}| B` in absolute value when `|σ| ≤ B`. -/
theorem boundedBlocks_ungated {σ : ℝ → ℝ} {B : ℝ} (hσ : ∀ z, |σ z| ≤ B) :
    BoundedBlocks (ungated σ d n) := by
  -- `(ungated σ d n).Params` is `UngatedWeights d n` by definition; the binder says so, so that
  -- the field projections below elaborate.
  refine fun (W : UngatedWeights d n) j => ⟨∑ i, |W.down j i| * B, fun x => ?_⟩
  show |ungatedMap σ W x j| ≤ ∑ i, |W.down j i| * B
  rw [ungatedMap_apply]
  exact abs_sum_mul_le (fun i => W.down j i) (fun i => σ (W.up i ⬝ᵥ x)) fun i => hσ _

/-- Blocks with biases and a bounded activation are bounded: coordinate `j` of
`W_down σ(W_up x + b_up) + b_down` is at most `∑_i |(W_down)_{j i}| B + |(b_down)_j|` in
absolute value when `|σ| ≤ B`. -/
theorem boundedBlocks_biased {σ : ℝ → ℝ} {B : ℝ} (hσ : ∀ z, |σ z| ≤ B) :
    BoundedBlocks (biased σ d n) := by
  refine fun (W : BiasedWeights d n) j => ⟨∑ i, |W.down j i| * B + |W.bDown j|, fun x => ?_⟩
  -- Definitional: `biasedMap` is `W_down *ᵥ (…) + b_down`, `*ᵥ` a `dotProduct`, a `Finset.sum`.
  have e : (biased σ d n).eval W x j =
      ∑ i, W.down j i * σ ((W.up *ᵥ x) i + W.bUp i) + W.bDown j := rfl
  rw [e]
  have hS := abs_le.1 (abs_sum_mul_le (fun i => W.down j i)
    (fun i => σ ((W.up *ᵥ x) i + W.bUp i)) fun i => hσ _)
  have hb1 := neg_abs_le (W.bDown j)
  have hb2 := le_abs_self (W.bDown j)
  exact abs_le.2 ⟨by linarith [hS.1], by linarith [hS.2]⟩

/-- **bounded** (ours): if `σ` is bounded and `A ≠ 0`, the ungated skip block
`x ↦ A x + W_down σ(W_up x)` is not absorbable by residual-free ungated `σ`-blocks of any
width `m` (in particular of the same width `n`). -/
theorem not_absorbable_of_bounded {σ : ℝ → ℝ} (hσ : ∃ B, ∀ z, |σ z| ≤ B)
    {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0) (W : UngatedWeights d n) :
    ¬ Absorbable (ungated σ d m) (skipMap A (ungated σ d n) W) := by
  obtain ⟨B, hB⟩ := hσ
  exact not_absorbable_of_boundedBlocks (boundedBlocks_ungated hB) (boundedBlocks_ungated hB)
    hA W

/-- **bounded with biases** (ours): if `σ` is bounded and `A ≠ 0`, the skip block
`x ↦ A x + W_down σ(W_up x + b_up) + b_down` is not absorbable by residual-free `σ`-blocks
with biases of any width `m`, whatever the biases. -/
theorem not_absorbable_biased_of_bounded {σ : ℝ → ℝ} (hσ : ∃ B, ∀ z, |σ z| ≤ B)
    {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0) (W : BiasedWeights d n) :
    ¬ Absorbable (biased σ d m) (skipMap A (biased σ d n) W) := by
  obtain ⟨B, hB⟩ := hσ
  exact not_absorbable_of_boundedBlocks (boundedBlocks_biased hB) (boundedBlocks_biased hB)
    hA W

/-- `|tanh y| ≤ 1`: `(1 + tanh y) / 2 = sigmoid (2 y)` (`Absorb.one_add_tanh_div_two`) and the
sigmoid takes values in `(0, 1)`. -/
theorem abs_tanh_le_one (y : ℝ) : |Real.tanh y| ≤ 1 := by
  have h := one_add_tanh_div_two y
  have h0 := sigmoid_pos (2 * y)
  have h1 := sigmoid_lt_one (2 * y)
  exact abs_le.2 ⟨by linarith, by linarith⟩

/-- `|sigmoid z| ≤ 1`: the sigmoid takes values in `(0, 1)`. -/
theorem abs_sigmoid_le_one (z : ℝ) : |sigmoid z| ≤ 1 := by
  have h0 := sigmoid_pos z
  have h1 := sigmoid_lt_one z
  exact abs_le.2 ⟨by linarith, by linarith⟩

/-- **bounded for tanh** (ours): for `A ≠ 0` the tanh skip block `x ↦ A x + W_down tanh(W_up x)`
is not absorbable by residual-free tanh blocks of any width. -/
theorem not_absorbable_tanh {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0) (W : UngatedWeights d n) :
    ¬ Absorbable (ungated Real.tanh d m) (skipMap A (ungated Real.tanh d n) W) :=
  not_absorbable_of_bounded ⟨1, abs_tanh_le_one⟩ hA W

/-- **bounded for the sigmoid** (ours): for `A ≠ 0` the sigmoid skip block is not absorbable by
residual-free sigmoid blocks of any width. -/
theorem not_absorbable_sigmoid {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (W : UngatedWeights d n) :
    ¬ Absorbable (ungated sigmoid d m) (skipMap A (ungated sigmoid d n) W) :=
  not_absorbable_of_bounded ⟨1, abs_sigmoid_le_one⟩ hA W

/-- **bounded for tanh with biases** (ours): for `A ≠ 0` no biases make the tanh skip block
absorbable by residual-free tanh blocks with biases of any width. -/
theorem not_absorbable_biased_tanh {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (W : BiasedWeights d n) :
    ¬ Absorbable (biased Real.tanh d m) (skipMap A (biased Real.tanh d n) W) :=
  not_absorbable_biased_of_bounded ⟨1, abs_tanh_le_one⟩ hA W

/-- **bounded for the sigmoid with biases** (ours): for `A ≠ 0` no biases make the sigmoid skip
block absorbable by residual-free sigmoid blocks with biases of any width. -/
theorem not_absorbable_biased_sigmoid {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (W : BiasedWeights d n) :
    ¬ Absorbable (biased sigmoid d m) (skipMap A (biased sigmoid d n) W) :=
  not_absorbable_biased_of_bounded ⟨1, abs_sigmoid_le_one⟩ hA W

end Absorb

end
