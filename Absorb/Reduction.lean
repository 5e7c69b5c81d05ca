import Absorb.Basic
import Mathlib.LinearAlgebra.Matrix.NonsingularInverse

/-!
# Reduction of an invertible skip to the identity skip

This file formalizes Lemma 4 of Mijoski–Karbevski, *Can an MLP Absorb Its Own Skip
Connection?* (arXiv 2604.23705): for an invertible skip matrix `A`, the skip block
`x ↦ A x + W_down σ(W_up x)` is absorbable if and only if the identity-skip block
`x ↦ x + (A⁻¹ W_down) σ(W_up x)` is.

The proof only uses that the blocks of a kind are closed under left multiplication by a
matrix (replace the down-projection `V_down` by `B V_down`): `h = A x + M x` for all `x` iff
`A⁻¹ h = x + A⁻¹ M x` for all `x`, and `A⁻¹ h` is again a residual-free block. We prove this
once for an arbitrary `Absorb.BlockKind` (`Absorb.absorbable_skipMap_iff_of_mulLeft`) and
instantiate it for ungated, gated and biased blocks.

## Main results

* `Absorb.absorbable_skipMap_iff_of_mulLeft` : the reduction for any kind closed under left
  multiplication.
* `Absorb.absorbable_skipMap_iff_one` : Lemma 4 for ungated blocks.
* `Absorb.absorbable_skipMap_iff_one_gated` : Lemma 4 for gated blocks.
* `Absorb.absorbable_skipMap_iff_one_biased` : the same with biases (**ours**; the bias `b_down`
  becomes `A⁻¹ b_down`).
-/

open Matrix

noncomputable section

namespace Absorb

variable {d n : ℕ}

