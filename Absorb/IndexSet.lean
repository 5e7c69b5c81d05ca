import Absorb.Basic
import Absorb.Activations
import Mathlib.Tactic.Abel
import Mathlib.Tactic.Linarith
import Mathlib.Tactic.Ring

/-!
# The sign-flip construction: the index-set condition suffices for absorption

The "if" half of the paper's Theorems 8 (ReLU) and 10 (GELU) (`THEORY.md`,
**index_set_sufficient**; Mijoski–Karbevski, arXiv 2604.23705), for every odd-part-linear
activation `σ` (`σ z - σ (-z) = z`), a general skip matrix `A`, and (ours) with biases.

Write `b_iᵀ` for row `i` of `W_up` and `a_i` for column `i` of `W_down`. If some index set
`S` has `W_down[:,S] W_up[S,:] = ∑_{i ∈ S} a_i b_iᵀ = -A`, flip the sign of the hidden units
in `S`: with `D = diag(-1 on S, +1 off S)`, the residual-free block with `V_up = D W_up`,
`V_down = W_down` computes `A x + W_down σ(W_up x)`. Indeed, for `i ∈ S`,
`σ(-b_iᵀx) = σ(b_iᵀx) - b_iᵀx`, so the flipped block is
`W_down σ(W_up x) - ∑_{i ∈ S} a_i b_iᵀ x = W_down σ(W_up x) + A x`.

In matrix form: with `P = diag(1 on S, 0 off S)` (`Absorb.indicatorVec`),
`σ(D u) = σ(u) - P u` entrywise, and the condition reads `W_down P W_up = -A`
(`Absorb.indexSetCond_iff_diagonal`).

## Main definitions

* `Absorb.signFlip S` : the diagonal of `D`, `-1` on `S` and `1` off `S`.
* `Absorb.indicatorVec S` : the indicator vector of `S`, the diagonal of `P`.
* `Absorb.signFlipWeights S W` : `V_up = diag (signFlip S) * W_up`, `V_down = W_down`.
* `Absorb.signFlipBiasedWeights S W` : with biases, `V_up = D W_up`, `c_up = D b_up`,
  `V_down = W_down`, `c_down = b_down + W_down P b_up` (`= b_down + W_down[:,S] b_up[S]`).

## Main results

* `Absorb.indexSetCond_iff_diagonal` : `IndexSetCond A up down S ↔ down * P * up = -A`.
* `Absorb.ungatedMap_signFlip` : the flipped residual-free block equals the skip block,
  pointwise.
* `Absorb.absorbable_of_indexSetCond_ungated` : **index_set_sufficient**, no biases.
* `Absorb.biasedMap_signFlip`, `Absorb.absorbable_of_indexSetCond` : the same with biases.
* `Absorb.not_indexSetCond_of_relaxation` : **relaxation_certificate** (ours): if no real
  `s` has `down * diag s * up = -A`, then no index set exists.
-/

open Matrix

noncomputable section

namespace Absorb

variable {d n : ℕ}

/-! ### The index-set condition in matrix form -/

/-- The indicator vector of `S`: `1` on `S`, `0` off `S` (the diagonal of the matrix
`P = diag(1 on S, 0 off S)`). -/
def indicatorVec {R : Type*} [CommRing R] (S : Finset (Fin n)) (i : Fin n) : R :=
  if i ∈ S then 1 else 0

/-- A sum over all of `Fin n` of a function supported on `S` is the sum over `S`. -/
theorem sum_univ_ite_mem {M : Type*} [AddCommMonoid M] (S : Finset (Fin n)) (f : Fin n → M) :
    ∑ i, (if i ∈ S then f i else 0) = ∑ i ∈ S, f i := by
  first
    | (rw [← Finset.sum_filter]
       refine Finset.sum_congr ?_ fun _ _ => rfl
       ext i
       simp
       done)
    | (rw [Finset.sum_ite_mem, Finset.univ_inter]; done)
    | (simp; done)

