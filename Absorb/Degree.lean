import Absorb.Basic
import Absorb.Activations
import Mathlib.Analysis.SpecialFunctions.Pow.Real
import Mathlib.Tactic.Linarith
import Mathlib.Tactic.LinearCombination
import Mathlib.Tactic.Ring
import Mathlib.Tactic.NormNum

/-!
# Homogeneous blocks cannot absorb a skip

This file formalizes Proposition 5 of Mijoski–Karbevski, *Can an MLP Absorb Its Own Skip
Connection?* (arXiv 2604.23705), in the scaling form of `THEORY.md`: it is enough that every
block of the kind scales by one fixed factor `c ≠ 2` when its input is doubled,
`M(2 x) = c M(x)`.

If `A x + M(x) = h(x)` for all `x`, with `h` a residual-free block of the same kind, then at
`2 x`: `2 A x + c M(x) = h(2 x) = c h(x) = c (A x + M(x))`, so `(c - 2) A x = 0`, hence
`A x = 0` for all `x` and `A = 0`.

An ungated block scales by `c` when `σ(2 z) = c σ(z)`; a gated block scales by `2 c` when
`g(2 z) = c g(z)` (the value path is linear). A positively homogeneous `σ` of degree `k`
(`σ(t z) = t^k σ(z)` for `t > 0`, real `k`) has `c = 2^k`, and `2^k ≠ 2` for `k ≠ 1`.

## Main results

* `Absorb.eq_zero_of_forall_mulVec_eq_zero` : a square matrix that kills every vector is zero.
* `Absorb.not_absorbable_of_two_smul` : the argument for any kind of blocks that scale by
  `c ≠ 2`.
* `Absorb.not_absorbable_of_scaling` : Proposition 5, ungated, `σ(2 z) = c σ(z)`, `c ≠ 2`.
* `Absorb.not_absorbable_gated_of_scaling` : Proposition 5, gated, `g(2 z) = c g(z)`, `c ≠ 1`.
* `Absorb.not_absorbable_of_homogeneous` : Proposition 5, ungated, `σ` positively homogeneous
  of a real degree `k ≠ 1`.
* `Absorb.not_absorbable_reluSq` : the ReLU² instance.
* `Absorb.not_absorbable_reglu` : the ReGLU instance.
-/

open Matrix

noncomputable section

namespace Absorb

variable {d n : ℕ}

/-! ### Two facts about matrices -/

/-- A square matrix that kills every vector is zero: its column `j` is `A (e_j) = 0`. -/
theorem eq_zero_of_forall_mulVec_eq_zero {A : Matrix (Fin d) (Fin d) ℝ} (h : ∀ x, A *ᵥ x = 0) :
    A = 0 := by
  ext i j
  have hij := congrFun (h (Pi.single j 1)) i
  rw [Matrix.mulVec_single_one] at hij
  simpa using hij

/-- A coordinate of a matrix applied to a scaled vector: `(M (t x))_i = t (M x)_i`. -/
theorem mulVec_smul_coord {m : ℕ} (M : Matrix (Fin m) (Fin d) ℝ) (t : ℝ) (x : Fin d → ℝ)
    (i : Fin m) : (M *ᵥ (t • x)) i = t * (M *ᵥ x) i := by
  rw [Matrix.mulVec_smul, Pi.smul_apply, smul_eq_mul]

/-! ### The scaling argument for an arbitrary kind -/

/-- **Degree, abstract form** (the argument of paper Proposition 5). If every block of kind
`K` satisfies `M(2 x) = c M(x)` for one `c ≠ 2`, then for `A ≠ 0` the skip block
`x ↦ A x + K.eval p x` is not absorbable by blocks of kind `K`. -/
theorem not_absorbable_of_two_smul (K : BlockKind d) {c : ℝ}
    (hK : ∀ (p : K.Params) (x : Fin d → ℝ), K.eval p ((2 : ℝ) • x) = c • K.eval p x)
    (hc : c ≠ 2) {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0) (p : K.Params) :
    ¬ Absorbable K (skipMap A K p) := by
  rintro ⟨V, hV⟩
  refine hA (eq_zero_of_forall_mulVec_eq_zero fun x => ?_)
  funext i
  show (A *ᵥ x) i = 0
  -- The five scalar identities at coordinate `i`.
  -- Each is a coordinate of a vector identity; `skipMap`, `+` and `•` on `Fin d → ℝ` unfold
  -- definitionally to their coordinates.
  have h1 : K.eval V ((2 : ℝ) • x) i = (A *ᵥ ((2 : ℝ) • x)) i + K.eval p ((2 : ℝ) • x) i :=
    congrFun (hV ((2 : ℝ) • x)) i
  have h2 : K.eval V x i = (A *ᵥ x) i + K.eval p x i := congrFun (hV x) i
  have h3 : K.eval V ((2 : ℝ) • x) i = c * K.eval V x i := congrFun (hK V x) i
  have h4 : K.eval p ((2 : ℝ) • x) i = c * K.eval p x i := congrFun (hK p x) i
  have h5 : (A *ᵥ ((2 : ℝ) • x)) i = 2 * (A *ᵥ x) i := mulVec_smul_coord A 2 x i
  -- `2 (A x)_i + c M(x)_i = c ((A x)_i + M(x)_i)`.
  have h6 : (c - 2) * (A *ᵥ x) i = 0 := by
    linear_combination h1 - h3 - c * h2 + h4 + h5
  exact (mul_eq_zero.mp h6).resolve_left (sub_ne_zero.mpr hc)

