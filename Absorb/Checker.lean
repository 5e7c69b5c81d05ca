import Lean.Data.Json
import Absorb.IndexSet
import Absorb.Dual

/-!
# The compiled index-set checker: decision over `ℚ`, JSON input, soundness

The executable `lake exe absorb-check FILE.json` (root `AbsorbCheck`) reads an ungated block
with rational weights and either a candidate index set `S` or a dual certificate `Y`, and
decides exactly over `ℚ`

* for `S`: the index-set condition of the paper's Theorems 8 and 10 (`THEORY.md`,
  **index_set_sufficient**), `W_down[:,S] W_up[S,:] = -A`;
* for `Y` (**dual certificate**, ours): `-⟨A, Y⟩ < ∑_i min(c_i, 0)` or
  `-⟨A, Y⟩ > ∑_i max(c_i, 0)` with `c_i = a_iᵀ Y b_i`, which proves that no index set exists
  (`Absorb.not_indexSetCond_of_dual`).

This file is the library part of it: the data (`Absorb.Checker.RatBlock`,
`Absorb.Checker.RatDualBlock`, `Absorb.Checker.CheckInput`), the decision procedures
(`Absorb.Checker.check`, `Absorb.Checker.checkDual`), the verdict string
(`Absorb.Checker.verdict`), their correctness and soundness, and the pure JSON-in/JSON-out
pipeline that the executable runs.

The verdict that the executable prints is `verdict I` for the very `CheckInput` `I` that it
built from the file, so the theorems below apply to exactly what it prints: `"absorbed"`
means the index-set condition holds (`Absorb.Checker.indexSetCond_of_verdict_eq_absorbed`), so
that the skip block `x ↦ A x + W_down σ(W_up x)`, with the file's weights read as real numbers,
equals a residual-free ungated block of the same width for every odd-part-linear `σ` (ReLU,
GELU, SiLU, …; `Absorb.Checker.absorbable_of_check`); `"no_index_set"` means that no index set
satisfies the condition, over `ℚ` and over `ℝ`
(`Absorb.Checker.not_indexSetCond_of_verdict_eq_noIndexSet`,
`Absorb.Checker.not_indexSetCond_map_ratCast_of_checkDual`).

## Main definitions

* `Absorb.Checker.RatBlock` : `d`, `n`, `W_up`, `W_down`, an optional skip `A` (default `1`)
  and `S`, all over `ℚ`; `Absorb.Checker.RatDualBlock` : the same with `Y` instead of `S`.
* `Absorb.Checker.check` : the Boolean decision of `IndexSetCond B.A B.up B.down B.S`.
* `Absorb.Checker.checkDual` : the Boolean decision of `DualCond B.A B.up B.down B.Y`.
* `Absorb.Checker.verdict` : `"absorbed" | "condition_fails"` (for `S`),
  `"no_index_set" | "certificate_fails"` (for `Y`).
* `Absorb.Checker.firstFailure` : the first entry `(j, k)` (row-major) where the condition
  fails, for the report.
* `Absorb.Checker.parseInput`, `Absorb.Checker.processInput` : JSON → `CheckInput` → verdict.

## Main results

* `Absorb.Checker.check_eq_true_iff` : `check B = true ↔ IndexSetCond B.A B.up B.down B.S`.
* `Absorb.Checker.checkDual_eq_true_iff` : `checkDual B = true ↔ DualCond B.A B.up B.down B.Y`.
* `Absorb.Checker.indexSetCond_map_ratCast`, `Absorb.Checker.indexSetCond_of_map_ratCast` :
  the condition over `ℚ` holds iff it holds over `ℝ` for the entrywise casts.
* `Absorb.Checker.absorbable_of_check` (soundness, index_set_sufficient) : `check B = true`
  implies absorbability over `ℝ` of the cast block, for every odd-part-linear `σ`.
* `Absorb.Checker.not_indexSetCond_of_checkDual`,
  `Absorb.Checker.not_indexSetCond_map_ratCast_of_checkDual` (soundness, dual certificate) :
  `checkDual B = true` implies that no index set exists, over `ℚ` and over `ℝ`.
* `Absorb.Checker.indexSetCond_of_verdict_eq_absorbed`,
  `Absorb.Checker.not_indexSetCond_of_verdict_eq_noIndexSet`,
  `Absorb.Checker.verdict_eq_absorbed`, `Absorb.Checker.verdict_eq_noIndexSet` : the meaning
  of the printed verdict.
* `Absorb.Checker.lhs_ne_rhs_of_firstFailure` : a reported failing entry really fails.

## JSON format

