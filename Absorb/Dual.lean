import Absorb.Basic
import Absorb.IndexSet
import Mathlib.Algebra.Order.BigOperators.Group.Finset
import Mathlib.Tactic.LinearCombination
import Mathlib.Tactic.Ring

/-!
# The dual certificate: a proof that no index set exists

**dual certificate** (ours; `THEORY.md`), for the index-set condition of the paper's
Theorems 8 and 10 (Mijoski–Karbevski, arXiv 2604.23705). Write `a_i` for column `i` of
`W_down` and `b_iᵀ` for row `i` of `W_up`. For any matrix `Y`, put
`c_i = a_iᵀ Y b_i = ∑_j ∑_k (W_down)_{j i} Y_{j k} (W_up)_{i k}` (`Absorb.dualCoeff`) and
`⟨A, Y⟩ = ∑_j ∑_k A_{j k} Y_{j k}` (`Absorb.frobenius`). If `∑_{i ∈ S} a_i b_iᵀ = -A`, pairing
with `Y` gives `-⟨A, Y⟩ = ∑_{i ∈ S} c_i`, which lies between `∑_i min(c_i, 0)` and
`∑_i max(c_i, 0)`. So `-⟨A, Y⟩` outside that interval proves that no index set `S` satisfies
the condition. The check is `O(n d²)` and exact over `ℚ`; the compiled checker
(`Absorb.Checker.checkDual`) decides it.

## Main definitions

* `Absorb.dualCoeff up down Y i` : `c_i = a_iᵀ Y b_i`.
* `Absorb.frobenius A Y` : `⟨A, Y⟩`.
* `Absorb.DualCond A up down Y` : `-⟨A, Y⟩ < ∑ min(c_i, 0)` or `-⟨A, Y⟩ > ∑ max(c_i, 0)`.

## Main results

* `Absorb.neg_frobenius_eq_sum_dualCoeff` : under the condition, `-⟨A, Y⟩ = ∑_{i ∈ S} c_i`
  (any commutative ring).
* `Absorb.not_indexSetCond_of_dual` : a dual certificate proves that no index set exists
  (any linearly ordered field).
-/

namespace Absorb

variable {d n : ℕ}

/-- The coefficient `c_i = a_iᵀ Y b_i = ∑_j ∑_k (W_down)_{j i} Y_{j k} (W_up)_{i k}` of the dual
certificate (ours), with `a_i` column `i` of `W_down` and `b_iᵀ` row `i` of `W_up`. -/
def dualCoeff {R : Type*} [CommRing R] (up : Matrix (Fin n) (Fin d) R)
    (down : Matrix (Fin d) (Fin n) R) (Y : Matrix (Fin d) (Fin d) R) (i : Fin n) : R :=
  ∑ j, ∑ k, down j i * Y j k * up i k

/-- The Frobenius pairing `⟨A, Y⟩ = ∑_j ∑_k A_{j k} Y_{j k}` (ours, for the dual
certificate). -/
def frobenius {R : Type*} [CommRing R] (A Y : Matrix (Fin d) (Fin d) R) : R :=
  ∑ j, ∑ k, A j k * Y j k

/-- The dual certificate condition (ours): `-⟨A, Y⟩ < ∑_i min(c_i, 0)` or
`∑_i max(c_i, 0) < -⟨A, Y⟩`, with `c_i = a_iᵀ Y b_i`. -/
def DualCond {R : Type*} [Field R] [LinearOrder R] (A : Matrix (Fin d) (Fin d) R)
    (up : Matrix (Fin n) (Fin d) R) (down : Matrix (Fin d) (Fin n) R)
    (Y : Matrix (Fin d) (Fin d) R) : Prop :=
  -frobenius A Y < ∑ i, min (dualCoeff up down Y i) 0 ∨
    ∑ i, max (dualCoeff up down Y i) 0 < -frobenius A Y

/-- Summing the dual coefficients over `S` pairs `Y` with `W_down[:,S] W_up[S,:]`:
`∑_{i ∈ S} c_i = ∑_j ∑_k (∑_{i ∈ S} (W_down)_{j i} (W_up)_{i k}) Y_{j k}` (ours). -/
theorem sum_dualCoeff_eq {R : Type*} [CommRing R] (up : Matrix (Fin n) (Fin d) R)
    (down : Matrix (Fin d) (Fin n) R) (Y : Matrix (Fin d) (Fin d) R) (S : Finset (Fin n)) :
    ∑ i ∈ S, dualCoeff up down Y i =
      ∑ j, ∑ k, (∑ i ∈ S, down j i * up i k) * Y j k := by
  unfold dualCoeff
  rw [Finset.sum_comm]
  refine Finset.sum_congr rfl fun j _ => ?_
  rw [Finset.sum_comm]
  refine Finset.sum_congr rfl fun k _ => ?_
  rw [Finset.sum_mul]
  exact Finset.sum_congr rfl fun i _ => by ring