/-! ### Scaling of ungated and gated blocks -/

/-- If `σ(2 z) = c σ(z)` for all `z`, every ungated block scales by `c`:
`W_down σ(W_up (2 x)) = c W_down σ(W_up x)`. -/
theorem ungatedMap_two_smul {σ : ℝ → ℝ} {c : ℝ} (hσ : ∀ z, σ (2 * z) = c * σ z)
    (W : UngatedWeights d n) (x : Fin d → ℝ) :
    ungatedMap σ W ((2 : ℝ) • x) = c • ungatedMap σ W x := by
  have h : (fun i => σ ((W.up *ᵥ ((2 : ℝ) • x)) i)) = c • fun i => σ ((W.up *ᵥ x) i) := by
    funext i
    show σ ((W.up *ᵥ ((2 : ℝ) • x)) i) = c * σ ((W.up *ᵥ x) i)
    rw [mulVec_smul_coord, hσ]
  calc ungatedMap σ W ((2 : ℝ) • x)
      = W.down *ᵥ (fun i => σ ((W.up *ᵥ ((2 : ℝ) • x)) i)) := rfl
    _ = W.down *ᵥ (c • fun i => σ ((W.up *ᵥ x) i)) := congrArg (fun v => W.down *ᵥ v) h
    _ = c • (W.down *ᵥ fun i => σ ((W.up *ᵥ x) i)) := by
        exact Matrix.mulVec_smul _ _ _
    _ = c • ungatedMap σ W x := rfl

/-- If `g(2 z) = c g(z)` for all `z`, every gated block scales by `2 c`:
`W_down (g(W_gate (2 x)) ⊙ W_up (2 x)) = 2 c W_down (g(W_gate x) ⊙ W_up x)`. -/
theorem gatedMap_two_smul {g : ℝ → ℝ} {c : ℝ} (hg : ∀ z, g (2 * z) = c * g z)
    (W : GatedWeights d n) (x : Fin d → ℝ) :
    gatedMap g W ((2 : ℝ) • x) = (2 * c) • gatedMap g W x := by
  have h : (fun i => g ((W.gate *ᵥ ((2 : ℝ) • x)) i) * (W.up *ᵥ ((2 : ℝ) • x)) i) =
      (2 * c) • fun i => g ((W.gate *ᵥ x) i) * (W.up *ᵥ x) i := by
    funext i
    show g ((W.gate *ᵥ ((2 : ℝ) • x)) i) * (W.up *ᵥ ((2 : ℝ) • x)) i =
      2 * c * (g ((W.gate *ᵥ x) i) * (W.up *ᵥ x) i)
    rw [mulVec_smul_coord W.gate, mulVec_smul_coord W.up, hg]
    ring
  calc gatedMap g W ((2 : ℝ) • x)
      = W.down *ᵥ (fun i => g ((W.gate *ᵥ ((2 : ℝ) • x)) i) * (W.up *ᵥ ((2 : ℝ) • x)) i) :=
        rfl
    _ = W.down *ᵥ ((2 * c) • fun i => g ((W.gate *ᵥ x) i) * (W.up *ᵥ x) i) :=
        congrArg (fun v => W.down *ᵥ v) h
    _ = (2 * c) • (W.down *ᵥ fun i => g ((W.gate *ᵥ x) i) * (W.up *ᵥ x) i) := by
        exact Matrix.mulVec_smul _ _ _
    _ = (2 * c) • gatedMap g W x := rfl

/-! ### Proposition 5 -/

/-- **Degree** (paper Proposition 5, scaling form). Let `σ(2 z) = c σ(z)` for all `z`, with
`c ≠ 2`, and let `A ≠ 0`. Then the skip block `x ↦ A x + W_down σ(W_up x)` is not absorbable:
no residual-free ungated block of the same activation and width equals it. -/
theorem not_absorbable_of_scaling {σ : ℝ → ℝ} {c : ℝ} (hσ : ∀ z, σ (2 * z) = c * σ z)
    (hc : c ≠ 2) {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0) (W : UngatedWeights d n) :
    ¬ Absorbable (ungated σ d n) (skipMap A (ungated σ d n) W) :=
  not_absorbable_of_two_smul (ungated σ d n) (fun V x => ungatedMap_two_smul hσ V x) hc hA W

