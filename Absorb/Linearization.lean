import Absorb.Basic
import Absorb.Activations
import Mathlib.Analysis.SpecialFunctions.Pow.Real
import Mathlib.Analysis.SpecialFunctions.Exp
import Mathlib.Analysis.SpecialFunctions.Trigonometric.Basic
import Mathlib.Topology.Instances.Matrix
import Mathlib.Topology.Order.DenselyOrdered
import Mathlib.Order.Filter.Basic
import Mathlib.Tactic.FunProp
import Mathlib.Tactic.Continuity
import Mathlib.Tactic.Linarith
import Mathlib.Tactic.Ring

/-!
# Linearization at the origin: gated blocks cannot absorb a skip

This file formalizes Proposition 6 of Mijoski–Karbevski, *Can an MLP Absorb Its Own Skip
Connection?* (arXiv 2604.23705), in the strengthened form of `THEORY.md` (**ours**: the paper
assumes the gate `g` differentiable at `0`; continuity at `0` suffices).

For a gated block `M(x) = W_down (g(W_gate x) ⊙ W_up x)` with `g 0 = 0` and `g` continuous at
`0`, the value path is linear and the gate tends to `g 0 = 0`, so `M(t x) / t → 0` as
`t → 0⁺`. A skip block `f(x) = A x + M(x)` has `f(t x) / t → A x` instead. If `f` were equal to
a residual-free gated block `h`, both limits would agree, so `A x = 0` for every `x`, i.e.
`A = 0`.

The key estimate is stated in the *flat* form used again for deep stacks (`Absorb.Depth`):
whenever `y t / t → v` as `t → 0⁺`, also `M(y t) / t → 0`
(`Absorb.tendsto_inv_smul_gatedMap`).

## Main results

* `Absorb.tendsto_inv_smul_gatedMap` : `t⁻¹ • gatedMap g V (y t) → 0` as `t → 0⁺` whenever
  `t⁻¹ • y t` converges.
* `Absorb.not_absorbable_of_gate_continuousAt` : Proposition 6 (continuity version).
* `Absorb.not_absorbable_swiglu` : the SwiGLU instance (`g = silu`).
* `Absorb.not_absorbable_geglu` : the GeGLU instance (`g = geluWith Φ`, `Φ` continuous at `0`).
* `Absorb.not_absorbable_geglu_tanh` : the same with the tanh approximation `geluTanh`.

Also: continuity of `sigmoid` and `silu` (`Absorb.continuous_sigmoid`, `Absorb.continuous_silu`),
`Absorb.continuous_geluTanh`, `Absorb.silu_zero`, `Absorb.geluWith_zero`, `Absorb.geluTanh_zero`,
`Absorb.continuousAt_geluWith`, and small limit
lemmas along `𝓝[>] 0` reused by `Absorb.Depth`.
-/

open Filter Topology Matrix

noncomputable section

namespace Absorb

variable {d n : ℕ}

/-! ### Limits along `t → 0⁺` -/

/-- The identity tends to `0` along `𝓝[>] 0`. -/
theorem tendsto_self_nhdsGT_zero : Tendsto (fun t : ℝ => t) (𝓝[>] 0) (𝓝 0) := by
  exact tendsto_nhdsWithin_of_tendsto_nhds Filter.tendsto_id

/-- A fixed matrix acting on a convergent family of vectors: `M *ᵥ w t → M *ᵥ w₀`
(continuity of `Matrix.mulVec`). -/
theorem tendsto_mulVec_of_tendsto {α m o : Type*} [Fintype o] (M : Matrix m o ℝ)
    {l : Filter α} {w : α → o → ℝ} {w₀ : o → ℝ} (h : Tendsto w l (𝓝 w₀)) :
    Tendsto (fun a => M *ᵥ w a) l (𝓝 (M *ᵥ w₀)) := by
  have hc : Continuous fun x : o → ℝ => M *ᵥ x := by
    first
    | exact Continuous.matrix_mulVec continuous_const continuous_id
    | fun_prop
    | continuity
  exact (hc.tendsto w₀).comp h

