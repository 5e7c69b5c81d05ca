import Absorb.Basic
import Absorb.Activations
import Absorb.Degree
import Absorb.BiasBlowup
import Absorb.Necessary
import Mathlib.Data.Matrix.Rank
import Mathlib.Algebra.Order.BigOperators.Group.Finset
import Mathlib.LinearAlgebra.Matrix.NonsingularInverse
import Mathlib.Data.Fintype.Sum
import Mathlib.Tactic.Linarith

/-!
# A residual-free first layer narrower than `2 d` cannot reproduce an invertible skip block

**depth_narrow** (ours; `THEORY.md` §12), its first-layer core. Let `Q` be the up-projection
of a residual-free ReLU block `h(x) = V ReLU(Q x)` of width `m < 2 d`. For a point `x` off the
hyperplanes of the nonzero rows of `Q`, the active sets `{j : (Q x)_j > 0}` and
`{j : (Q (-x))_j > 0}` are disjoint, so one of `x`, `-x` — call it `x₀` — has fewer than `d`
active units. On the cone of points `t x₀ + v` with `t ≥ t₀(v)` (an explicit `t₀`, no limit),
`h` is affine with linear part `M = V D Q` (`D` the 0/1 pattern of `x₀`), of rank below `d`
(`Absorb.exists_cone_linear_rank_lt`).

For one block this settles the question: if the ReLU skip block `f(x) = A x + W ReLU(U x)`
(any skip `A`) has an invertible Jacobian `J(D) = A + W D U` on every region of `U`'s
arrangement that some point realizes, then on the same cone (taking `x₀` also off `U`'s
hyperplanes) `f` is affine with linear part `J`; `f = h` forces `J = M` (both agree on every
direction `v`), but `rank J = d > rank M` (`Absorb.not_absorbable_of_narrow`). Through
**bias_blowup** the same holds for every activation that is ReLU at infinity, with any biases,
when the absorbing block has the same width `n < 2 d`
(`Absorb.not_absorbable_biased_of_narrow`, `Absorb.not_absorbable_ungated_of_narrow`).

The same counting gives the elementary half of **Corollary B0** (`THEORY.md` §12): the ReLU
layer `x ↦ ReLU(P x)` with fewer than `2 d` rows is not injective. The active rows at `x₀` span
less than `ℝ^d`, so some `v ≠ 0` is orthogonal to all of them, and `t x₀ + v`, `t x₀` have the
same image for `t` large (`Absorb.not_injective_relu_of_lt_two_mul`); a residual-free block
`V ReLU(P x)` of width below `2 d` is therefore not injective either
(`Absorb.not_injective_ungatedMap_relu_of_lt_two_mul`).

## Scope

Formal: the single-block statement (depth one) for ReLU without biases and any absorbing width
`m < 2 d`, its biased and ReLU-at-infinity forms through bias_blowup, and the first-layer core
of the stack statement (a residual-free ReLU block of width `m < 2 d` is affine of rank `< d`
on an open cone), and the elementary half of Corollary B0 (a ReLU layer, or a residual-free ReLU
block, narrower than `2 d` is not injective). Not formal: the depth-`L` statement of `THEORY.md`
§12 (the open-image argument for the residual stack `R` and the null image of the residual-free
stack `H`), and B0's other half (an injective residual stack forces every layer of `H` to be
injective: invariance of domain).

## Main definitions

* `Absorb.reluPattern U x` : the 0/1 activation pattern of the units of `U` at `x`.
* `Absorb.patternJacobian A W x` : `A + W_down D(x) W_up`, the Jacobian of the ReLU skip block
  on the region of `x`.
* `Absorb.reluLayer P` : the ReLU layer `x ↦ ReLU(P x)`.

## Main results

* `Absorb.relu_add_of_abs_le` : `ReLU (a + b) = ReLU a + [a > 0] b` when `|b| ≤ |a|`.
* `Absorb.exists_pos_mul_abs_ge` : the explicit scale `t` of the cone.
* `Absorb.ungatedMap_relu_add` : a ReLU block is affine on the cone.
* `Absorb.card_pos_add_card_pos_neg_le`, `Absorb.exists_generic_narrow` : the counting step.
* `Absorb.rank_diagonal_mul_lt_of_card_lt`, `Absorb.rank_lt_of_card_lt` : the active rows, and
  the linear piece, have rank below `d`.
