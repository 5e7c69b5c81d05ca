import Mathlib.Data.Matrix.Mul
import Mathlib.Data.Real.Basic

/-!
# Blocks, skip connections and absorption

This file sets up the objects of Mijoski–Karbevski, *Can an MLP Absorb Its Own Skip
Connection?* (arXiv 2604.23705): MLP blocks on `ℝ^d = Fin d → ℝ`, the skip block
`x ↦ A x + M(x)`, depth-`L` stacks, and the notion of a skip block being *absorbable* by a
residual-free block of the same kind and width.

A *kind* of block (`Absorb.BlockKind`) is a type of weights together with the map that the
weights compute. Comparing a skip block with "every residual-free block of the same kind"
is then quantification over `K.Params`, which keeps the kind (activation, gating, biases,
width) fixed by construction.

## Main definitions

* `Absorb.BlockKind` : weights and their evaluation map.
* `Absorb.ungated σ d n`, `Absorb.gated g d n`, `Absorb.biased σ d n` : the ungated block
  `W_down σ(W_up x)`, the gated block `W_down (g(W_gate x) ⊙ W_up x)`, and the ungated block
  with biases `W_down σ(W_up x + b_up) + b_down`.
* `Absorb.skipMap A K p` : the skip block `x ↦ A x + K.eval p x`.
* `Absorb.Absorbable K f` : some residual-free block of kind `K` equals `f` everywhere.
* `Absorb.plainStack`, `Absorb.residualStack` : depth-`L` compositions.
* `Absorb.IndexSetCond A W_up W_down S` : `W_down[:,S] W_up[S,:] = -A`, over any
  commutative ring (the compiled checker uses it over `ℚ`).
-/

open Matrix

noncomputable section

namespace Absorb

/-- A kind of block on `Fin d → ℝ`: the type of its weights and the function that a choice
of weights computes. Activation, gating, biases and width are part of the kind. -/
structure BlockKind (d : ℕ) where
  /-- The weights of one block of this kind. -/
  Params : Type
  /-- The function computed by the block with weights `p`. -/
  eval : Params → (Fin d → ℝ) → Fin d → ℝ

variable {d n : ℕ}

/-- Weights of an ungated block of width `n` without biases: `W_up` (`n × d`), `W_down`
(`d × n`). -/
structure UngatedWeights (d n : ℕ) where
  /-- The up-projection `W_up`; its row `i` is `b_iᵀ`. -/
  up : Matrix (Fin n) (Fin d) ℝ
  /-- The down-projection `W_down`; its column `i` is `a_i`. -/
  down : Matrix (Fin d) (Fin n) ℝ

/-- Weights of a gated block of width `n` without biases. -/
structure GatedWeights (d n : ℕ) where
  /-- The gate projection `W_gate`. -/
  gate : Matrix (Fin n) (Fin d) ℝ
  /-- The (linear) value projection `W_up`. -/
  up : Matrix (Fin n) (Fin d) ℝ
  /-- The down-projection `W_down`. -/
  down : Matrix (Fin d) (Fin n) ℝ

/-- Weights of an ungated block of width `n` with biases. -/
structure BiasedWeights (d n : ℕ) where
  /-- The up-projection `W_up`. -/
  up : Matrix (Fin n) (Fin d) ℝ
  /-- The down-projection `W_down`. -/
  down : Matrix (Fin d) (Fin n) ℝ
  /-- The hidden bias `b_up`. -/
  bUp : Fin n → ℝ
  /-- The output bias `b_down`. -/
  bDown : Fin d → ℝ

/-- The ungated block `x ↦ W_down σ(W_up x)`, `σ` applied entrywise. -/
def ungatedMap (σ : ℝ → ℝ) (W : UngatedWeights d n) (x : Fin d → ℝ) : Fin d → ℝ :=
  W.down *ᵥ fun i => σ ((W.up *ᵥ x) i)

/-- The gated block `x ↦ W_down (g(W_gate x) ⊙ (W_up x))`. -/
def gatedMap (g : ℝ → ℝ) (W : GatedWeights d n) (x : Fin d → ℝ) : Fin d → ℝ :=
  W.down *ᵥ fun i => g ((W.gate *ᵥ x) i) * (W.up *ᵥ x) i

