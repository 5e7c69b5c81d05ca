import Absorb.Basic
import Mathlib.MeasureTheory.Measure.Lebesgue.EqHaar
import Mathlib.Tactic.Linarith
import Mathlib.Tactic.Ring
import Mathlib.Tactic.Push

/-!
# Index sets exist only on a null set of down-projections

This file formalizes the measure-zero statement behind the paper's Corollary 11
(Mijoski–Karbevski, arXiv 2604.23705; `generic_measure_zero` in THEORY.md): for a skip
matrix `A ≠ 0` (in particular the identity skip `A = 1`) and any fixed up-projection
`W_up`, the down-projections `W_down` for which some index set `S` satisfies the
condition `W_down[:,S] W_up[S,:] = -A` form a Lebesgue-null subset of
`Fin d → Fin n → ℝ`.

Proof. There are finitely many `S`, so it suffices to treat one `S`. Pick an entry
`A j k ≠ 0`. The condition forces `L W_down = -A j k` for the linear functional
`L W_down = ∑_{i ∈ S} W_down j i * W_up i k`. If no `W_down` satisfies the condition the
set is empty. Otherwise any solution `W₀` has `L W₀ = -A j k ≠ 0`, so `L ≠ 0` and the set
lies in the level set `{x | L x = L W₀}`: a translate of the proper subspace `ker L`, which
is null for every additive Haar measure.

What is proved here: for a fixed `W_up` and almost every `W_down`, **no index set exists**.
This file does not prove that the skip block is not absorbable. That step is
`index_set_necessary`, formal for ReLU only (`Absorb.indexSetCond_of_absorbable_relu` in
`Absorb.Necessary`) and only under nondegeneracy hypotheses on `W_up` and `W_down`. The joint
statement over `(W_up, W_down)` and the combination with `index_set_necessary` into "almost
surely not absorbable" are not formalized.

## Main results

* `Absorb.addHaar_setOf_apply_eq_apply` : a level set `{x | φ x = φ x₀}` of a linear
  functional with `φ x₀ ≠ 0` is null for an additive Haar measure.
* `Absorb.volume_setOf_indexSetCond_fixed_eq_zero` : the statement for one fixed `S`.
* `Absorb.volume_setOf_indexSetCond_eq_zero` : the statement for "some `S`"
  (paper Corollary 11, for fixed `W_up`).
* `Absorb.ae_forall_not_indexSetCond` : the same, phrased as "for almost every `W_down`
  no index set exists".
-/

open MeasureTheory

noncomputable section

namespace Absorb

variable {d n : ℕ}