* `Absorb.exists_cone_linear_rank_lt` : the first-layer core of **depth_narrow**.
* `Absorb.not_absorbable_of_narrow` : **depth_narrow**, one block, ReLU, no biases.
* `Absorb.not_absorbable_biased_of_narrow`, `Absorb.not_absorbable_ungated_of_narrow` : through
  **bias_blowup**.
* `Absorb.exists_ne_zero_mulVec_eq_zero_of_rank_lt` : rank–nullity, a nonzero kernel vector.
* `Absorb.not_injective_relu_of_lt_two_mul`, `Absorb.not_injective_ungatedMap_relu_of_lt_two_mul` :
  **Corollary B0**, the elementary half.
-/

open Matrix

noncomputable section

namespace Absorb

variable {d n m : ℕ}

/-- The activation pattern of the ReLU units of `U` at `x`: `1` where `(U x)_i > 0`, else `0`
(the diagonal of `D` in `THEORY.md` §12). -/
def reluPattern (U : Matrix (Fin n) (Fin d) ℝ) (x : Fin d → ℝ) (i : Fin n) : ℝ :=
  if 0 < (U *ᵥ x) i then 1 else 0

/-- The Jacobian `J(D) = A + W_down D W_up` of the ReLU skip block on the region of `x`, with
`D = diag (Absorb.reluPattern W_up x)`. -/
def patternJacobian (A : Matrix (Fin d) (Fin d) ℝ) (W : UngatedWeights d n) (x : Fin d → ℝ) :
    Matrix (Fin d) (Fin d) ℝ :=
  A + W.down * diagonal (reluPattern W.up x) * W.up

/-! ### ReLU is affine away from its kink -/

/-- `ReLU (a + b) = ReLU a + (if a > 0 then b else 0)` when `|b| ≤ |a|`: the perturbation `b`
does not move `a + b` across the kink. -/
theorem relu_add_of_abs_le {a b : ℝ} (h : |b| ≤ |a|) :
    relu (a + b) = relu a + if 0 < a then b else 0 := by
  show max (a + b) 0 = max a 0 + if 0 < a then b else 0
  rcases lt_trichotomy a 0 with ha | rfl | ha
  · rw [abs_of_neg ha] at h
    have hb := le_abs_self b
    have hab : a + b ≤ 0 := by linarith
    rw [if_neg (not_lt.2 ha.le), max_eq_right hab, max_eq_right ha.le, add_zero]
  · have hb : b = 0 := abs_eq_zero.1 (le_antisymm (by rwa [abs_zero] at h) (abs_nonneg b))
    subst hb
    simp
  · rw [abs_of_pos ha] at h
    have hb := neg_abs_le b
    have hab : 0 ≤ a + b := by linarith
    rw [if_pos ha, max_eq_left hab, max_eq_left ha.le]