/-- The entries of `W_down P W_up` with `P = diag (indicatorVec S)`:
`(W_down P W_up) j k = ∑_{i ∈ S} (W_down) j i (W_up) i k`. -/
theorem mul_diagonal_indicatorVec_mul_apply {R : Type*} [CommRing R]
    (up : Matrix (Fin n) (Fin d) R) (down : Matrix (Fin d) (Fin n) R) (S : Finset (Fin n))
    (j k : Fin d) :
    (down * Matrix.diagonal (indicatorVec S : Fin n → R) * up) j k =
      ∑ i ∈ S, down j i * up i k := by
  have h1 : (down * Matrix.diagonal (indicatorVec S : Fin n → R) * up) j k =
      ∑ i, down j i * (indicatorVec S i : R) * up i k := by
    rw [Matrix.mul_apply]
    simp only [Matrix.mul_diagonal]
  rw [h1]
  calc ∑ i, down j i * (indicatorVec S i : R) * up i k
      = ∑ i, (if i ∈ S then down j i * up i k else 0) := by
        refine Finset.sum_congr rfl fun i _ => ?_
        by_cases hi : i ∈ S
        · simp [indicatorVec, hi]
        · simp [indicatorVec, hi]
    _ = ∑ i ∈ S, down j i * up i k := sum_univ_ite_mem S fun i => down j i * up i k

/-- The index-set condition `W_down[:,S] W_up[S,:] = -A` in matrix form:
`W_down · diag(1_S) · W_up = -A`, over any commutative ring. -/
theorem indexSetCond_iff_diagonal {R : Type*} [CommRing R] {A : Matrix (Fin d) (Fin d) R}
    {up : Matrix (Fin n) (Fin d) R} {down : Matrix (Fin d) (Fin n) R} {S : Finset (Fin n)} :
    IndexSetCond A up down S ↔ down * Matrix.diagonal (indicatorVec S : Fin n → R) * up = -A := by
  constructor
  · intro hS
    ext j k
    rw [mul_diagonal_indicatorVec_mul_apply]
    -- `(-A) j k` is `-A j k` by definition (`Matrix` negation is pointwise).
    exact hS j k
  · intro hD j k
    have hjk : (down * Matrix.diagonal (indicatorVec S : Fin n → R) * up) j k = (-A) j k := by
      rw [hD]
    rw [mul_diagonal_indicatorVec_mul_apply] at hjk
    exact hjk

/-- **relaxation_certificate** (ours). The index-set condition is the linear system
`W_down · diag(s) · W_up = -A` restricted to `s ∈ {0,1}ⁿ` (the indicator of `S`). So if no
`s : Fin n → R` at all solves it (for instance, over `ℝ`, when the least-squares residual
`min_s ‖W_down diag(s) W_up + A‖_F²` is positive), then no index set `S` satisfies the
condition. -/
theorem not_indexSetCond_of_relaxation {R : Type*} [CommRing R]
    {A : Matrix (Fin d) (Fin d) R} {up : Matrix (Fin n) (Fin d) R}
    {down : Matrix (Fin d) (Fin n) R} (h : ∀ s : Fin n → R, down * Matrix.diagonal s * up ≠ -A)
    (S : Finset (Fin n)) : ¬ IndexSetCond A up down S :=
  fun hS => h _ (indexSetCond_iff_diagonal.1 hS)

/-! ### Flipping hidden units -/

/-- The sign vector of the construction: `-1` on `S`, `1` off `S` (the diagonal of `D`). -/
def signFlip (S : Finset (Fin n)) (i : Fin n) : ℝ :=
  if i ∈ S then -1 else 1