/-- **Reduction, abstract form** (paper Lemma 4). Let the blocks of kind `K` be closed under
left multiplication by any matrix `B` (some block computes `x ↦ B (K.eval p x)`), let `A` be
invertible and let the block `p'` compute `x ↦ A⁻¹ (K.eval p x)`. Then `x ↦ A x + K.eval p x`
is absorbable by blocks of kind `K` iff `x ↦ x + K.eval p' x` is. -/
theorem absorbable_skipMap_iff_of_mulLeft (K : BlockKind d)
    (hK : ∀ (B : Matrix (Fin d) (Fin d) ℝ) (p : K.Params),
      ∃ q : K.Params, ∀ x, K.eval q x = B *ᵥ K.eval p x)
    {A : Matrix (Fin d) (Fin d) ℝ} (hA : IsUnit A.det) (p p' : K.Params)
    (hp' : ∀ x, K.eval p' x = A⁻¹ *ᵥ K.eval p x) :
    Absorbable K (skipMap A K p) ↔ Absorbable K (skipMap 1 K p') := by
  constructor
  · -- `h = A x + M x` gives `A⁻¹ h = x + A⁻¹ M x`.
    rintro ⟨V, hV⟩
    obtain ⟨q, hq⟩ := hK A⁻¹ V
    refine ⟨q, fun x => ?_⟩
    rw [hq, hV, skipMap_apply, skipMap_apply, hp', Matrix.mulVec_add, Matrix.mulVec_mulVec,
      Matrix.nonsing_inv_mul A hA]
  · -- `h = x + A⁻¹ M x` gives `A h = A x + M x`.
    rintro ⟨V, hV⟩
    obtain ⟨q, hq⟩ := hK A V
    refine ⟨q, fun x => ?_⟩
    rw [hq, hV, skipMap_apply, skipMap_apply, hp', Matrix.one_mulVec, Matrix.mulVec_add,
      Matrix.mulVec_mulVec, Matrix.mul_nonsing_inv A hA, Matrix.one_mulVec]

/-! ### Left multiplication of the three kinds of blocks -/

/-- Replacing `W_down` by `B W_down` multiplies an ungated block on the left by `B`:
`(B W_down) σ(W_up x) = B (W_down σ(W_up x))`. -/
theorem ungatedMap_mulLeft (σ : ℝ → ℝ) (B : Matrix (Fin d) (Fin d) ℝ) (W : UngatedWeights d n)
    (x : Fin d → ℝ) : ungatedMap σ ⟨W.up, B * W.down⟩ x = B *ᵥ ungatedMap σ W x := by
  exact (Matrix.mulVec_mulVec (fun i => σ ((W.up *ᵥ x) i)) B W.down).symm

/-- Ungated blocks are closed under left multiplication by a matrix. -/
theorem ungated_mulLeft (σ : ℝ → ℝ) (B : Matrix (Fin d) (Fin d) ℝ) (W : UngatedWeights d n) :
    ∃ V : UngatedWeights d n, ∀ x, ungatedMap σ V x = B *ᵥ ungatedMap σ W x :=
  ⟨⟨W.up, B * W.down⟩, ungatedMap_mulLeft σ B W⟩

/-- Replacing `W_down` by `B W_down` multiplies a gated block on the left by `B`. -/
theorem gatedMap_mulLeft (g : ℝ → ℝ) (B : Matrix (Fin d) (Fin d) ℝ) (W : GatedWeights d n)
    (x : Fin d → ℝ) : gatedMap g ⟨W.gate, W.up, B * W.down⟩ x = B *ᵥ gatedMap g W x := by
  exact (Matrix.mulVec_mulVec (fun i => g ((W.gate *ᵥ x) i) * (W.up *ᵥ x) i) B W.down).symm

/-- Gated blocks are closed under left multiplication by a matrix. -/
theorem gated_mulLeft (g : ℝ → ℝ) (B : Matrix (Fin d) (Fin d) ℝ) (W : GatedWeights d n) :
    ∃ V : GatedWeights d n, ∀ x, gatedMap g V x = B *ᵥ gatedMap g W x :=
  ⟨⟨W.gate, W.up, B * W.down⟩, gatedMap_mulLeft g B W⟩

/-- Replacing `W_down` by `B W_down` and `b_down` by `B b_down` multiplies a biased block on
the left by `B`. -/
theorem biasedMap_mulLeft (σ : ℝ → ℝ) (B : Matrix (Fin d) (Fin d) ℝ) (W : BiasedWeights d n)
    (x : Fin d → ℝ) :
    biasedMap σ ⟨W.up, B * W.down, W.bUp, B *ᵥ W.bDown⟩ x = B *ᵥ biasedMap σ W x := by
  show (B * W.down) *ᵥ (fun i => σ ((W.up *ᵥ x) i + W.bUp i)) + B *ᵥ W.bDown =
    B *ᵥ (W.down *ᵥ (fun i => σ ((W.up *ᵥ x) i + W.bUp i)) + W.bDown)
  rw [Matrix.mulVec_add, Matrix.mulVec_mulVec]

/-- Biased blocks are closed under left multiplication by a matrix. -/
theorem biased_mulLeft (σ : ℝ → ℝ) (B : Matrix (Fin d) (Fin d) ℝ) (W : BiasedWeights d n) :
    ∃ V : BiasedWeights d n, ∀ x, biasedMap σ V x = B *ᵥ biasedMap σ W x :=
  ⟨⟨W.up, B * W.down, W.bUp, B *ᵥ W.bDown⟩, biasedMap_mulLeft σ B W⟩

/-! ### Lemma 4 -/

/-- **Reduction** (paper Lemma 4), ungated blocks. For an invertible skip matrix `A`, the skip
block `x ↦ A x + W_down σ(W_up x)` is absorbable by a residual-free ungated block of the same
activation and width iff the identity-skip block `x ↦ x + (A⁻¹ W_down) σ(W_up x)` is. -/
theorem absorbable_skipMap_iff_one (σ : ℝ → ℝ) {A : Matrix (Fin d) (Fin d) ℝ}
    (hA : IsUnit A.det) (W : UngatedWeights d n) :
    Absorbable (ungated σ d n) (skipMap A (ungated σ d n) W) ↔
      Absorbable (ungated σ d n)
        (skipMap 1 (ungated σ d n) (⟨W.up, A⁻¹ * W.down⟩ : UngatedWeights d n)) := by
  refine absorbable_skipMap_iff_of_mulLeft (ungated σ d n) ?_ hA W
    (⟨W.up, A⁻¹ * W.down⟩ : UngatedWeights d n) ?_
  · exact fun B V => ungated_mulLeft σ B V
  · exact fun x => ungatedMap_mulLeft σ A⁻¹ W x

/-- **Reduction** (paper Lemma 4), gated blocks. For an invertible skip matrix `A`, the skip
block `x ↦ A x + W_down (g(W_gate x) ⊙ W_up x)` is absorbable by a residual-free gated block
of the same gate and width iff `x ↦ x + (A⁻¹ W_down) (g(W_gate x) ⊙ W_up x)` is. -/
theorem absorbable_skipMap_iff_one_gated (g : ℝ → ℝ) {A : Matrix (Fin d) (Fin d) ℝ}
    (hA : IsUnit A.det) (W : GatedWeights d n) :
    Absorbable (gated g d n) (skipMap A (gated g d n) W) ↔
      Absorbable (gated g d n)
        (skipMap 1 (gated g d n) (⟨W.gate, W.up, A⁻¹ * W.down⟩ : GatedWeights d n)) := by
  refine absorbable_skipMap_iff_of_mulLeft (gated g d n) ?_ hA W
    (⟨W.gate, W.up, A⁻¹ * W.down⟩ : GatedWeights d n) ?_
  · exact fun B V => gated_mulLeft g B V
  · exact fun x => gatedMap_mulLeft g A⁻¹ W x

/-- **Reduction with biases** (paper Lemma 4; the biased form is **ours**). For an invertible
skip matrix `A`, the skip block `x ↦ A x + W_down σ(W_up x + b_up) + b_down` is absorbable by a
residual-free biased block of the same activation and width iff
`x ↦ x + (A⁻¹ W_down) σ(W_up x + b_up) + A⁻¹ b_down` is. -/
theorem absorbable_skipMap_iff_one_biased (σ : ℝ → ℝ) {A : Matrix (Fin d) (Fin d) ℝ}
    (hA : IsUnit A.det) (W : BiasedWeights d n) :
    Absorbable (biased σ d n) (skipMap A (biased σ d n) W) ↔
      Absorbable (biased σ d n)
        (skipMap 1 (biased σ d n)
          (⟨W.up, A⁻¹ * W.down, W.bUp, A⁻¹ *ᵥ W.bDown⟩ : BiasedWeights d n)) := by
  refine absorbable_skipMap_iff_of_mulLeft (biased σ d n) ?_ hA W
    (⟨W.up, A⁻¹ * W.down, W.bUp, A⁻¹ *ᵥ W.bDown⟩ : BiasedWeights d n) ?_
  · exact fun B V => biased_mulLeft σ B V
  · exact fun x => biasedMap_mulLeft σ A⁻¹ W x

end Absorb

end