/-- The explicit scale of the cone: for finitely many pairs `(a_i, b_i)` with `a_i = 0 → b_i = 0`,
`t = 1 + ∑_i |b_i| / |a_i|` is positive and has `|b_i| ≤ t |a_i|` for every `i`. -/
theorem exists_pos_mul_abs_ge {ι : Type*} [Fintype ι] (a b : ι → ℝ)
    (hab : ∀ i, a i = 0 → b i = 0) : ∃ t : ℝ, 0 < t ∧ ∀ i, |b i| ≤ t * |a i| := by
  have h0 : 0 ≤ ∑ j, |b j| / |a j| :=
    Finset.sum_nonneg fun j _ => div_nonneg (abs_nonneg _) (abs_nonneg _)
  refine ⟨1 + ∑ j, |b j| / |a j|, by linarith, fun i => ?_⟩
  by_cases hi : a i = 0
  · simp only [hab i hi, hi, abs_zero, mul_zero, le_refl]
  · have hpos : 0 < |a i| := abs_pos.2 hi
    have hle : |b i| / |a i| ≤ ∑ j, |b j| / |a j| :=
      Finset.single_le_sum (f := fun j => |b j| / |a j|)
        (fun j _ => div_nonneg (abs_nonneg _) (abs_nonneg _)) (Finset.mem_univ i)
    have hbi : |b i| = |b i| / |a i| * |a i| := (div_mul_cancel₀ _ hpos.ne').symm
    rw [hbi]
    exact mul_le_mul_of_nonneg_right (by linarith) (abs_nonneg _)

/-- A pre-activation that vanishes at a generic point comes from a zero row: if every nonzero
row `U_i` has `U_i ⬝ x₀ ≠ 0` and `(U x₀)_i = 0`, then `(U v)_i = 0` for every `v`. -/
theorem mulVec_apply_eq_zero_of_generic {U : Matrix (Fin n) (Fin d) ℝ} {x₀ : Fin d → ℝ}
    (hgen : ∀ i, U i ≠ 0 → U i ⬝ᵥ x₀ ≠ 0) (i : Fin n) (h : (U *ᵥ x₀) i = 0)
    (v : Fin d → ℝ) : (U *ᵥ v) i = 0 := by
  by_cases hi : U i = 0
  · show U i ⬝ᵥ v = 0
    rw [hi, zero_dotProduct]
  · exact absurd h (hgen i hi)

/-- Scaling by `t > 0` keeps the activation pattern: `(U (t x))_i > 0 ↔ (U x)_i > 0`. -/
theorem pos_mulVec_smul_iff (U : Matrix (Fin n) (Fin d) ℝ) {t : ℝ} (ht : 0 < t)
    (x : Fin d → ℝ) (i : Fin n) : 0 < (U *ᵥ (t • x)) i ↔ 0 < (U *ᵥ x) i := by
  rw [mulVec_smul_coord]
  constructor
  · intro h
    by_contra hn
    have hn' : (U *ᵥ x) i ≤ 0 := not_lt.1 hn
    nlinarith
  · intro h
    exact mul_pos ht h

/-- `|(U (t x))_i| = t |(U x)_i|` for `t > 0`. -/
theorem abs_mulVec_smul (U : Matrix (Fin n) (Fin d) ℝ) {t : ℝ} (ht : 0 < t) (x : Fin d → ℝ)
    (i : Fin n) : |(U *ᵥ (t • x)) i| = t * |(U *ᵥ x) i| := by
  rw [mulVec_smul_coord, abs_mul, abs_of_pos ht]

/-- **A ReLU block is affine on a cone.** If `y` has the activation pattern of `x₀` and the
direction `v` moves no pre-activation across its kink (`|(U v)_i| ≤ |(U y)_i|`), then
`W_down ReLU(U (y + v)) = W_down ReLU(U y) + (W_down D U) v` with `D = diag (pattern of x₀)`. -/
theorem ungatedMap_relu_add (W : UngatedWeights d n) (y v x₀ : Fin d → ℝ)
    (hpat : ∀ i, 0 < (W.up *ᵥ y) i ↔ 0 < (W.up *ᵥ x₀) i)
    (hv : ∀ i, |(W.up *ᵥ v) i| ≤ |(W.up *ᵥ y) i|) :
    ungatedMap relu W (y + v) =
      ungatedMap relu W y + (W.down * diagonal (reluPattern W.up x₀) * W.up) *ᵥ v := by
  have hin : (fun i => relu ((W.up *ᵥ (y + v)) i)) =
      (fun i => relu ((W.up *ᵥ y) i)) + diagonal (reluPattern W.up x₀) *ᵥ (W.up *ᵥ v) := by
    funext i
    simp only [Pi.add_apply, Matrix.mulVec_add, Matrix.mulVec_diagonal]
    rw [relu_add_of_abs_le (hv i)]
    by_cases h : 0 < (W.up *ᵥ x₀) i
    · rw [if_pos ((hpat i).2 h)]
      simp only [reluPattern, if_pos h, one_mul]
    · rw [if_neg fun h' => h ((hpat i).1 h')]
      simp only [reluPattern, if_neg h, zero_mul]
  show (W.down *ᵥ fun i => relu ((W.up *ᵥ (y + v)) i)) =
    (W.down *ᵥ fun i => relu ((W.up *ᵥ y) i)) +
      (W.down * diagonal (reluPattern W.up x₀) * W.up) *ᵥ v
  rw [hin, Matrix.mulVec_add, ← Matrix.mulVec_mulVec, ← Matrix.mulVec_mulVec]

/-! ### Counting active units -/

