import Absorb.Basic
import Absorb.Activations
import Absorb.Degree
import Absorb.Parity
import Mathlib.Analysis.SpecialFunctions.Log.Basic
import Mathlib.Analysis.SpecialFunctions.Pow.Real
import Mathlib.Analysis.SpecialFunctions.Exp
import Mathlib.Analysis.SpecialFunctions.Trigonometric.Basic
import Mathlib.Topology.Algebra.Order.Field
import Mathlib.Order.Filter.Basic
import Mathlib.Tactic.Linarith
import Mathlib.Tactic.LinearCombination
import Mathlib.Tactic.Ring
import Mathlib.Tactic.NormNum
import Mathlib.Tactic.NormNum.OfScientific
import Mathlib.Topology.Order.Basic

/-!
# Blowing up the biases: from biased blocks to bias-free ReLU blocks

**bias_blowup** (ours; `THEORY.md`, building on Mijoski–Karbevski, *Can an MLP Absorb Its Own
Skip Connection?*, arXiv 2604.23705). Call an activation `σ` *ReLU at infinity*
(`Absorb.ReluAtInfinity σ`) if `σ (t z + c) / t → max z 0` as `t → ∞`, for all real `z`, `c`.
ReLU itself, SiLU, the tanh form of GELU and every `z ↦ z · Φ(z)` with `Φ → 1` at `+∞` and
`Φ → 0` at `-∞` are (the exact GELU is the case `Φ` = the standard normal CDF; as in
`Absorb.Linearization`, `Φ` stays a parameter).

If the biased skip block `f(x) = A x + W_down σ(W_up x + b_up) + b_down` equals a
residual-free biased `σ`-block `h(x) = V_down σ(V_up x + c_up) + c_down` of the same width,
then `A x + W_down ReLU(W_up x) = V_down ReLU(V_up x)` for every `x`: for `t > 0`,
`f(t x) / t = h(t x) / t`, and as `t → ∞` each coordinate of `f(t x) / t` tends to
`A x + W_down ReLU(W_up x)` (the biases, divided by `t`, vanish), each coordinate of
`h(t x) / t` to `V_down ReLU(V_up x)`; limits in `ℝ` are unique.

So a biased ReLU/GELU/SiLU skip block can only be absorbable if the bias-free ReLU block with
the same `W_up`, `W_down` is; with the "only if" half of the paper's Theorem 8 this settles
the biased cases.

## Main definitions

* `Absorb.ReluAtInfinity σ` : `σ (t z + c) / t → max z 0` as `t → ∞`, for all `z`, `c`.

## Main results

* `Absorb.absorbable_relu_of_absorbable_biased` : **bias_blowup**.
* `Absorb.not_absorbable_biased_of_not_absorbable_relu` : its contrapositive.
* `Absorb.absorbable_relu_of_absorbable_ungated` : the same for bias-free `σ`-blocks (zero
  biases).
* `Absorb.reluAtInfinity_relu`, `Absorb.reluAtInfinity_silu`,
  `Absorb.reluAtInfinity_geluWith`, `Absorb.reluAtInfinity_geluTanh` : the instances.
* `Absorb.reluAtInfinity_of_mul`, `Absorb.reluAtInfinity_of_mul_symm` : every
  `z ↦ z · Φ(z)` with `Φ → 1` at `+∞` and `Φ → 0` at `-∞` (or `Φ z + Φ (-z) = 1`).
* `Absorb.reluAtInfinity_of_abs_sub_relu_le` : every `σ` within bounded distance of ReLU;
  instances `Absorb.reluAtInfinity_softplus` (`0 ≤ softplus - ReLU ≤ log 2`) and
  `Absorb.reluAtInfinity_elu` (`|ELU_α - ReLU| ≤ |α|`).
-/

open Filter Topology Matrix

noncomputable section

namespace Absorb

variable {d n : ℕ}

/-- `σ` is *ReLU at infinity* (ours): for all real `z` and `c`,
`σ (t z + c) / t → max z 0` as `t → ∞`. -/
def ReluAtInfinity (σ : ℝ → ℝ) : Prop :=
  ∀ z c : ℝ, Tendsto (fun t : ℝ => σ (t * z + c) / t) atTop (𝓝 (max z 0))

/-! ### Two limits along `t → ∞` -/

