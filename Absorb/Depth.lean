import Absorb.Basic
import Absorb.Activations
import Absorb.Linearization
import Mathlib.Analysis.SpecialFunctions.Pow.Real
import Mathlib.Topology.Instances.Matrix
import Mathlib.Topology.Order.DenselyOrdered
import Mathlib.Order.Filter.Basic
import Mathlib.Tactic.FunProp
import Mathlib.Tactic.Continuity
import Mathlib.Tactic.Ring

/-!
# Deep stacks: residual stacks are not residual-free stacks

This file formalizes Corollary 7 of Mijoski–Karbevski, *Can an MLP Absorb Its Own Skip
Connection?* (arXiv 2604.23705), for homogeneous blocks of a *natural* degree `k ≥ 2`
(`k : ℕ`, `σ(t z) = t ^ k σ(z)` with the monoid power) and for gated blocks as in
Proposition 6 (`Absorb.Linearization`), through one abstract property of a block kind.

A kind `K` is *flat at zero* (`Absorb.FlatAtZero K`) if every block of that kind is `o(‖y‖)`
at the origin, in the sequential form: whenever `t⁻¹ • y t → v` as `t → 0⁺`, also
`t⁻¹ • K.eval p (y t) → 0`. Then, by induction on the depth,

* every residual stack `R = (id + M_L) ∘ ⋯ ∘ (id + M_1)` satisfies `R(t x) / t → x`, while
* every nonempty residual-free stack `H = h_L ∘ ⋯ ∘ h_1` satisfies `H(t x) / t → 0`,

so `R ≠ H` as soon as `d ≥ 1` (take `x = (1, …, 1)`). The depths need not be equal.

Scope: only natural degrees `k ≥ 2` are formal. The statement also holds for real `k > 1`
(`t ^ k` as `Real.rpow`, same proof) and for `0 < k < 1` (letting `t → ∞`, **ours** in
`THEORY.md`); neither is formalized here.

## Main definitions

* `Absorb.FlatAtZero K` : blocks of kind `K` are `o(‖y‖)` at `0`, along `t → 0⁺`.

## Main results

* `Absorb.tendsto_inv_smul_residualStack`, `Absorb.tendsto_inv_smul_plainStack` : the two
  limits above.
* `Absorb.residualStack_ne_plainStack_of_flat` : the abstract Corollary 7.
* `Absorb.flatAtZero_gated`, `Absorb.flatAtZero_ungated_of_homogeneous` : the two sources of
  flatness.
* `Absorb.residualStack_ne_plainStack_of_homogeneous` (depth_degree) and
  `Absorb.residualStack_ne_plainStack_of_gate` (depth_linearization) : paper Corollary 7.
* Instances: `Absorb.residualStack_ne_plainStack_reluSq`,
  `Absorb.residualStack_ne_plainStack_swiglu`, `Absorb.residualStack_ne_plainStack_geglu`,
  `Absorb.residualStack_ne_plainStack_geglu_tanh`.
-/

open Filter Topology Matrix

noncomputable section

namespace Absorb

variable {d n : ℕ}