/-- Under the index-set condition `W_down[:,S] W_up[S,:] = -A`, pairing with `Y` gives
`-⟨A, Y⟩ = ∑_{i ∈ S} c_i` (ours), over any commutative ring. -/
theorem neg_frobenius_eq_sum_dualCoeff {R : Type*} [CommRing R]
    {A : Matrix (Fin d) (Fin d) R} {up : Matrix (Fin n) (Fin d) R}
    {down : Matrix (Fin d) (Fin n) R} {S : Finset (Fin n)} (hS : IndexSetCond A up down S)
    (Y : Matrix (Fin d) (Fin d) R) :
    -frobenius A Y = ∑ i ∈ S, dualCoeff up down Y i := by
  rw [sum_dualCoeff_eq]
  have h : frobenius A Y + ∑ j, ∑ k, (∑ i ∈ S, down j i * up i k) * Y j k = 0 := by
    unfold frobenius
    rw [← Finset.sum_add_distrib]
    refine Finset.sum_eq_zero fun j _ => ?_
    rw [← Finset.sum_add_distrib]
    refine Finset.sum_eq_zero fun k _ => ?_
    rw [hS j k]
    ring
  linear_combination (-1 : R) * h

/-- **Dual certificate** (ours). Over a linearly ordered field, with `c_i = a_iᵀ Y b_i`: if
`-⟨A, Y⟩ < ∑_i min(c_i, 0)` or `-⟨A, Y⟩ > ∑_i max(c_i, 0)`, then no index set `S` has
`W_down[:,S] W_up[S,:] = -A`. Indeed the condition would give `-⟨A, Y⟩ = ∑_{i ∈ S} c_i`, and
`∑_i min(c_i, 0) ≤ ∑_{i ∈ S} c_i ≤ ∑_i max(c_i, 0)`. -/
theorem not_indexSetCond_of_dual {R : Type*} [Field R] [LinearOrder R] [IsStrictOrderedRing R]
    {A : Matrix (Fin d) (Fin d) R} {up : Matrix (Fin n) (Fin d) R}
    {down : Matrix (Fin d) (Fin n) R} (Y : Matrix (Fin d) (Fin d) R)
    (hY : DualCond A up down Y) (S : Finset (Fin n)) : ¬ IndexSetCond A up down S := by
  intro hS
  have key := neg_frobenius_eq_sum_dualCoeff hS Y
  have hlow : ∑ i, min (dualCoeff up down Y i) 0 ≤ ∑ i ∈ S, dualCoeff up down Y i :=
    calc ∑ i, min (dualCoeff up down Y i) 0
        ≤ ∑ i, (if i ∈ S then dualCoeff up down Y i else 0) := by
          refine Finset.sum_le_sum fun i _ => ?_
          by_cases hi : i ∈ S
          · rw [if_pos hi]
            exact min_le_left _ _
          · rw [if_neg hi]
            exact min_le_right _ _
      _ = ∑ i ∈ S, dualCoeff up down Y i := sum_univ_ite_mem S (dualCoeff up down Y)
  have hhigh : ∑ i ∈ S, dualCoeff up down Y i ≤ ∑ i, max (dualCoeff up down Y i) 0 :=
    calc ∑ i ∈ S, dualCoeff up down Y i
        = ∑ i, (if i ∈ S then dualCoeff up down Y i else 0) :=
          (sum_univ_ite_mem S (dualCoeff up down Y)).symm
      _ ≤ ∑ i, max (dualCoeff up down Y i) 0 := by
          refine Finset.sum_le_sum fun i _ => ?_
          by_cases hi : i ∈ S
          · rw [if_pos hi]
            exact le_max_left _ _
          · rw [if_neg hi]
            exact le_max_right _ _
  unfold DualCond at hY
  rcases hY with h | h
  · exact absurd (lt_of_lt_of_le (key.symm.trans_lt h) hlow) (lt_irrefl _)
  · exact absurd (lt_of_le_of_lt hhigh (h.trans_eq key)) (lt_irrefl _)

end Absorb