Input: an object with `W_up` (`n` rows of `d` entries), `W_down` (`d` rows of `n` entries),
optional `A_skip` (`d × d`; absent or `null` means the identity), optional
`format: "absorb-check/1"`, and exactly one of `S` (0-based indices `< n`, no repeats) and `Y`
(`d × d`). An entry is a JSON number (read exactly: mantissa · 10^(-exponent)) or a string
`"p/q"` or `"p"` with integers `p`, `q` and `q ≠ 0`. Any other key is refused (a typo such as
`"A_Skip"` must not silently fall back to the identity skip; `W_gate`, `b_up` and `b_down` in
particular: the soundness theorems cover ungated blocks without biases only). A number literal
whose exponent exceeds `maxExponent = 4096` in absolute value is refused before the JSON is
parsed (the parser would otherwise compute `10^exponent`).

Output for `S`: `{"verdict": "absorbed" | "condition_fails", "d", "n", "S", "checked_entries"}`,
plus, on failure, `"failing_entry": {"row", "col", "lhs", "rhs"}` with `lhs`, `rhs` as
`"p/q"` (or `"p"` for integers). Output for `Y`:
`{"verdict": "no_index_set" | "certificate_fails", "certificate": "dual", "d", "n",
"neg_pairing", "lower", "upper"}` with `-⟨A, Y⟩`, `∑ min(c_i, 0)`, `∑ max(c_i, 0)` as `"p/q"`.
Bad input gives `{"error": "..."}`.

We do not `open Lean` (its `Lean.Rat` would make `Rat` ambiguous); JSON names are written
in full.
-/

namespace Absorb

namespace Checker

/-! ### The data and the decision procedure -/

/-- An ungated block with rational weights and a candidate index set: `W_up` is `n × d`,
`W_down` is `d × n`, `A` is the skip matrix (`1` for the identity skip) and `S ⊆ Fin n` is the
candidate index set of the paper's Theorems 8 and 10. -/
structure RatBlock where
  /-- The model dimension `d`. -/
  d : ℕ
  /-- The hidden width `n`. -/
  n : ℕ
  /-- The up-projection `W_up` (`n × d`); its row `i` is `b_iᵀ`. -/
  up : Matrix (Fin n) (Fin d) ℚ
  /-- The down-projection `W_down` (`d × n`); its column `i` is `a_i`. -/
  down : Matrix (Fin d) (Fin n) ℚ
  /-- The skip matrix `A`; the identity skip is `A = 1`. -/
  A : Matrix (Fin d) (Fin d) ℚ := 1
  /-- The candidate index set `S`. -/
  S : Finset (Fin n)

/-- The index-set condition `∀ j k, ∑_{i ∈ S} W_down[j,i] W_up[i,k] = -A[j,k]` is decidable
over `ℚ`: it is a finite conjunction of equalities of rationals. -/
instance decidableIndexSetCond {d n : ℕ} (A : Matrix (Fin d) (Fin d) ℚ)
    (up : Matrix (Fin n) (Fin d) ℚ) (down : Matrix (Fin d) (Fin n) ℚ) (S : Finset (Fin n)) :
    Decidable (IndexSetCond A up down S) :=
  inferInstanceAs (Decidable (∀ j k : Fin d, ∑ i ∈ S, down j i * up i k = -A j k))

/-- The checker: decides the index-set condition `W_down[:,S] W_up[S,:] = -A` of the paper's
Theorems 8 and 10 exactly, in rational arithmetic. -/
def check (B : RatBlock) : Bool :=
  decide (IndexSetCond B.A B.up B.down B.S)

/-- Correctness of the checker: it answers `true` exactly when the index-set condition
holds over `ℚ`. -/
theorem check_eq_true_iff (B : RatBlock) :
    check B = true ↔ IndexSetCond B.A B.up B.down B.S := by
  unfold check
  first
    | exact ⟨of_decide_eq_true, decide_eq_true⟩
    | exact decide_eq_true_iff
    | simp

/-- Entry `(j, k)` of `W_down[:,S] W_up[S,:]`, i.e. `∑_{i ∈ S} W_down[j,i] W_up[i,k]`: the
left-hand side of the index-set condition. -/
def RatBlock.lhs (B : RatBlock) (j k : Fin B.d) : ℚ :=
  ∑ i ∈ B.S, B.down j i * B.up i k

/-- Entry `(j, k)` of `-A`: the right-hand side of the index-set condition. -/
def RatBlock.rhs (B : RatBlock) (j k : Fin B.d) : ℚ :=
  -B.A j k

/-- The index-set condition, entry by entry: it holds iff `lhs j k = rhs j k` for all
`j, k`. (A definitional unfolding, recorded so that the report's entries are visibly the
entries of the condition.) -/
theorem indexSetCond_iff_lhs_eq_rhs (B : RatBlock) :
    IndexSetCond B.A B.up B.down B.S ↔ ∀ j k, B.lhs j k = B.rhs j k :=
  Iff.rfl