/-- The rescaled ray: `t⁻¹ • (t • x) → x` as `t → 0⁺` (it equals `x` for every `t > 0`). -/
theorem tendsto_inv_smul_smul_self (x : Fin d → ℝ) :
    Tendsto (fun t : ℝ => t⁻¹ • t • x) (𝓝[>] 0) (𝓝 x) := by
  refine tendsto_const_nhds.congr' ?_
  filter_upwards [self_mem_nhdsWithin] with t ht
  exact (inv_smul_smul₀ (Set.mem_Ioi.mp ht).ne' x).symm

/-- If `t⁻¹ • y t` converges as `t → 0⁺`, then `y t → 0`: for `t > 0`,
`y t = t • (t⁻¹ • y t)` and `t → 0`. -/
theorem tendsto_zero_of_tendsto_inv_smul {y : ℝ → Fin d → ℝ} {v : Fin d → ℝ}
    (hy : Tendsto (fun t : ℝ => t⁻¹ • y t) (𝓝[>] 0) (𝓝 v)) :
    Tendsto y (𝓝[>] 0) (𝓝 0) := by
  have h := tendsto_self_nhdsGT_zero.smul hy
  rw [zero_smul] at h
  refine h.congr' ?_
  filter_upwards [self_mem_nhdsWithin] with t ht
  exact smul_inv_smul₀ (Set.mem_Ioi.mp ht).ne' (y t)

/-! ### The gated block is flat at the origin -/

/-- Rescaling a gated block: `t⁻¹ • M(y) = W_down (g(W_gate y) ⊙ W_up (t⁻¹ • y))`, for every
`t` (the value projection is linear). -/
theorem inv_smul_gatedMap (g : ℝ → ℝ) (V : GatedWeights d n) (t : ℝ) (y : Fin d → ℝ) :
    t⁻¹ • gatedMap g V y =
      V.down *ᵥ fun i => g ((V.gate *ᵥ y) i) * (V.up *ᵥ (t⁻¹ • y)) i := by
  have hw : (t⁻¹ • fun i => g ((V.gate *ᵥ y) i) * (V.up *ᵥ y) i) =
      fun i => g ((V.gate *ᵥ y) i) * (V.up *ᵥ (t⁻¹ • y)) i := by
    funext i
    first
    | (rw [Matrix.mulVec_smul V.up t⁻¹ y]; simp only [Pi.smul_apply, smul_eq_mul]; ring1)
    | (simp only [Matrix.mulVec_smul, Pi.smul_apply, smul_eq_mul]; ring1)
    | (rw [Matrix.mulVec_smul_assoc V.up y t⁻¹]; simp only [Pi.smul_apply, smul_eq_mul]; ring1)
  have hmv : t⁻¹ • gatedMap g V y =
      V.down *ᵥ (t⁻¹ • fun i => g ((V.gate *ᵥ y) i) * (V.up *ᵥ y) i) :=
    (Matrix.mulVec_smul V.down t⁻¹ _).symm
  exact hmv.trans (congrArg (fun w => V.down *ᵥ w) hw)

/-- **Flatness of gated blocks at `0`** (the core of the paper's Proposition 6). Let `g 0 = 0`
and `g` be continuous at `0`. If `t⁻¹ • y t → v` as `t → 0⁺`, then
`t⁻¹ • gatedMap g V (y t) → 0`: the rescaled value path `W_up (t⁻¹ • y t)` converges, while the
gate `g(W_gate y t) → g 0 = 0`. -/
theorem tendsto_inv_smul_gatedMap {g : ℝ → ℝ} (hg0 : g 0 = 0) (hg : ContinuousAt g 0)
    (V : GatedWeights d n) {y : ℝ → Fin d → ℝ} {v : Fin d → ℝ}
    (hy : Tendsto (fun t : ℝ => t⁻¹ • y t) (𝓝[>] 0) (𝓝 v)) :
    Tendsto (fun t : ℝ => t⁻¹ • gatedMap g V (y t)) (𝓝[>] 0) (𝓝 0) := by
  have hy0 := tendsto_zero_of_tendsto_inv_smul hy
  have hgate : Tendsto (fun t : ℝ => V.gate *ᵥ y t) (𝓝[>] 0) (𝓝 0) := by
    have h := tendsto_mulVec_of_tendsto V.gate hy0
    rwa [Matrix.mulVec_zero] at h
  have hup := tendsto_mulVec_of_tendsto V.up hy
  have hvec : Tendsto (fun t : ℝ => fun i => g ((V.gate *ᵥ y t) i) * (V.up *ᵥ (t⁻¹ • y t)) i)
      (𝓝[>] 0) (𝓝 0) := by
    rw [tendsto_pi_nhds]
    intro i
    have h1 : Tendsto (fun t : ℝ => (V.gate *ᵥ y t) i) (𝓝[>] 0) (𝓝 0) := by
      first
      | exact tendsto_pi_nhds.1 hgate i
      | simpa using tendsto_pi_nhds.1 hgate i
    have h2 := hg.tendsto.comp h1
    rw [hg0] at h2
    have h3 := h2.mul (tendsto_pi_nhds.1 hup i)
    rw [zero_mul] at h3
    first
    | exact h3
    | simpa using h3
  have h4 := tendsto_mulVec_of_tendsto V.down hvec
  rw [Matrix.mulVec_zero] at h4
  have key : (fun t : ℝ => t⁻¹ • gatedMap g V (y t)) =
      fun t => V.down *ᵥ fun i => g ((V.gate *ᵥ y t) i) * (V.up *ᵥ (t⁻¹ • y t)) i := by
    funext t
    exact inv_smul_gatedMap g V t (y t)
  exact h4.congr fun t => (congrFun key t).symm

/-! ### Proposition 6 -/

/-- A matrix that kills every vector is zero. (Kept private: `Absorb.Degree` has the public
version `Absorb.eq_zero_of_forall_mulVec_eq_zero`; this file depends only on `Absorb.Basic` and
`Absorb.Activations`.) -/
private theorem eq_zero_of_forall_mulVec_eq_zero {A : Matrix (Fin d) (Fin d) ℝ}
    (h : ∀ x, A *ᵥ x = 0) : A = 0 := by
  ext i j
  have hij := congrFun (h (Pi.single j 1)) i
  rw [Matrix.mulVec_single_one] at hij
  simpa using hij

/-- **Linearization** (paper Proposition 6; **ours**: continuity of the gate at `0` replaces
differentiability). Let the gate satisfy `g 0 = 0` and be continuous at `0`, and let
`A ≠ 0`. Then the skip block `x ↦ A x + W_down (g(W_gate x) ⊙ W_up x)` is not absorbable:
no residual-free gated block of the same gate and width equals it.

Proof: if `h = f`, then `t⁻¹ • f(t x) = A (t⁻¹ • t • x) + t⁻¹ • M(t x) → A x`, while
`t⁻¹ • h(t x) → 0` (`Absorb.tendsto_inv_smul_gatedMap`); limits along `𝓝[>] 0` are unique,
so `A x = 0` for all `x`, i.e. `A = 0`. -/
theorem not_absorbable_of_gate_continuousAt {g : ℝ → ℝ} (hg0 : g 0 = 0)
    (hg : ContinuousAt g 0) {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (W : GatedWeights d n) : ¬ Absorbable (gated g d n) (skipMap A (gated g d n) W) := by
  rintro ⟨V, hV⟩
  refine hA (eq_zero_of_forall_mulVec_eq_zero fun x => ?_)
  have hx := tendsto_inv_smul_smul_self x
  have hfun : (fun t : ℝ => t⁻¹ • gatedMap g V (t • x)) =
      fun t => A *ᵥ (t⁻¹ • t • x) + t⁻¹ • gatedMap g W (t • x) := by
    funext t
    have hVt : gatedMap g V (t • x) = A *ᵥ (t • x) + gatedMap g W (t • x) := hV (t • x)
    rw [hVt, smul_add]
    exact congrArg (fun z : Fin d → ℝ => z + t⁻¹ • gatedMap g W (t • x))
      (Matrix.mulVec_smul A t⁻¹ (t • x)).symm
  have hlim := (tendsto_mulVec_of_tendsto A hx).add (tendsto_inv_smul_gatedMap hg0 hg W hx)
  have hskip : Tendsto (fun t : ℝ => t⁻¹ • gatedMap g V (t • x)) (𝓝[>] 0)
      (𝓝 (A *ᵥ x + 0)) := by
    exact hlim.congr fun t => (congrFun hfun t).symm
  have hfree : Tendsto (fun t : ℝ => t⁻¹ • gatedMap g V (t • x)) (𝓝[>] 0) (𝓝 0) :=
    tendsto_inv_smul_gatedMap hg0 hg V hx
  have h := tendsto_nhds_unique hskip hfree
  rwa [add_zero] at h

/-! ### SwiGLU and GeGLU -/

/-- The logistic sigmoid `z ↦ 1 / (1 + e^{-z})` is continuous (its denominator is positive). -/
theorem continuous_sigmoid : Continuous sigmoid := by
  have hden : Continuous fun z : ℝ => 1 + Real.exp (-z) := by
    first
    | exact continuous_const.add (Real.continuous_exp.comp continuous_neg)
    | fun_prop
    | continuity
  have hne : ∀ z : ℝ, 1 + Real.exp (-z) ≠ 0 := fun z => by
    have hz : 0 < Real.exp (-z) := Real.exp_pos (-z)
    exact (by linarith : (0 : ℝ) < 1 + Real.exp (-z)).ne'
  have hinv : Continuous fun z : ℝ => (1 + Real.exp (-z))⁻¹ := by
    exact hden.inv₀ hne
  have hs : sigmoid = fun z : ℝ => (1 + Real.exp (-z))⁻¹ := by
    funext z
    show 1 / (1 + Real.exp (-z)) = (1 + Real.exp (-z))⁻¹
    exact one_div _
  rw [hs]
  exact hinv

/-- SiLU `z ↦ z · sigmoid z` is continuous. -/
theorem continuous_silu : Continuous silu := by
  have h : Continuous fun z : ℝ => z * sigmoid z := continuous_id.mul continuous_sigmoid
  exact h

/-- `silu 0 = 0`. -/
theorem silu_zero : silu 0 = 0 := by
  simp [silu]

/-- `geluWith Φ 0 = 0`, whatever `Φ`. -/
theorem geluWith_zero (Φ : ℝ → ℝ) : geluWith Φ 0 = 0 := by
  simp [geluWith]

/-- `geluWith Φ = z ↦ z · Φ(z)` is continuous at `0` as soon as `Φ` is. -/
theorem continuousAt_geluWith {Φ : ℝ → ℝ} (hΦ : ContinuousAt Φ 0) :
    ContinuousAt (geluWith Φ) 0 := by
  have h : ContinuousAt (fun z : ℝ => z * Φ z) 0 := continuousAt_id.mul hΦ
  exact h

/-- **SwiGLU** (instance of the paper's Proposition 6): with gate `g = silu`, the skip block
`x ↦ A x + W_down (silu(W_gate x) ⊙ W_up x)` with `A ≠ 0` is not absorbable by any
residual-free SwiGLU block of the same width. -/
theorem not_absorbable_swiglu {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (W : GatedWeights d n) : ¬ Absorbable (gated silu d n) (skipMap A (gated silu d n) W) :=
  not_absorbable_of_gate_continuousAt silu_zero continuous_silu.continuousAt hA W

/-- **GeGLU** (instance of the paper's Proposition 6): with gate `g = geluWith Φ`,
`z ↦ z · Φ(z)`, and `Φ` continuous at `0` (the exact GELU takes `Φ` the standard normal CDF;
no symmetry of `Φ` is needed here), the skip block with `A ≠ 0` is not absorbable by any
residual-free GeGLU block of the same width. -/
theorem not_absorbable_geglu {Φ : ℝ → ℝ} (hΦ : ContinuousAt Φ 0)
    {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0) (W : GatedWeights d n) :
    ¬ Absorbable (gated (geluWith Φ) d n) (skipMap A (gated (geluWith Φ) d n) W) :=
  not_absorbable_of_gate_continuousAt (geluWith_zero Φ) (continuousAt_geluWith hΦ) hA W

/-- `tanh` is continuous: `tanh = sinh / cosh` with `cosh > 0`. -/
private theorem continuous_tanh' : Continuous Real.tanh := by
  have h : Real.tanh = fun x => Real.sinh x / Real.cosh x := by
    funext x
    exact Real.tanh_eq_sinh_div_cosh x
  rw [h]
  first
  | exact Real.continuous_sinh.div Real.continuous_cosh fun x => (Real.cosh_pos x).ne'
  | exact Real.continuous_sinh.div₀ Real.continuous_cosh fun x => (Real.cosh_pos x).ne'

/-- The tanh approximation of GELU is continuous. -/
theorem continuous_geluTanh : Continuous geluTanh := by
  have hin : Continuous fun z : ℝ => Real.sqrt (2 / Real.pi) * (z + 0.044715 * z ^ 3) := by
    first
    | exact continuous_const.mul (continuous_id.add (continuous_const.mul (continuous_id.pow 3)))
    | fun_prop
    | continuity
  have hF : Continuous fun z : ℝ =>
      (1 + Real.tanh (Real.sqrt (2 / Real.pi) * (z + 0.044715 * z ^ 3))) / 2 := by
    have ht : Continuous fun z : ℝ =>
        Real.tanh (Real.sqrt (2 / Real.pi) * (z + 0.044715 * z ^ 3)) :=
      continuous_tanh'.comp hin
    first
    | exact (continuous_const.add ht).div_const 2
    | fun_prop
  have h : Continuous fun z : ℝ =>
      z * ((1 + Real.tanh (Real.sqrt (2 / Real.pi) * (z + 0.044715 * z ^ 3))) / 2) :=
    continuous_id.mul hF
  exact h

/-- `geluTanh 0 = 0`. -/
theorem geluTanh_zero : geluTanh 0 = 0 := by
  unfold geluTanh
  exact zero_mul _

/-- **GeGLU with the tanh approximation of GELU** (instance of the paper's Proposition 6): the
skip block with gate `geluTanh` and `A ≠ 0` is not absorbable by any residual-free block of the
same kind and width. -/
theorem not_absorbable_geglu_tanh {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (W : GatedWeights d n) :
    ¬ Absorbable (gated geluTanh d n) (skipMap A (gated geluTanh d n) W) :=
  not_absorbable_of_gate_continuousAt geluTanh_zero continuous_geluTanh.continuousAt hA W

end Absorb

end