/-- For odd-part-linear `σ`, flipping the sign of the input of a unit in `S` subtracts that
input: `σ (signFlip S i · z) = σ z - 1_S(i) · z`. (For `i ∈ S` this is
`σ (-z) = σ z - z`.) -/
theorem activation_signFlip {σ : ℝ → ℝ} (hσ : OddPartLinear σ) (S : Finset (Fin n))
    (i : Fin n) (z : ℝ) :
    σ (signFlip S i * z) = σ z - (indicatorVec S i : ℝ) * z := by
  by_cases hi : i ∈ S
  · have h := hσ z
    have hs : signFlip S i = -1 := if_pos hi
    have hp : (indicatorVec S i : ℝ) = 1 := if_pos hi
    rw [hs, hp, neg_one_mul, one_mul]
    linarith
  · have hs : signFlip S i = 1 := if_neg hi
    have hp : (indicatorVec S i : ℝ) = 0 := if_neg hi
    rw [hs, hp, one_mul, zero_mul, sub_zero]

/-- The vector form of `Absorb.activation_signFlip`: `σ(D u) = σ(u) - P u`, with
`D = diag (signFlip S)` and `P = diag (indicatorVec S)`. -/
theorem activation_signFlip_vec {σ : ℝ → ℝ} (hσ : OddPartLinear σ) (S : Finset (Fin n))
    (u : Fin n → ℝ) :
    (fun i => σ ((Matrix.diagonal (signFlip S) *ᵥ u) i)) =
      (fun i => σ (u i)) - Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ u := by
  funext i
  show σ ((Matrix.diagonal (signFlip S) *ᵥ u) i) =
    σ (u i) - (Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ u) i
  rw [Matrix.mulVec_diagonal, Matrix.mulVec_diagonal]
  exact activation_signFlip hσ S i (u i)

/-- Under the index-set condition, `W_down P W_up x = -A x`. -/
theorem mulVec_indicator_eq_neg {A : Matrix (Fin d) (Fin d) ℝ} {up : Matrix (Fin n) (Fin d) ℝ}
    {down : Matrix (Fin d) (Fin n) ℝ} {S : Finset (Fin n)} (hS : IndexSetCond A up down S)
    (x : Fin d → ℝ) :
    down *ᵥ (Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ (up *ᵥ x)) = -(A *ᵥ x) := by
  have hD : down * Matrix.diagonal (indicatorVec S : Fin n → ℝ) * up = -A :=
    indexSetCond_iff_diagonal.1 hS
  first
    | (rw [Matrix.mulVec_mulVec, Matrix.mulVec_mulVec, hD, Matrix.neg_mulVec]; done)
    | (rw [Matrix.mulVec_mulVec, Matrix.mulVec_mulVec, hD]; exact Matrix.neg_mulVec x A)
    | (simp only [Matrix.mulVec_mulVec, ← Matrix.mul_assoc, hD, Matrix.neg_mulVec]; done)

/-! ### No biases -/

/-- The residual-free weights of the construction (no biases): the up-projection
`V_up = diag (signFlip S) * W_up` (row `i` of `W_up` negated for `i ∈ S`), the
down-projection `V_down = W_down` unchanged. -/
def signFlipWeights (S : Finset (Fin n)) (W : UngatedWeights d n) : UngatedWeights d n :=
  ⟨Matrix.diagonal (signFlip S) * W.up, W.down⟩