/-- The ungated block with biases `x ↦ W_down σ(W_up x + b_up) + b_down`. -/
def biasedMap (σ : ℝ → ℝ) (W : BiasedWeights d n) (x : Fin d → ℝ) : Fin d → ℝ :=
  W.down *ᵥ (fun i => σ ((W.up *ᵥ x) i + W.bUp i)) + W.bDown

/-- Ungated blocks of width `n` with activation `σ`, no biases. -/
def ungated (σ : ℝ → ℝ) (d n : ℕ) : BlockKind d := ⟨UngatedWeights d n, ungatedMap σ⟩

/-- Gated blocks of width `n` with gate `g` (SwiGLU: `g = SiLU`, ReGLU: `g = ReLU`). -/
def gated (g : ℝ → ℝ) (d n : ℕ) : BlockKind d := ⟨GatedWeights d n, gatedMap g⟩

/-- Ungated blocks of width `n` with activation `σ` and biases. -/
def biased (σ : ℝ → ℝ) (d n : ℕ) : BlockKind d := ⟨BiasedWeights d n, biasedMap σ⟩

/-- The skip block `x ↦ A x + M(x)` with skip matrix `A` and block `M = K.eval p`. The
identity skip is `A = 1`. -/
def skipMap (A : Matrix (Fin d) (Fin d) ℝ) (K : BlockKind d) (p : K.Params)
    (x : Fin d → ℝ) : Fin d → ℝ :=
  A *ᵥ x + K.eval p x

/-- `f` is *absorbable* by blocks of kind `K`: some residual-free block of that kind (same
activation, same width) equals `f` at every point. -/
def Absorbable (K : BlockKind d) (f : (Fin d → ℝ) → Fin d → ℝ) : Prop :=
  ∃ p : K.Params, ∀ x, K.eval p x = f x

/-- The residual-free stack `h_L ∘ ⋯ ∘ h_1`; the head of the list is applied first. -/
def plainStack (K : BlockKind d) : List K.Params → (Fin d → ℝ) → Fin d → ℝ
  | [] => id
  | p :: ps => plainStack K ps ∘ K.eval p

/-- The residual stack `(id + M_L) ∘ ⋯ ∘ (id + M_1)`; the head of the list is applied
first. -/
def residualStack (K : BlockKind d) : List K.Params → (Fin d → ℝ) → Fin d → ℝ
  | [] => id
  | p :: ps => residualStack K ps ∘ fun x => x + K.eval p x

/-- The index-set condition of the paper's Theorems 8 and 10:
`W_down[:,S] W_up[S,:] = -A`, i.e. `∑_{i ∈ S} a_i b_iᵀ = -A`. Stated over any commutative
ring so that the compiled checker can decide it over `ℚ`. -/
def IndexSetCond {R : Type*} [CommRing R] (A : Matrix (Fin d) (Fin d) R)
    (up : Matrix (Fin n) (Fin d) R) (down : Matrix (Fin d) (Fin n) R)
    (S : Finset (Fin n)) : Prop :=
  ∀ j k, ∑ i ∈ S, down j i * up i k = -A j k

@[simp] lemma skipMap_apply (A : Matrix (Fin d) (Fin d) ℝ) (K : BlockKind d) (p : K.Params)
    (x : Fin d → ℝ) : skipMap A K p x = A *ᵥ x + K.eval p x := rfl

@[simp] lemma plainStack_nil (K : BlockKind d) : plainStack K [] = id := rfl

@[simp] lemma plainStack_cons (K : BlockKind d) (p : K.Params) (ps : List K.Params) :
    plainStack K (p :: ps) = plainStack K ps ∘ K.eval p := rfl

@[simp] lemma residualStack_nil (K : BlockKind d) : residualStack K [] = id := rfl

@[simp] lemma residualStack_cons (K : BlockKind d) (p : K.Params) (ps : List K.Params) :
    residualStack K (p :: ps) = residualStack K ps ∘ fun x => x + K.eval p x := rfl

end Absorb

end
