import Mathlib.Algebra.BigOperators.Fin
import Mathlib.Data.Rat.BigOperators
import Mathlib.Data.Rat.Cast.CharZero
import Absorb.Checker.Decide
import Absorb.Dual
import Absorb.IndexSet
import Absorb.Necessary

/-!
# Soundness of the compiled checker: what each printed verdict proves

The third module of the compiled checker. It is not imported by the executable (whose root
`AbsorbCheck` imports only `Absorb.Checker.Reader` and `Absorb.Checker.Decide`); `lake build`
checks it, as a root of the default library.

The decision module computes with Batteries' `Rat`, functions `Fin r → Fin c → Rat` and sums by
recursion (`Absorb.Checker.sumFin`). Here they are identified with Mathlib's objects: `sumFin`
is `Finset.sum` (`Absorb.Checker.sumFin_eq`), the tests are `Absorb.IndexSetCond` and
`Absorb.DualCond` over `ℚ`, and the entrywise casts to `ℝ` carry the index-set condition both
ways. Then each printed verdict (`Absorb.Checker.Verdict.name` of `Absorb.Checker.verdict I`,
for the very input `I` that the executable built from the file) gets its meaning, composing the
library's theorems: **index_set_sufficient** (`Absorb.ungatedMap_signFlip`,
`Absorb.biasedMap_signFlip`), the **dual certificate** (`Absorb.not_indexSetCond_of_dual`),
**index_set_necessary** (`Absorb.indexSetCond_of_absorbable_relu`,
`Absorb.indexSetCond_of_absorbable_geluWith`) and **bias_blowup**
(`Absorb.indexSetCond_of_absorbable_biased`).

## Main results

* `Absorb.Checker.absorbable_of_verdict_eq_absorbed` : `"absorbed"` gives the residual-free
  block (the sign-flipped weights), for every odd-part-linear `σ`, with or without biases.
* `Absorb.Checker.not_absorbable_relu_of_verdict`,
  `Absorb.Checker.not_absorbable_geluWith_of_verdict`,
  `Absorb.Checker.not_absorbable_biased_of_verdict` : `"not_absorbable"` proves that the ReLU,
  GELU (`geluWith Φ`) and biased (any `σ` ReLU at infinity) skip blocks of the file's weights
  are not absorbable by residual-free blocks of the same kind and width.
* `Absorb.Checker.not_indexSetCond_of_verdict_eq_noIndexSet` : `"no_index_set"` proves that no
  index set exists (over `ℚ` and over `ℝ`) and that the reported hypothesis fails.
* `Absorb.Checker.fails_of_verdict_eq_hypothesisFails` : `"hypothesis_fails"` proves that the
  certificate's condition fails over `ℚ` and that the reported hypothesis fails.
* `Absorb.Checker.not_dualCond_of_verdict_eq_certificateFails` : `"certificate_fails"` proves
  that the certificate's condition fails over `ℚ` while the hypotheses hold.
* `Absorb.Checker.not_indexSetCond_of_verdict_eq_conditionFails` : `"condition_fails"`.
-/

noncomputable section

namespace Absorb

namespace Checker

/-! ### The sums are Mathlib's sums -/

/-- `sumBelow f m h` is the sum of `f` over the first `m` indices. -/
theorem sumBelow_eq {n : ℕ} (f : Fin n → ℚ) (m : ℕ) (h : m ≤ n) :
    sumBelow f m h = ∑ i : Fin m, f (Fin.castLE h i) := by
  induction m with
  | zero =>
    rw [Finset.univ_eq_empty, Finset.sum_empty]
    rfl
  | succ m ih =>
    rw [sumBelow_succ, ih (Nat.le_of_succ_le h), Fin.sum_univ_castSucc]
    rfl

/-- `sumFin n f = ∑ i, f i`. -/
theorem sumFin_eq (n : ℕ) (f : Fin n → ℚ) : sumFin n f = ∑ i, f i :=
  (sumBelow_eq f n (Nat.le_refl n)).trans
    (Finset.sum_congr rfl fun i _ => congrArg f (Fin.eq_of_val_eq rfl))

/-! ### The index-set condition over `ℚ` -/