/-- All entries `(j, k)` of a `d × d` matrix, in row-major order. -/
def entries (d : ℕ) : List (Fin d × Fin d) :=
  (List.finRange d).flatMap fun j => (List.finRange d).map fun k => (j, k)

/-- The first entry `(j, k)`, in row-major order, at which the index-set condition fails, or
`none`. Used only for the report; the verdict itself is `check`. -/
def firstFailure (B : RatBlock) : Option (Fin B.d × Fin B.d) :=
  (entries B.d).find? fun p => decide (B.lhs p.1 p.2 ≠ B.rhs p.1 p.2)

/-- A failing entry reported by `firstFailure` really is one: there the left-hand side
`(W_down[:,S] W_up[S,:])[j,k]` differs from `-A[j,k]`. -/
theorem lhs_ne_rhs_of_firstFailure (B : RatBlock) {p : Fin B.d × Fin B.d}
    (h : firstFailure B = some p) : B.lhs p.1 p.2 ≠ B.rhs p.1 p.2 := by
  -- `h` with `firstFailure` unfolded (by defeq), so that `List.find?_some` reads the
  -- predicate off a literal `List.find?` application; then
  -- `hp : decide (B.lhs p.1 p.2 ≠ B.rhs p.1 p.2) = true`.
  have h' : (entries B.d).find? (fun q => decide (B.lhs q.1 q.2 ≠ B.rhs q.1 q.2)) = some p := h
  have hp := List.find?_some h'
  first
    | exact of_decide_eq_true hp
    | simpa using hp

/-! ### Soundness over `ℝ` -/

/-- The index-set condition survives the entrywise cast `ℚ → ℝ`: if
`W_down[:,S] W_up[S,:] = -A` over `ℚ`, the same holds for the real matrices with the same
entries. (The cast is a ring homomorphism; pushed through the sum with `Rat.cast_sum`,
`Rat.cast_mul`, `Rat.cast_neg`.) -/
theorem indexSetCond_map_ratCast {d n : ℕ} {A : Matrix (Fin d) (Fin d) ℚ}
    {up : Matrix (Fin n) (Fin d) ℚ} {down : Matrix (Fin d) (Fin n) ℚ} {S : Finset (Fin n)}
    (h : IndexSetCond A up down S) :
    IndexSetCond (A.map fun q : ℚ => (q : ℝ)) (up.map fun q : ℚ => (q : ℝ))
      (down.map fun q : ℚ => (q : ℝ)) S := by
  intro j k
  have hjk := congrArg (fun q : ℚ => (q : ℝ)) (h j k)
  first
    | (simp only [Rat.cast_sum, Rat.cast_mul, Rat.cast_neg] at hjk
       simpa only [Matrix.map_apply] using hjk)
    | (simp only [Matrix.map_apply]
       exact_mod_cast h j k)
    | (simp only [Matrix.map_apply]
       norm_cast
       exact h j k)

/-- **Soundness of the checker** (index_set_sufficient; the "if" half of the paper's
Theorems 8 and 10, through `Absorb.absorbable_of_indexSetCond_ungated`). If `check B`
answers `true`, then for every odd-part-linear activation `σ` (`σ z - σ (-z) = z`: ReLU,
GELU, SiLU) the skip block `x ↦ A x + W_down σ(W_up x)` with the weights of `B` read as real
numbers is absorbable: some residual-free ungated block of the same width `n` and the same
`σ` equals it at every point. -/
theorem absorbable_of_check (B : RatBlock) (hB : check B = true) {σ : ℝ → ℝ}
    (hσ : OddPartLinear σ) :
    Absorbable (ungated σ B.d B.n)
      (skipMap (B.A.map fun q : ℚ => (q : ℝ)) (ungated σ B.d B.n)
        (UngatedWeights.mk (B.up.map fun q : ℚ => (q : ℝ))
          (B.down.map fun q : ℚ => (q : ℝ)))) :=
  Absorb.absorbable_of_indexSetCond_ungated hσ (B.A.map fun q : ℚ => (q : ℝ))
    (UngatedWeights.mk (B.up.map fun q : ℚ => (q : ℝ)) (B.down.map fun q : ℚ => (q : ℝ)))
    B.S (indexSetCond_map_ratCast ((check_eq_true_iff B).1 hB))