/-- **index_set_sufficient**, the explicit equation (the "if" half of the paper's
Theorems 8 and 10). If `σ` is odd-part-linear and `W_down[:,S] W_up[S,:] = -A`, then the
residual-free block with the sign-flipped weights `Absorb.signFlipWeights S W` equals the skip
block `x ↦ A x + W_down σ(W_up x)` at every `x`. -/
theorem ungatedMap_signFlip {σ : ℝ → ℝ} (hσ : OddPartLinear σ) (A : Matrix (Fin d) (Fin d) ℝ)
    (W : UngatedWeights d n) (S : Finset (Fin n)) (hS : IndexSetCond A W.up W.down S)
    (x : Fin d → ℝ) :
    ungatedMap σ (signFlipWeights S W) x = skipMap A (ungated σ d n) W x := by
  have hv : (fun i => σ (((Matrix.diagonal (signFlip S) * W.up) *ᵥ x) i)) =
      (fun i => σ ((W.up *ᵥ x) i)) -
        Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ (W.up *ᵥ x) := by
    rw [← Matrix.mulVec_mulVec]
    exact activation_signFlip_vec hσ S (W.up *ᵥ x)
  have key := mulVec_indicator_eq_neg hS x
  calc ungatedMap σ (signFlipWeights S W) x
      = W.down *ᵥ ((fun i => σ ((W.up *ᵥ x) i)) -
          Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ (W.up *ᵥ x)) :=
        congrArg (fun v => W.down *ᵥ v) hv
    _ = W.down *ᵥ (fun i => σ ((W.up *ᵥ x) i)) -
          W.down *ᵥ (Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ (W.up *ᵥ x)) :=
        Matrix.mulVec_sub _ _ _
    _ = A *ᵥ x + W.down *ᵥ (fun i => σ ((W.up *ᵥ x) i)) := by
        rw [key]
        abel
    _ = skipMap A (ungated σ d n) W x := rfl

/-- **index_set_sufficient** (the "if" half of the paper's Theorems 8 (ReLU) and 10 (GELU),
for every odd-part-linear `σ` and every skip matrix `A`; `A = 1` is the identity skip). If
some index set `S` has `W_down[:,S] W_up[S,:] = -A`, then `x ↦ A x + W_down σ(W_up x)` is
absorbable: the residual-free block `Absorb.signFlipWeights S W` of the same width computes
it. -/
theorem absorbable_of_indexSetCond_ungated {σ : ℝ → ℝ} (hσ : OddPartLinear σ)
    (A : Matrix (Fin d) (Fin d) ℝ) (W : UngatedWeights d n) (S : Finset (Fin n))
    (hS : IndexSetCond A W.up W.down S) :
    Absorbable (ungated σ d n) (skipMap A (ungated σ d n) W) :=
  ⟨signFlipWeights S W, fun x => ungatedMap_signFlip hσ A W S hS x⟩

/-! ### With biases (ours) -/

/-- The residual-free weights of the construction with biases:
`V_up = D W_up`, `c_up = D b_up`, `V_down = W_down`, `c_down = b_down + W_down P b_up`,
with `D = diag (signFlip S)` and `P = diag (indicatorVec S)`; so
`c_down = b_down + W_down[:,S] b_up[S]`. -/
def signFlipBiasedWeights (S : Finset (Fin n)) (W : BiasedWeights d n) : BiasedWeights d n :=
  ⟨Matrix.diagonal (signFlip S) * W.up, W.down, Matrix.diagonal (signFlip S) *ᵥ W.bUp,
    W.bDown + W.down *ᵥ (Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ W.bUp)⟩