/-- `c / t → 0` as `t → ∞`, written `c * t⁻¹`. -/
theorem tendsto_const_mul_inv_atTop (c : ℝ) : Tendsto (fun t : ℝ => c * t⁻¹) atTop (𝓝 0) := by
  have h : Tendsto (fun t : ℝ => c * t⁻¹) atTop (𝓝 (c * 0)) :=
    tendsto_inv_atTop_zero.const_mul c
  rwa [mul_zero] at h

/-- `z + c / t → z` as `t → ∞`. -/
theorem tendsto_add_const_mul_inv_atTop (z c : ℝ) :
    Tendsto (fun t : ℝ => z + c * t⁻¹) atTop (𝓝 z) := by
  have h : Tendsto (fun t : ℝ => z + c * t⁻¹) atTop (𝓝 (z + 0)) :=
    tendsto_const_nhds.add (tendsto_const_mul_inv_atTop c)
  rwa [add_zero] at h

/-! ### Bias blow-up -/

/-- One coordinate of a biased block along the ray `t x`, divided by `t`, tends to the same
coordinate of the bias-free ReLU block with the same `W_up`, `W_down` (ours):
`(W_down σ(W_up (t x) + b_up) + b_down)_j / t → (W_down ReLU(W_up x))_j` as `t → ∞`, for `σ`
ReLU at infinity. -/
theorem tendsto_biasedMap_smul_div {σ : ℝ → ℝ} (hσ : ReluAtInfinity σ) (W : BiasedWeights d n)
    (x : Fin d → ℝ) (j : Fin d) :
    Tendsto (fun t : ℝ => biasedMap σ W (t • x) j / t) atTop
      (𝓝 (ungatedMap relu (UngatedWeights.mk W.up W.down) x j)) := by
  have hlim : ungatedMap relu (UngatedWeights.mk W.up W.down) x j =
      ∑ i, W.down j i * max ((W.up *ᵥ x) i) 0 := rfl
  have h1 : ∀ i ∈ (Finset.univ : Finset (Fin n)),
      Tendsto (fun t : ℝ => W.down j i * (σ (t * (W.up *ᵥ x) i + W.bUp i) / t)) atTop
        (𝓝 (W.down j i * max ((W.up *ᵥ x) i) 0)) :=
    fun i _ => (hσ ((W.up *ᵥ x) i) (W.bUp i)).const_mul (W.down j i)
  have h2 : Tendsto (fun t : ℝ => ∑ i, W.down j i * (σ (t * (W.up *ᵥ x) i + W.bUp i) / t))
      atTop (𝓝 (∑ i, W.down j i * max ((W.up *ᵥ x) i) 0)) :=
    tendsto_finset_sum Finset.univ h1
  have h3 : Tendsto (fun t : ℝ =>
      ∑ i, W.down j i * (σ (t * (W.up *ᵥ x) i + W.bUp i) / t) + W.bDown j * t⁻¹) atTop
      (𝓝 (∑ i, W.down j i * max ((W.up *ᵥ x) i) 0 + 0)) :=
    h2.add (tendsto_const_mul_inv_atTop (W.bDown j))
  rw [add_zero] at h3
  rw [hlim]
  refine h3.congr fun t => ?_
  show ∑ i, W.down j i * (σ (t * (W.up *ᵥ x) i + W.bUp i) / t) + W.bDown j * t⁻¹ =
    biasedMap σ W (t • x) j / t
  have hdef : biasedMap σ W (t • x) j =
      ∑ i, W.down j i * σ (t * (W.up *ᵥ x) i + W.bUp i) + W.bDown j := by
    have h5 : biasedMap σ W (t • x) j =
        ∑ i, W.down j i * σ ((W.up *ᵥ (t • x)) i + W.bUp i) + W.bDown j := rfl
    rw [h5]
    congr 1
    exact Finset.sum_congr rfl fun i _ => by rw [mulVec_smul_coord]
  have e1 : ∑ i, W.down j i * (σ (t * (W.up *ᵥ x) i + W.bUp i) / t) =
      t⁻¹ * ∑ i, W.down j i * σ (t * (W.up *ᵥ x) i + W.bUp i) := by
    rw [Finset.mul_sum]
    exact Finset.sum_congr rfl fun i _ => by ring
  rw [hdef, e1]
  ring