/-- The index set of a membership test. -/
def maskSet {n : ℕ} (mask : Fin n → Bool) : Finset (Fin n) :=
  Finset.univ.filter fun i => mask i = true

/-- Entry `(j, k)` of the checker's left-hand side is `∑_{i ∈ S} (W_down)_{j i} (W_up)_{i k}`. -/
theorem lhs_eq (B : Block) (mask : Fin B.n → Bool) (j k : Fin B.d) :
    B.lhs mask j k = ∑ i ∈ maskSet mask, B.down j i * B.up i k :=
  (sumFin_eq B.n fun i => if mask i = true then B.down j i * B.up i k else 0).trans
    (Finset.sum_filter (fun i => mask i = true) fun i => B.down j i * B.up i k).symm

/-- **The condition search is correct**: it finds no failing entry exactly when the index-set
condition `W_down[:,S] W_up[S,:] = -A` holds over `ℚ`. -/
theorem conditionFailure_eq_none_iff (B : Block) (mask : Fin B.n → Bool) :
    B.conditionFailure mask = none ↔ IndexSetCond B.A B.up B.down (maskSet mask) := by
  constructor
  · intro h j k
    exact (lhs_eq B mask j k).symm.trans (Block.lhs_eq_of_conditionFailure_eq_none h j k)
  · intro h
    cases hf : B.conditionFailure mask with
    | none => rfl
    | some p =>
      exact absurd ((lhs_eq B mask p.1 p.2).trans (h p.1 p.2))
        (Block.lhs_ne_of_conditionFailure_eq_some (j := p.1) (k := p.2) hf)

/-- A failing entry reported by the search really fails. -/
theorem lhs_ne_of_conditionFailure {B : Block} {mask : Fin B.n → Bool} {j k : Fin B.d}
    (h : B.conditionFailure mask = some (j, k)) :
    ∑ i ∈ maskSet mask, B.down j i * B.up i k ≠ -B.A j k :=
  fun h' => Block.lhs_ne_of_conditionFailure_eq_some h ((lhs_eq B mask j k).trans h')

/-! ### The block over `ℝ` -/

/-- `W_up` with its entries read as real numbers. -/
def Block.realUp (B : Block) : Matrix (Fin B.n) (Fin B.d) ℝ :=
  Matrix.of fun i k => (B.up i k : ℝ)

/-- `W_down` with its entries read as real numbers. -/
def Block.realDown (B : Block) : Matrix (Fin B.d) (Fin B.n) ℝ :=
  Matrix.of fun j i => (B.down j i : ℝ)

/-- The skip matrix with its entries read as real numbers. -/
def Block.realA (B : Block) : Matrix (Fin B.d) (Fin B.d) ℝ :=
  Matrix.of fun j k => (B.A j k : ℝ)

/-- The bias-free weights over `ℝ`. -/
def Block.realW (B : Block) : UngatedWeights B.d B.n :=
  ⟨B.realUp, B.realDown⟩

/-- The weights with biases over `ℝ` (`0` for a bias the file does not give). -/
def Block.realBiased (B : Block) : BiasedWeights B.d B.n :=
  ⟨B.realUp, B.realDown,
    fun i => match B.biases with
      | some b => (b.1 i : ℝ)
      | none => 0,
    fun j => match B.biases with
      | some b => (b.2 j : ℝ)
      | none => 0⟩

/-- Entries of `Absorb.Checker.Block.realUp`. -/
theorem Block.realUp_apply (B : Block) (i : Fin B.n) (k : Fin B.d) :
    B.realUp i k = (B.up i k : ℝ) :=
  rfl

/-- Entries of `Absorb.Checker.Block.realDown`. -/
theorem Block.realDown_apply (B : Block) (j : Fin B.d) (i : Fin B.n) :
    B.realDown j i = (B.down j i : ℝ) :=
  rfl

/-- Entries of `Absorb.Checker.Block.realA`. -/
theorem Block.realA_apply (B : Block) (j k : Fin B.d) : B.realA j k = (B.A j k : ℝ) :=
  rfl