/-- A block kind is *flat at zero* if each of its blocks is `o(‖y‖)` at the origin, in the
sequential form along `t → 0⁺`: for all weights `p`, every limit `v` and every curve `y` with
`t⁻¹ • y t → v`, also `t⁻¹ • K.eval p (y t) → 0`. (Used for the paper's Corollary 7.) -/
def FlatAtZero (K : BlockKind d) : Prop :=
  ∀ (p : K.Params) (v : Fin d → ℝ) (y : ℝ → Fin d → ℝ),
    Tendsto (fun t : ℝ => t⁻¹ • y t) (𝓝[>] (0 : ℝ)) (𝓝 v) →
      Tendsto (fun t : ℝ => t⁻¹ • K.eval p (y t)) (𝓝[>] (0 : ℝ)) (𝓝 0)

section Stacks

variable {K : BlockKind d}

/-- Residual stacks are tangent to the identity at `0` (induction step of Corollary 7): for a
flat kind, if `t⁻¹ • y t → v` then `t⁻¹ • residualStack K ps (y t) → v`, since each residual
block maps `y` to `y + M(y)` and `t⁻¹ • M(y t) → 0`. -/
theorem tendsto_inv_smul_residualStack (hK : FlatAtZero K) (ps : List K.Params) :
    ∀ (y : ℝ → Fin d → ℝ) (v : Fin d → ℝ),
      Tendsto (fun t : ℝ => t⁻¹ • y t) (𝓝[>] (0 : ℝ)) (𝓝 v) →
        Tendsto (fun t : ℝ => t⁻¹ • residualStack K ps (y t)) (𝓝[>] (0 : ℝ)) (𝓝 v) := by
  induction ps with
  | nil =>
    intro y v hy
    simpa only [residualStack_nil, id_eq] using hy
  | cons p ps ih =>
    intro y v hy
    have hstep : Tendsto (fun t : ℝ => t⁻¹ • (y t + K.eval p (y t))) (𝓝[>] (0 : ℝ)) (𝓝 v) := by
      have h := hy.add (hK p v y hy)
      rw [add_zero] at h
      simpa only [smul_add] using h
    have h := ih (fun t => y t + K.eval p (y t)) v hstep
    simpa only [residualStack_cons, Function.comp_apply] using h

/-- Residual-free stacks stay flat: for a flat kind, if `t⁻¹ • y t → 0` then
`t⁻¹ • plainStack K ps (y t) → 0`, for every list of blocks (including the empty one). -/
theorem tendsto_inv_smul_plainStack_of_zero (hK : FlatAtZero K) (ps : List K.Params) :
    ∀ y : ℝ → Fin d → ℝ,
      Tendsto (fun t : ℝ => t⁻¹ • y t) (𝓝[>] (0 : ℝ)) (𝓝 0) →
        Tendsto (fun t : ℝ => t⁻¹ • plainStack K ps (y t)) (𝓝[>] (0 : ℝ)) (𝓝 0) := by
  induction ps with
  | nil =>
    intro y hy
    simpa only [plainStack_nil, id_eq] using hy
  | cons p ps ih =>
    intro y hy
    have h := ih (fun t => K.eval p (y t)) (hK p 0 y hy)
    simpa only [plainStack_cons, Function.comp_apply] using h

/-- Nonempty residual-free stacks are `o(‖y‖)` at `0` (Corollary 7): for a flat kind and
`ps ≠ []`, if `t⁻¹ • y t → v` then `t⁻¹ • plainStack K ps (y t) → 0`. The first block already
sends the rescaled curve to `0`; the remaining blocks keep it there. -/
theorem tendsto_inv_smul_plainStack (hK : FlatAtZero K) {ps : List K.Params} (hps : ps ≠ [])
    {y : ℝ → Fin d → ℝ} {v : Fin d → ℝ}
    (hy : Tendsto (fun t : ℝ => t⁻¹ • y t) (𝓝[>] (0 : ℝ)) (𝓝 v)) :
    Tendsto (fun t : ℝ => t⁻¹ • plainStack K ps (y t)) (𝓝[>] (0 : ℝ)) (𝓝 0) := by
  cases ps with
  | nil =>
    exact absurd rfl hps
  | cons p qs =>
    have h := tendsto_inv_smul_plainStack_of_zero hK qs (fun t => K.eval p (y t)) (hK p v y hy)
    simpa only [plainStack_cons, Function.comp_apply] using h

/-- **Corollary 7, abstract form.** For a kind that is flat at zero and `d > 0`, no residual
stack equals a nonempty residual-free stack of the same kind, whatever the two depths: along
the ray `t • (1, …, 1)`, `t → 0⁺`, the residual stack rescales to `(1, …, 1)` and the
residual-free stack to `0`. -/
theorem residualStack_ne_plainStack_of_flat (hK : FlatAtZero K) (hd : 0 < d)
    (ps : List K.Params) {qs : List K.Params} (hqs : qs ≠ []) :
    residualStack K ps ≠ plainStack K qs := by
  intro h
  have hx := tendsto_inv_smul_smul_self (fun _ : Fin d => (1 : ℝ))
  have h1 := tendsto_inv_smul_residualStack hK ps _ _ hx
  have h2 := tendsto_inv_smul_plainStack hK hqs hx
  rw [h] at h1
  have h3 := tendsto_nhds_unique h1 h2
  have h4 : (1 : ℝ) = 0 := by
    first
    | simpa using congrFun h3 ⟨0, hd⟩
    | exact congrFun h3 ⟨0, hd⟩
  exact one_ne_zero h4

end Stacks

/-! ### Sources of flatness -/

/-- Gated kinds with `g 0 = 0` and `g` continuous at `0` are flat at zero
(`Absorb.tendsto_inv_smul_gatedMap`, the core of Proposition 6). -/
theorem flatAtZero_gated {g : ℝ → ℝ} (hg0 : g 0 = 0) (hg : ContinuousAt g 0) :
    FlatAtZero (gated g d n) := by
  intro p v y hy
  exact tendsto_inv_smul_gatedMap hg0 hg p hy

/-- An ungated block whose activation is continuous and positively homogeneous of a natural
degree `k ≥ 2` (`k : ℕ`) is `o(‖y‖)` at `0`: for `t > 0`,
`t⁻¹ • W_down σ(W_up y) = W_down (t^{k-1} σ(W_up (t⁻¹ • y)))`, and `t^{k-1} → 0` while
`σ(W_up (t⁻¹ • y t)) → σ(W_up v)`. -/
theorem tendsto_inv_smul_ungatedMap {σ : ℝ → ℝ} {k : ℕ} (hσ : Continuous σ)
    (hhom : ∀ t z : ℝ, 0 < t → σ (t * z) = t ^ k * σ z) (hk : 2 ≤ k)
    (W : UngatedWeights d n) {y : ℝ → Fin d → ℝ} {v : Fin d → ℝ}
    (hy : Tendsto (fun t : ℝ => t⁻¹ • y t) (𝓝[>] 0) (𝓝 v)) :
    Tendsto (fun t : ℝ => t⁻¹ • ungatedMap σ W (y t)) (𝓝[>] 0) (𝓝 0) := by
  obtain ⟨j, rfl⟩ : ∃ j, k = j + 2 := ⟨k - 2, by omega⟩
  have hup := tendsto_mulVec_of_tendsto W.up hy
  have hvec : Tendsto (fun t : ℝ => fun i => t * t ^ j * σ ((W.up *ᵥ (t⁻¹ • y t)) i))
      (𝓝[>] 0) (𝓝 0) := by
    rw [tendsto_pi_nhds]
    intro i
    have h1 : Tendsto (fun t : ℝ => σ ((W.up *ᵥ (t⁻¹ • y t)) i)) (𝓝[>] 0)
        (𝓝 (σ ((W.up *ᵥ v) i))) :=
      (hσ.tendsto _).comp (tendsto_pi_nhds.1 hup i)
    have h2 := (tendsto_self_nhdsGT_zero.mul (tendsto_self_nhdsGT_zero.pow j)).mul h1
    first
    | rw [zero_mul, zero_mul] at h2
    | simp only [zero_mul] at h2
    first
    | exact h2
    | simpa using h2
  have h3 := tendsto_mulVec_of_tendsto W.down hvec
  rw [Matrix.mulVec_zero] at h3
  refine h3.congr' ?_
  filter_upwards [self_mem_nhdsWithin] with t ht
  have htpos : 0 < t := Set.mem_Ioi.mp ht
  have ht0 : t ≠ 0 := htpos.ne'
  have hscale : ∀ i, (W.up *ᵥ y t) i = t * (W.up *ᵥ (t⁻¹ • y t)) i := by
    intro i
    rw [Matrix.mulVec_smul W.up t⁻¹ (y t)]
    simp only [Pi.smul_apply, smul_eq_mul]
    rw [mul_inv_cancel_left₀ ht0]
  have hw : (t⁻¹ • fun i => σ ((W.up *ᵥ y t) i)) =
      fun i => t * t ^ j * σ ((W.up *ᵥ (t⁻¹ • y t)) i) := by
    funext i
    simp only [Pi.smul_apply, smul_eq_mul]
    rw [hscale i, hhom t _ htpos]
    have halg : t ^ (j + 2) * σ ((W.up *ᵥ (t⁻¹ • y t)) i) =
        t * (t * t ^ j * σ ((W.up *ᵥ (t⁻¹ • y t)) i)) := by
      ring
    rw [halg, inv_mul_cancel_left₀ ht0]
  have hmv : t⁻¹ • ungatedMap σ W (y t) =
      W.down *ᵥ (t⁻¹ • fun i => σ ((W.up *ᵥ y t) i)) :=
    (Matrix.mulVec_smul W.down t⁻¹ _).symm
  exact (hmv.trans (congrArg (fun w => W.down *ᵥ w) hw)).symm

/-- Ungated kinds whose activation is continuous and positively homogeneous of a natural
degree `k ≥ 2` (`σ(t z) = t^k σ(z)` for `t > 0`, e.g. ReLU², `k = 2`) are flat at zero. -/
theorem flatAtZero_ungated_of_homogeneous {σ : ℝ → ℝ} {k : ℕ} (hσ : Continuous σ)
    (hhom : ∀ t z : ℝ, 0 < t → σ (t * z) = t ^ k * σ z) (hk : 2 ≤ k) :
    FlatAtZero (ungated σ d n) := by
  intro p v y hy
  exact tendsto_inv_smul_ungatedMap hσ hhom hk p hy

/-! ### Corollary 7 -/

/-- **depth_degree** (paper Corollary 7, homogeneous case, natural `k ≥ 2`). Let `σ` be
continuous and positively homogeneous of a natural degree `k ≥ 2` (`k : ℕ`,
`σ(t z) = t ^ k σ(z)` for `t > 0`) and `d > 0`. No residual stack of ungated `σ`-blocks of
width `n`, `(id + M_L) ∘ ⋯ ∘ (id + M_1)`, equals a nonempty residual-free stack
`h_{L'} ∘ ⋯ ∘ h_1` of the same kind (in particular for `L' = L`). Real degrees `k > 1` and
`0 < k < 1` (via `t → ∞`, **ours** in `THEORY.md`) are not formalized. -/
theorem residualStack_ne_plainStack_of_homogeneous {σ : ℝ → ℝ} {k : ℕ} (hσ : Continuous σ)
    (hhom : ∀ t z : ℝ, 0 < t → σ (t * z) = t ^ k * σ z) (hk : 2 ≤ k) (hd : 0 < d)
    (ps : List (ungated σ d n).Params) {qs : List (ungated σ d n).Params} (hqs : qs ≠ []) :
    residualStack (ungated σ d n) ps ≠ plainStack (ungated σ d n) qs :=
  residualStack_ne_plainStack_of_flat (flatAtZero_ungated_of_homogeneous hσ hhom hk) hd ps hqs

/-- **depth_linearization** (paper Corollary 7, gated case). Let the gate satisfy `g 0 = 0`
and be continuous at `0`, and `d > 0`. No residual stack of gated `g`-blocks of width `n`
equals a nonempty residual-free stack of the same kind, whatever the two depths. -/
theorem residualStack_ne_plainStack_of_gate {g : ℝ → ℝ} (hg0 : g 0 = 0)
    (hg : ContinuousAt g 0) (hd : 0 < d) (ps : List (gated g d n).Params)
    {qs : List (gated g d n).Params} (hqs : qs ≠ []) :
    residualStack (gated g d n) ps ≠ plainStack (gated g d n) qs :=
  residualStack_ne_plainStack_of_flat (flatAtZero_gated hg0 hg) hd ps hqs

/-! ### Instances -/

/-- ReLU² is positively homogeneous of degree 2. -/
private theorem reluSq_mul_of_pos {t : ℝ} (ht : 0 < t) (z : ℝ) :
    reluSq (t * z) = t ^ 2 * reluSq z := by
  unfold reluSq
  rcases le_total z 0 with hz | hz
  · have h1 : t * z ≤ 0 := by
      have h2 : t * z ≤ t * 0 := mul_le_mul_of_nonneg_left hz ht.le
      rwa [mul_zero] at h2
    rw [max_eq_right h1, max_eq_right hz]
    ring1
  · have h1 : 0 ≤ t * z := mul_nonneg ht.le hz
    rw [max_eq_left h1, max_eq_left hz]
    ring1

/-- ReLU² is continuous. -/
private theorem continuous_reluSq' : Continuous reluSq := by
  have h : Continuous fun z : ℝ => max z 0 ^ 2 := by
    first
    | exact (continuous_id.max continuous_const).pow 2
    | fun_prop
    | continuity
  exact h

/-- Corollary 7 for ReLU² blocks: residual ReLU² stacks are never residual-free ReLU² stacks
(`d > 0`, nonempty residual-free stack). -/
theorem residualStack_ne_plainStack_reluSq (hd : 0 < d) (ps : List (ungated reluSq d n).Params)
    {qs : List (ungated reluSq d n).Params} (hqs : qs ≠ []) :
    residualStack (ungated reluSq d n) ps ≠ plainStack (ungated reluSq d n) qs :=
  residualStack_ne_plainStack_of_homogeneous continuous_reluSq'
    (fun _ z ht => reluSq_mul_of_pos ht z) le_rfl hd ps hqs

/-- Corollary 7 for SwiGLU blocks (gate `silu`). -/
theorem residualStack_ne_plainStack_swiglu (hd : 0 < d) (ps : List (gated silu d n).Params)
    {qs : List (gated silu d n).Params} (hqs : qs ≠ []) :
    residualStack (gated silu d n) ps ≠ plainStack (gated silu d n) qs :=
  residualStack_ne_plainStack_of_gate silu_zero continuous_silu.continuousAt hd ps hqs

/-- Corollary 7 for GeGLU blocks (gate `geluWith Φ`, `Φ` continuous at `0`). -/
theorem residualStack_ne_plainStack_geglu {Φ : ℝ → ℝ} (hΦ : ContinuousAt Φ 0) (hd : 0 < d)
    (ps : List (gated (geluWith Φ) d n).Params) {qs : List (gated (geluWith Φ) d n).Params}
    (hqs : qs ≠ []) :
    residualStack (gated (geluWith Φ) d n) ps ≠ plainStack (gated (geluWith Φ) d n) qs :=
  residualStack_ne_plainStack_of_gate (geluWith_zero Φ) (continuousAt_geluWith hΦ) hd ps hqs

/-- Corollary 7 for GeGLU blocks with the tanh approximation `geluTanh` as gate. -/
theorem residualStack_ne_plainStack_geglu_tanh (hd : 0 < d)
    (ps : List (gated geluTanh d n).Params) {qs : List (gated geluTanh d n).Params}
    (hqs : qs ≠ []) :
    residualStack (gated geluTanh d n) ps ≠ plainStack (gated geluTanh d n) qs :=
  residualStack_ne_plainStack_of_gate geluTanh_zero continuous_geluTanh.continuousAt hd ps hqs

end Absorb

end