/-- **bias_blowup** (ours). Let `σ` be ReLU at infinity (ReLU, SiLU, GELU, its tanh form).
If the biased skip block `x ↦ A x + W_down σ(W_up x + b_up) + b_down` is absorbable by
residual-free biased `σ`-blocks of width `n`, then the bias-free ReLU skip block
`x ↦ A x + W_down ReLU(W_up x)` with the same `W_up`, `W_down` is absorbable by bias-free ReLU
blocks of width `n`: the blown-up limit of the absorbing block, `V_down ReLU(V_up x)`, absorbs
it. -/
theorem absorbable_relu_of_absorbable_biased {σ : ℝ → ℝ} (hσ : ReluAtInfinity σ)
    (A : Matrix (Fin d) (Fin d) ℝ) (W : BiasedWeights d n)
    (h : Absorbable (biased σ d n) (skipMap A (biased σ d n) W)) :
    Absorbable (ungated relu d n)
      (skipMap A (ungated relu d n) (UngatedWeights.mk W.up W.down)) := by
  obtain ⟨V, hV⟩ := h
  -- `V : (biased σ d n).Params`, which is `BiasedWeights d n` by definition; its fields are
  -- written with the explicit projections.
  refine ⟨UngatedWeights.mk (BiasedWeights.up V) (BiasedWeights.down V), fun x => ?_⟩
  funext j
  have hfree := tendsto_biasedMap_smul_div hσ V x j
  have hc : Tendsto (fun _ : ℝ => (A *ᵥ x) j) atTop (𝓝 ((A *ᵥ x) j)) := tendsto_const_nhds
  have hskip : Tendsto (fun t : ℝ => biasedMap σ V (t • x) j / t) atTop
      (𝓝 ((A *ᵥ x) j + ungatedMap relu (UngatedWeights.mk W.up W.down) x j)) := by
    refine (hc.add (tendsto_biasedMap_smul_div hσ W x j)).congr' ?_
    filter_upwards [eventually_gt_atTop (0 : ℝ)] with t ht
    show (A *ᵥ x) j + biasedMap σ W (t • x) j / t = biasedMap σ V (t • x) j / t
    have hVt : biasedMap σ V (t • x) j = (A *ᵥ (t • x)) j + biasedMap σ W (t • x) j :=
      congrFun (hV (t • x)) j
    have hinv : t * t⁻¹ = 1 := mul_inv_cancel₀ ht.ne'
    rw [hVt, mulVec_smul_coord]
    linear_combination (-(A *ᵥ x) j) * hinv
  exact tendsto_nhds_unique hfree hskip

/-- **bias_blowup**, contrapositive (ours): for `σ` ReLU at infinity, if the bias-free ReLU
skip block `x ↦ A x + W_down ReLU(W_up x)` is not absorbable, then no choice of biases makes
`x ↦ A x + W_down σ(W_up x + b_up) + b_down` absorbable by biased `σ`-blocks of the same
width. -/
theorem not_absorbable_biased_of_not_absorbable_relu {σ : ℝ → ℝ} (hσ : ReluAtInfinity σ)
    (A : Matrix (Fin d) (Fin d) ℝ) (W : BiasedWeights d n)
    (h : ¬ Absorbable (ungated relu d n)
      (skipMap A (ungated relu d n) (UngatedWeights.mk W.up W.down))) :
    ¬ Absorbable (biased σ d n) (skipMap A (biased σ d n) W) :=
  fun hb => h (absorbable_relu_of_absorbable_biased hσ A W hb)

/-- An ungated block is the biased block with zero biases:
`W_down σ(W_up x + 0) + 0 = W_down σ(W_up x)`. -/
theorem biasedMap_zero_biases (σ : ℝ → ℝ) (W : UngatedWeights d n) (x : Fin d → ℝ) :
    biasedMap σ (BiasedWeights.mk W.up W.down 0 0) x = ungatedMap σ W x := by
  show W.down *ᵥ (fun i => σ ((W.up *ᵥ x) i + (0 : Fin n → ℝ) i)) + 0 =
    W.down *ᵥ fun i => σ ((W.up *ᵥ x) i)
  simp only [Pi.zero_apply, add_zero]