/-- A level set `{x | φ x = φ x₀}` of a linear functional `φ` on a finite-dimensional real
normed space, taken at a point with `φ x₀ ≠ 0`, has measure zero for every additive Haar
measure: it is the translate by `x₀` of the proper subspace `ker φ`. (Auxiliary lemma for
the paper's Corollary 11.) -/
theorem addHaar_setOf_apply_eq_apply {E : Type*} [NormedAddCommGroup E] [NormedSpace ℝ E]
    [MeasurableSpace E] [BorelSpace E] [FiniteDimensional ℝ E] (μ : Measure E)
    [μ.IsAddHaarMeasure] (φ : E →ₗ[ℝ] ℝ) {x₀ : E} (hx₀ : φ x₀ ≠ 0) :
    μ {x | φ x = φ x₀} = 0 := by
  -- `ker φ` is proper because it misses `x₀`.
  have hker : LinearMap.ker φ ≠ ⊤ := by
    intro htop
    apply hx₀
    have hmem : x₀ ∈ LinearMap.ker φ := by
      rw [htop]
      exact Submodule.mem_top
    exact LinearMap.mem_ker.1 hmem
  -- The level set through `x₀` is `x₀ + ker φ`, i.e. the preimage of `ker φ` under `-x₀ + ·`.
  have hsub : {x | φ x = φ x₀} ⊆ (fun h => -x₀ + h) ⁻¹' (LinearMap.ker φ : Set E) := by
    intro x hx
    have hx' : φ x = φ x₀ := hx
    have h1 : φ (-x₀ + x) = -φ x₀ + φ x := by
      rw [map_add, map_neg]
    show -x₀ + x ∈ LinearMap.ker φ
    exact LinearMap.mem_ker.2 (by linarith)
  have hpre : μ ((fun h => -x₀ + h) ⁻¹' (LinearMap.ker φ : Set E)) = 0 := by
    first
      | exact (measure_preimage_add μ (-x₀) _).trans (Measure.addHaar_submodule μ _ hker)
      | (rw [measure_preimage_add]; exact Measure.addHaar_submodule μ _ hker)
  exact measure_mono_null hsub hpre

/-- The linear functional `W_down ↦ (W_down[:,S] W_up[S,:]) j k
= ∑_{i ∈ S} W_down j i * W_up i k` on down-projections, for a fixed up-projection `up`,
index set `S` and entry `(j, k)`. The index-set condition of the paper's Theorems 8 and 10
asks that it take the value `-A j k` for every entry. -/
def entryFunctional (up : Matrix (Fin n) (Fin d) ℝ) (S : Finset (Fin n)) (j k : Fin d) :
    (Fin d → Fin n → ℝ) →ₗ[ℝ] ℝ where
  toFun down := ∑ i ∈ S, down j i * up i k
  map_add' x y := by
    show ∑ i ∈ S, (x + y) j i * up i k = ∑ i ∈ S, x j i * up i k + ∑ i ∈ S, y j i * up i k
    rw [← Finset.sum_add_distrib]
    exact Finset.sum_congr rfl fun i _ => by simp only [Pi.add_apply]; ring
  map_smul' c x := by
    show ∑ i ∈ S, (c • x) j i * up i k = (RingHom.id ℝ) c • ∑ i ∈ S, x j i * up i k
    rw [RingHom.id_apply, smul_eq_mul, Finset.mul_sum]
    exact Finset.sum_congr rfl fun i _ => by simp only [Pi.smul_apply, smul_eq_mul]; ring

/-- Evaluation of `entryFunctional`: `∑_{i ∈ S} W_down j i * W_up i k`. -/
@[simp] lemma entryFunctional_apply (up : Matrix (Fin n) (Fin d) ℝ) (S : Finset (Fin n))
    (j k : Fin d) (down : Fin d → Fin n → ℝ) :
    entryFunctional up S j k down = ∑ i ∈ S, down j i * up i k :=
  rfl

/-- **Corollary 11 of the paper, for one index set.** For a skip matrix `A ≠ 0`, a fixed
up-projection `up` and a fixed `S ⊆ {0, …, n-1}`, the down-projections `W_down` with
`W_down[:,S] W_up[S,:] = -A` form a Lebesgue-null subset of `Fin d → Fin n → ℝ`: they lie
in a proper affine hyperplane (or there are none). -/
theorem volume_setOf_indexSetCond_fixed_eq_zero {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (up : Matrix (Fin n) (Fin d) ℝ) (S : Finset (Fin n)) :
    volume {down : Fin d → Fin n → ℝ | IndexSetCond A up down S} = 0 := by
  -- An entry of `A` that is not zero.
  obtain ⟨j, k, hjk⟩ : ∃ j k, A j k ≠ 0 := by
    by_contra h
    push_neg at h
    apply hA
    ext i l
    simp [h i l]
  by_cases h : ∃ down₀ : Fin d → Fin n → ℝ, IndexSetCond A up down₀ S
  · obtain ⟨down₀, h₀⟩ := h
    -- Lebesgue measure on the nested product `Fin d → Fin n → ℝ` is an additive Haar measure.
    haveI : (volume : Measure (Fin n → ℝ)).IsAddHaarMeasure := by
      first
        | infer_instance
        | exact isAddHaarMeasure_volume_pi (Fin n)
    haveI : (volume : Measure (Fin d → Fin n → ℝ)).IsAddHaarMeasure := by
      first
        | infer_instance
        | exact Measure.pi.isAddHaarMeasure _
    have e₀ : entryFunctional up S j k down₀ = -A j k := h₀ j k
    have hφ : entryFunctional up S j k down₀ ≠ 0 := by
      rw [e₀]
      intro hneg
      apply hjk
      linarith
    -- Every solution has the same value of the functional as `down₀`.
    have hsub : {down : Fin d → Fin n → ℝ | IndexSetCond A up down S} ⊆
        {x | entryFunctional up S j k x = entryFunctional up S j k down₀} := by
      intro down hdown
      have hd : IndexSetCond A up down S := hdown
      have e₁ : entryFunctional up S j k down = -A j k := hd j k
      exact e₁.trans e₀.symm
    exact measure_mono_null hsub
      (addHaar_setOf_apply_eq_apply (E := Fin d → Fin n → ℝ) volume
        (entryFunctional up S j k) hφ)
  · -- No solution at all: the set is empty.
    have hsub : {down : Fin d → Fin n → ℝ | IndexSetCond A up down S} ⊆
        (∅ : Set (Fin d → Fin n → ℝ)) := by
      intro down hdown
      exact (h ⟨down, hdown⟩).elim
    exact measure_mono_null hsub (by simp)

/-- **Corollary 11 of the paper (measure-zero form), for a fixed up-projection.** Let
`A ≠ 0` be the skip matrix (for instance the identity skip `A = 1`; note that `A ≠ 0`
forces `0 < d`) and fix `W_up`. The set of down-projections `W_down` for which some index
set `S` satisfies `W_down[:,S] W_up[S,:] = -A` has Lebesgue measure zero in
`Fin d → Fin n → ℝ`. It is a finite union, over the `2^n` sets `S`, of null sets
(`volume_setOf_indexSetCond_fixed_eq_zero`). So for every fixed `W_up` and almost every
`W_down` no index set exists. (That the skip block is then not absorbable needs
`index_set_necessary` and its nondegeneracy hypotheses; it is not part of this statement.) -/
theorem volume_setOf_indexSetCond_eq_zero {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (up : Matrix (Fin n) (Fin d) ℝ) :
    volume {down : Fin d → Fin n → ℝ | ∃ S : Finset (Fin n), IndexSetCond A up down S} = 0 := by
  have hsub : {down : Fin d → Fin n → ℝ | ∃ S : Finset (Fin n), IndexSetCond A up down S} ⊆
      ⋃ S : Finset (Fin n), {down : Fin d → Fin n → ℝ | IndexSetCond A up down S} := by
    intro down hdown
    obtain ⟨S, hS⟩ := hdown
    exact Set.mem_iUnion.2 ⟨S, hS⟩
  exact measure_mono_null hsub
    (measure_iUnion_null fun S => volume_setOf_indexSetCond_fixed_eq_zero hA up S)

/-- **Corollary 11 of the paper, almost-everywhere form.** For a skip matrix `A ≠ 0` and any
fixed up-projection `W_up`, for almost every down-projection `W_down` (Lebesgue measure on
`Fin d → Fin n → ℝ`) no index set `S` satisfies `W_down[:,S] W_up[S,:] = -A`. -/
theorem ae_forall_not_indexSetCond {A : Matrix (Fin d) (Fin d) ℝ} (hA : A ≠ 0)
    (up : Matrix (Fin n) (Fin d) ℝ) :
    ∀ᵐ down ∂(volume : Measure (Fin d → Fin n → ℝ)),
      ∀ S : Finset (Fin n), ¬ IndexSetCond A up down S := by
  refine ae_iff.2 ?_
  refine measure_mono_null ?_ (volume_setOf_indexSetCond_eq_zero hA up)
  intro down hdown
  have hd : ¬ ∀ S : Finset (Fin n), ¬ IndexSetCond A up down S := hdown
  push_neg at hd
  exact hd

end Absorb

end
