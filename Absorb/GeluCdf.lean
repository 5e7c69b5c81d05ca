import Absorb.Activations
import Absorb.BiasBlowup
import Mathlib.Probability.CDF

/-!
# The exact GELU: its gate's limits come from Mathlib's CDF

The exact GELU is `z ↦ z · Φ(z)` with `Φ` the CDF of the standard normal law. Mathlib's
`ProbabilityTheory.cdf μ` is the CDF of a real measure `μ`, and
`ProbabilityTheory.tendsto_cdf_atTop`, `ProbabilityTheory.tendsto_cdf_atBot` give its limits `1` at `+∞` and `0` at `-∞` for every `μ`.
So for every real measure `μ` — the exact GELU is `μ = ProbabilityTheory.gaussianReal 0 1` —
`z ↦ z · cdf μ z` is ReLU at infinity with no assumption left: the hypotheses `Φ → 1` at `+∞`,
`Φ → 0` at `-∞` of `Absorb.reluAtInfinity_geluWith` are proved, not assumed. (The symmetry
`Φ z + Φ (-z) = 1`, used by the index-set construction, is not derived here.)

## Main definitions

* `Absorb.geluCdf μ` : `z ↦ z · cdf μ z`.

## Main results

* `Absorb.geluCdf_eq_geluWith` : `geluCdf μ = geluWith (cdf μ)`.
* `Absorb.reluAtInfinity_geluCdf` : `geluCdf μ` is ReLU at infinity, for every `μ`.
-/

open Filter Topology MeasureTheory

noncomputable section

namespace Absorb

/-- GELU with the CDF of a real measure `μ` as its gate, `z ↦ z · cdf μ z`; the exact GELU is
the case `μ = ProbabilityTheory.gaussianReal 0 1`. -/
def geluCdf (μ : Measure ℝ) (z : ℝ) : ℝ := z * ProbabilityTheory.cdf μ z

/-- `geluCdf μ` is `geluWith Φ` for `Φ = cdf μ`, so every `geluWith` theorem applies to it. -/
theorem geluCdf_eq_geluWith (μ : Measure ℝ) :
    geluCdf μ = geluWith (ProbabilityTheory.cdf μ) := rfl

/-- **The exact GELU is ReLU at infinity** (ours): for every real measure `μ`, the CDF tends to
`1` at `+∞` and to `0` at `-∞` (Mathlib), so `z ↦ z · cdf μ z` is ReLU at infinity by
`Absorb.reluAtInfinity_of_mul`. -/
theorem reluAtInfinity_geluCdf (μ : Measure ℝ) : ReluAtInfinity (geluCdf μ) :=
  reluAtInfinity_of_mul (Φ := ProbabilityTheory.cdf μ) (fun _ => rfl)
    (ProbabilityTheory.tendsto_cdf_atTop μ) (ProbabilityTheory.tendsto_cdf_atBot μ)

end Absorb

end