/-- The converse cast lemma: if the index-set condition holds for the real matrices with the
entries of `A`, `W_up`, `W_down`, it holds over `ℚ` (the cast `ℚ → ℝ` is an injective ring
homomorphism). -/
theorem indexSetCond_of_map_ratCast {d n : ℕ} {A : Matrix (Fin d) (Fin d) ℚ}
    {up : Matrix (Fin n) (Fin d) ℚ} {down : Matrix (Fin d) (Fin n) ℚ} {S : Finset (Fin n)}
    (h : IndexSetCond (A.map fun q : ℚ => (q : ℝ)) (up.map fun q : ℚ => (q : ℝ))
      (down.map fun q : ℚ => (q : ℝ)) S) :
    IndexSetCond A up down S := by
  intro j k
  have hjk : ∑ i ∈ S, (down j i : ℝ) * (up i k : ℝ) = -(A j k : ℝ) := by
    have h' := h j k
    simpa only [Matrix.map_apply] using h'
  first
    | exact_mod_cast hjk
    | (apply Rat.cast_injective (α := ℝ)
       push_cast
       exact hjk)
    | (apply Rat.cast_injective (α := ℝ)
       rw [Rat.cast_sum, Rat.cast_neg]
       simpa only [Rat.cast_mul] using hjk)

/-! ### The dual certificate -/

/-- An ungated block with rational weights and a dual certificate `Y` (ours): `W_up` is
`n × d`, `W_down` is `d × n`, `A` is the skip matrix (`1` for the identity skip) and `Y` is a
`d × d` matrix. -/
structure RatDualBlock where
  /-- The model dimension `d`. -/
  d : ℕ
  /-- The hidden width `n`. -/
  n : ℕ
  /-- The up-projection `W_up` (`n × d`); its row `i` is `b_iᵀ`. -/
  up : Matrix (Fin n) (Fin d) ℚ
  /-- The down-projection `W_down` (`d × n`); its column `i` is `a_i`. -/
  down : Matrix (Fin d) (Fin n) ℚ
  /-- The skip matrix `A`; the identity skip is `A = 1`. -/
  A : Matrix (Fin d) (Fin d) ℚ := 1
  /-- The dual certificate `Y`. -/
  Y : Matrix (Fin d) (Fin d) ℚ

/-- The dual-certificate condition is decidable over `ℚ`: two strict comparisons of rationals
(ours). -/
instance decidableDualCond {d n : ℕ} (A : Matrix (Fin d) (Fin d) ℚ)
    (up : Matrix (Fin n) (Fin d) ℚ) (down : Matrix (Fin d) (Fin n) ℚ)
    (Y : Matrix (Fin d) (Fin d) ℚ) : Decidable (DualCond A up down Y) := by
  first
    | (unfold DualCond; infer_instance)
    | exact instDecidableOr

/-- The dual checker (ours): decides `-⟨A, Y⟩ < ∑ min(c_i, 0)` or `-⟨A, Y⟩ > ∑ max(c_i, 0)`,
`c_i = a_iᵀ Y b_i`, exactly in rational arithmetic, in `O(n d²)` operations. -/
def checkDual (B : RatDualBlock) : Bool :=
  decide (DualCond B.A B.up B.down B.Y)

/-- Correctness of the dual checker: it answers `true` exactly when the dual-certificate
condition holds over `ℚ`. -/
theorem checkDual_eq_true_iff (B : RatDualBlock) :
    checkDual B = true ↔ DualCond B.A B.up B.down B.Y := by
  unfold checkDual
  first
    | exact ⟨of_decide_eq_true, decide_eq_true⟩
    | exact decide_eq_true_iff
    | simp

/-- **Soundness of the dual checker over `ℚ`** (dual certificate, ours): if `checkDual B`
answers `true`, no index set `S` has `W_down[:,S] W_up[S,:] = -A`. -/
theorem not_indexSetCond_of_checkDual (B : RatDualBlock) (h : checkDual B = true)
    (S : Finset (Fin B.n)) : ¬ IndexSetCond B.A B.up B.down S :=
  not_indexSetCond_of_dual B.Y ((checkDual_eq_true_iff B).1 h) S

/-- **Soundness of the dual checker over `ℝ`** (dual certificate, ours): if `checkDual B`
answers `true`, then for the real matrices with the same entries no index set `S` has
`W_down[:,S] W_up[S,:] = -A`. With `index_set_necessary` this is a proof that the ReLU skip
block is not absorbable. -/
theorem not_indexSetCond_map_ratCast_of_checkDual (B : RatDualBlock) (h : checkDual B = true)
    (S : Finset (Fin B.n)) :
    ¬ IndexSetCond (B.A.map fun q : ℚ => (q : ℝ)) (B.up.map fun q : ℚ => (q : ℝ))
      (B.down.map fun q : ℚ => (q : ℝ)) S :=
  fun hS => not_indexSetCond_of_checkDual B h S (indexSetCond_of_map_ratCast hS)

/-! ### The verdict and its meaning -/

/-- A parsed input of the checker: a block with a candidate index set, or with a dual
certificate. -/
inductive CheckInput where
  /-- A block with a candidate index set `S`. -/
  | indexSet (B : RatBlock)
  /-- A block with a dual certificate `Y`. -/
  | dual (B : RatDualBlock)

