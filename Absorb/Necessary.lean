import Absorb.Basic
import Absorb.Activations
import Absorb.Parity
import Absorb.IndexSet
import Absorb.BiasBlowup
import Mathlib.LinearAlgebra.Matrix.DotProduct
import Mathlib.Algebra.Order.BigOperators.Group.Finset
import Mathlib.Algebra.CharZero.Infinite
import Mathlib.Tactic.Choose
import Mathlib.Tactic.Linarith
import Mathlib.Tactic.LinearCombination
import Mathlib.Tactic.Ring

/-!
# An index set is necessary: the "only if" half of the paper's Theorem 8 (ReLU)

**index_set_necessary** (`THEORY.md`; Mijoski–Karbevski, arXiv 2604.23705, Theorem 8, "only
if"). Let `b_iᵀ` be row `i` of `W_up` and `a_i` column `i` of `W_down`. Assume the rows `b_i`
are nonzero and pairwise non-collinear (`b_i ≠ μ • b_j` for `i ≠ j` and every real `μ`) and the
columns `a_i` are nonzero. If the skip block `x ↦ A x + W_down ReLU(W_up x)` (no biases, any
skip matrix `A`) equals a residual-free ReLU block `x ↦ V_down ReLU(V_up x)` of the same width
`n`, then some index set `S` has `W_down[:,S] W_up[S,:] = -A`.

Proof (the route of `THEORY.md`, "Proof in more detail").
1. `ReLU z + ReLU (-z) = |z|` and `ReLU z - ReLU (-z) = z`: comparing both blocks at `x` and
   `-x` gives the *even identity* `∑ a_i |b_iᵀx| = ∑ v_j |u_jᵀx|` and the *odd identity*
   `2 A x + ∑ a_i b_iᵀx = ∑ v_j u_jᵀx` (`u_jᵀ` row `j` of `V_up`, `v_j` column `j` of `V_down`).
2. Second differences: `|α + s| + |α - s| = 2|α|` when `|s| ≤ |α|`, while `|t β| + |-t β| =
   2 t |β|`. So for `F x = ∑ c_l |w_lᵀx|` and small `t > 0`,
   `F(p + t q) + F(p - t q) - 2 F(p) = 2 t ∑_{l : w_lᵀp = 0} c_l |w_lᵀq|`
   (`Absorb.exists_sum_abs_secondDiff`). Applied to both sides of the even identity this is the
   *kink lemma* `Absorb.sum_ite_abs_eq_of_forall`: the kink sums on every hyperplane agree.
3. For each `i` there is `p` with `b_iᵀp = 0` and `zᵀp ≠ 0` for every listed vector `z` not
   collinear with `b_i` (`Absorb.exists_perp_of_not_collinear`, via an elementary choice of a
   vector avoiding finitely many hyperplanes, `Absorb.exists_dotProduct_ne_zero`).
4. With `q = b_i` the kink lemma reads `a_i ‖b_i‖² = ∑_{u_j ∥ b_i} v_j |u_jᵀb_i|`; since
   `a_i ≠ 0` some unit `φ(i)` of `V` has `u_{φ(i)} = μ_i b_i`, `μ_i ≠ 0`. Non-collinearity makes
   `φ` injective, hence bijective (`n` units, `n` directions); then `a_i = |μ_i| v_{φ(i)}`.
5. The odd identity, reindexed by `φ`, gives `∑_{i ∈ S} a_i b_iᵀ = -A` for
   `S = {i | μ_i < 0}`.

## Main results

* `Absorb.relu_add_relu_neg` : `ReLU z + ReLU (-z) = |z|`.
* `Absorb.even_identity`, `Absorb.odd_identity` : the two identities of step 1.
* `Absorb.abs_add_add_abs_sub_of_abs_le` : the second difference of `|·|` away from its kink.
* `Absorb.exists_sum_abs_secondDiff` : the second difference of `∑ c_l |w_lᵀx|` (step 2).
* `Absorb.sum_ite_abs_eq_of_forall` : the kink lemma.
* `Absorb.exists_dotProduct_ne_zero`, `Absorb.exists_perp_of_not_collinear` : step 3.
* `Absorb.indexSetCond_of_absorbable_relu` : **index_set_necessary** for ReLU (paper
  Theorem 8, "only if"), any skip matrix `A`, no biases.
* `Absorb.indexSetCond_of_absorbable_ungated`, `Absorb.indexSetCond_of_absorbable_geluWith` :
  the same for every bias-free activation that is ReLU at infinity (`Absorb.ReluAtInfinity`:
  GELU, the paper's Theorem 10 "only if"; SiLU and tanh-GELU, ours), through **bias_blowup**.
* `Absorb.indexSetCond_of_absorbable_biased` : the same with arbitrary biases (ours), through
  **bias_blowup**.

## Scope

The hypotheses are those of the paper's Theorem 8 (nondegenerate `W_up`, `W_down`; same width
`n` for the absorbing block); the activation cases beyond ReLU use `Absorb.ReluAtInfinity`, whose
instances are proved in `Absorb.BiasBlowup`.
-/

open scoped Matrix

noncomputable section

namespace Absorb

variable {d n : ℕ}

/-! ### Step 1: ReLU as `(z + |z|)/2`; the even and odd identities -/

/-- The even part of ReLU (used for the paper's Theorem 8): `ReLU z + ReLU (-z) = |z|`, i.e.
`ReLU z = (z + |z|)/2` together with `Absorb.oddPartLinear_relu`. -/
theorem relu_add_relu_neg (z : ℝ) : relu z + relu (-z) = |z| := by
  show max z 0 + max (-z) 0 = |z|
  rcases le_total 0 z with h | h
  · have e1 : max z 0 = z := max_eq_left h
    have e2 : max (-z) 0 = 0 := max_eq_right (neg_nonpos.mpr h)
    have e3 : |z| = z := abs_of_nonneg h
    linarith
  · have e1 : max z 0 = 0 := max_eq_right h
    have e2 : max (-z) 0 = -z := max_eq_left (neg_nonneg.mpr h)
    have e3 : |z| = -z := abs_of_nonpos h
    linarith

/-- Coordinate `r` of an ungated block (used for the paper's Theorem 8):
`(W_down σ(W_up x))_r = ∑_i (W_down)_{r i} σ(b_iᵀx)`, with `b_iᵀ` row `i` of `W_up`. -/
theorem ungatedMap_apply (σ : ℝ → ℝ) (W : UngatedWeights d n) (x : Fin d → ℝ) (r : Fin d) :
    ungatedMap σ W x r = ∑ i, W.down r i * σ (W.up i ⬝ᵥ x) := by
  -- Definitional: `ungatedMap` is `W_down *ᵥ …`, `*ᵥ` a `dotProduct`, a `Finset.sum`. `rfl` checks
  -- this at default transparency, where the semiring-derived `*`/`+` instances inside `mulVec`
  -- unfold to those of `ℝ` on the right; unfolding with `simp` is the fallback.
  first | rfl | simp [ungatedMap, Matrix.mulVec, dotProduct]

/-- Coordinate `r` of the equation "residual-free ReLU block `V` = ReLU skip block `(A, W)`"
at the point `x` (used for the paper's Theorem 8). -/
theorem coord_eq_of_forall {A : Matrix (Fin d) (Fin d) ℝ} {W V : UngatedWeights d n}
    (h : ∀ x, ungatedMap relu V x = skipMap A (ungated relu d n) W x) (x : Fin d → ℝ)
    (r : Fin d) :
    ∑ j, V.down r j * relu (V.up j ⬝ᵥ x) =
      (A *ᵥ x) r + ∑ i, W.down r i * relu (W.up i ⬝ᵥ x) := by
  -- `skipMap` and `+` on `Fin d → ℝ` unfold definitionally to coordinates.
  have h1 : ungatedMap relu V x r = (A *ᵥ x) r + ungatedMap relu W x r := congrFun (h x) r
  rw [ungatedMap_apply, ungatedMap_apply] at h1
  exact h1

/-- **Even identity** (step 1 of the paper's Theorem 8, "only if"): if the residual-free ReLU
block `V` equals the ReLU skip block `(A, W)`, then for every `x` and every coordinate `r`,
`∑_i (W_down)_{r i} |b_iᵀx| = ∑_j (V_down)_{r j} |u_jᵀx|` (`b_iᵀ`, `u_jᵀ` the rows of `W_up`,
`V_up`). Proof: add the equation at `x` and at `-x`; `A(-x) = -A x`. -/
theorem even_identity {A : Matrix (Fin d) (Fin d) ℝ} {W V : UngatedWeights d n}
    (h : ∀ x, ungatedMap relu V x = skipMap A (ungated relu d n) W x) (x : Fin d → ℝ)
    (r : Fin d) :
    ∑ i, W.down r i * |W.up i ⬝ᵥ x| = ∑ j, V.down r j * |V.up j ⬝ᵥ x| := by
  have e1 := coord_eq_of_forall h x r
  have e2 := coord_eq_of_forall h (-x) r
  have hA : (A *ᵥ (-x)) r = -((A *ᵥ x) r) := by
    rw [Matrix.mulVec_neg, Pi.neg_apply]
  have hW : ∑ i, W.down r i * |W.up i ⬝ᵥ x| =
      ∑ i, W.down r i * relu (W.up i ⬝ᵥ x) + ∑ i, W.down r i * relu (W.up i ⬝ᵥ (-x)) := by
    rw [← Finset.sum_add_distrib]
    refine Finset.sum_congr rfl fun i _ => ?_
    rw [dotProduct_neg, ← mul_add, relu_add_relu_neg]
  have hV : ∑ j, V.down r j * |V.up j ⬝ᵥ x| =
      ∑ j, V.down r j * relu (V.up j ⬝ᵥ x) + ∑ j, V.down r j * relu (V.up j ⬝ᵥ (-x)) := by
    rw [← Finset.sum_add_distrib]
    refine Finset.sum_congr rfl fun j _ => ?_
    rw [dotProduct_neg, ← mul_add, relu_add_relu_neg]
  linarith

/-- **Odd identity** (step 1 of the paper's Theorem 8, "only if"): if the residual-free ReLU
block `V` equals the ReLU skip block `(A, W)`, then for every `x` and coordinate `r`,
`2 (A x)_r + ∑_i (W_down)_{r i} b_iᵀx = ∑_j (V_down)_{r j} u_jᵀx`. Proof: subtract the
equation at `-x` from the one at `x`; `ReLU z - ReLU (-z) = z`. -/
theorem odd_identity {A : Matrix (Fin d) (Fin d) ℝ} {W V : UngatedWeights d n}
    (h : ∀ x, ungatedMap relu V x = skipMap A (ungated relu d n) W x) (x : Fin d → ℝ)
    (r : Fin d) :
    2 * (A *ᵥ x) r + ∑ i, W.down r i * (W.up i ⬝ᵥ x) = ∑ j, V.down r j * (V.up j ⬝ᵥ x) := by
  have e1 := coord_eq_of_forall h x r
  have e2 := coord_eq_of_forall h (-x) r
  have hA : (A *ᵥ (-x)) r = -((A *ᵥ x) r) := by
    rw [Matrix.mulVec_neg, Pi.neg_apply]
  have hW : ∑ i, W.down r i * (W.up i ⬝ᵥ x) =
      ∑ i, W.down r i * relu (W.up i ⬝ᵥ x) - ∑ i, W.down r i * relu (W.up i ⬝ᵥ (-x)) := by
    rw [← Finset.sum_sub_distrib]
    refine Finset.sum_congr rfl fun i _ => ?_
    rw [dotProduct_neg, ← mul_sub, oddPartLinear_relu (W.up i ⬝ᵥ x)]
  have hV : ∑ j, V.down r j * (V.up j ⬝ᵥ x) =
      ∑ j, V.down r j * relu (V.up j ⬝ᵥ x) - ∑ j, V.down r j * relu (V.up j ⬝ᵥ (-x)) := by
    rw [← Finset.sum_sub_distrib]
    refine Finset.sum_congr rfl fun j _ => ?_
    rw [dotProduct_neg, ← mul_sub, oddPartLinear_relu (V.up j ⬝ᵥ x)]
  linarith

/-! ### Step 2: second differences and the kink lemma -/

/-- Away from its kink, `|·|` is affine, so its second difference vanishes (used for the
paper's Theorem 8): if `|s| ≤ |a|` then `|a + s| + |a - s| = 2 |a|`. -/
theorem abs_add_add_abs_sub_of_abs_le {a s : ℝ} (h : |s| ≤ |a|) :
    |a + s| + |a - s| = 2 * |a| := by
  have hs1 : s ≤ |s| := le_abs_self s
  have hs2 : -|s| ≤ s := neg_abs_le s
  rcases le_total 0 a with ha | ha
  · have e0 : |a| = a := abs_of_nonneg ha
    have e1 : |a + s| = a + s := abs_of_nonneg (by linarith)
    have e2 : |a - s| = a - s := abs_of_nonneg (by linarith)
    rw [e0, e1, e2]
    ring
  · have e0 : |a| = -a := abs_of_nonpos ha
    have e1 : |a + s| = -(a + s) := abs_of_nonpos (by linarith)
    have e2 : |a - s| = -(a - s) := abs_of_nonpos (by linarith)
    rw [e0, e1, e2]
    ring

/-- `a / N * N = a` for `N ≠ 0` (a local helper: Mathlib's `div_mul_cancel₀` on `ℝ`). -/
private theorem div_mul_cancel_aux {a N : ℝ} (hN : N ≠ 0) : a / N * N = a := by
  exact div_mul_cancel₀ a hN

/-- The **second difference** of `F x = ∑_l c_l |w_lᵀx|` (step 2 of the paper's Theorem 8,
"only if"): for all `p`, `q` there is `ε > 0` such that for `0 < t ≤ ε`,
`F(p + t q) + F(p - t q) = 2 F(p) + 2 t ∑_{l : w_lᵀp = 0} c_l |w_lᵀq|`.
The terms with `w_lᵀp ≠ 0` are affine near `t = 0` (take `ε = 1/(1 + ∑_l |w_lᵀq|/|w_lᵀp|)`),
the terms with `w_lᵀp = 0` are `c_l |t| |w_lᵀq|`. -/
theorem exists_sum_abs_secondDiff {ι : Type*} [Fintype ι] (c : ι → ℝ) (w : ι → Fin d → ℝ)
    (p q : Fin d → ℝ) :
    ∃ ε : ℝ, 0 < ε ∧ ∀ t : ℝ, 0 < t → t ≤ ε →
      ∑ l, c l * |w l ⬝ᵥ (p + t • q)| + ∑ l, c l * |w l ⬝ᵥ (p - t • q)| =
        2 * ∑ l, c l * |w l ⬝ᵥ p| +
          2 * t * ∑ l, (if w l ⬝ᵥ p = 0 then c l * |w l ⬝ᵥ q| else 0) := by
  obtain ⟨T, hTdef⟩ : ∃ T : ℝ, T = ∑ l, |w l ⬝ᵥ q| / |w l ⬝ᵥ p| := ⟨_, rfl⟩
  have hT0 : 0 ≤ T := by
    rw [hTdef]
    exact Finset.sum_nonneg fun l _ => div_nonneg (abs_nonneg _) (abs_nonneg _)
  have h1T : 0 < 1 + T := by linarith
  refine ⟨(1 + T)⁻¹, inv_pos.mpr h1T, fun t ht htε => ?_⟩
  -- Away from the hyperplane `w_lᵀx = 0`, the step `t q` is small compared with `w_lᵀp`.
  have hsmall : ∀ l, w l ⬝ᵥ p ≠ 0 → |t * (w l ⬝ᵥ q)| ≤ |w l ⬝ᵥ p| := by
    intro l hl
    have hαpos : 0 < |w l ⬝ᵥ p| := abs_pos.mpr hl
    have hle : |w l ⬝ᵥ q| / |w l ⬝ᵥ p| ≤ T := by
      rw [hTdef]
      exact Finset.single_le_sum (f := fun m => |w m ⬝ᵥ q| / |w m ⬝ᵥ p|)
        (fun m _ => div_nonneg (abs_nonneg _) (abs_nonneg _)) (Finset.mem_univ l)
    have hβ : |w l ⬝ᵥ q| / |w l ⬝ᵥ p| * |w l ⬝ᵥ p| = |w l ⬝ᵥ q| :=
      div_mul_cancel_aux hαpos.ne'
    have hε : (1 + T)⁻¹ * (1 + T) = 1 := inv_mul_cancel₀ h1T.ne'
    rw [abs_mul, abs_of_pos ht]
    calc t * |w l ⬝ᵥ q| ≤ (1 + T)⁻¹ * |w l ⬝ᵥ q| :=
          mul_le_mul_of_nonneg_right htε (abs_nonneg _)
      _ = (1 + T)⁻¹ * (|w l ⬝ᵥ q| / |w l ⬝ᵥ p| * |w l ⬝ᵥ p|) := by rw [hβ]
      _ ≤ (1 + T)⁻¹ * ((1 + T) * |w l ⬝ᵥ p|) := by
          refine mul_le_mul_of_nonneg_left ?_ (inv_nonneg.mpr h1T.le)
          refine mul_le_mul_of_nonneg_right ?_ hαpos.le
          linarith
      _ = |w l ⬝ᵥ p| := by rw [← mul_assoc, hε, one_mul]
  -- The identity term by term.
  have hterm : ∀ l, c l * |w l ⬝ᵥ (p + t • q)| + c l * |w l ⬝ᵥ (p - t • q)| =
      2 * (c l * |w l ⬝ᵥ p|) + 2 * t * (if w l ⬝ᵥ p = 0 then c l * |w l ⬝ᵥ q| else 0) := by
    intro l
    have ea : w l ⬝ᵥ (p + t • q) = w l ⬝ᵥ p + t * (w l ⬝ᵥ q) := by
      rw [dotProduct_add, dotProduct_smul, smul_eq_mul]
    have es : w l ⬝ᵥ (p - t • q) = w l ⬝ᵥ p - t * (w l ⬝ᵥ q) := by
      rw [dotProduct_sub, dotProduct_smul, smul_eq_mul]
    rw [ea, es]
    by_cases hl : w l ⬝ᵥ p = 0
    · rw [if_pos hl, hl]
      have e1 : |0 + t * (w l ⬝ᵥ q)| = t * |w l ⬝ᵥ q| := by
        rw [zero_add, abs_mul, abs_of_pos ht]
      have e2 : |0 - t * (w l ⬝ᵥ q)| = t * |w l ⬝ᵥ q| := by
        rw [zero_sub, abs_neg, abs_mul, abs_of_pos ht]
      rw [e1, e2, abs_zero]
      ring
    · rw [if_neg hl]
      have key := abs_add_add_abs_sub_of_abs_le (hsmall l hl)
      linear_combination c l * key
  calc ∑ l, c l * |w l ⬝ᵥ (p + t • q)| + ∑ l, c l * |w l ⬝ᵥ (p - t • q)|
      = ∑ l, (c l * |w l ⬝ᵥ (p + t • q)| + c l * |w l ⬝ᵥ (p - t • q)|) := by
        rw [Finset.sum_add_distrib]
    _ = ∑ l, (2 * (c l * |w l ⬝ᵥ p|) +
          2 * t * (if w l ⬝ᵥ p = 0 then c l * |w l ⬝ᵥ q| else 0)) :=
        Finset.sum_congr rfl fun l _ => hterm l
    _ = 2 * ∑ l, c l * |w l ⬝ᵥ p| +
          2 * t * ∑ l, (if w l ⬝ᵥ p = 0 then c l * |w l ⬝ᵥ q| else 0) := by
        rw [Finset.sum_add_distrib, Finset.mul_sum, Finset.mul_sum]

/-- **Kink lemma** (step 2 of the paper's Theorem 8, "only if"): if
`∑_i a_i |b_iᵀx| = ∑_j v_j |u_jᵀx|` for every `x`, then for all `p`, `q` the kinks on the
hyperplanes through `p` carry the same weight on both sides:
`∑_{i : b_iᵀp = 0} a_i |b_iᵀq| = ∑_{j : u_jᵀp = 0} v_j |u_jᵀq|`. Proof: compare the second
differences `F(p + t q) + F(p - t q) - 2 F(p)` of both sides for one small `t > 0`
(`Absorb.exists_sum_abs_secondDiff`). -/
theorem sum_ite_abs_eq_of_forall {ι κ : Type*} [Fintype ι] [Fintype κ] (a : ι → ℝ)
    (b : ι → Fin d → ℝ) (v : κ → ℝ) (u : κ → Fin d → ℝ)
    (h : ∀ x, ∑ i, a i * |b i ⬝ᵥ x| = ∑ j, v j * |u j ⬝ᵥ x|) (p q : Fin d → ℝ) :
    ∑ i, (if b i ⬝ᵥ p = 0 then a i * |b i ⬝ᵥ q| else 0) =
      ∑ j, (if u j ⬝ᵥ p = 0 then v j * |u j ⬝ᵥ q| else 0) := by
  obtain ⟨ε₁, hε₁, h₁⟩ := exists_sum_abs_secondDiff a b p q
  obtain ⟨ε₂, hε₂, h₂⟩ := exists_sum_abs_secondDiff v u p q
  obtain ⟨t, ht, ht₁, ht₂⟩ : ∃ t : ℝ, 0 < t ∧ t ≤ ε₁ ∧ t ≤ ε₂ :=
    ⟨min ε₁ ε₂, lt_min hε₁ hε₂, min_le_left _ _, min_le_right _ _⟩
  have e₁ := h₁ t ht ht₁
  have e₂ := h₂ t ht ht₂
  have hK : 2 * t * ∑ i, (if b i ⬝ᵥ p = 0 then a i * |b i ⬝ᵥ q| else 0) =
      2 * t * ∑ j, (if u j ⬝ᵥ p = 0 then v j * |u j ⬝ᵥ q| else 0) := by
    linear_combination e₂ - e₁ + h (p + t • q) + h (p - t • q) - 2 * h p
  exact mul_left_cancel₀ (mul_pos two_pos ht).ne' hK

/-! ### Step 3: a point on one hyperplane and off the others -/

/-- For finitely many nonzero vectors `z_0, …, z_{m-1}` of `ℝ^d` there is a `q` with
`z_lᵀq ≠ 0` for every `l` (used for the paper's Theorem 8). Induction on `m`: from `q` good for
`z_1, …`, the point `q + t z_0` is good for all of them unless `t` is one of the finitely many
values `-(z_lᵀq)/(z_lᵀz_0)`. -/
theorem exists_dotProduct_ne_zero_fin :
    ∀ (m : ℕ) (z : Fin m → Fin d → ℝ), (∀ l, z l ≠ 0) → ∃ q : Fin d → ℝ, ∀ l, z l ⬝ᵥ q ≠ 0
  | 0, _, _ => ⟨0, fun l => Fin.elim0 l⟩
  | m + 1, z, hz => by
    classical
    obtain ⟨q, hq⟩ := exists_dotProduct_ne_zero_fin m (fun l => z l.succ) (fun l => hz l.succ)
    obtain ⟨t, ht⟩ : ∃ t : ℝ,
        t ∉ Finset.univ.image (fun l : Fin (m + 1) => -(z l ⬝ᵥ q) / (z l ⬝ᵥ z 0)) :=
      Infinite.exists_not_mem_finset _
    refine ⟨q + t • z 0, fun l hl => ?_⟩
    have e : z l ⬝ᵥ (q + t • z 0) = z l ⬝ᵥ q + t * (z l ⬝ᵥ z 0) := by
      rw [dotProduct_add, dotProduct_smul, smul_eq_mul]
    rw [e] at hl
    by_cases hc : z l ⬝ᵥ z 0 = 0
    · rw [hc, mul_zero, add_zero] at hl
      have hl0 : l = 0 ∨ ∃ j : Fin m, l = j.succ := by
        exact Fin.eq_zero_or_eq_succ l
      rcases hl0 with h0 | ⟨j, hj⟩
      · rw [h0] at hc
        exact hz 0 (dotProduct_self_eq_zero.mp hc)
      · rw [hj] at hl
        exact hq j hl
    · apply ht
      rw [Finset.mem_image]
      refine ⟨l, Finset.mem_univ l, ?_⟩
      show -(z l ⬝ᵥ q) / (z l ⬝ᵥ z 0) = t
      rw [div_eq_iff hc]
      linarith

/-- For finitely many nonzero vectors `z_l` of `ℝ^d`, indexed by any finite type, there is a `q`
with `z_lᵀq ≠ 0` for every `l` (used for the paper's Theorem 8): a vector avoids finitely many
hyperplanes. -/
theorem exists_dotProduct_ne_zero {ι : Type*} [Fintype ι] (z : ι → Fin d → ℝ)
    (hz : ∀ l, z l ≠ 0) : ∃ q : Fin d → ℝ, ∀ l, z l ⬝ᵥ q ≠ 0 := by
  classical
  obtain ⟨q, hq⟩ := exists_dotProduct_ne_zero_fin (Fintype.card ι)
    (fun k => z ((Fintype.equivFin ι).symm k)) (fun k => hz _)
  refine ⟨q, fun l => ?_⟩
  have h : z ((Fintype.equivFin ι).symm (Fintype.equivFin ι l)) ⬝ᵥ q ≠ 0 :=
    hq (Fintype.equivFin ι l)
  rwa [Equiv.symm_apply_apply] at h

/-- If `μ • b = μ' • b'` with `μ ≠ 0`, then `b = (μ⁻¹ * μ') • b'` (used for the paper's
Theorem 8). -/
theorem eq_inv_mul_smul_of_smul_eq {b b' : Fin d → ℝ} {μ μ' : ℝ} (hμ : μ ≠ 0)
    (h : μ • b = μ' • b') : b = (μ⁻¹ * μ') • b' := by
  rw [← smul_smul, ← h, smul_smul, inv_mul_cancel₀ hμ, one_smul]

/-- **A point on one hyperplane and off the others** (step 3 of the paper's Theorem 8, "only
if"): for `w ≠ 0` and finitely many vectors `z_l`, some `p` has `wᵀp = 0` and, for every `l`,
`z_lᵀp = 0` only if `z_l` is a multiple of `w`. Take `p = q - (wᵀq/‖w‖²) w`, where `q` avoids
the hyperplanes `y_l^⊥` of the nonzero `y_l = z_l - (z_lᵀw/‖w‖²) w`; then `z_lᵀp = y_lᵀq`. -/
theorem exists_perp_of_not_collinear {ι : Type*} [Fintype ι] (w : Fin d → ℝ) (hw : w ≠ 0)
    (z : ι → Fin d → ℝ) :
    ∃ p : Fin d → ℝ, w ⬝ᵥ p = 0 ∧ ∀ l, z l ⬝ᵥ p = 0 → ∃ μ : ℝ, z l = μ • w := by
  classical
  have hN : w ⬝ᵥ w ≠ 0 := fun h0 => hw (dotProduct_self_eq_zero.mp h0)
  obtain ⟨y, hy⟩ : ∃ y : ι → Fin d → ℝ, ∀ l, y l = z l - ((z l ⬝ᵥ w) / (w ⬝ᵥ w)) • w :=
    ⟨fun l => z l - ((z l ⬝ᵥ w) / (w ⬝ᵥ w)) • w, fun _ => rfl⟩
  obtain ⟨q, hq⟩ := exists_dotProduct_ne_zero (fun l : {l // y l ≠ 0} => y l.1) (fun l => l.2)
  refine ⟨q - ((w ⬝ᵥ q) / (w ⬝ᵥ w)) • w, ?_, fun l hl => ?_⟩
  · rw [dotProduct_sub, dotProduct_smul, smul_eq_mul, div_mul_cancel_aux hN, sub_self]
  · refine ⟨(z l ⬝ᵥ w) / (w ⬝ᵥ w), ?_⟩
    by_contra hne
    have hyl : y l ≠ 0 := by
      intro h0
      apply hne
      rw [hy l] at h0
      exact sub_eq_zero.mp h0
    apply hq ⟨l, hyl⟩
    show y l ⬝ᵥ q = 0
    rw [hy l, sub_dotProduct, smul_dotProduct, smul_eq_mul]
    rw [dotProduct_sub, dotProduct_smul, smul_eq_mul] at hl
    linear_combination hl

/-! ### Steps 4 and 5: matching the units, and the odd part -/

/-- **index_set_necessary** for ReLU (the paper's Theorem 8, "only if"; any skip matrix `A`,
no biases). Let `b_iᵀ = W_up i` and `a_i = (W_down r i)_r`. If the rows of `W_up` are nonzero
and pairwise non-collinear (`W_up i ≠ μ • W_up j` for `i ≠ j` and every `μ`), every column of
`W_down` is nonzero, and `x ↦ A x + W_down ReLU(W_up x)` is absorbable by residual-free ReLU
blocks of the same width `n`, then some index set `S` has `W_down[:,S] W_up[S,:] = -A`.
Proof: the kink lemma matches each direction `b_i` with exactly one unit `φ(i)` of the
absorbing block, `u_{φ(i)} = μ_i b_i` with `a_i = |μ_i| v_{φ(i)}`, and the odd part gives the
condition for `S = {i | μ_i < 0}` (see the module docstring). -/
theorem indexSetCond_of_absorbable_relu (A : Matrix (Fin d) (Fin d) ℝ) (W : UngatedWeights d n)
    (hup : ∀ i, W.up i ≠ 0)
    (hcol : ∀ i j, i ≠ j → ∀ μ : ℝ, W.up i ≠ μ • W.up j)
    (hdown : ∀ i, ∃ r, W.down r i ≠ 0)
    (habs : Absorbable (ungated relu d n) (skipMap A (ungated relu d n) W)) :
    ∃ S : Finset (Fin n), IndexSetCond A W.up W.down S := by
  classical
  obtain ⟨V, hV⟩ : ∃ V : UngatedWeights d n,
      ∀ x, ungatedMap relu V x = skipMap A (ungated relu d n) W x := habs
  -- Step 2: the kink lemma, coordinate by coordinate.
  have hkink : ∀ r p q, ∑ i, (if W.up i ⬝ᵥ p = 0 then W.down r i * |W.up i ⬝ᵥ q| else 0) =
      ∑ j, (if V.up j ⬝ᵥ p = 0 then V.down r j * |V.up j ⬝ᵥ q| else 0) :=
    fun r p q => sum_ite_abs_eq_of_forall (fun i => W.down r i) (fun i => W.up i)
      (fun j => V.down r j) (fun j => V.up j) (fun x => even_identity hV x r) p q
  -- Step 3: for each direction `b_i`, a point `p i` on its hyperplane and off the others.
  have hp : ∀ i, ∃ p : Fin d → ℝ, W.up i ⬝ᵥ p = 0 ∧ (∀ l, W.up l ⬝ᵥ p = 0 → l = i) ∧
      ∀ j, V.up j ⬝ᵥ p = 0 → ∃ μ : ℝ, V.up j = μ • W.up i := by
    intro i
    obtain ⟨p, hp0, hpz⟩ := exists_perp_of_not_collinear (W.up i) (hup i)
      (Sum.elim (fun l => W.up l) (fun j => V.up j))
    refine ⟨p, hp0, fun l hl => ?_, fun j hj => hpz (Sum.inr j) hj⟩
    by_contra hne
    obtain ⟨μ, hμ⟩ := hpz (Sum.inl l) hl
    exact hcol l i hne μ hμ
  choose p hp0 hpW hpV using hp
  have hN : ∀ i, W.up i ⬝ᵥ W.up i ≠ 0 := fun i h0 => hup i (dotProduct_self_eq_zero.mp h0)
  -- Step 4: the kink lemma at `p i` in the direction `q = b_i`.
  have hE : ∀ i r, W.down r i * |W.up i ⬝ᵥ W.up i| =
      ∑ j, (if V.up j ⬝ᵥ p i = 0 then V.down r j * |V.up j ⬝ᵥ W.up i| else 0) := by
    intro i r
    have hsum : ∑ l, (if W.up l ⬝ᵥ p i = 0 then W.down r l * |W.up l ⬝ᵥ W.up i| else 0) =
        W.down r i * |W.up i ⬝ᵥ W.up i| := by
      rw [Fintype.sum_eq_single i]
      · rw [if_pos (hp0 i)]
      · intro l hl
        exact if_neg (fun h0 => hl (hpW i l h0))
    rw [← hsum]
    exact hkink r (p i) (W.up i)
  -- Every direction is matched by some unit of the absorbing block.
  have hex : ∀ i, ∃ j, V.up j ⬝ᵥ p i = 0 ∧ V.up j ⬝ᵥ W.up i ≠ 0 := by
    intro i
    obtain ⟨r, hr⟩ := hdown i
    have hne : ∑ j, (if V.up j ⬝ᵥ p i = 0 then V.down r j * |V.up j ⬝ᵥ W.up i| else 0) ≠ 0 := by
      rw [← hE i r]
      exact mul_ne_zero hr (abs_pos.mpr (hN i)).ne'
    obtain ⟨j, -, hj⟩ := Finset.exists_ne_zero_of_sum_ne_zero hne
    have hj' : (if V.up j ⬝ᵥ p i = 0 then V.down r j * |V.up j ⬝ᵥ W.up i| else 0) ≠ 0 := hj
    refine ⟨j, ?_, ?_⟩
    · by_contra hc
      exact hj' (if_neg hc)
    · intro h0
      apply hj'
      by_cases hc : V.up j ⬝ᵥ p i = 0
      · rw [if_pos hc, h0, abs_zero, mul_zero]
      · exact if_neg hc
  -- A matched unit is a nonzero multiple of the direction.
  have hdir : ∀ i j, V.up j ⬝ᵥ p i = 0 → V.up j ⬝ᵥ W.up i ≠ 0 →
      ∃ μ : ℝ, μ ≠ 0 ∧ V.up j = μ • W.up i := by
    intro i j h1 h2
    obtain ⟨μ, hμ⟩ := hpV i j h1
    refine ⟨μ, fun h0 => h2 ?_, hμ⟩
    rw [hμ, h0, zero_smul, zero_dotProduct]
  -- A unit is a nonzero multiple of at most one direction (non-collinearity).
  have huniq : ∀ i i' j, (∃ μ : ℝ, μ ≠ 0 ∧ V.up j = μ • W.up i) →
      (∃ μ : ℝ, μ ≠ 0 ∧ V.up j = μ • W.up i') → i = i' := by
    rintro i i' j ⟨μ, hμ0, hμ⟩ ⟨μ', -, hμ'⟩
    by_contra hne
    exact hcol i i' hne (μ⁻¹ * μ') (eq_inv_mul_smul_of_smul_eq hμ0 (hμ.symm.trans hμ'))
  choose φ hφp hφb using hex
  have hφdir : ∀ i, ∃ μ : ℝ, μ ≠ 0 ∧ V.up (φ i) = μ • W.up i :=
    fun i => hdir i (φ i) (hφp i) (hφb i)
  -- `n` directions, `n` units: the matching is a bijection.
  have hinj : Function.Injective φ := by
    intro i i' h
    apply huniq i i' (φ i) (hφdir i)
    rw [h]
    exact hφdir i'
  have hsurj : Function.Surjective φ := Finite.surjective_of_injective hinj
  have hbij : Function.Bijective φ := ⟨hinj, hsurj⟩
  choose μ hμ0 hμ using hφdir
  -- `a_i = |μ_i| v_{φ(i)}`.
  have hcoef : ∀ i r, W.down r i = V.down r (φ i) * |μ i| := by
    intro i r
    have h1 := hE i r
    rw [Fintype.sum_eq_single (φ i)] at h1
    · rw [if_pos (hφp i), hμ i, smul_dotProduct, smul_eq_mul, abs_mul] at h1
      have hb : |W.up i ⬝ᵥ W.up i| ≠ 0 := (abs_pos.mpr (hN i)).ne'
      apply mul_right_cancel₀ hb
      linear_combination h1
    · intro j hj
      show (if V.up j ⬝ᵥ p i = 0 then V.down r j * |V.up j ⬝ᵥ W.up i| else 0) = 0
      by_cases hc : V.up j ⬝ᵥ p i = 0
      · by_cases hc' : V.up j ⬝ᵥ W.up i = 0
        · rw [if_pos hc, hc', abs_zero, mul_zero]
        · exfalso
          obtain ⟨i', hi'⟩ := hsurj j
          have h2 : V.up j = μ i' • W.up i' := by
            rw [← hi']
            exact hμ i'
          have hii : i' = i := huniq i' i j ⟨μ i', hμ0 i', h2⟩ (hdir i j hc hc')
          apply hj
          rw [← hi', hii]
      · exact if_neg hc
  -- Step 5: the odd identity at `x = e_k`, reindexed by `φ`.
  obtain ⟨S, hS⟩ : ∃ S : Finset (Fin n), ∀ i, i ∈ S ↔ μ i < 0 :=
    ⟨Finset.univ.filter (fun i => μ i < 0), fun i =>
      ⟨fun h0 => (Finset.mem_filter.mp h0).2,
        fun h0 => Finset.mem_filter.mpr ⟨Finset.mem_univ i, h0⟩⟩⟩
  refine ⟨S, ?_⟩
  intro r k
  have hodd := odd_identity hV (Pi.single k 1) r
  have hA : (A *ᵥ Pi.single k 1) r = A r k := by
    show A r ⬝ᵥ Pi.single k 1 = A r k
    rw [dotProduct_single, mul_one]
  have hW : ∑ i, W.down r i * (W.up i ⬝ᵥ Pi.single k 1) = ∑ i, W.down r i * W.up i k := by
    refine Finset.sum_congr rfl fun i _ => ?_
    rw [dotProduct_single, mul_one]
  have hterm : ∀ i, V.down r (φ i) * (V.up (φ i) ⬝ᵥ Pi.single k 1) =
      W.down r i * W.up i k - 2 * (if i ∈ S then W.down r i * W.up i k else 0) := by
    intro i
    rw [hμ i, smul_dotProduct, smul_eq_mul, dotProduct_single, mul_one, hcoef i r]
    by_cases hneg : μ i < 0
    · rw [if_pos ((hS i).mpr hneg), abs_of_neg hneg]
      ring
    · rw [if_neg (fun h0 => hneg ((hS i).mp h0)), abs_of_nonneg (not_lt.mp hneg)]
      ring
  have hsumV : ∑ j, V.down r j * (V.up j ⬝ᵥ Pi.single k 1) =
      ∑ i, W.down r i * W.up i k - 2 * ∑ i ∈ S, W.down r i * W.up i k := by
    calc ∑ j, V.down r j * (V.up j ⬝ᵥ Pi.single k 1)
        = ∑ i, V.down r (φ i) * (V.up (φ i) ⬝ᵥ Pi.single k 1) :=
          (Function.Bijective.sum_comp hbij
            (fun j => V.down r j * (V.up j ⬝ᵥ Pi.single k 1))).symm
      _ = ∑ i, (W.down r i * W.up i k - 2 * (if i ∈ S then W.down r i * W.up i k else 0)) :=
          Finset.sum_congr rfl fun i _ => hterm i
      _ = ∑ i, W.down r i * W.up i k -
            2 * ∑ i, (if i ∈ S then W.down r i * W.up i k else 0) := by
          rw [Finset.sum_sub_distrib, Finset.mul_sum]
      _ = ∑ i, W.down r i * W.up i k - 2 * ∑ i ∈ S, W.down r i * W.up i k := by
          exact congrArg (fun s : ℝ => ∑ i, W.down r i * W.up i k - 2 * s)
            (sum_univ_ite_mem S fun i => W.down r i * W.up i k)
  -- Restate the goal with the instances of `ℝ` (not those of `IndexSetCond`'s `CommRing`), so
  -- that its sum is syntactically the atom of `hsumV`.
  show ∑ i ∈ S, W.down r i * W.up i k = -A r k
  linarith

/-! ### Other activations and biases, through bias_blowup -/

/-- **index_set_necessary** for bias-free blocks with any activation `σ` that is ReLU at
infinity (`Absorb.ReluAtInfinity`: ReLU, GELU, tanh-GELU, SiLU), any skip matrix `A` (the
paper's Theorem 10, "only if", for GELU; ours for the others): under the nondegeneracy
hypotheses of `Absorb.indexSetCond_of_absorbable_relu`, if `x ↦ A x + W_down σ(W_up x)` is
absorbable by bias-free `σ`-blocks of the same width `n`, then some index set `S` has
`W_down[:,S] W_up[S,:] = -A`. Proof: **bias_blowup**
(`Absorb.absorbable_relu_of_absorbable_ungated`) reduces it to the ReLU case. -/
theorem indexSetCond_of_absorbable_ungated {σ : ℝ → ℝ} (hσ : ReluAtInfinity σ)
    (A : Matrix (Fin d) (Fin d) ℝ) (W : UngatedWeights d n)
    (hup : ∀ i, W.up i ≠ 0)
    (hcol : ∀ i j, i ≠ j → ∀ μ : ℝ, W.up i ≠ μ • W.up j)
    (hdown : ∀ i, ∃ r, W.down r i ≠ 0)
    (habs : Absorbable (ungated σ d n) (skipMap A (ungated σ d n) W)) :
    ∃ S : Finset (Fin n), IndexSetCond A W.up W.down S :=
  indexSetCond_of_absorbable_relu A W hup hcol hdown
    (absorbable_relu_of_absorbable_ungated hσ A W habs)

/-- **index_set_necessary** for GELU (the paper's Theorem 10, "only if"; any skip matrix `A`,
no biases): for `geluWith Φ z = z · Φ(z)` with `Φ → 1` at `+∞` and `Φ → 0` at `-∞` (the exact
GELU is the case `Φ` = the standard normal CDF) and nondegenerate weights as in
`Absorb.indexSetCond_of_absorbable_relu`, absorbability of `x ↦ A x + W_down GELU(W_up x)` by
bias-free GELU blocks of the same width forces an index set `S` with
`W_down[:,S] W_up[S,:] = -A`. -/
theorem indexSetCond_of_absorbable_geluWith {Φ : ℝ → ℝ}
    (hTop : Filter.Tendsto Φ Filter.atTop (nhds 1))
    (hBot : Filter.Tendsto Φ Filter.atBot (nhds 0))
    (A : Matrix (Fin d) (Fin d) ℝ) (W : UngatedWeights d n)
    (hup : ∀ i, W.up i ≠ 0)
    (hcol : ∀ i j, i ≠ j → ∀ μ : ℝ, W.up i ≠ μ • W.up j)
    (hdown : ∀ i, ∃ r, W.down r i ≠ 0)
    (habs : Absorbable (ungated (geluWith Φ) d n) (skipMap A (ungated (geluWith Φ) d n) W)) :
    ∃ S : Finset (Fin n), IndexSetCond A W.up W.down S :=
  indexSetCond_of_absorbable_ungated (reluAtInfinity_geluWith hTop hBot) A W hup hcol hdown habs

/-- **index_set_necessary** with biases (ours; the paper's Theorems 8 and 10 have no biases):
for any activation `σ` that is ReLU at infinity (ReLU, GELU, tanh-GELU, SiLU), any skip matrix
`A` and any biases `b_up`, `b_down`, under the nondegeneracy hypotheses on `W_up`, `W_down` of
`Absorb.indexSetCond_of_absorbable_relu`: if `x ↦ A x + W_down σ(W_up x + b_up) + b_down` is
absorbable by biased `σ`-blocks of the same width `n`, then some index set `S` has
`W_down[:,S] W_up[S,:] = -A`. Proof: **bias_blowup**
(`Absorb.absorbable_relu_of_absorbable_biased`) and the ReLU case. -/
theorem indexSetCond_of_absorbable_biased {σ : ℝ → ℝ} (hσ : ReluAtInfinity σ)
    (A : Matrix (Fin d) (Fin d) ℝ) (W : BiasedWeights d n)
    (hup : ∀ i, W.up i ≠ 0)
    (hcol : ∀ i j, i ≠ j → ∀ μ : ℝ, W.up i ≠ μ • W.up j)
    (hdown : ∀ i, ∃ r, W.down r i ≠ 0)
    (habs : Absorbable (biased σ d n) (skipMap A (biased σ d n) W)) :
    ∃ S : Finset (Fin n), IndexSetCond A W.up W.down S :=
  indexSetCond_of_absorbable_relu A (UngatedWeights.mk W.up W.down) hup hcol hdown
    (absorbable_relu_of_absorbable_biased hσ A W habs)

end Absorb

end