/-- **bias_blowup without biases** (ours): for `σ` ReLU at infinity, if the bias-free skip
block `x ↦ A x + W_down σ(W_up x)` is absorbable by bias-free `σ`-blocks of width `n`, then the
ReLU skip block `x ↦ A x + W_down ReLU(W_up x)` is absorbable by bias-free ReLU blocks of width
`n` (both blocks are biased blocks with zero biases). -/
theorem absorbable_relu_of_absorbable_ungated {σ : ℝ → ℝ} (hσ : ReluAtInfinity σ)
    (A : Matrix (Fin d) (Fin d) ℝ) (W : UngatedWeights d n)
    (h : Absorbable (ungated σ d n) (skipMap A (ungated σ d n) W)) :
    Absorbable (ungated relu d n) (skipMap A (ungated relu d n) W) := by
  obtain ⟨V, hV⟩ := h
  have hb : Absorbable (biased σ d n)
      (skipMap A (biased σ d n) (BiasedWeights.mk W.up W.down 0 0)) := by
    refine ⟨BiasedWeights.mk (UngatedWeights.up V) (UngatedWeights.down V) 0 0, fun x => ?_⟩
    have h1 : ungatedMap σ V x = A *ᵥ x + ungatedMap σ W x := hV x
    show biasedMap σ (BiasedWeights.mk (UngatedWeights.up V) (UngatedWeights.down V) 0 0) x =
      A *ᵥ x + biasedMap σ (BiasedWeights.mk W.up W.down 0 0) x
    rw [biasedMap_zero_biases σ V x, biasedMap_zero_biases σ W x]
    exact h1
  exact absorbable_relu_of_absorbable_biased hσ A (BiasedWeights.mk W.up W.down 0 0) hb

/-! ### ReLU -/