/-- **Degree, gated** (paper Proposition 5, gated case). Let the gate satisfy
`g(2 z) = c g(z)` for all `z`, with `c ≠ 1` (so the block scales by `2 c ≠ 2`), and let
`A ≠ 0`. Then `x ↦ A x + W_down (g(W_gate x) ⊙ W_up x)` is not absorbable by a residual-free
gated block of the same gate and width. -/
theorem not_absorbable_gated_of_scaling {g : ℝ → ℝ} {c : ℝ} (hg : ∀ z, g (2 * z) = c * g z)
    (hc : c ≠ 1) {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0) (W : GatedWeights d n) :
    ¬ Absorbable (gated g d n) (skipMap A (gated g d n) W) := by
  have h2c : 2 * c ≠ 2 := by
    intro h
    apply hc
    linarith
  exact not_absorbable_of_two_smul (gated g d n) (fun V x => gatedMap_two_smul hg V x) h2c hA W

/-- `2 ^ k ≠ 2` for a real exponent `k ≠ 1` (`t ↦ 2 ^ t` is strictly increasing). -/
theorem two_rpow_ne_two {k : ℝ} (hk : k ≠ 1) : (2 : ℝ) ^ k ≠ 2 := by
  intro h
  rcases lt_trichotomy k 1 with hlt | heq | hgt
  · have h' : (2 : ℝ) ^ k < (2 : ℝ) ^ (1 : ℝ) :=
      (Real.rpow_lt_rpow_left_iff (by norm_num : (1 : ℝ) < 2)).mpr hlt
    rw [Real.rpow_one] at h'
    linarith
  · exact hk heq
  · have h' : (2 : ℝ) ^ (1 : ℝ) < (2 : ℝ) ^ k :=
      (Real.rpow_lt_rpow_left_iff (by norm_num : (1 : ℝ) < 2)).mpr hgt
    rw [Real.rpow_one] at h'
    linarith

/-- **Degree, homogeneous form** (paper Proposition 5). Let `σ` be positively homogeneous of a
real degree `k ≠ 1`: `σ(t z) = t^k σ(z)` for all `t > 0` and `z`. Then for `A ≠ 0` the skip
block `x ↦ A x + W_down σ(W_up x)` is not absorbable. (Scaling form with `c = 2^k`.) -/
theorem not_absorbable_of_homogeneous {σ : ℝ → ℝ} {k : ℝ} (hk : k ≠ 1)
    (hσ : ∀ t z : ℝ, 0 < t → σ (t * z) = t ^ k * σ z) {A : Matrix (Fin d) (Fin d) ℝ}
    (hA : A ≠ 0) (W : UngatedWeights d n) :
    ¬ Absorbable (ungated σ d n) (skipMap A (ungated σ d n) W) :=
  not_absorbable_of_scaling (fun z => hσ 2 z (by norm_num)) (two_rpow_ne_two hk) hA W

/-! ### ReLU² and ReGLU -/

/-- ReLU is positively homogeneous of degree 1 at `t = 2`: `relu (2 z) = 2 relu z`. -/
theorem relu_two_mul (z : ℝ) : relu (2 * z) = 2 * relu z := by
  show max (2 * z) 0 = 2 * max z 0
  rcases le_total z 0 with h | h
  · rw [max_eq_right h, max_eq_right (by linarith : 2 * z ≤ 0)] <;> norm_num
  · rw [max_eq_left h, max_eq_left (by linarith : 0 ≤ 2 * z)]

/-- ReLU² scales by `4` at `t = 2`: `reluSq (2 z) = 4 reluSq z`. -/
theorem reluSq_two_mul (z : ℝ) : reluSq (2 * z) = 4 * reluSq z := by
  show relu (2 * z) ^ 2 = 4 * relu z ^ 2
  rw [relu_two_mul]
  ring

/-- **Degree for ReLU²** (paper Proposition 5, ReLU² instance, `k = 2`). For `A ≠ 0` the skip
block `x ↦ A x + W_down ReLU²(W_up x)` is not absorbable by a residual-free ReLU² block of the
same width. -/
theorem not_absorbable_reluSq {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (W : UngatedWeights d n) :
    ¬ Absorbable (ungated reluSq d n) (skipMap A (ungated reluSq d n) W) :=
  not_absorbable_of_scaling reluSq_two_mul (by norm_num) hA W

/-- **Degree for ReGLU** (paper Proposition 5, gated instance `g = ReLU`, block degree 2). For
`A ≠ 0` the skip block `x ↦ A x + W_down (ReLU(W_gate x) ⊙ W_up x)` is not absorbable by a
residual-free ReGLU block of the same width. -/
theorem not_absorbable_reglu {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (W : GatedWeights d n) :
    ¬ Absorbable (gated relu d n) (skipMap A (gated relu d n) W) :=
  not_absorbable_gated_of_scaling relu_two_mul (by norm_num) hA W

end Absorb

end
