import Batteries.Data.Rat.Basic
import Absorb.Checker.Reader

/-!
# The checker's decision procedure over `ℚ` (computable; Batteries' `Rat`, no Mathlib)

The second module of the compiled checker. From a validated document
(`Absorb.Checker.Document`) it builds the block over the rationals (`Absorb.Checker.Block`,
Batteries' `Rat`: exact, and compiled without any Mathlib module), decides

* for an index set `S`: the index-set condition `W_down[:,S] W_up[S,:] = -A`, entry by entry;
* for a dual certificate `Y`: `-⟨A, Y⟩ < ∑_i min(c_i, 0)` or `∑_i max(c_i, 0) < -⟨A, Y⟩`
  (`c_i = a_iᵀ Y b_i`), and the hypotheses of `Absorb.indexSetCond_of_absorbable_relu` — every
  row of `W_up` nonzero, no two rows collinear, every column of `W_down` nonzero —

and returns an `Absorb.Checker.Verdict`, printed by `Absorb.Checker.Verdict.name` and
`Absorb.Checker.report`. The matrices are functions `Fin r → Fin c → Rat` and the sums and
searches are by recursion on an index bound (`Absorb.Checker.sumFin`,
`Absorb.Checker.findFin`); `Absorb.Checker.Soundness` proves that they are Mathlib's finite
sums over `ℚ` and that each printed verdict means what its name says.

## Main definitions

* `Absorb.Checker.Block`, `Absorb.Checker.Input` : the block and what is to be decided.
* `Absorb.Checker.Block.conditionFailure` : an entry where the index-set condition fails, or
  `none`.
* `Absorb.Checker.Block.hypothesisFailure` : a failing hypothesis with its indices, or `none`.
* `Absorb.Checker.Block.dualHolds` : the dual-certificate test.
* `Absorb.Checker.Verdict`, `Absorb.Checker.verdict` : the verdict of an input.
* `Absorb.Checker.processInput` : JSON text to the one-line JSON report.

## Main results (about the searches; the soundness theorems are in `Absorb.Checker.Soundness`)

* `Absorb.Checker.findFin_some`, `Absorb.Checker.findFin_none`,
  `Absorb.Checker.findPair_some`, `Absorb.Checker.findPair_none` : what a search returns.
-/

namespace Absorb

namespace Checker

/-! ### Searches and sums over `Fin n` -/

/-- The first of two options that is `some`. -/
def firstSome {α : Type} : Option α → Option α → Option α
  | some a, _ => some a
  | none, b => b

/-- The smallest `i < m` (with `m ≤ n`) such that `p i`, or `none`. -/
def findBelow {n : Nat} (p : Fin n → Prop) [DecidablePred p] :
    (m : Nat) → m ≤ n → Option (Fin n)
  | 0, _ => none
  | m + 1, h =>
    firstSome (findBelow p m (Nat.le_of_succ_le h))
      (if p ⟨m, Nat.lt_of_succ_le h⟩ then some ⟨m, Nat.lt_of_succ_le h⟩ else none)

/-- One step of `findBelow`, as an equation. -/
theorem findBelow_succ {n : Nat} (p : Fin n → Prop) [DecidablePred p] (m : Nat)
    (h : m + 1 ≤ n) :
    findBelow p (m + 1) h =
      firstSome (findBelow p m (Nat.le_of_succ_le h))
        (if p ⟨m, Nat.lt_of_succ_le h⟩ then some ⟨m, Nat.lt_of_succ_le h⟩ else none) :=
  rfl

/-- What `findBelow` finds satisfies the predicate. -/
theorem findBelow_some {n : Nat} (p : Fin n → Prop) [DecidablePred p] (m : Nat) (h : m ≤ n)
    (i : Fin n) (hf : findBelow p m h = some i) : p i := by
  induction m with
  | zero =>
    have h0 : (none : Option (Fin n)) = some i := hf
    cases h0
  | succ m ih =>
    rw [findBelow_succ] at hf
    cases hprev : findBelow p m (Nat.le_of_succ_le h) with
    | some j =>
      rw [hprev] at hf
      have h1 : (some j : Option (Fin n)) = some i := hf
      rw [Option.some.inj h1] at hprev
      exact ih (Nat.le_of_succ_le h) hprev
    | none =>
      rw [hprev] at hf
      have h1 : (if p ⟨m, Nat.lt_of_succ_le h⟩ then some ⟨m, Nat.lt_of_succ_le h⟩ else none) =
          some i := hf
      by_cases hp : p ⟨m, Nat.lt_of_succ_le h⟩
      · rw [if_pos hp] at h1
        rw [← Option.some.inj h1]
        exact hp
      · rw [if_neg hp] at h1
        cases h1

/-- When `findBelow` finds nothing, no `i < m` satisfies the predicate. -/
theorem findBelow_none {n : Nat} (p : Fin n → Prop) [DecidablePred p] (m : Nat) (h : m ≤ n)
    (hf : findBelow p m h = none) (i : Fin n) (hi : i.val < m) : ¬ p i := by
  induction m with
  | zero => exact absurd hi (Nat.not_lt_zero _)
  | succ m ih =>
    rw [findBelow_succ] at hf
    cases hprev : findBelow p m (Nat.le_of_succ_le h) with
    | some j =>
      rw [hprev] at hf
      have h1 : (some j : Option (Fin n)) = none := hf
      cases h1
    | none =>
      rw [hprev] at hf
      have h1 : (if p ⟨m, Nat.lt_of_succ_le h⟩ then some ⟨m, Nat.lt_of_succ_le h⟩ else none) =
          none := hf
      by_cases him : i.val = m
      · have h2 : i = ⟨m, Nat.lt_of_succ_le h⟩ := Fin.eq_of_val_eq him
        rw [h2]
        intro hp
        rw [if_pos hp] at h1
        cases h1
      · exact ih (Nat.le_of_succ_le h) hprev (by omega)

/-- The smallest `i : Fin n` with `p i`, or `none`. -/
def findFin (n : Nat) (p : Fin n → Prop) [DecidablePred p] : Option (Fin n) :=
  findBelow p n (Nat.le_refl n)

/-- What `findFin` finds satisfies the predicate. -/
theorem findFin_some (n : Nat) (p : Fin n → Prop) [DecidablePred p] {i : Fin n}
    (hf : findFin n p = some i) : p i :=
  findBelow_some p n (Nat.le_refl n) i hf

/-- When `findFin` finds nothing, no `i` satisfies the predicate. -/
theorem findFin_none (n : Nat) (p : Fin n → Prop) [DecidablePred p]
    (hf : findFin n p = none) (i : Fin n) : ¬ p i :=
  findBelow_none p n (Nat.le_refl n) hf i i.isLt

/-- A pair `(i, k)` with `p i k`, or `none`: the smallest `i` that has such a `k`, with its
smallest `k`. -/
def findPair (n m : Nat) (p : Fin n → Fin m → Prop) [∀ i k, Decidable (p i k)] :
    Option (Fin n × Fin m) :=
  (findFin n fun i => (findFin m (p i)).isSome = true).bind fun i =>
    (findFin m (p i)).map fun k => (i, k)

/-- What `findPair` finds satisfies the predicate. -/
theorem findPair_some (n m : Nat) (p : Fin n → Fin m → Prop) [∀ i k, Decidable (p i k)]
    {i : Fin n} {k : Fin m} (hf : findPair n m p = some (i, k)) : p i k := by
  unfold findPair at hf
  cases hi : findFin n (fun i => (findFin m (p i)).isSome = true) with
  | none =>
    rw [hi] at hf
    have h0 : (none : Option (Fin n × Fin m)) = some (i, k) := hf
    cases h0
  | some i' =>
    rw [hi] at hf
    have h1 : (findFin m (p i')).map (fun k => (i', k)) = some (i, k) := hf
    cases hk : findFin m (p i') with
    | none =>
      rw [hk] at h1
      have h0 : (none : Option (Fin n × Fin m)) = some (i, k) := h1
      cases h0
    | some k' =>
      rw [hk] at h1
      have h2 : (i', k') = (i, k) := Option.some.inj h1
      have hi2 : i' = i := congrArg Prod.fst h2
      have hk2 : k' = k := congrArg Prod.snd h2
      rw [← hi2, ← hk2]
      exact findFin_some m (p i') hk

/-- When `findPair` finds nothing, no pair satisfies the predicate. -/
theorem findPair_none (n m : Nat) (p : Fin n → Fin m → Prop) [∀ i k, Decidable (p i k)]
    (hf : findPair n m p = none) (i : Fin n) (k : Fin m) : ¬ p i k := by
  intro hp
  unfold findPair at hf
  cases hi : findFin n (fun i => (findFin m (p i)).isSome = true) with
  | none =>
    apply findFin_none n (fun i => (findFin m (p i)).isSome = true) hi i
    show (findFin m (p i)).isSome = true
    cases hk : findFin m (p i) with
    | none => exact absurd hp (findFin_none m (p i) hk k)
    | some k' => rfl
  | some i' =>
    rw [hi] at hf
    have h1 : (findFin m (p i')).map (fun k => (i', k)) = none := hf
    have hs : (findFin m (p i')).isSome = true :=
      findFin_some n (fun i => (findFin m (p i)).isSome = true) hi
    cases hk : findFin m (p i') with
    | none =>
      rw [hk] at hs
      have h0 : false = true := hs
      cases h0
    | some k' =>
      rw [hk] at h1
      have h0 : (some (i', k') : Option (Fin n × Fin m)) = none := h1
      cases h0

/-- `∑_{i < m} f i` for `m ≤ n`, by recursion on `m` (no nested closures: linear time). -/
def sumBelow {n : Nat} (f : Fin n → Rat) : (m : Nat) → m ≤ n → Rat
  | 0, _ => 0
  | m + 1, h => sumBelow f m (Nat.le_of_succ_le h) + f ⟨m, Nat.lt_of_succ_le h⟩

/-- `sumBelow` on `0` terms, as an equation. -/
theorem sumBelow_zero {n : Nat} (f : Fin n → Rat) (h : 0 ≤ n) : sumBelow f 0 h = 0 :=
  rfl

/-- One step of `sumBelow`, as an equation. -/
theorem sumBelow_succ {n : Nat} (f : Fin n → Rat) (m : Nat) (h : m + 1 ≤ n) :
    sumBelow f (m + 1) h = sumBelow f m (Nat.le_of_succ_le h) + f ⟨m, Nat.lt_of_succ_le h⟩ :=
  rfl

/-- `∑_{i : Fin n} f i`. -/
def sumFin (n : Nat) (f : Fin n → Rat) : Rat :=
  sumBelow f n (Nat.le_refl n)

/-! ### The block over `ℚ` -/

/-- An `r × c` rational matrix, as a function of its indices. -/
abbrev Mat (r c : Nat) : Type := Fin r → Fin c → Rat

/-- The exact value of a fraction of the reader (`den ≠ 0` there). -/
def Frac.toRat (x : Frac) : Rat :=
  mkRat x.num x.den

/-- An ungated block over `ℚ`: `W_up` (`n × d`; row `i` is `b_iᵀ`), `W_down` (`d × n`; column
`i` is `a_i`), the skip matrix `A` (the identity when the file has no `A_skip`), the biases
(`none` for a block without biases; a missing one of `b_up`, `b_down` is `0`), and the
activation that the file records. -/
structure Block where
  /-- The activation. -/
  activation : Activation
  /-- The model dimension `d`. -/
  d : Nat
  /-- The hidden width `n`. -/
  n : Nat
  /-- `W_up`. -/
  up : Mat n d
  /-- `W_down`. -/
  down : Mat d n
  /-- The skip matrix `A`. -/
  A : Mat d d
  /-- `(b_up, b_down)` for a biased block. -/
  biases : Option ((Fin n → Rat) × (Fin d → Rat))

/-- What is to be decided: a block with a candidate index set (its membership test), or a
block with a dual certificate `Y`. -/
inductive Input where
  /-- A block and a candidate index set `S`, given by `mask i = true ↔ i ∈ S`. -/
  | indexSet (B : Block) (mask : Fin B.n → Bool)
  /-- A block and a dual certificate `Y`. -/
  | dual (B : Block) (Y : Mat B.d B.d)

/-- The block of an input. -/
def Input.block : Input → Block
  | .indexSet B _ => B
  | .dual B _ => B

/-! ### The index-set condition -/

/-- Entry `(j, k)` of `W_down[:,S] W_up[S,:]`, `∑_{i ∈ S} (W_down)_{j i} (W_up)_{i k}`. -/
def Block.lhs (B : Block) (mask : Fin B.n → Bool) (j k : Fin B.d) : Rat :=
  sumFin B.n fun i => if mask i = true then B.down j i * B.up i k else 0

/-- An entry `(j, k)` where `W_down[:,S] W_up[S,:] ≠ -A`, or `none` when the index-set
condition holds. -/
def Block.conditionFailure (B : Block) (mask : Fin B.n → Bool) : Option (Fin B.d × Fin B.d) :=
  findPair B.d B.d fun j k => B.lhs mask j k ≠ -B.A j k

/-! ### The hypotheses of `indexSetCond_of_absorbable_relu` -/

/-- A row `i` of `W_up` that is zero, or `none`. -/
def Block.zeroRow (B : Block) : Option (Fin B.n) :=
  findFin B.n fun i => findFin B.d (fun k => B.up i k ≠ 0) = none

/-- Rows `i ≠ j` of `W_up` are collinear exactly when every `2 × 2` minor
`b_i[k] b_j[l] - b_i[l] b_j[k]` vanishes: a pair of such rows, or `none`. -/
def Block.collinearRows (B : Block) : Option (Fin B.n × Fin B.n) :=
  findPair B.n B.n fun i j =>
    i ≠ j ∧ findPair B.d B.d (fun k l => B.up i k * B.up j l ≠ B.up i l * B.up j k) = none

/-- A column `i` of `W_down` that is zero, or `none`. -/
def Block.zeroColumn (B : Block) : Option (Fin B.n) :=
  findFin B.n fun i => findFin B.d (fun r => B.down r i ≠ 0) = none

/-- A failing hypothesis of the theorem chain, with its (0-based) indices. -/
inductive Hypothesis where
  /-- Row `i` of `W_up` is zero. -/
  | zeroRow (i : Nat)
  /-- Rows `i ≠ j` of `W_up` are collinear. -/
  | collinearRows (i j : Nat)
  /-- Column `i` of `W_down` is zero. -/
  | zeroColumn (i : Nat)

/-- The first failing hypothesis, in the order: nonzero rows, pairwise non-collinear rows,
nonzero columns; `none` when all three hold. -/
def Block.hypothesisFailure (B : Block) : Option Hypothesis :=
  match B.zeroRow, B.collinearRows, B.zeroColumn with
  | some i, _, _ => some (.zeroRow i.val)
  | none, some p, _ => some (.collinearRows p.1.val p.2.val)
  | none, none, some i => some (.zeroColumn i.val)
  | none, none, none => none

/-! ### The dual certificate -/

/-- `c_i = a_iᵀ Y b_i = ∑_j ∑_k (W_down)_{j i} Y_{j k} (W_up)_{i k}`. -/
def Block.coeff (B : Block) (Y : Mat B.d B.d) (i : Fin B.n) : Rat :=
  sumFin B.d fun j => sumFin B.d fun k => B.down j i * Y j k * B.up i k

/-- The Frobenius pairing `⟨A, Y⟩ = ∑_j ∑_k A_{j k} Y_{j k}`. -/
def Block.pairing (B : Block) (Y : Mat B.d B.d) : Rat :=
  sumFin B.d fun j => sumFin B.d fun k => B.A j k * Y j k

/-- `min(c, 0)`, written as `min_def` unfolds it. -/
def negPart (c : Rat) : Rat :=
  if c ≤ 0 then c else 0

/-- `max(c, 0)`, written as `max_def` unfolds it. -/
def posPart (c : Rat) : Rat :=
  if c ≤ 0 then 0 else c

/-- `∑_i min(c_i, 0)`. -/
def Block.lower (B : Block) (Y : Mat B.d B.d) : Rat :=
  sumFin B.n fun i => negPart (B.coeff Y i)

/-- `∑_i max(c_i, 0)`. -/
def Block.upper (B : Block) (Y : Mat B.d B.d) : Rat :=
  sumFin B.n fun i => posPart (B.coeff Y i)

/-- The dual-certificate test: `-⟨A, Y⟩ < ∑ min(c_i, 0)` or `∑ max(c_i, 0) < -⟨A, Y⟩`. -/
def Block.dualHolds (B : Block) (Y : Mat B.d B.d) : Bool :=
  decide (-B.pairing Y < B.lower Y ∨ B.upper Y < -B.pairing Y)

/-! ### The verdict -/

/-- The verdict of the checker. Each printed name (`Absorb.Checker.Verdict.name`) has a theorem
in `Absorb.Checker.Soundness` saying what it proves. -/
inductive Verdict where
  /-- `S` satisfies the index-set condition: the block is absorbed by a residual-free block. -/
  | absorbed
  /-- `S` fails the index-set condition at entry `(row, col)`. -/
  | conditionFails (row col : Nat)
  /-- The certificate refutes every index set and the hypotheses hold: not absorbable. -/
  | notAbsorbable
  /-- The certificate refutes every index set, but a hypothesis fails. -/
  | noIndexSet (failing : Hypothesis)
  /-- A hypothesis fails and the certificate does not refute every index set. -/
  | hypothesisFails (failing : Hypothesis)
  /-- The certificate does not refute every index set (the hypotheses hold). -/
  | certificateFails

/-- The six kinds of verdict, one per printed name. -/
inductive Kind where
  /-- `"absorbed"`. -/
  | absorbed
  /-- `"condition_fails"`. -/
  | conditionFails
  /-- `"not_absorbable"`. -/
  | notAbsorbable
  /-- `"no_index_set"`. -/
  | noIndexSet
  /-- `"hypothesis_fails"`. -/
  | hypothesisFails
  /-- `"certificate_fails"`. -/
  | certificateFails
  deriving DecidableEq

/-- The printed name of a kind of verdict. -/
def Kind.name : Kind → String
  | .absorbed => "absorbed"
  | .conditionFails => "condition_fails"
  | .notAbsorbable => "not_absorbable"
  | .noIndexSet => "no_index_set"
  | .hypothesisFails => "hypothesis_fails"
  | .certificateFails => "certificate_fails"

/-- Distinct kinds print distinct names: the printed name determines the kind. The six names
have six different lengths, so `decide` only compares two `Nat`s (`String.length` of a literal
reduces to the length of its list of characters; no character is compared); deciding the
equality of the two strings themselves is the fallback. -/
theorem Kind.eq_of_name_eq (k l : Kind) (h : k.name = l.name) : k = l := by
  have hl : k.name.length = l.name.length := congrArg String.length h
  cases k <;> cases l <;> first | rfl | exact absurd hl (by decide) | exact absurd h (by decide)

/-- The kind of a verdict. -/
def Verdict.kind : Verdict → Kind
  | .absorbed => .absorbed
  | .conditionFails _ _ => .conditionFails
  | .notAbsorbable => .notAbsorbable
  | .noIndexSet _ => .noIndexSet
  | .hypothesisFails _ => .hypothesisFails
  | .certificateFails => .certificateFails

/-- The printed name of a verdict: the one printing function of the checker. -/
def Verdict.name (v : Verdict) : String :=
  v.kind.name

/-- The verdict of an index-set input, from the search for a failing entry. -/
def indexVerdict {d : Nat} : Option (Fin d × Fin d) → Verdict
  | none => .absorbed
  | some p => .conditionFails p.1.val p.2.val

/-- The verdict of a dual-certificate input, from the certificate test and the hypotheses. -/
def dualVerdict : Bool → Option Hypothesis → Verdict
  | true, none => .notAbsorbable
  | true, some h => .noIndexSet h
  | false, some h => .hypothesisFails h
  | false, none => .certificateFails

/-- The verdict of an input. -/
def verdict : Input → Verdict
  | .indexSet B mask => indexVerdict (B.conditionFailure mask)
  | .dual B Y => dualVerdict (B.dualHolds Y) B.hypothesisFailure

/-- The verdict of an index-set input, as an equation. -/
theorem verdict_indexSet (B : Block) (mask : Fin B.n → Bool) :
    verdict (.indexSet B mask) = indexVerdict (B.conditionFailure mask) :=
  rfl

/-- The verdict of a dual-certificate input, as an equation. -/
theorem verdict_dual (B : Block) (Y : Mat B.d B.d) :
    verdict (.dual B Y) = dualVerdict (B.dualHolds Y) B.hypothesisFailure :=
  rfl

/-! ### What the searches found (used by `Absorb.Checker.Soundness`) -/

/-- No failing entry: the condition holds at every entry. -/
theorem Block.lhs_eq_of_conditionFailure_eq_none {B : Block} {mask : Fin B.n → Bool}
    (h : B.conditionFailure mask = none) (j k : Fin B.d) : B.lhs mask j k = -B.A j k :=
  Decidable.of_not_not (findPair_none B.d B.d (fun j k => B.lhs mask j k ≠ -B.A j k) h j k)

/-- A reported failing entry fails. -/
theorem Block.lhs_ne_of_conditionFailure_eq_some {B : Block} {mask : Fin B.n → Bool}
    {j k : Fin B.d} (h : B.conditionFailure mask = some (j, k)) : B.lhs mask j k ≠ -B.A j k :=
  findPair_some B.d B.d (fun j k => B.lhs mask j k ≠ -B.A j k) h

/-- The three searches of `Absorb.Checker.Block.hypothesisFailure` came back empty. -/
theorem Block.searches_of_hypothesisFailure_eq_none {B : Block}
    (h : B.hypothesisFailure = none) :
    B.zeroRow = none ∧ B.collinearRows = none ∧ B.zeroColumn = none := by
  unfold Block.hypothesisFailure at h
  cases h1 : B.zeroRow with
  | some i =>
    rw [h1] at h
    have h0 : (some (Hypothesis.zeroRow i.val) : Option Hypothesis) = none := h
    cases h0
  | none =>
    rw [h1] at h
    cases h2 : B.collinearRows with
    | some p =>
      rw [h2] at h
      have h0 : (some (Hypothesis.collinearRows p.1.val p.2.val) : Option Hypothesis) = none :=
        h
      cases h0
    | none =>
      rw [h2] at h
      cases h3 : B.zeroColumn with
      | some c =>
        rw [h3] at h
        have h0 : (some (Hypothesis.zeroColumn c.val) : Option Hypothesis) = none := h
        cases h0
      | none => exact ⟨rfl, rfl, rfl⟩

/-- No zero row: every row of `W_up` has a nonzero entry. -/
theorem Block.exists_up_ne_zero {B : Block} (h : B.zeroRow = none) (i : Fin B.n) :
    ∃ k, B.up i k ≠ 0 := by
  have hi : ¬ (findFin B.d (fun k => B.up i k ≠ 0) = none) :=
    findFin_none B.n (fun i => findFin B.d (fun k => B.up i k ≠ 0) = none) h i
  cases hk : findFin B.d (fun k => B.up i k ≠ 0) with
  | none => exact absurd hk hi
  | some k => exact ⟨k, findFin_some B.d (fun k => B.up i k ≠ 0) hk⟩

/-- No collinear pair: distinct rows of `W_up` have a nonzero `2 × 2` minor. -/
theorem Block.exists_minor_ne {B : Block} (h : B.collinearRows = none) {i j : Fin B.n}
    (hij : i ≠ j) : ∃ k l, B.up i k * B.up j l ≠ B.up i l * B.up j k := by
  have hij' : ¬ (i ≠ j ∧
      findPair B.d B.d (fun k l => B.up i k * B.up j l ≠ B.up i l * B.up j k) = none) :=
    findPair_none B.n B.n (fun i j => i ≠ j ∧
      findPair B.d B.d (fun k l => B.up i k * B.up j l ≠ B.up i l * B.up j k) = none) h i j
  cases hkl : findPair B.d B.d (fun k l => B.up i k * B.up j l ≠ B.up i l * B.up j k) with
  | none => exact absurd ⟨hij, hkl⟩ hij'
  | some q =>
    obtain ⟨k, l⟩ := q
    exact ⟨k, l, findPair_some B.d B.d
      (fun k l => B.up i k * B.up j l ≠ B.up i l * B.up j k) hkl⟩

/-- No zero column: every column of `W_down` has a nonzero entry. -/
theorem Block.exists_down_ne_zero {B : Block} (h : B.zeroColumn = none) (i : Fin B.n) :
    ∃ r, B.down r i ≠ 0 := by
  have hi : ¬ (findFin B.d (fun r => B.down r i ≠ 0) = none) :=
    findFin_none B.n (fun i => findFin B.d (fun r => B.down r i ≠ 0) = none) h i
  cases hr : findFin B.d (fun r => B.down r i ≠ 0) with
  | none => exact absurd hr hi
  | some r => exact ⟨r, findFin_some B.d (fun r => B.down r i ≠ 0) hr⟩

/-- What a reported failing hypothesis means (indices 0-based): a zero row of `W_up`, two
distinct rows of `W_up` whose `2 × 2` minors all vanish (collinear rows), a zero column of
`W_down`. -/
def Block.Fails (B : Block) : Hypothesis → Prop
  | .zeroRow i => ∃ h : i < B.n, ∀ k, B.up ⟨i, h⟩ k = 0
  | .collinearRows i j => ∃ (hi : i < B.n) (hj : j < B.n), i ≠ j ∧
      ∀ k l, B.up ⟨i, hi⟩ k * B.up ⟨j, hj⟩ l = B.up ⟨i, hi⟩ l * B.up ⟨j, hj⟩ k
  | .zeroColumn i => ∃ h : i < B.n, ∀ r, B.down r ⟨i, h⟩ = 0

/-- **A reported failing hypothesis really fails**, at the reported indices. -/
theorem Block.fails_of_hypothesisFailure_eq_some {B : Block} {hyp : Hypothesis}
    (h : B.hypothesisFailure = some hyp) : B.Fails hyp := by
  unfold Block.hypothesisFailure at h
  cases h1 : B.zeroRow with
  | some i =>
    rw [h1] at h
    have h0 : Hypothesis.zeroRow i.val = hyp := Option.some.inj h
    rw [← h0]
    have hf : findFin B.d (fun k => B.up i k ≠ 0) = none :=
      findFin_some B.n (fun i => findFin B.d (fun k => B.up i k ≠ 0) = none) h1
    exact ⟨i.isLt, fun k =>
      Decidable.of_not_not (findFin_none B.d (fun k => B.up i k ≠ 0) hf k)⟩
  | none =>
    rw [h1] at h
    cases h2 : B.collinearRows with
    | some p =>
      rw [h2] at h
      have h0 : Hypothesis.collinearRows p.1.val p.2.val = hyp := Option.some.inj h
      rw [← h0]
      obtain ⟨i, j⟩ := p
      have hp : i ≠ j ∧
          findPair B.d B.d (fun k l => B.up i k * B.up j l ≠ B.up i l * B.up j k) = none :=
        findPair_some B.n B.n (fun i j => i ≠ j ∧
          findPair B.d B.d (fun k l => B.up i k * B.up j l ≠ B.up i l * B.up j k) = none) h2
      refine ⟨i.isLt, j.isLt, fun hv => hp.1 (Fin.eq_of_val_eq hv), fun k l => ?_⟩
      exact Decidable.of_not_not (findPair_none B.d B.d
        (fun k l => B.up i k * B.up j l ≠ B.up i l * B.up j k) hp.2 k l)
    | none =>
      rw [h2] at h
      cases h3 : B.zeroColumn with
      | some c =>
        rw [h3] at h
        have h0 : Hypothesis.zeroColumn c.val = hyp := Option.some.inj h
        rw [← h0]
        have hf : findFin B.d (fun r => B.down r c ≠ 0) = none :=
          findFin_some B.n (fun i => findFin B.d (fun r => B.down r i ≠ 0) = none) h3
        exact ⟨c.isLt, fun r =>
          Decidable.of_not_not (findFin_none B.d (fun r => B.down r c ≠ 0) hf r)⟩
      | none =>
        rw [h3] at h
        have h0 : (none : Option Hypothesis) = some hyp := h
        cases h0

/-- The certificate test, read back: it holds when it answers `true`. -/
theorem Block.dual_of_dualHolds {B : Block} {Y : Mat B.d B.d} (h : B.dualHolds Y = true) :
    -B.pairing Y < B.lower Y ∨ B.upper Y < -B.pairing Y :=
  of_decide_eq_true h

/-- The certificate test answers `true` when it holds. -/
theorem Block.dualHolds_of_dual {B : Block} {Y : Mat B.d B.d}
    (h : -B.pairing Y < B.lower Y ∨ B.upper Y < -B.pairing Y) : B.dualHolds Y = true :=
  decide_eq_true h

/-- The kind of a dual-certificate verdict, from the test and whether a hypothesis failed. -/
def dualKind : Bool → Bool → Kind
  | true, false => .notAbsorbable
  | true, true => .noIndexSet
  | false, true => .hypothesisFails
  | false, false => .certificateFails

/-- The kind of an index-set verdict, from whether a failing entry was found. -/
def indexKind : Bool → Kind
  | false => .absorbed
  | true => .conditionFails

/-- The kind of `dualVerdict`. -/
theorem dualVerdict_kind (b : Bool) (o : Option Hypothesis) :
    (dualVerdict b o).kind = dualKind b o.isSome := by
  cases b <;> cases o <;> rfl

/-- The kind of `indexVerdict`. -/
theorem indexVerdict_kind {d : Nat} (o : Option (Fin d × Fin d)) :
    (indexVerdict o).kind = indexKind o.isSome := by
  cases o <;> rfl

/-- The kind of an index-set verdict determines whether a failing entry was found. -/
theorem indexKind_inj (c c' : Bool) (h : indexKind c = indexKind c') : c = c' := by
  revert h
  cases c <;> cases c' <;> decide

/-- Index-set verdicts and dual-certificate verdicts have different kinds. -/
theorem indexKind_ne_dualKind (c b s : Bool) : indexKind c ≠ dualKind b s := by
  cases c <;> cases b <;> cases s <;> decide

/-- The kind of a dual-certificate verdict determines the test and whether a hypothesis
failed. -/
theorem dualKind_inj (b s b' s' : Bool) (h : dualKind b s = dualKind b' s') :
    b = b' ∧ s = s' := by
  revert h
  cases b <;> cases s <;> cases b' <;> cases s' <;> decide

/-- **A dual-certificate verdict comes from a dual input** whose test and hypothesis search
gave what the printed name says. -/
theorem dual_of_verdict_name {I : Input} {b : Bool} {o : Option Hypothesis}
    (hv : (verdict I).name = (dualVerdict b o).name) :
    ∃ B Y, I = .dual B Y ∧ B.dualHolds Y = b ∧ B.hypothesisFailure.isSome = o.isSome := by
  have hk : (verdict I).kind = (dualVerdict b o).kind := Kind.eq_of_name_eq _ _ hv
  rw [dualVerdict_kind] at hk
  cases I with
  | indexSet B mask =>
    rw [verdict_indexSet, indexVerdict_kind] at hk
    exact absurd hk (indexKind_ne_dualKind _ _ _)
  | dual B Y =>
    rw [verdict_dual, dualVerdict_kind] at hk
    obtain ⟨h1, h2⟩ := dualKind_inj _ _ _ _ hk
    exact ⟨B, Y, rfl, h1, h2⟩

/-- **An index-set verdict comes from an index-set input** whose search for a failing entry
gave what the printed name says (`c = true`: an entry was found). -/
theorem indexSet_of_verdict_name {I : Input} {c : Bool}
    (hv : (verdict I).name = (indexKind c).name) :
    ∃ B mask, I = .indexSet B mask ∧ (B.conditionFailure mask).isSome = c := by
  have hk : (verdict I).kind = indexKind c := Kind.eq_of_name_eq _ _ hv
  cases I with
  | indexSet B mask =>
    rw [verdict_indexSet, indexVerdict_kind] at hk
    exact ⟨B, mask, rfl, indexKind_inj _ _ hk⟩
  | dual B Y =>
    rw [verdict_dual, dualVerdict_kind] at hk
    exact absurd hk.symm (indexKind_ne_dualKind _ _ _)

/-- An option whose `isSome` is `false` is `none`. -/
theorem eq_none_of_isSome_eq_false {α : Type} {o : Option α} (h : o.isSome = false) :
    o = none := by
  cases o with
  | none => rfl
  | some x =>
    have h0 : true = false := h
    cases h0

/-- An option whose `isSome` is `true` is `some`. -/
theorem exists_eq_some_of_isSome {α : Type} {o : Option α} (h : o.isSome = true) :
    ∃ x, o = some x := by
  cases o with
  | none =>
    have h0 : false = true := h
    cases h0
  | some x => exact ⟨x, rfl⟩

/-! ### From the document to the input -/

/-- The rational matrix of the reader's rows (already validated to be `r × c`). -/
def matOfRows (r c : Nat) (rows : Array (Array Frac)) : Mat r c :=
  let q : Array (Array Rat) := rows.map fun row => row.map Frac.toRat
  fun i k => (q.getD i.val #[]).getD k.val 0

/-- The rational vector of the reader's entries (already validated to have length `m`). -/
def vecOf (m : Nat) (xs : Option (Array Frac)) : Fin m → Rat :=
  let q : Array Rat := (xs.getD #[]).map Frac.toRat
  fun i => q.getD i.val 0

/-- The identity matrix. -/
def identity (d : Nat) : Mat d d :=
  fun j k => if j = k then 1 else 0

/-- The block of a document; the biases are present when `b_up` or `b_down` is given. -/
def Document.block (doc : Document) : Block :=
  { activation := doc.activation
    d := doc.d
    n := doc.n
    up := matOfRows doc.n doc.d doc.up
    down := matOfRows doc.d doc.n doc.down
    A := match doc.skip with
      | some rows => matOfRows doc.d doc.d rows
      | none => identity doc.d
    biases :=
      if doc.bUp.isSome || doc.bDown.isSome then
        some (vecOf doc.n doc.bUp, vecOf doc.d doc.bDown)
      else none }

/-- The membership table of an index set of `{0, …, n-1}`: entry `i` is `true` exactly when
`i ∈ S` (the reader has checked that the indices are below `n`). Built once, in `O(n + |S|)`. -/
def memberTable (n : Nat) (S : Array Nat) : Array Bool :=
  S.foldl (fun (t : Array Bool) (i : Nat) => t.set! i true) (List.replicate n false).toArray

/-- The input of a document. The index set's membership test reads a table built once, so the
`d² n` tests of the condition search cost `O(1)` each (not `O(|S|)`). -/
def Document.input (doc : Document) : Input :=
  match doc.claim with
  | .indexSet S =>
    let table := memberTable doc.n S
    .indexSet doc.block fun i => table.getD i.val false
  | .dual Y => .dual doc.block (matOfRows doc.d doc.d Y)

/-! ### The report -/

/-- One character of a JSON string literal, escaped. -/
def escapeChar (c : Char) : String :=
  if c == '"' then "\\\""
  else if c == '\\' then "\\\\"
  else if c == '\n' then "\\n"
  else if c.toNat < 0x20 then
    let h := Nat.toDigits 16 c.toNat
    "\\u" ++ String.mk (List.replicate (4 - h.length) '0' ++ h)
  else c.toString

/-- A JSON string literal. -/
def jsonStr (s : String) : String :=
  "\"" ++ s.foldl (fun acc c => acc ++ escapeChar c) "" ++ "\""

/-- A JSON object from keys and already encoded values. -/
def jsonObj (kvs : List (String × String)) : String :=
  "{" ++ ", ".intercalate (kvs.map fun kv => jsonStr kv.1 ++ ": " ++ kv.2) ++ "}"

/-- A JSON array of already encoded values. -/
def jsonArr (xs : List String) : String :=
  "[" ++ ", ".intercalate xs ++ "]"

/-- A rational as the string `"p/q"` (or `"p"`), in lowest terms. -/
def ratJson (q : Rat) : String :=
  jsonStr (toString q)

/-- The members of the index set, in increasing order. -/
def members {n : Nat} (mask : Fin n → Bool) : List Nat :=
  (List.range n).filter fun i => if h : i < n then mask ⟨i, h⟩ else false

/-- The JSON object of a failing hypothesis. -/
def Hypothesis.json : Hypothesis → String
  | .zeroRow i => jsonObj [("hypothesis", jsonStr "nonzero_rows"), ("row", toString i)]
  | .collinearRows i j =>
    jsonObj [("hypothesis", jsonStr "noncollinear_rows"),
      ("rows", jsonArr [toString i, toString j])]
  | .zeroColumn i => jsonObj [("hypothesis", jsonStr "nonzero_columns"), ("column", toString i)]

/-- The theorem chain (manifest ids) behind a verdict; a biased block goes through
`bias_blowup` to its bias-free ReLU block. -/
def chain (B : Block) : Verdict → List String
  | .absorbed => ["index_set_sufficient"]
  | .notAbsorbable =>
    ["relaxation_certificate", "index_set_necessary"] ++
      (if B.biases.isSome || B.activation != .relu then ["bias_blowup"] else [])
  | .noIndexSet _ => ["relaxation_certificate"]
  | _ => []

/-- The one-line JSON report of an input: `verdict` is `(verdict I).name`, with the block's
shape, activation, whether it has biases, the theorem chain, and the evidence of the verdict. -/
def report (I : Input) : String :=
  let B := I.block
  let v := verdict I
  let common : List (String × String) :=
    [("verdict", jsonStr v.name), ("format", jsonStr formatTag),
     ("activation", jsonStr B.activation.name), ("d", toString B.d), ("n", toString B.n),
     ("biased", if B.biases.isSome then "true" else "false"),
     ("chain", jsonArr ((chain B v).map jsonStr))]
  let specific : List (String × String) :=
    match I with
    | .indexSet B' mask =>
      [("S", jsonArr ((members mask).map toString)),
       ("checked_entries", toString (B'.d * B'.d))] ++
        (match B'.conditionFailure mask with
         | none => []
         | some (j, k) =>
           [("failing_entry", jsonObj [("row", toString j.val), ("col", toString k.val),
             ("lhs", ratJson (B'.lhs mask j k)), ("rhs", ratJson (-B'.A j k))])])
    | .dual B' Y =>
      [("certificate", jsonStr "dual"), ("neg_pairing", ratJson (-B'.pairing Y)),
       ("lower", ratJson (B'.lower Y)), ("upper", ratJson (B'.upper Y)),
       ("hypotheses", (match B'.hypothesisFailure with
         | none => jsonStr "hold"
         | some h => h.json))]
  jsonObj (common ++ specific)

/-- The error object `{"error": msg, "exit": 2}`. -/
def errorJson (msg : String) : String :=
  jsonObj [("error", jsonStr msg), ("exit", "2")]

/-- The whole pure pipeline of the executable: the text of the input file to the one-line JSON
report, or an error message for bad input. -/
def processInput (text : String) : Except String String := do
  let j ← parseJson text
  let doc ← readDocument j
  pure (report doc.input)

end Checker

end Absorb