/-- The index-set condition over `ℚ` gives it for the real matrices with the same entries (the
cast is a ring homomorphism: `Rat.cast_sum`, `Rat.cast_mul`, `Rat.cast_neg`). -/
theorem indexSetCond_real_of_rat {B : Block} {S : Finset (Fin B.n)}
    (h : IndexSetCond B.A B.up B.down S) : IndexSetCond B.realA B.realUp B.realDown S := by
  intro j k
  have hjk : ((∑ i ∈ S, B.down j i * B.up i k : ℚ) : ℝ) = ((-B.A j k : ℚ) : ℝ) :=
    congrArg (fun q : ℚ => (q : ℝ)) (h j k)
  simp only [Rat.cast_sum, Rat.cast_mul, Rat.cast_neg] at hjk
  simp only [Block.realUp_apply, Block.realDown_apply, Block.realA_apply]
  exact hjk

/-- The converse: the condition for the real matrices gives it over `ℚ` (`Rat.cast` is
injective). -/
theorem indexSetCond_rat_of_real {B : Block} {S : Finset (Fin B.n)}
    (h : IndexSetCond B.realA B.realUp B.realDown S) : IndexSetCond B.A B.up B.down S := by
  intro j k
  have hjk : ∑ i ∈ S, (B.down j i : ℝ) * (B.up i k : ℝ) = -(B.A j k : ℝ) := h j k
  have hcast : ((∑ i ∈ S, B.down j i * B.up i k : ℚ) : ℝ) = ((-B.A j k : ℚ) : ℝ) := by
    simp only [Rat.cast_sum, Rat.cast_mul, Rat.cast_neg]
    exact hjk
  exact Rat.cast_injective hcast

/-! ### The hypotheses of `indexSetCond_of_absorbable_relu` -/

/-- A nonzero entry makes the real row nonzero. -/
theorem realUp_row_ne_zero {B : Block} {i : Fin B.n} {k : Fin B.d} (hk : B.up i k ≠ 0) :
    B.realW.up i ≠ 0 := by
  intro h0
  have h1 : ((B.up i k : ℚ) : ℝ) = ((0 : ℚ) : ℝ) := (congrFun h0 k).trans Rat.cast_zero.symm
  exact hk (Rat.cast_injective h1)

/-- A nonzero `2 × 2` minor `b_i[k] b_j[l] - b_i[l] b_j[k]` makes the real row `b_i` no real
multiple of `b_j`. -/
theorem realUp_row_ne_smul {B : Block} {i j : Fin B.n} {k l : Fin B.d}
    (hkl : B.up i k * B.up j l ≠ B.up i l * B.up j k) (μ : ℝ) :
    B.realW.up i ≠ μ • B.realW.up j := by
  intro h0
  have hk : ((B.up i k : ℚ) : ℝ) = μ * (B.up j k : ℝ) := congrFun h0 k
  have hl : ((B.up i l : ℚ) : ℝ) = μ * (B.up j l : ℝ) := congrFun h0 l
  have h2 : ((B.up i k * B.up j l : ℚ) : ℝ) = ((B.up i l * B.up j k : ℚ) : ℝ) := by
    simp only [Rat.cast_mul]
    rw [hk, hl]
    ring
  exact hkl (Rat.cast_injective h2)

/-- A nonzero entry makes the real column nonzero. -/
theorem realDown_col_ne_zero {B : Block} {i : Fin B.n} {r : Fin B.d} (hr : B.down r i ≠ 0) :
    B.realW.down r i ≠ 0 := by
  intro h0
  have h1 : ((B.down r i : ℚ) : ℝ) = ((0 : ℚ) : ℝ) := h0.trans Rat.cast_zero.symm
  exact hr (Rat.cast_injective h1)

/-- **The hypotheses hold** when no search finds a failure: over `ℝ`, the rows of `W_up` are
nonzero and pairwise non-collinear (`b_i ≠ μ b_j` for `i ≠ j` and every real `μ`), and the
columns of `W_down` are nonzero — the hypotheses of `Absorb.indexSetCond_of_absorbable_relu`. -/
theorem hypotheses_of_hypothesisFailure_eq_none {B : Block} (h : B.hypothesisFailure = none) :
    (∀ i, B.realW.up i ≠ 0) ∧ (∀ i j, i ≠ j → ∀ μ : ℝ, B.realW.up i ≠ μ • B.realW.up j) ∧
      (∀ i, ∃ r, B.realW.down r i ≠ 0) := by
  obtain ⟨h1, h2, h3⟩ := Block.searches_of_hypothesisFailure_eq_none h
  refine ⟨fun i => ?_, fun i j hij μ => ?_, fun i => ?_⟩
  · obtain ⟨k, hk⟩ := Block.exists_up_ne_zero h1 i
    exact realUp_row_ne_zero hk
  · obtain ⟨k, l, hkl⟩ := Block.exists_minor_ne h2 hij
    exact realUp_row_ne_smul hkl μ
  · obtain ⟨r, hr⟩ := Block.exists_down_ne_zero h3 i
    exact ⟨r, realDown_col_ne_zero hr⟩