/-- The verdict string that the executable prints: a function of `check` and `checkDual`
only. -/
def verdict : CheckInput → String
  | .indexSet B => if check B then "absorbed" else "condition_fails"
  | .dual B => if checkDual B then "no_index_set" else "certificate_fails"

/-- The verdict of an index-set input, unfolded. -/
theorem verdict_indexSet (B : RatBlock) :
    verdict (.indexSet B) = if check B then "absorbed" else "condition_fails" :=
  rfl

/-- The verdict of a dual-certificate input, unfolded. -/
theorem verdict_dual (B : RatDualBlock) :
    verdict (.dual B) = if checkDual B then "no_index_set" else "certificate_fails" :=
  rfl

/-- **The printed `"absorbed"` means the index-set condition** (index_set_sufficient): if the
verdict of a block with candidate `S` is `"absorbed"`, then `W_down[:,S] W_up[S,:] = -A` over
`ℚ` (and so `Absorb.Checker.absorbable_of_check` applies). -/
theorem indexSetCond_of_verdict_eq_absorbed {B : RatBlock}
    (h : verdict (.indexSet B) = "absorbed") : IndexSetCond B.A B.up B.down B.S := by
  refine (check_eq_true_iff B).1 ?_
  revert h
  rw [verdict_indexSet]
  cases check B
  · intro h
    first
      | exact absurd h (by decide)
      | exact absurd h (by simp)
      | (simp at h; done)
  · intro _
    rfl

/-- **The printed `"no_index_set"` means that no index set exists** (dual certificate, ours):
if the verdict of a block with certificate `Y` is `"no_index_set"`, then no `S` has
`W_down[:,S] W_up[S,:] = -A` over `ℚ` (over `ℝ`:
`Absorb.Checker.not_indexSetCond_map_ratCast_of_checkDual`). -/
theorem not_indexSetCond_of_verdict_eq_noIndexSet {B : RatDualBlock}
    (h : verdict (.dual B) = "no_index_set") :
    ∀ S : Finset (Fin B.n), ¬ IndexSetCond B.A B.up B.down S := by
  have hc : checkDual B = true := by
    revert h
    rw [verdict_dual]
    cases checkDual B
    · intro h
      first
        | exact absurd h (by decide)
        | exact absurd h (by simp)
        | (simp at h; done)
    · intro _
      rfl
  exact not_indexSetCond_of_checkDual B hc

/-- The verdict `"absorbed"`, for any input: it is only printed for an index-set input, and
then the condition holds. -/
theorem verdict_eq_absorbed {I : CheckInput} (h : verdict I = "absorbed") :
    ∃ B : RatBlock, I = .indexSet B ∧ IndexSetCond B.A B.up B.down B.S := by
  cases I with
  | indexSet B => exact ⟨B, rfl, indexSetCond_of_verdict_eq_absorbed h⟩
  | dual B =>
    exfalso
    revert h
    rw [verdict_dual]
    cases checkDual B
    · intro h
      first
        | exact absurd h (by decide)
        | exact absurd h (by simp)
        | (simp at h; done)
    · intro h
      first
        | exact absurd h (by decide)
        | exact absurd h (by simp)
        | (simp at h; done)

/-- The verdict `"no_index_set"`, for any input: it is only printed for a dual-certificate
input, and then no index set exists. -/
theorem verdict_eq_noIndexSet {I : CheckInput} (h : verdict I = "no_index_set") :
    ∃ B : RatDualBlock, I = .dual B ∧
      ∀ S : Finset (Fin B.n), ¬ IndexSetCond B.A B.up B.down S := by
  cases I with
  | dual B => exact ⟨B, rfl, not_indexSetCond_of_verdict_eq_noIndexSet h⟩
  | indexSet B =>
    exfalso
    revert h
    rw [verdict_indexSet]
    cases check B
    · intro h
      first
        | exact absurd h (by decide)
        | exact absurd h (by simp)
        | (simp at h; done)
    · intro h
      first
        | exact absurd h (by decide)
        | exact absurd h (by simp)
        | (simp at h; done)

/-! ### Reading the input -/

/-- `t` is a decimal integer literal: an optional `-` followed by at least one digit. (Checked
before `String.toInt?`, so that the accepted syntax does not depend on its corner cases.) -/
def isIntLiteral (t : String) : Bool :=
  let digits := if t.startsWith "-" then t.drop 1 else t
  !digits.isEmpty && digits.all Char.isDigit

/-- The integer denoted by `t` (surrounding spaces allowed), if `t` is an integer literal. -/
def parseInt? (t : String) : Option Int :=
  let t := t.trim
  if isIntLiteral t then t.toInt? else none