/-- The active sets at `x` and at `-x` are disjoint: `#{j : (Q x)_j > 0} + #{j : (Q (-x))_j > 0}`
is at most the width `m`. -/
theorem card_pos_add_card_pos_neg_le (Q : Matrix (Fin m) (Fin d) ℝ) (x : Fin d → ℝ) :
    Fintype.card {j // 0 < (Q *ᵥ x) j} + Fintype.card {j // 0 < (Q *ᵥ -x) j} ≤ m := by
  rw [← Fintype.card_sum]
  refine (Fintype.card_le_of_injective
    (Sum.elim Subtype.val Subtype.val :
      {j // 0 < (Q *ᵥ x) j} ⊕ {j // 0 < (Q *ᵥ -x) j} → Fin m) ?_).trans (Fintype.card_fin m).le
  rintro (⟨i, hi⟩ | ⟨i, hi⟩) (⟨j, hj⟩ | ⟨j, hj⟩) h
  · have hij : i = j := h
    subst hij
    rfl
  · have hij : i = j := h
    subst hij
    rw [Matrix.mulVec_neg, Pi.neg_apply] at hj
    exact (lt_asymm hi (neg_pos.1 hj)).elim
  · have hij : i = j := h
    subst hij
    rw [Matrix.mulVec_neg, Pi.neg_apply] at hi
    exact (lt_asymm hj (neg_pos.1 hi)).elim
  · have hij : i = j := h
    subst hij
    rfl

/-- **The counting step of depth_narrow.** For `Q` of width `m < 2 d` and finitely many nonzero
vectors `z_l`, some `x₀` avoids every hyperplane `z_l^⊥` and every hyperplane of a nonzero row
of `Q`, and has fewer than `d` active units: take `q` generic (`Absorb.exists_dotProduct_ne_zero`)
and `x₀ = q` or `x₀ = -q`, whichever has the smaller active set. -/
theorem exists_generic_narrow {ι : Type*} [Fintype ι] (Q : Matrix (Fin m) (Fin d) ℝ)
    (hm : m < 2 * d) (z : ι → Fin d → ℝ) (hz : ∀ l, z l ≠ 0) :
    ∃ x₀ : Fin d → ℝ, (∀ l, z l ⬝ᵥ x₀ ≠ 0) ∧ (∀ j, Q j ≠ 0 → Q j ⬝ᵥ x₀ ≠ 0) ∧
      Fintype.card {j // 0 < (Q *ᵥ x₀) j} < d := by
  obtain ⟨q, hq⟩ := exists_dotProduct_ne_zero (Sum.elim z fun j : {j // Q j ≠ 0} => Q j.1)
    (by
      rintro (l | ⟨j, hj⟩)
      · exact hz l
      · exact hj)
  have hqz : ∀ l, z l ⬝ᵥ q ≠ 0 := fun l => hq (Sum.inl l)
  have hqQ : ∀ j, Q j ≠ 0 → Q j ⬝ᵥ q ≠ 0 := fun j hj => hq (Sum.inr ⟨j, hj⟩)
  have hc := card_pos_add_card_pos_neg_le Q q
  by_cases h1 : Fintype.card {j // 0 < (Q *ᵥ q) j} < d
  · exact ⟨q, hqz, hqQ, h1⟩
  · refine ⟨-q, fun l => ?_, fun j hj => ?_, by omega⟩
    · rw [dotProduct_neg]
      exact neg_ne_zero.2 (hqz l)
    · rw [dotProduct_neg]
      exact neg_ne_zero.2 (hqQ j hj)

/-- Only active units have a nonzero pattern entry: `#{j : D_jj ≠ 0} ≤ #{j : (U x₀)_j > 0}` for
`D = diag (Absorb.reluPattern U x₀)`. -/
theorem card_reluPattern_ne_zero_le (U : Matrix (Fin n) (Fin d) ℝ) (x₀ : Fin d → ℝ) :
    Fintype.card {j // reluPattern U x₀ j ≠ 0} ≤ Fintype.card {j // 0 < (U *ᵥ x₀) j} := by
  refine Fintype.card_le_of_injective (fun j => ⟨j.1, ?_⟩) ?_
  · by_contra hn
    exact j.2 (if_neg hn)
  · intro a b hab
    exact Subtype.ext (congrArg Subtype.val hab)

/-- **The active rows span less than `ℝ^d`.** If fewer than `d` units of `U` are active at `x₀`,
then `rank (D U) ≤ rank D = #{j : D_jj ≠ 0} < d`, with `D = diag (Absorb.reluPattern U x₀)`. -/
theorem rank_diagonal_mul_lt_of_card_lt (U : Matrix (Fin n) (Fin d) ℝ) {x₀ : Fin d → ℝ}
    (hcard : Fintype.card {j // 0 < (U *ᵥ x₀) j} < d) :
    (diagonal (reluPattern U x₀) * U).rank < d := by
  calc (diagonal (reluPattern U x₀) * U).rank
      _ ≤ (diagonal (reluPattern U x₀)).rank := Matrix.rank_mul_le_left _ _
      _ = Fintype.card {j // reluPattern U x₀ j ≠ 0} := Matrix.rank_diagonal _
      _ ≤ Fintype.card {j // 0 < (U *ᵥ x₀) j} := card_reluPattern_ne_zero_le U x₀
      _ < d := hcard

/-- **The linear piece has rank below `d`.** If fewer than `d` units of `V` are active at `x₀`,
then `rank (V_down D V_up) ≤ rank (D V_up) < d` (`Absorb.rank_diagonal_mul_lt_of_card_lt`). -/
theorem rank_lt_of_card_lt (V : UngatedWeights d m) {x₀ : Fin d → ℝ}
    (hcard : Fintype.card {j // 0 < (V.up *ᵥ x₀) j} < d) :
    (V.down * diagonal (reluPattern V.up x₀) * V.up).rank < d := by
  calc (V.down * diagonal (reluPattern V.up x₀) * V.up).rank
      _ = (V.down * (diagonal (reluPattern V.up x₀) * V.up)).rank := by rw [Matrix.mul_assoc]
      _ ≤ (diagonal (reluPattern V.up x₀) * V.up).rank := Matrix.rank_mul_le_right _ _
      _ < d := rank_diagonal_mul_lt_of_card_lt V.up hcard

/-! ### depth_narrow -/

/-- **depth_narrow, first-layer core** (ours): a residual-free ReLU block of width `m < 2 d` is
affine of rank below `d` on a cone: there are `x₀` and `M` with `rank M < d` such that for every
direction `v` there is a `t₀ > 0` with `h(t x₀ + v) = h(t x₀) + M v` for every `t ≥ t₀`. So every
residual-free stack whose first block is this one is, on that cone, a function of `M v`. -/
theorem exists_cone_linear_rank_lt (V : UngatedWeights d m) (hm : m < 2 * d) :
    ∃ (x₀ : Fin d → ℝ) (M : Matrix (Fin d) (Fin d) ℝ), M.rank < d ∧
      ∀ v, ∃ t₀ : ℝ, 0 < t₀ ∧ ∀ t : ℝ, t₀ ≤ t →
        ungatedMap relu V (t • x₀ + v) = ungatedMap relu V (t • x₀) + M *ᵥ v := by
  obtain ⟨x₀, -, hVgen, hcard⟩ :=
    exists_generic_narrow V.up hm (fun e : Empty => e.elim) (fun e => e.elim)
  refine ⟨x₀, _, rank_lt_of_card_lt V hcard, fun v => ?_⟩
  obtain ⟨t₀, ht₀, hb⟩ := exists_pos_mul_abs_ge (V.up *ᵥ x₀) (V.up *ᵥ v)
    (fun j h => mulVec_apply_eq_zero_of_generic hVgen j h v)
  refine ⟨t₀, ht₀, fun t ht => ?_⟩
  have htpos : 0 < t := lt_of_lt_of_le ht₀ ht
  -- `|(V v)_j| ≤ t₀ |(V x₀)_j| ≤ t |(V x₀)_j| = |(V (t x₀))_j|`.
  have hbt : ∀ j, |(V.up *ᵥ v) j| ≤ |(V.up *ᵥ (t • x₀)) j| := fun j => by
    rw [abs_mulVec_smul V.up htpos]
    exact (hb j).trans (mul_le_mul_of_nonneg_right ht (abs_nonneg _))
  exact ungatedMap_relu_add V (t • x₀) v x₀ (fun j => pos_mulVec_smul_iff V.up htpos x₀ j) hbt

/-- **depth_narrow, one block** (ours). Let `f(x) = A x + W_down ReLU(W_up x)` (no biases, any
skip `A`) have `det (A + W_down D W_up) ≠ 0` for the pattern `D` of every point off the
hyperplanes of the nonzero rows of `W_up` (every realized region). Then `f` equals no
residual-free ReLU block of width `m < 2 d`: on a cone where both are affine, `f = h` would make
the invertible `J = A + W_down D W_up` equal to a matrix of rank below `d`. -/
theorem not_absorbable_of_narrow (A : Matrix (Fin d) (Fin d) ℝ) (W : UngatedWeights d n)
    (hm : m < 2 * d)
    (hdet : ∀ y : Fin d → ℝ, (∀ i, W.up i ≠ 0 → W.up i ⬝ᵥ y ≠ 0) →
      (patternJacobian A W y).det ≠ 0) :
    ¬ Absorbable (ungated relu d m) (skipMap A (ungated relu d n) W) := by
  intro habs
  obtain ⟨V, hV⟩ : ∃ V : UngatedWeights d m,
      ∀ x, ungatedMap relu V x = A *ᵥ x + ungatedMap relu W x := habs
  obtain ⟨x₀, hW, hVgen, hcard⟩ := exists_generic_narrow V.up hm
    (fun i : {i // W.up i ≠ 0} => W.up i.1) (fun i => i.2)
  have hWgen : ∀ i, W.up i ≠ 0 → W.up i ⬝ᵥ x₀ ≠ 0 := fun i hi => hW ⟨i, hi⟩
  -- On the cone `t x₀ + v` both blocks are affine; they agree, so their linear parts agree.
  have hJM : ∀ v, patternJacobian A W x₀ *ᵥ v =
      (V.down * diagonal (reluPattern V.up x₀) * V.up) *ᵥ v := by
    intro v
    have hab : ∀ l, Sum.elim (W.up *ᵥ x₀) (V.up *ᵥ x₀) l = 0 →
        Sum.elim (W.up *ᵥ v) (V.up *ᵥ v) l = 0 := by
      rintro (i | j) h
      · exact mulVec_apply_eq_zero_of_generic hWgen i h v
      · exact mulVec_apply_eq_zero_of_generic hVgen j h v
    obtain ⟨t, ht, hb⟩ := exists_pos_mul_abs_ge _ _ hab
    have eW := ungatedMap_relu_add W (t • x₀) v x₀ (fun i => pos_mulVec_smul_iff W.up ht x₀ i)
      (fun i => by
        rw [abs_mulVec_smul W.up ht]
        exact hb (Sum.inl i))
    have eV := ungatedMap_relu_add V (t • x₀) v x₀ (fun j => pos_mulVec_smul_iff V.up ht x₀ j)
      (fun j => by
        rw [abs_mulVec_smul V.up ht]
        exact hb (Sum.inr j))
    have e1 := hV (t • x₀ + v)
    have e2 := hV (t • x₀)
    rw [eV, eW, Matrix.mulVec_add, e2] at e1
    rw [patternJacobian, Matrix.add_mulVec]
    funext j
    have h := congrFun e1 j
    simp only [Pi.add_apply] at h ⊢
    linarith
  have hJ : patternJacobian A W x₀ = V.down * diagonal (reluPattern V.up x₀) * V.up :=
    sub_eq_zero.1 (eq_zero_of_forall_mulVec_eq_zero fun v => by
      rw [Matrix.sub_mulVec, hJM v, sub_self])
  have hrJ : (patternJacobian A W x₀).rank = d := by
    rw [Matrix.rank_of_isUnit _ ((Matrix.isUnit_iff_isUnit_det _).2
      (isUnit_iff_ne_zero.2 (hdet x₀ hWgen))), Fintype.card_fin]
  have hrM := rank_lt_of_card_lt V hcard
  rw [← hJ] at hrM
  omega

/-- **depth_narrow with biases** (ours): for `σ` ReLU at infinity (ReLU, GELU, tanh-GELU, SiLU,
softplus, ELU), if the bias-free ReLU block with the same `W_up`, `W_down` satisfies the
determinant hypothesis of `Absorb.not_absorbable_of_narrow` and the width is `n < 2 d`, then no
biases make `x ↦ A x + W_down σ(W_up x + b_up) + b_down` absorbable by residual-free `σ`-blocks
with biases of the same width (through **bias_blowup**). -/
theorem not_absorbable_biased_of_narrow {σ : ℝ → ℝ} (hσ : ReluAtInfinity σ)
    (A : Matrix (Fin d) (Fin d) ℝ) (W : BiasedWeights d n) (hn : n < 2 * d)
    (hdet : ∀ y : Fin d → ℝ, (∀ i, W.up i ≠ 0 → W.up i ⬝ᵥ y ≠ 0) →
      (patternJacobian A (UngatedWeights.mk W.up W.down) y).det ≠ 0) :
    ¬ Absorbable (biased σ d n) (skipMap A (biased σ d n) W) :=
  not_absorbable_biased_of_not_absorbable_relu hσ A W
    (not_absorbable_of_narrow A (UngatedWeights.mk W.up W.down) hn hdet)

/-- **depth_narrow without biases, any activation ReLU at infinity** (ours): the same for the
bias-free `σ`-block `x ↦ A x + W_down σ(W_up x)` of width `n < 2 d` (through **bias_blowup**). -/
theorem not_absorbable_ungated_of_narrow {σ : ℝ → ℝ} (hσ : ReluAtInfinity σ)
    (A : Matrix (Fin d) (Fin d) ℝ) (W : UngatedWeights d n) (hn : n < 2 * d)
    (hdet : ∀ y : Fin d → ℝ, (∀ i, W.up i ≠ 0 → W.up i ⬝ᵥ y ≠ 0) →
      (patternJacobian A W y).det ≠ 0) :
    ¬ Absorbable (ungated σ d n) (skipMap A (ungated σ d n) W) :=
  fun h => not_absorbable_of_narrow A W hn hdet (absorbable_relu_of_absorbable_ungated hσ A W h)

/-! ### Corollary B0, the elementary half: a narrow ReLU layer is not injective -/

/-- The ReLU layer `x ↦ ReLU(P x)` of `P : ℝ^d → ℝ^n` (no biases): the hidden activations of a
residual-free block `x ↦ V ReLU(P x)`. -/
def reluLayer (P : Matrix (Fin n) (Fin d) ℝ) (x : Fin d → ℝ) : Fin n → ℝ :=
  fun i => relu ((P *ᵥ x) i)

/-- **A matrix of rank below `d` kills a nonzero vector** (rank–nullity for
`M.mulVecLin : ℝ^d → ℝ^k`: `rank M + dim ker M = d`). -/
theorem exists_ne_zero_mulVec_eq_zero_of_rank_lt {k : ℕ} (M : Matrix (Fin k) (Fin d) ℝ)
    (h : M.rank < d) : ∃ v : Fin d → ℝ, v ≠ 0 ∧ M *ᵥ v = 0 := by
  have hnull : Module.finrank ℝ (LinearMap.range M.mulVecLin) +
      Module.finrank ℝ (LinearMap.ker M.mulVecLin) = d :=
    (LinearMap.finrank_range_add_finrank_ker M.mulVecLin).trans (Module.finrank_fin_fun ℝ)
  have hrank : M.rank = Module.finrank ℝ (LinearMap.range M.mulVecLin) := rfl
  have hker : LinearMap.ker M.mulVecLin ≠ ⊥ := by
    intro hbot
    have h0 : Module.finrank ℝ (LinearMap.ker M.mulVecLin) = 0 := by
      rw [hbot]
      exact finrank_bot ℝ (Fin d → ℝ)
    omega
  obtain ⟨v, hv, hv0⟩ := Submodule.exists_mem_ne_zero_of_ne_bot hker
  exact ⟨v, hv0, (Matrix.mulVecLin_apply M v).symm.trans (LinearMap.mem_ker.1 hv)⟩

/-- A direction killed by `D P` (`D = diag (Absorb.reluPattern P x₀)`) is orthogonal to every row
of `P` that is active at `x₀`: `(P v)_i = 0` where `(P x₀)_i > 0`. -/
theorem mulVec_apply_eq_zero_of_active {P : Matrix (Fin n) (Fin d) ℝ} {x₀ v : Fin d → ℝ}
    (hv : (diagonal (reluPattern P x₀) * P) *ᵥ v = 0) (i : Fin n) (hi : 0 < (P *ᵥ x₀) i) :
    (P *ᵥ v) i = 0 := by
  -- `h : (D P v)_i = 0_i`, and `(D P v)_i = D_ii (P v)_i = (P v)_i` since `D_ii = 1`.
  have h := congrFun hv i
  have hw : reluPattern P x₀ i = 1 := if_pos hi
  rw [← Matrix.mulVec_mulVec, Matrix.mulVec_diagonal, hw, one_mul] at h
  exact h

/-- **Moving along `v` changes nothing on the cone.** If `|(P v)_i| ≤ t |(P x₀)_i|` (`t > 0`) and
`(P v)_i = 0` whenever unit `i` is active at `x₀`, then
`ReLU((P (t x₀ + v))_i) = ReLU((P (t x₀))_i)`: an inactive unit stays inactive
(`Absorb.relu_add_of_abs_le`), an active one does not move. -/
theorem relu_mulVec_smul_add_eq {P : Matrix (Fin n) (Fin d) ℝ} {x₀ v : Fin d → ℝ} {t : ℝ}
    (ht : 0 < t) (i : Fin n) (hb : |(P *ᵥ v) i| ≤ t * |(P *ᵥ x₀) i|)
    (hact : 0 < (P *ᵥ x₀) i → (P *ᵥ v) i = 0) :
    relu ((P *ᵥ (t • x₀ + v)) i) = relu ((P *ᵥ (t • x₀)) i) := by
  have hab : |(P *ᵥ v) i| ≤ |(P *ᵥ (t • x₀)) i| := by
    rw [abs_mulVec_smul P ht x₀ i]
    exact hb
  have hsplit : (P *ᵥ (t • x₀ + v)) i = (P *ᵥ (t • x₀)) i + (P *ᵥ v) i := by
    rw [Matrix.mulVec_add, Pi.add_apply]
  rw [hsplit, relu_add_of_abs_le hab]
  by_cases h : 0 < (P *ᵥ (t • x₀)) i
  · rw [if_pos h, hact ((pos_mulVec_smul_iff P ht x₀ i).1 h), add_zero]
  · rw [if_neg h, add_zero]

/-- **Corollary B0, the elementary half** (cf. Puthawala et al., JMLR 2022): a ReLU layer
`x ↦ ReLU(P x)` with fewer than `2 d` rows is not injective. Take `x₀` off the hyperplanes of
the nonzero rows of `P` with fewer than `d` active units (`Absorb.exists_generic_narrow`); the
active rows span less than `ℝ^d` (`Absorb.rank_diagonal_mul_lt_of_card_lt`), so some `v ≠ 0` is
orthogonal to all of them; for `t` large, `t x₀ + v` and `t x₀` have the same image. -/
theorem not_injective_relu_of_lt_two_mul (P : Matrix (Fin n) (Fin d) ℝ) (hn : n < 2 * d) :
    ¬ Function.Injective (reluLayer P) := by
  intro hinj
  obtain ⟨x₀, -, hgen, hcard⟩ :=
    exists_generic_narrow P hn (fun e : Empty => e.elim) (fun e => e.elim)
  obtain ⟨v, hv0, hv⟩ :=
    exists_ne_zero_mulVec_eq_zero_of_rank_lt _ (rank_diagonal_mul_lt_of_card_lt P hcard)
  obtain ⟨t, ht, hb⟩ := exists_pos_mul_abs_ge (P *ᵥ x₀) (P *ᵥ v)
    (fun i h => mulVec_apply_eq_zero_of_generic hgen i h v)
  have heq : reluLayer P (t • x₀ + v) = reluLayer P (t • x₀) := by
    funext i
    show relu ((P *ᵥ (t • x₀ + v)) i) = relu ((P *ᵥ (t • x₀)) i)
    exact relu_mulVec_smul_add_eq ht i (hb i) (mulVec_apply_eq_zero_of_active hv i)
  have hsame : t • x₀ + v = t • x₀ + 0 := (hinj heq).trans (add_zero (t • x₀)).symm
  exact hv0 (add_left_cancel hsame)

/-- **Corollary B0 for a residual-free block** (ours): `x ↦ V_down ReLU(V_up x)` of width
`m < 2 d` is not injective, since it factors through the ReLU layer of `V_up`
(`Absorb.not_injective_relu_of_lt_two_mul`). So no residual-free ReLU block narrower than `2 d`
equals an injective map, e.g. an injective residual block. -/
theorem not_injective_ungatedMap_relu_of_lt_two_mul (V : UngatedWeights d m) (hm : m < 2 * d) :
    ¬ Function.Injective (ungatedMap relu V) := by
  intro hinj
  refine not_injective_relu_of_lt_two_mul V.up hm fun x y hxy => hinj ?_
  show V.down *ᵥ reluLayer V.up x = V.down *ᵥ reluLayer V.up y
  rw [hxy]

end Absorb

end