/-! ### The dual certificate over `ℚ` -/

/-- The checker's `c_i` is `Absorb.dualCoeff`. -/
theorem coeff_eq (B : Block) (Y : Mat B.d B.d) (i : Fin B.n) :
    B.coeff Y i = dualCoeff B.up B.down Y i :=
  (sumFin_eq B.d fun j => sumFin B.d fun k => B.down j i * Y j k * B.up i k).trans
    (Finset.sum_congr rfl fun j _ => sumFin_eq B.d fun k => B.down j i * Y j k * B.up i k)

/-- The checker's pairing is `Absorb.frobenius`. -/
theorem pairing_eq (B : Block) (Y : Mat B.d B.d) : B.pairing Y = frobenius B.A Y :=
  (sumFin_eq B.d fun j => sumFin B.d fun k => B.A j k * Y j k).trans
    (Finset.sum_congr rfl fun j _ => sumFin_eq B.d fun k => B.A j k * Y j k)

/-- The checker's lower end is `∑_i min(c_i, 0)` (`min_def`). -/
theorem lower_eq (B : Block) (Y : Mat B.d B.d) :
    B.lower Y = ∑ i, min (dualCoeff B.up B.down Y i) 0 :=
  (sumFin_eq B.n fun i => negPart (B.coeff Y i)).trans
    (Finset.sum_congr rfl fun i _ => by
      rw [coeff_eq]
      exact (min_def _ _).symm)

/-- The checker's upper end is `∑_i max(c_i, 0)` (`max_def`). -/
theorem upper_eq (B : Block) (Y : Mat B.d B.d) :
    B.upper Y = ∑ i, max (dualCoeff B.up B.down Y i) 0 :=
  (sumFin_eq B.n fun i => posPart (B.coeff Y i)).trans
    (Finset.sum_congr rfl fun i _ => by
      rw [coeff_eq]
      exact (max_def _ _).symm)

/-- **The certificate test is correct**: `dualHolds` answers `true` exactly when
`Absorb.DualCond` holds over `ℚ`. -/
theorem dualHolds_eq_true_iff (B : Block) (Y : Mat B.d B.d) :
    B.dualHolds Y = true ↔ DualCond B.A B.up B.down Y := by
  have key : (-B.pairing Y < B.lower Y ∨ B.upper Y < -B.pairing Y) ↔
      DualCond B.A B.up B.down Y := by
    rw [pairing_eq, lower_eq, upper_eq]
    exact Iff.rfl
  exact ⟨fun h => key.1 (Block.dual_of_dualHolds h), fun h => Block.dualHolds_of_dual (key.2 h)⟩

/-- **Soundness of the certificate test over `ℚ`** (dual certificate): if it holds, no index
set `S` has `W_down[:,S] W_up[S,:] = -A`. -/
theorem not_indexSetCond_of_checkDual (B : Block) (Y : Mat B.d B.d) (h : B.dualHolds Y = true)
    (S : Finset (Fin B.n)) : ¬ IndexSetCond B.A B.up B.down S :=
  not_indexSetCond_of_dual Y ((dualHolds_eq_true_iff B Y).1 h) S

/-- **Soundness of the certificate test over `ℝ`**: if it holds, no index set exists for the
real matrices with the same entries. -/
theorem not_indexSetCond_map_ratCast_of_checkDual (B : Block) (Y : Mat B.d B.d)
    (h : B.dualHolds Y = true) (S : Finset (Fin B.n)) :
    ¬ IndexSetCond B.realA B.realUp B.realDown S :=
  fun hS => not_indexSetCond_of_checkDual B Y h S (indexSetCond_rat_of_real hS)