/-- Reads a string entry `"p/q"` or `"p"` as a rational; `loc` names the entry in error
messages. A zero denominator is an error. -/
def parseRatString (loc s : String) : Except String ℚ :=
  match (s.splitOn "/").map parseInt? with
  | [some p] => pure (p : ℚ)
  | [some p, some q] =>
    if q = 0 then throw s!"{loc}: zero denominator in \"{s}\""
    else pure ((p : ℚ) / (q : ℚ))
  | _ => throw s!"{loc}: cannot read \"{s}\" as a rational \"p/q\" or integer \"p\""

/-- Reads a matrix entry exactly: a JSON number `m · 10^(-e)` becomes the rational
`m / 10^e`; a string goes through `parseRatString`. -/
def parseEntry (loc : String) : Lean.Json → Except String ℚ
  | .num x => pure ((x.mantissa : ℚ) / ((10 ^ x.exponent : ℕ) : ℚ))
  | .str s => parseRatString loc s
  | _ => throw s!"{loc}: expected a number or a string \"p/q\""

/-- The elements of a JSON array; `what` names the value in the error message. -/
def asArray (what : String) : Lean.Json → Except String (Array Lean.Json)
  | .arr a => pure a
  | _ => throw s!"{what} must be a JSON array"

/-- Reads a matrix given as a JSON array of rows of entries (rows may still have different
lengths; `checkShape` validates). -/
def parseMatrix (name : String) (j : Lean.Json) : Except String (Array (Array ℚ)) := do
  let rows ← asArray name j
  let mut out : Array (Array ℚ) := #[]
  for i in [0:rows.size] do
    let entriesJ ← asArray s!"{name}[{i}]" (rows.getD i Lean.Json.null)
    let mut row : Array ℚ := #[]
    for k in [0:entriesJ.size] do
      let q ← parseEntry s!"{name}[{i}][{k}]" (entriesJ.getD k Lean.Json.null)
      row := row.push q
    out := out.push row
  return out