/-- **ReLU is ReLU at infinity** (ours): for `t > 0`,
`max (t z + c) 0 / t = max (z + c / t) 0 → max z 0`. -/
theorem reluAtInfinity_relu : ReluAtInfinity relu := by
  intro z c
  have hmax : Tendsto (fun t : ℝ => max (z + c * t⁻¹) 0) atTop (𝓝 (max z 0)) :=
    (tendsto_add_const_mul_inv_atTop z c).max tendsto_const_nhds
  refine hmax.congr' ?_
  filter_upwards [eventually_gt_atTop (0 : ℝ)] with t ht
  show max (z + c * t⁻¹) 0 = max (t * z + c) 0 / t
  have hinv : t * t⁻¹ = 1 := mul_inv_cancel₀ ht.ne'
  have hlin : t * z + c = t * (z + c * t⁻¹) := by
    linear_combination (-c) * hinv
  rw [hlin, eq_div_iff ht.ne']
  rcases le_total (z + c * t⁻¹) 0 with hu | hu
  · have htu : t * (z + c * t⁻¹) ≤ 0 := by
      have h2 : t * (z + c * t⁻¹) ≤ t * 0 := mul_le_mul_of_nonneg_left hu ht.le
      rwa [mul_zero] at h2
    rw [max_eq_right hu, max_eq_right htu, zero_mul]
  · have htu : 0 ≤ t * (z + c * t⁻¹) := mul_nonneg ht.le hu
    rw [max_eq_left hu, max_eq_left htu]
    ring

/-! ### `z · Φ(z)` -/

/-- **`z · Φ(z)` is ReLU at infinity** (ours): if `σ w = w Φ(w)` with `Φ → 1` at `+∞` and
`Φ → 0` at `-∞`, then `σ (t z + c) / t = (z + c / t) Φ(t z + c) → max z 0`. For `z > 0` the
argument `t z + c → +∞`, for `z < 0` it tends to `-∞`, and for `z = 0` it is the constant `c`,
so that `σ c / t → 0` (no boundedness of `Φ` is needed). -/
theorem reluAtInfinity_of_mul {σ Φ : ℝ → ℝ} (hσ : ∀ w, σ w = w * Φ w)
    (hTop : Tendsto Φ atTop (𝓝 1)) (hBot : Tendsto Φ atBot (𝓝 0)) : ReluAtInfinity σ := by
  intro z c
  have hlin := tendsto_add_const_mul_inv_atTop z c
  have heq : (fun t : ℝ => (z + c * t⁻¹) * Φ (t * z + c)) =ᶠ[atTop]
      fun t : ℝ => σ (t * z + c) / t := by
    filter_upwards [eventually_gt_atTop (0 : ℝ)] with t ht
    show (z + c * t⁻¹) * Φ (t * z + c) = σ (t * z + c) / t
    have hinv : t * t⁻¹ = 1 := mul_inv_cancel₀ ht.ne'
    rw [hσ (t * z + c)]
    linear_combination (-(z * Φ (t * z + c))) * hinv
  rcases lt_trichotomy z 0 with hz | rfl | hz
  · -- `z < 0`: the argument tends to `-∞`, where `Φ → 0`.
    have h1 : Tendsto (fun t : ℝ => t * z) atTop atBot := tendsto_id.atTop_mul_const_of_neg hz
    have harg : Tendsto (fun t : ℝ => t * z + c) atTop atBot :=
      tendsto_atBot_add_const_right _ c h1
    have hprod : Tendsto (fun t : ℝ => (z + c * t⁻¹) * Φ (t * z + c)) atTop (𝓝 (z * 0)) :=
      hlin.mul (hBot.comp harg)
    rw [mul_zero] at hprod
    rw [max_eq_right hz.le]
    exact hprod.congr' heq
  · -- `z = 0`: the argument is the constant `c`.
    have h0 : Tendsto (fun t : ℝ => σ c * t⁻¹) atTop (𝓝 0) := tendsto_const_mul_inv_atTop (σ c)
    rw [max_self]
    refine h0.congr fun t => ?_
    show σ c * t⁻¹ = σ (t * 0 + c) / t
    rw [mul_zero, zero_add, div_eq_mul_inv]
  · -- `z > 0`: the argument tends to `+∞`, where `Φ → 1`.
    have h1 : Tendsto (fun t : ℝ => t * z) atTop atTop := tendsto_id.atTop_mul_const hz
    have harg : Tendsto (fun t : ℝ => t * z + c) atTop atTop :=
      tendsto_atTop_add_const_right _ c h1
    have hprod : Tendsto (fun t : ℝ => (z + c * t⁻¹) * Φ (t * z + c)) atTop (𝓝 (z * 1)) :=
      hlin.mul (hTop.comp harg)
    rw [mul_one] at hprod
    rw [max_eq_left hz.le]
    exact hprod.congr' heq

/-- A symmetric `Φ` (`Φ w + Φ (-w) = 1`, e.g. the CDF of a symmetric distribution) with
`Φ → 1` at `+∞` tends to `0` at `-∞`: `Φ w = 1 - Φ (-w)`. -/
theorem tendsto_atBot_zero_of_symm {Φ : ℝ → ℝ} (hΦ : ∀ w, Φ w + Φ (-w) = 1)
    (hTop : Tendsto Φ atTop (𝓝 1)) : Tendsto Φ atBot (𝓝 0) := by
  have h1 : Tendsto (fun w : ℝ => Φ (-w)) atBot (𝓝 1) := hTop.comp tendsto_neg_atBot_atTop
  have h2 : Tendsto (fun w : ℝ => 1 - Φ (-w)) atBot (𝓝 (1 - 1)) := tendsto_const_nhds.sub h1
  rw [sub_self] at h2
  refine h2.congr fun w => ?_
  show 1 - Φ (-w) = Φ w
  linear_combination (-1 : ℝ) * hΦ w

/-- **`z · Φ(z)` with a symmetric `Φ` is ReLU at infinity** (ours): `σ w = w Φ(w)`,
`Φ w + Φ (-w) = 1` and `Φ → 1` at `+∞`. -/
theorem reluAtInfinity_of_mul_symm {σ Φ : ℝ → ℝ} (hσ : ∀ w, σ w = w * Φ w)
    (hΦ : ∀ w, Φ w + Φ (-w) = 1) (hTop : Tendsto Φ atTop (𝓝 1)) : ReluAtInfinity σ :=
  reluAtInfinity_of_mul hσ hTop (tendsto_atBot_zero_of_symm hΦ hTop)

/-! ### GELU and SiLU -/

/-- **GELU is ReLU at infinity** (ours): `geluWith Φ z = z · Φ(z)` for any `Φ` with `Φ → 1` at
`+∞` and `Φ → 0` at `-∞`. The exact GELU is the case `Φ` = the standard normal CDF. -/
theorem reluAtInfinity_geluWith {Φ : ℝ → ℝ} (hTop : Tendsto Φ atTop (𝓝 1))
    (hBot : Tendsto Φ atBot (𝓝 0)) : ReluAtInfinity (geluWith Φ) :=
  reluAtInfinity_of_mul (Φ := Φ) (fun _ => rfl) hTop hBot

/-- The logistic sigmoid tends to `1` at `+∞`: `1 / (1 + e^{-w})` with `e^{-w} → 0`. -/
theorem tendsto_sigmoid_atTop : Tendsto sigmoid atTop (𝓝 1) := by
  have he : Tendsto (fun w : ℝ => Real.exp (-w)) atTop (𝓝 0) := by
    exact Real.tendsto_exp_neg_atTop_nhds_zero
  have h1 : Tendsto (fun w : ℝ => 1 + Real.exp (-w)) atTop (𝓝 (1 + 0)) :=
    tendsto_const_nhds.add he
  rw [add_zero] at h1
  have h2 : Tendsto (fun w : ℝ => (1 + Real.exp (-w))⁻¹) atTop (𝓝 (1 : ℝ)⁻¹) :=
    h1.inv₀ one_ne_zero
  rw [inv_one] at h2
  refine h2.congr fun w => ?_
  show (1 + Real.exp (-w))⁻¹ = 1 / (1 + Real.exp (-w))
  rw [one_div]

/-- **SiLU is ReLU at infinity** (ours): `silu z = z · sigmoid z`, the sigmoid is symmetric
(`sigmoid z + sigmoid (-z) = 1`) and tends to `1` at `+∞`. -/
theorem reluAtInfinity_silu : ReluAtInfinity silu :=
  reluAtInfinity_of_mul_symm (Φ := sigmoid) (fun _ => rfl) sigmoid_add_sigmoid_neg
    tendsto_sigmoid_atTop

/-! ### The tanh form of GELU -/

/-- The gate of the tanh approximation of GELU:
`Φ w = (1 + tanh (√(2/π) (w + 0.044715 w³))) / 2`, so that `geluTanh w = w · Φ w`. -/
def geluTanhGate (w : ℝ) : ℝ :=
  (1 + Real.tanh (Real.sqrt (2 / Real.pi) * (w + 0.044715 * w ^ 3))) / 2

/-- `(1 + tanh y) / 2 = sigmoid (2 y)`: with `e = e^y`, `f = e^{-y}` (`e f = 1`),
`tanh y = (e - f) / (e + f)` and `sigmoid (2 y) = 1 / (1 + f²)`. -/
theorem one_add_tanh_div_two (y : ℝ) : (1 + Real.tanh y) / 2 = sigmoid (2 * y) := by
  have hC : Real.cosh y ≠ 0 := (Real.cosh_pos y).ne'
  have h1 : Real.tanh y * Real.cosh y = Real.sinh y := by
    rw [Real.tanh_eq_sinh_div_cosh, div_mul_cancel₀ _ hC]
  have h2 : 2 * Real.sinh y = Real.exp y - Real.exp (-y) := by
    rw [Real.sinh_eq]
    ring
  have h3 : 2 * Real.cosh y = Real.exp y + Real.exp (-y) := by
    rw [Real.cosh_eq]
    ring
  have h5 : Real.exp y * Real.exp (-y) = 1 := by
    rw [Real.exp_neg y]
    exact mul_inv_cancel₀ (Real.exp_pos y).ne'
  have hsq : Real.exp (-(2 * y)) = Real.exp (-y) * Real.exp (-y) := by
    rw [← Real.exp_add]
    congr 1
    ring
  have hD : 1 + Real.exp (-(2 * y)) ≠ 0 :=
    (by linarith [Real.exp_pos (-(2 * y))] : (0 : ℝ) < 1 + Real.exp (-(2 * y))).ne'
  have h4' : sigmoid (2 * y) * (1 + Real.exp (-(2 * y))) = 1 :=
    (eq_div_iff hD).1 (rfl : sigmoid (2 * y) = 1 / (1 + Real.exp (-(2 * y))))
  have h4 : sigmoid (2 * y) * (1 + Real.exp (-y) * Real.exp (-y)) = 1 := by
    rw [← hsq]
    exact h4'
  linear_combination (sigmoid (2 * y) * Real.exp (-y)) * h1 +
    (sigmoid (2 * y) * Real.exp (-y) / 2) * h2 -
    (sigmoid (2 * y) * Real.exp (-y) * Real.tanh y / 2) * h3 -
    (sigmoid (2 * y) * (Real.tanh y - 1) / 2) * h5 - ((Real.tanh y + 1) / 2) * h4

/-- The tanh-GELU gate is symmetric: `Φ w + Φ (-w) = 1` (the inner argument and `tanh` are
odd). -/
theorem geluTanhGate_add_neg (w : ℝ) : geluTanhGate w + geluTanhGate (-w) = 1 := by
  have harg : Real.sqrt (2 / Real.pi) * (-w + 0.044715 * (-w) ^ 3) =
      -(Real.sqrt (2 / Real.pi) * (w + 0.044715 * w ^ 3)) := by
    ring
  have ht : Real.tanh (Real.sqrt (2 / Real.pi) * (-w + 0.044715 * (-w) ^ 3)) =
      -Real.tanh (Real.sqrt (2 / Real.pi) * (w + 0.044715 * w ^ 3)) := by
    rw [harg]
    rw [Real.tanh_neg]
  show (1 + Real.tanh (Real.sqrt (2 / Real.pi) * (w + 0.044715 * w ^ 3))) / 2 +
      (1 + Real.tanh (Real.sqrt (2 / Real.pi) * (-w + 0.044715 * (-w) ^ 3))) / 2 = 1
  rw [ht]
  ring

/-- The tanh-GELU gate tends to `1` at `+∞`: it is `sigmoid (2 √(2/π) (w + 0.044715 w³))`
and the argument tends to `+∞` (it is at least `2 √(2/π) w` for `w ≥ 0`). -/
theorem tendsto_geluTanhGate_atTop : Tendsto geluTanhGate atTop (𝓝 1) := by
  have hs : 0 < 2 * Real.sqrt (2 / Real.pi) := by
    have hpi : 0 < 2 / Real.pi := div_pos two_pos Real.pi_pos
    have hsq : 0 < Real.sqrt (2 / Real.pi) := Real.sqrt_pos.2 hpi
    linarith
  have hcube : Tendsto (fun w : ℝ => w + 0.044715 * w ^ 3) atTop atTop := by
    refine tendsto_atTop_mono' atTop ?_ tendsto_id
    filter_upwards [eventually_ge_atTop (0 : ℝ)] with w hw
    show w ≤ w + 0.044715 * w ^ 3
    have hw3 : (0 : ℝ) ≤ 0.044715 * w ^ 3 := mul_nonneg (by norm_num) (pow_nonneg hw 3)
    linarith
  have harg : Tendsto (fun w : ℝ => 2 * Real.sqrt (2 / Real.pi) * (w + 0.044715 * w ^ 3))
      atTop atTop :=
    hcube.const_mul_atTop hs
  refine (tendsto_sigmoid_atTop.comp harg).congr fun w => ?_
  show sigmoid (2 * Real.sqrt (2 / Real.pi) * (w + 0.044715 * w ^ 3)) =
    (1 + Real.tanh (Real.sqrt (2 / Real.pi) * (w + 0.044715 * w ^ 3))) / 2
  rw [one_add_tanh_div_two, mul_assoc]

/-- **The tanh form of GELU is ReLU at infinity** (ours): `geluTanh w = w · Φ w` with the
symmetric gate `Φ = geluTanhGate`, which tends to `1` at `+∞`. -/
theorem reluAtInfinity_geluTanh : ReluAtInfinity geluTanh :=
  reluAtInfinity_of_mul_symm (Φ := geluTanhGate) (fun _ => rfl) geluTanhGate_add_neg
    tendsto_geluTanhGate_atTop

/-! ### Activations within bounded distance of ReLU: softplus and ELU -/

/-- **Bounded distance from ReLU gives ReLU at infinity** (ours): if `|σ w - ReLU w| ≤ C` for
every `w`, then `σ (t z + c) / t = ReLU (t z + c) / t + (σ - ReLU)(t z + c) / t → max z 0`: the
first term by `Absorb.reluAtInfinity_relu`, the second squeezed between `-C / t` and `C / t`. -/
theorem reluAtInfinity_of_abs_sub_relu_le {σ : ℝ → ℝ} (C : ℝ) (h : ∀ w, |σ w - relu w| ≤ C) :
    ReluAtInfinity σ := by
  intro z c
  have hr := reluAtInfinity_relu z c
  have he : Tendsto (fun t : ℝ => (σ (t * z + c) - relu (t * z + c)) / t) atTop (𝓝 0) := by
    refine tendsto_of_tendsto_of_tendsto_of_le_of_le' (tendsto_const_mul_inv_atTop (-C))
      (tendsto_const_mul_inv_atTop C) ?_ ?_
    · filter_upwards [eventually_gt_atTop (0 : ℝ)] with t ht
      show -C * t⁻¹ ≤ (σ (t * z + c) - relu (t * z + c)) / t
      rw [div_eq_mul_inv]
      exact mul_le_mul_of_nonneg_right (abs_le.1 (h (t * z + c))).1 (inv_nonneg.2 ht.le)
    · filter_upwards [eventually_gt_atTop (0 : ℝ)] with t ht
      show (σ (t * z + c) - relu (t * z + c)) / t ≤ C * t⁻¹
      rw [div_eq_mul_inv]
      exact mul_le_mul_of_nonneg_right (abs_le.1 (h (t * z + c))).2 (inv_nonneg.2 ht.le)
  have hsum := hr.add he
  rw [add_zero] at hsum
  refine hsum.congr fun t => ?_
  show relu (t * z + c) / t + (σ (t * z + c) - relu (t * z + c)) / t = σ (t * z + c) / t
  ring

/-- Softplus, `z ↦ log (1 + e^z)`. -/
def softplus (z : ℝ) : ℝ := Real.log (1 + Real.exp z)

/-- Softplus lies within `log 2` above ReLU: for `w ≥ 0`, `e^w ≤ 1 + e^w ≤ 2 e^w` gives
`w ≤ softplus w ≤ log 2 + w`; for `w ≤ 0`, `1 ≤ 1 + e^w ≤ 2` gives `0 ≤ softplus w ≤ log 2`. -/
theorem abs_softplus_sub_relu_le (w : ℝ) : |softplus w - relu w| ≤ Real.log 2 := by
  have hpos : 0 < 1 + Real.exp w := by linarith [Real.exp_pos w]
  have hlog2 : 0 ≤ Real.log 2 := Real.log_nonneg (by norm_num)
  rcases le_total 0 w with hw | hw
  · have hrel : relu w = w := max_eq_left hw
    have hlow : w ≤ softplus w := by
      have h1 : Real.log (Real.exp w) ≤ Real.log (1 + Real.exp w) :=
        Real.log_le_log (Real.exp_pos w) (by linarith)
      rw [Real.log_exp] at h1
      exact h1
    have hup : softplus w ≤ Real.log 2 + w := by
      have h1 : Real.log (1 + Real.exp w) ≤ Real.log (2 * Real.exp w) :=
        Real.log_le_log hpos (by linarith [Real.one_le_exp hw])
      rw [Real.log_mul two_ne_zero (Real.exp_pos w).ne', Real.log_exp] at h1
      exact h1
    rw [hrel]
    exact abs_le.2 ⟨by linarith, by linarith⟩
  · have hrel : relu w = 0 := max_eq_right hw
    have he1 : Real.exp w ≤ 1 := by
      rw [← Real.exp_zero]
      exact Real.exp_le_exp.2 hw
    have hlow : 0 ≤ softplus w := Real.log_nonneg (by linarith [Real.exp_pos w])
    have hup : softplus w ≤ Real.log 2 := Real.log_le_log hpos (by linarith)
    rw [hrel, sub_zero]
    exact abs_le.2 ⟨by linarith, hup⟩

/-- **Softplus is ReLU at infinity** (ours): it stays within `log 2` of ReLU. -/
theorem reluAtInfinity_softplus : ReluAtInfinity softplus :=
  reluAtInfinity_of_abs_sub_relu_le (Real.log 2) abs_softplus_sub_relu_le

/-- ELU with parameter `α`: `z` for `z > 0`, `α (e^z - 1)` for `z ≤ 0`. -/
def elu (α z : ℝ) : ℝ := if 0 < z then z else α * (Real.exp z - 1)

/-- ELU lies within `|α|` of ReLU: the two agree for `w > 0`, and for `w ≤ 0`,
`|α (e^w - 1)| ≤ |α|` since `0 < e^w ≤ 1`. -/
theorem abs_elu_sub_relu_le (α w : ℝ) : |elu α w - relu w| ≤ |α| := by
  by_cases hw : 0 < w
  · have h1 : elu α w = w := if_pos hw
    have h2 : relu w = w := max_eq_left hw.le
    rw [h1, h2, sub_self, abs_zero]
    exact abs_nonneg α
  · have h1 : elu α w = α * (Real.exp w - 1) := if_neg hw
    have h2 : relu w = 0 := max_eq_right (not_lt.1 hw)
    have he0 : 0 < Real.exp w := Real.exp_pos w
    have he1 : Real.exp w ≤ 1 := by
      rw [← Real.exp_zero]
      exact Real.exp_le_exp.2 (not_lt.1 hw)
    have hb : |Real.exp w - 1| ≤ 1 := abs_le.2 ⟨by linarith, by linarith⟩
    rw [h1, h2, sub_zero, abs_mul]
    calc |α| * |Real.exp w - 1| ≤ |α| * 1 := mul_le_mul_of_nonneg_left hb (abs_nonneg α)
      _ = |α| := mul_one _

/-- **ELU is ReLU at infinity** (ours), for every parameter `α`. -/
theorem reluAtInfinity_elu (α : ℝ) : ReluAtInfinity (elu α) :=
  reluAtInfinity_of_abs_sub_relu_le |α| (abs_elu_sub_relu_le α)

end Absorb

end