/-! ### The meaning of each printed verdict -/

/-- **`"absorbed"` means the index-set condition** (index_set_sufficient): the verdict is only
printed for an index-set input, whose `S` satisfies `W_down[:,S] W_up[S,:] = -A` over `ℚ`. -/
theorem indexSetCond_of_verdict_eq_absorbed {I : Input} (hv : (verdict I).name = "absorbed") :
    ∃ B mask, I = .indexSet B mask ∧ IndexSetCond B.A B.up B.down (maskSet mask) := by
  obtain ⟨B, mask, hI, hc⟩ := indexSet_of_verdict_name (c := false) hv
  exact ⟨B, mask, hI, (conditionFailure_eq_none_iff B mask).1 (eq_none_of_isSome_eq_false hc)⟩

/-- **Soundness of `"absorbed"`** (index_set_sufficient), with the residual-free block: for
every odd-part-linear `σ` (ReLU, GELU, SiLU, …), the sign-flipped weights
`Absorb.signFlipWeights S W` give a residual-free block equal to the skip block
`x ↦ A x + W_down σ(W_up x)` at every point, and with biases the weights
`Absorb.signFlipBiasedWeights S W` do the same for `x ↦ A x + W_down σ(W_up x + b_up) + b_down`
(the file's weights read as real numbers). -/
theorem absorbable_of_verdict_eq_absorbed {I : Input} (hv : (verdict I).name = "absorbed")
    {σ : ℝ → ℝ} (hσ : OddPartLinear σ) :
    ∃ B mask, I = .indexSet B mask ∧
      (∀ x, ungatedMap σ (signFlipWeights (maskSet mask) B.realW) x =
        skipMap B.realA (ungated σ B.d B.n) B.realW x) ∧
      (∀ x, biasedMap σ (signFlipBiasedWeights (maskSet mask) B.realBiased) x =
        skipMap B.realA (biased σ B.d B.n) B.realBiased x) := by
  obtain ⟨B, mask, hI, hS⟩ := indexSetCond_of_verdict_eq_absorbed hv
  have hR : IndexSetCond B.realA B.realUp B.realDown (maskSet mask) :=
    indexSetCond_real_of_rat hS
  exact ⟨B, mask, hI, fun x => ungatedMap_signFlip hσ B.realA B.realW (maskSet mask) hR x,
    fun x => biasedMap_signFlip hσ B.realA B.realBiased (maskSet mask) hR x⟩

/-- The index-set search's soundness, as absorbability (index_set_sufficient): when it finds no
failing entry, the skip block of the block's real weights is absorbable for every
odd-part-linear `σ`. -/
theorem absorbable_of_check (B : Block) (mask : Fin B.n → Bool)
    (h : B.conditionFailure mask = none) {σ : ℝ → ℝ} (hσ : OddPartLinear σ) :
    Absorbable (ungated σ B.d B.n) (skipMap B.realA (ungated σ B.d B.n) B.realW) :=
  absorbable_of_indexSetCond_ungated hσ B.realA B.realW (maskSet mask)
    (indexSetCond_real_of_rat ((conditionFailure_eq_none_iff B mask).1 h))

/-- **`"condition_fails"` means that `S` fails the condition**, at the reported entry. -/
theorem not_indexSetCond_of_verdict_eq_conditionFails {I : Input}
    (hv : (verdict I).name = "condition_fails") :
    ∃ B mask, I = .indexSet B mask ∧ ¬ IndexSetCond B.A B.up B.down (maskSet mask) ∧
      ∃ j k, B.conditionFailure mask = some (j, k) ∧
        ∑ i ∈ maskSet mask, B.down j i * B.up i k ≠ -B.A j k := by
  obtain ⟨B, mask, hI, hc⟩ := indexSet_of_verdict_name (c := true) hv
  obtain ⟨p, hp⟩ := exists_eq_some_of_isSome hc
  refine ⟨B, mask, hI, fun hS => ?_, p.1, p.2, hp, lhs_ne_of_conditionFailure hp⟩
  have h0 := (conditionFailure_eq_none_iff B mask).2 hS
  rw [hp] at h0
  cases h0

/-- The core of `"not_absorbable"`: the input is a dual certificate that refutes every index
set (over `ℝ`), and the hypotheses of `Absorb.indexSetCond_of_absorbable_relu` hold. -/
theorem noIndexSet_and_hypotheses_of_verdict {I : Input}
    (hv : (verdict I).name = "not_absorbable") :
    (∀ S, ¬ IndexSetCond I.block.realA I.block.realUp I.block.realDown S) ∧
      (∀ i, I.block.realW.up i ≠ 0) ∧
      (∀ i j, i ≠ j → ∀ μ : ℝ, I.block.realW.up i ≠ μ • I.block.realW.up j) ∧
      (∀ i, ∃ r, I.block.realW.down r i ≠ 0) := by
  obtain ⟨B, Y, hI, hd, hh⟩ := dual_of_verdict_name (b := true) (o := none) hv
  subst hI
  exact ⟨not_indexSetCond_map_ratCast_of_checkDual B Y hd,
    hypotheses_of_hypothesisFailure_eq_none (eq_none_of_isSome_eq_false hh)⟩

/-- **Soundness of `"not_absorbable"` for ReLU** (dual certificate, then index_set_necessary,
the paper's Theorem 8 "only if"): the skip block `x ↦ A x + W_down ReLU(W_up x)` of the file's
weights (read as real numbers, no biases) is not absorbable by residual-free ReLU blocks of the
same width. -/
theorem not_absorbable_relu_of_verdict {I : Input} (hv : (verdict I).name = "not_absorbable") :
    ¬ Absorbable (ungated relu I.block.d I.block.n)
      (skipMap I.block.realA (ungated relu I.block.d I.block.n) I.block.realW) := by
  obtain ⟨hS, hup, hcol, hdown⟩ := noIndexSet_and_hypotheses_of_verdict hv
  intro habs
  obtain ⟨S, hcond⟩ :=
    indexSetCond_of_absorbable_relu I.block.realA I.block.realW hup hcol hdown habs
  exact hS S hcond

/-- **Soundness of `"not_absorbable"` for GELU** (the paper's Theorem 10 "only if", through
bias_blowup): for every `Φ` with `Φ → 1` at `+∞` and `Φ → 0` at `-∞` (the exact GELU's normal
CDF among them), the skip block `x ↦ A x + W_down GELU(W_up x)` is not absorbable by
residual-free GELU blocks of the same width. -/
theorem not_absorbable_geluWith_of_verdict {I : Input}
    (hv : (verdict I).name = "not_absorbable") {Φ : ℝ → ℝ}
    (hTop : Filter.Tendsto Φ Filter.atTop (nhds 1))
    (hBot : Filter.Tendsto Φ Filter.atBot (nhds 0)) :
    ¬ Absorbable (ungated (geluWith Φ) I.block.d I.block.n)
      (skipMap I.block.realA (ungated (geluWith Φ) I.block.d I.block.n) I.block.realW) := by
  obtain ⟨hS, hup, hcol, hdown⟩ := noIndexSet_and_hypotheses_of_verdict hv
  intro habs
  obtain ⟨S, hcond⟩ := indexSetCond_of_absorbable_geluWith hTop hBot I.block.realA
    I.block.realW hup hcol hdown habs
  exact hS S hcond

/-- **Soundness of `"not_absorbable"` with biases** (bias_blowup, then index_set_necessary): for
every activation `σ` that is ReLU at infinity (`Absorb.reluAtInfinity_relu`,
`Absorb.reluAtInfinity_geluWith`), the biased skip block
`x ↦ A x + W_down σ(W_up x + b_up) + b_down` of the file (missing biases are `0`) is not
absorbable by residual-free biased `σ`-blocks of the same width. -/
theorem not_absorbable_biased_of_verdict {I : Input}
    (hv : (verdict I).name = "not_absorbable") {σ : ℝ → ℝ} (hσ : ReluAtInfinity σ) :
    ¬ Absorbable (biased σ I.block.d I.block.n)
      (skipMap I.block.realA (biased σ I.block.d I.block.n) I.block.realBiased) := by
  obtain ⟨hS, hup, hcol, hdown⟩ := noIndexSet_and_hypotheses_of_verdict hv
  intro habs
  obtain ⟨S, hcond⟩ :=
    indexSetCond_of_absorbable_biased hσ I.block.realA I.block.realBiased hup hcol hdown habs
  exact hS S hcond

/-- **`"no_index_set"` means that no index set exists** (dual certificate), over `ℚ` and over
`ℝ`, while a hypothesis of the theorem chain fails at the reported indices — so the checker does
not claim that the block is not absorbable. -/
theorem not_indexSetCond_of_verdict_eq_noIndexSet {I : Input}
    (hv : (verdict I).name = "no_index_set") :
    (∀ S, ¬ IndexSetCond I.block.A I.block.up I.block.down S) ∧
      (∀ S, ¬ IndexSetCond I.block.realA I.block.realUp I.block.realDown S) ∧
      ∃ hyp, I.block.hypothesisFailure = some hyp ∧ I.block.Fails hyp := by
  obtain ⟨B, Y, hI, hd, hh⟩ :=
    dual_of_verdict_name (b := true) (o := some (Hypothesis.zeroRow 0)) hv
  subst hI
  obtain ⟨hyp, hf⟩ := exists_eq_some_of_isSome hh
  exact ⟨not_indexSetCond_of_checkDual B Y hd, not_indexSetCond_map_ratCast_of_checkDual B Y hd,
    hyp, hf, Block.fails_of_hypothesisFailure_eq_some hf⟩

/-- A certificate test that answered `false` refutes nothing: `Absorb.DualCond` fails over `ℚ`. -/
theorem not_dualCond_of_dualHolds_eq_false {B : Block} {Y : Mat B.d B.d}
    (h : B.dualHolds Y = false) : ¬ DualCond B.A B.up B.down Y := by
  intro hc
  have h1 : B.dualHolds Y = true := (dualHolds_eq_true_iff B Y).2 hc
  rw [h] at h1
  cases h1

/-- **`"hypothesis_fails"` means that the certificate refutes nothing and a hypothesis fails**:
the input is a certificate `Y` whose condition `Absorb.DualCond` fails over `ℚ`, and a
hypothesis of the theorem chain fails at the reported indices. -/
theorem fails_of_verdict_eq_hypothesisFails {I : Input}
    (hv : (verdict I).name = "hypothesis_fails") :
    ∃ B Y, I = .dual B Y ∧ ¬ DualCond B.A B.up B.down Y ∧
      ∃ hyp, B.hypothesisFailure = some hyp ∧ B.Fails hyp := by
  obtain ⟨B, Y, hI, hd, hh⟩ :=
    dual_of_verdict_name (b := false) (o := some (Hypothesis.zeroRow 0)) hv
  obtain ⟨hyp, hf⟩ := exists_eq_some_of_isSome hh
  exact ⟨B, Y, hI, not_dualCond_of_dualHolds_eq_false hd, hyp, hf,
    Block.fails_of_hypothesisFailure_eq_some hf⟩

/-- **`"certificate_fails"` means that the certificate refutes nothing while the hypotheses
hold**: the input is a certificate `Y` whose condition `Absorb.DualCond` fails over `ℚ`, no
hypothesis search found a failure, and so, over `ℝ`, the rows of `W_up` are nonzero and pairwise
non-collinear and the columns of `W_down` are nonzero. -/
theorem not_dualCond_of_verdict_eq_certificateFails {I : Input}
    (hv : (verdict I).name = "certificate_fails") :
    ∃ B Y, I = .dual B Y ∧ ¬ DualCond B.A B.up B.down Y ∧ B.hypothesisFailure = none ∧
      (∀ i, B.realW.up i ≠ 0) ∧ (∀ i j, i ≠ j → ∀ μ : ℝ, B.realW.up i ≠ μ • B.realW.up j) ∧
      (∀ i, ∃ r, B.realW.down r i ≠ 0) := by
  obtain ⟨B, Y, hI, hd, hh⟩ := dual_of_verdict_name (b := false) (o := none) hv
  have hnone : B.hypothesisFailure = none := eq_none_of_isSome_eq_false hh
  exact ⟨B, Y, hI, not_dualCond_of_dualHolds_eq_false hd, hnone,
    hypotheses_of_hypothesisFailure_eq_none hnone⟩

end Checker

end Absorb

end