/-- Checks that `rows` has `r` rows of `c` entries each. -/
def checkShape (name : String) (rows : Array (Array ℚ)) (r c : ℕ) : Except String Unit := do
  if rows.size ≠ r then
    throw s!"{name} has {rows.size} rows, expected {r}"
  for i in [0:rows.size] do
    let len := (rows.getD i #[]).size
    if len ≠ c then
      throw s!"{name}[{i}] has {len} entries, expected {c}"

/-- Reads one neuron index: a JSON integer `i` with `0 ≤ i < n`. -/
def parseIndex (n : ℕ) : Lean.Json → Except String ℕ
  | .num x =>
    if x.exponent = 0 ∧ 0 ≤ x.mantissa ∧ x.mantissa < (n : ℤ) then pure x.mantissa.toNat
    else throw s!"S: {x} is not a neuron index (an integer i with 0 ≤ i < n = {n})"
  | _ => throw "S must be a JSON array of integer neuron indices"

/-- Reads the index list `S`: JSON integers `i` with `0 ≤ i < n`. -/
def parseIndices (n : ℕ) (j : Lean.Json) : Except String (Array ℕ) := do
  let items ← asArray "S" j
  let mut out : Array ℕ := #[]
  for item in items do
    out := out.push (← parseIndex n item)
  return out

/-- The matrix with the given rows; meant for arrays already validated by `checkShape`
(out-of-range reads, which then cannot happen, would give `0`). -/
def matrixOfRows {r c : ℕ} (rows : Array (Array ℚ)) : Matrix (Fin r) (Fin c) ℚ :=
  Matrix.of fun (i : Fin r) (k : Fin c) => (rows.getD i.val #[]).getD k.val 0

/-- The set of the indices `< n` in the list. -/
def finsetOfIndices (n : ℕ) (idx : Array ℕ) : Finset (Fin n) :=
  (idx.toList.filterMap fun k => if h : k < n then some (Fin.mk k h) else none).toFinset

/-- The skip matrix: the given rows, or the identity when `A_skip` is absent. -/
def skipOfRows {d : ℕ} : Option (Array (Array ℚ)) → Matrix (Fin d) (Fin d) ℚ
  | some rows => matrixOfRows rows
  | none => 1

/-- `j` is a JSON object. -/
def isObject : Lean.Json → Bool
  | .obj _ => true
  | _ => false

/-- The value at `key` of a JSON object, treating `null` as absent. (`Lean.Json.getObjValD`
gives `null` for a missing key or a non-object.) -/
def field? (j : Lean.Json) (key : String) : Option Lean.Json :=
  match j.getObjValD key with
  | .null => none
  | v => some v

/-- The value at `key`, which must be present. -/
def required (j : Lean.Json) (key : String) : Except String Lean.Json :=
  match field? j key with
  | some v => pure v
  | none => throw s!"missing key \"{key}\""

/-- Reads `A_skip` when present: a `d × d` matrix. -/
def parseSkip (d : ℕ) (j : Lean.Json) : Except String (Option (Array (Array ℚ))) :=
  match field? j "A_skip" with
  | some a => do
    let m ← parseMatrix "A_skip" a
    checkShape "A_skip" m d d
    pure (some m)
  | none => pure none

/-- The keys that an input object may have. -/
def allowedKeys : List String :=
  ["format", "W_up", "W_down", "A_skip", "S", "Y"]

/-- The value of the optional key `format`. -/
def formatTag : String :=
  "absorb-check/1"

/-- The keys of a JSON object (none for any other JSON value). -/
def objectKeys : Lean.Json → List String
  | .obj kvs => (kvs.fold (fun (acc : Array String) k _ => acc.push k) #[]).toList
  | _ => []

/-- Refuses an object with a key outside `allowedKeys` (a typo such as `"A_Skip"` would
otherwise silently fall back to the identity skip) and a `format` other than `formatTag`;
`W_gate`, `b_up` and `b_down` get a message of their own. -/
def checkKeys (j : Lean.Json) : Except String Unit := do
  for key in ["W_gate", "b_up", "b_down"] do
    if (objectKeys j).contains key then
      throw (s!"key \"{key}\" is not supported: " ++
        "the checker decides ungated blocks without biases")
  for key in objectKeys j do
    if !allowedKeys.contains key then
      throw (s!"unknown key \"{key}\" (allowed keys: " ++ ", ".intercalate allowedKeys ++ ")")
  match field? j "format" with
  | none => pure ()
  | some (.str f) =>
    if f = formatTag then pure ()
    else throw s!"unsupported format \"{f}\" (expected \"{formatTag}\")"
  | some _ => throw s!"format must be the string \"{formatTag}\""

/-- Reads and validates an input: `n` is the number of rows of `W_up`, `d` that of `W_down`;
all keys, shapes, indices and denominators are checked; `A_skip` defaults to the identity;
exactly one of `S` (an index set) and `Y` (a `d × d` dual certificate) must be given. -/
def parseInput (j : Lean.Json) : Except String CheckInput := do
  if !isObject j then
    throw "the input must be a JSON object"
  checkKeys j
  let up ← parseMatrix "W_up" (← required j "W_up")
  let down ← parseMatrix "W_down" (← required j "W_down")
  let n := up.size
  let d := down.size
  checkShape "W_up" up n d
  checkShape "W_down" down d n
  let skip ← parseSkip d j
  match field? j "S", field? j "Y" with
  | some sJ, none =>
    let idx ← parseIndices n sJ
    let S := finsetOfIndices n idx
    if S.card ≠ idx.size then
      throw "S lists some index more than once"
    return .indexSet { d := d, n := n, up := matrixOfRows up, down := matrixOfRows down,
                       A := skipOfRows skip, S := S }
  | none, some yJ =>
    let y ← parseMatrix "Y" yJ
    checkShape "Y" y d d
    return .dual { d := d, n := n, up := matrixOfRows up, down := matrixOfRows down,
                   A := skipOfRows skip, Y := matrixOfRows y }
  | some _, some _ =>
    throw "give exactly one of \"S\" (an index set) and \"Y\" (a dual certificate), not both"
  | none, none =>
    throw "missing key \"S\" (an index set) or \"Y\" (a dual certificate)"

/-! ### Exponents of number literals -/

/-- The largest exponent magnitude accepted in a JSON number literal (`1e4096`, `1e-4096`).
Lean's JSON parser computes `10^e` for a literal with exponent `e`, which does not end for an
absurd `e`; doubles need at most `e = 324`. -/
def maxExponent : ℕ := 4096

/-- The state of the scan for exponents: outside strings (`afterDigit`: the last character
was a digit), inside a string, after a backslash in a string, right after an exponent marker
`e`/`E`, reading exponent digits (their value so far), or a too large exponent seen. -/
inductive ScanState where
  /-- Outside strings; `afterDigit` says whether the last character was a digit. -/
  | normal (afterDigit : Bool)
  /-- Inside a string literal. -/
  | inString
  /-- Right after a backslash inside a string literal. -/
  | escape
  /-- Right after an exponent marker `e`/`E` that follows a digit. -/
  | expStart
  /-- Reading the digits of an exponent; `value` is the value so far. -/
  | expDigits (value : ℕ)
  /-- An exponent larger than `maxExponent` was seen. -/
  | tooLarge

/-- One character outside strings. -/
def scanNormal (afterDigit : Bool) (c : Char) : ScanState :=
  if c == '"' then .inString
  else if afterDigit && (c == 'e' || c == 'E') then .expStart
  else .normal c.isDigit

/-- One more exponent digit `c` after the value `v`. -/
def scanExpDigit (v : ℕ) (c : Char) : ScanState :=
  let v' := 10 * v + (c.toNat - '0'.toNat)
  if v' > maxExponent then .tooLarge else .expDigits v'

/-- One step of the scan. -/
def scanStep : ScanState → Char → ScanState
  | .tooLarge, _ => .tooLarge
  | .inString, c =>
    if c == '\\' then .escape else if c == '"' then .normal false else .inString
  | .escape, _ => .inString
  | .expStart, c =>
    if c == '+' || c == '-' then .expDigits 0
    else if c.isDigit then scanExpDigit 0 c
    else scanNormal false c
  | .expDigits v, c => if c.isDigit then scanExpDigit v c else scanNormal false c
  | .normal afterDigit, c => scanNormal afterDigit c

/-- Refuses a text in which a number literal has an exponent above `maxExponent` in absolute
value (checked on the raw text, before the JSON parser sees it). -/
def checkExponents (text : String) : Except String Unit :=
  match text.foldl scanStep (.normal false) with
  | .tooLarge =>
    throw s!"a JSON number has an exponent larger than {maxExponent} in absolute value"
  | _ => pure ()

/-! ### The report -/

/-- A rational as `"p/q"` in lowest terms, or `"p"` when it is an integer. -/
def ratString (q : ℚ) : String :=
  if q.den = 1 then toString q.num else s!"{q.num}/{q.den}"

/-- A natural number as a JSON number. -/
def natJson (k : ℕ) : Lean.Json :=
  Lean.Json.num (Lean.JsonNumber.fromNat k)

/-- The failing entry `(j, k)` of the report, with both sides of the condition there. -/
def failureJson (B : RatBlock) (p : Fin B.d × Fin B.d) : Lean.Json :=
  Lean.Json.mkObj
    [("row", natJson p.1.val),
     ("col", natJson p.2.val),
     ("lhs", Lean.Json.str (ratString (B.lhs p.1 p.2))),
     ("rhs", Lean.Json.str (ratString (B.rhs p.1 p.2)))]

/-- The JSON report for a block with a candidate `S`: `verdict` is
`verdict (.indexSet B)`, a function of `check B`; on failure also the first failing entry
(`firstFailure`). `S` is listed in increasing order. -/
def report (B : RatBlock) : Lean.Json :=
  let members : List (Fin B.n) := (List.finRange B.n).filter fun i => decide (i ∈ B.S)
  let base : List (String × Lean.Json) :=
    [("verdict", Lean.Json.str (verdict (.indexSet B))),
     ("d", natJson B.d),
     ("n", natJson B.n),
     ("S", Lean.Json.arr (members.map fun i => natJson i.val).toArray),
     ("checked_entries", natJson (B.d * B.d))]
  let failure : List (String × Lean.Json) :=
    if check B then []
    else ((firstFailure B).map fun p => ("failing_entry", failureJson B p)).toList
  Lean.Json.mkObj (base ++ failure)

/-- The JSON report for a block with a dual certificate `Y`: `verdict` is
`verdict (.dual B)`, a function of `checkDual B`, with the three numbers it compares:
`neg_pairing = -⟨A, Y⟩`, `lower = ∑ min(c_i, 0)`, `upper = ∑ max(c_i, 0)`. -/
def dualReport (B : RatDualBlock) : Lean.Json :=
  Lean.Json.mkObj
    [("verdict", Lean.Json.str (verdict (.dual B))),
     ("certificate", Lean.Json.str "dual"),
     ("d", natJson B.d),
     ("n", natJson B.n),
     ("neg_pairing", Lean.Json.str (ratString (-frobenius B.A B.Y))),
     ("lower", Lean.Json.str (ratString (∑ i, min (dualCoeff B.up B.down B.Y i) 0))),
     ("upper", Lean.Json.str (ratString (∑ i, max (dualCoeff B.up B.down B.Y i) 0)))]

/-- The JSON report for a parsed input. -/
def reportInput : CheckInput → Lean.Json
  | .indexSet B => report B
  | .dual B => dualReport B

/-- The error object `{"error": msg}`. -/
def errorJson (msg : String) : Lean.Json :=
  Lean.Json.mkObj [("error", Lean.Json.str msg)]

/-- Parses the input text as JSON. -/
def parseJson (text : String) : Except String Lean.Json :=
  match Lean.Json.parse text with
  | .ok j => pure j
  | .error e => throw s!"invalid JSON: {e}"

/-- The whole pure pipeline of the executable: the text of the input file to the JSON
verdict, or an error message for bad input. -/
def processInput (text : String) : Except String Lean.Json := do
  checkExponents text
  let I ← parseInput (← parseJson text)
  return reportInput I

end Checker

end Absorb