/-- **index_set_sufficient** with biases (ours), the explicit equation: for odd-part-linear
`σ` and `W_down[:,S] W_up[S,:] = -A`, the residual-free biased block with weights
`Absorb.signFlipBiasedWeights S W` equals `x ↦ A x + W_down σ(W_up x + b_up) + b_down` at
every `x`. For `i ∈ S`, `σ(-(b_iᵀx + (b_up)_i)) = σ(b_iᵀx + (b_up)_i) - b_iᵀx - (b_up)_i`;
the `b_iᵀx` terms give `A x`, the `(b_up)_i` terms are absorbed into `c_down`. -/
theorem biasedMap_signFlip {σ : ℝ → ℝ} (hσ : OddPartLinear σ) (A : Matrix (Fin d) (Fin d) ℝ)
    (W : BiasedWeights d n) (S : Finset (Fin n)) (hS : IndexSetCond A W.up W.down S)
    (x : Fin d → ℝ) :
    biasedMap σ (signFlipBiasedWeights S W) x = skipMap A (biased σ d n) W x := by
  have hv : (fun i => σ (((Matrix.diagonal (signFlip S) * W.up) *ᵥ x) i +
        (Matrix.diagonal (signFlip S) *ᵥ W.bUp) i)) =
      (fun i => σ ((W.up *ᵥ x) i + W.bUp i)) -
        Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ (W.up *ᵥ x + W.bUp) := by
    funext i
    have h1 : ((Matrix.diagonal (signFlip S) * W.up) *ᵥ x) i +
        (Matrix.diagonal (signFlip S) *ᵥ W.bUp) i =
        signFlip S i * ((W.up *ᵥ x) i + W.bUp i) := by
      first
        | (rw [← Matrix.mulVec_mulVec, Matrix.mulVec_diagonal, Matrix.mulVec_diagonal, mul_add]
           done)
        | (rw [← Matrix.mulVec_mulVec, Matrix.mulVec_diagonal, Matrix.mulVec_diagonal]; ring1)
        | (simp only [← Matrix.mulVec_mulVec, Matrix.mulVec_diagonal]; ring)
    have h2 : (Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ (W.up *ᵥ x + W.bUp)) i =
        (indicatorVec S i : ℝ) * ((W.up *ᵥ x) i + W.bUp i) := by
      rw [Matrix.mulVec_diagonal, Pi.add_apply]
    show σ (((Matrix.diagonal (signFlip S) * W.up) *ᵥ x) i +
        (Matrix.diagonal (signFlip S) *ᵥ W.bUp) i) =
      σ ((W.up *ᵥ x) i + W.bUp i) -
        (Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ (W.up *ᵥ x + W.bUp)) i
    rw [h1, h2]
    exact activation_signFlip hσ S i _
  have key := mulVec_indicator_eq_neg hS x
  calc biasedMap σ (signFlipBiasedWeights S W) x
      = W.down *ᵥ ((fun i => σ ((W.up *ᵥ x) i + W.bUp i)) -
            Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ (W.up *ᵥ x + W.bUp)) +
          (W.bDown + W.down *ᵥ (Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ W.bUp)) :=
        congrArg (fun v => W.down *ᵥ v +
          (W.bDown + W.down *ᵥ (Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ W.bUp))) hv
    _ = A *ᵥ x + (W.down *ᵥ (fun i => σ ((W.up *ᵥ x) i + W.bUp i)) + W.bDown) := by
        first
          | (rw [Matrix.mulVec_sub,
              Matrix.mulVec_add (Matrix.diagonal (indicatorVec S : Fin n → ℝ)) (W.up *ᵥ x) W.bUp,
              Matrix.mulVec_add W.down
                (Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ (W.up *ᵥ x))
                (Matrix.diagonal (indicatorVec S : Fin n → ℝ) *ᵥ W.bUp), key]
             abel
             done)
          | (simp only [Matrix.mulVec_sub, Matrix.mulVec_add, key]
             abel
             done)
    _ = skipMap A (biased σ d n) W x := rfl

/-- **index_set_sufficient** with biases (ours): for odd-part-linear `σ`, if some `S` has
`W_down[:,S] W_up[S,:] = -A`, then `x ↦ A x + W_down σ(W_up x + b_up) + b_down` is absorbed
by the residual-free biased block `Absorb.signFlipBiasedWeights S W` of the same width. -/
theorem absorbable_of_indexSetCond {σ : ℝ → ℝ} (hσ : OddPartLinear σ)
    (A : Matrix (Fin d) (Fin d) ℝ) (W : BiasedWeights d n) (S : Finset (Fin n))
    (hS : IndexSetCond A W.up W.down S) :
    Absorbable (biased σ d n) (skipMap A (biased σ d n) W) :=
  ⟨signFlipBiasedWeights S W, fun x => biasedMap_signFlip hσ A W S hS x⟩

end Absorb

end
