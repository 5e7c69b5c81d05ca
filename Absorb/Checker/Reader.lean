/-!
# The checker's reader: JSON text to a validated `absorb-check/2` document (core Lean only)

The first of the three modules of the compiled checker (`lake exe absorb-check`, root
`AbsorbCheck`): it turns the text of an input file into an `Absorb.Checker.Document` — the
activation, the weights as exact fractions, and the index set `S` or the dual certificate `Y` —
or into a one-line error message. It imports nothing (Lean's prelude only), so it adds no module
to the native code that `lake exe absorb-check` compiles.

The reader has its own small JSON parser rather than `Lean.Json`: that parser keeps the last of
two duplicate keys (a document with two `"W_up"` keys would be read as one of them) and computes
`10 ^ exponent` for any exponent a literal spells. Here duplicate keys anywhere are refused, and
a number literal is kept as its digits until its value is known to be within the grammar.

## The number grammar (identical to the Python reader `absorb.numbers`)

* A JSON number literal `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?` denotes the exact rational
  it spells (`0.1` is `1/10`, `1e-400` is `10^-400`). Refused: an exponent of absolute value
  above `maxExponent = 4096`, more than `maxDigits = 4096` digits in the integer or the fraction
  part.
* A string entry matches `-?[0-9]+(/[0-9]+)?` exactly (no `+`, no spaces, no decimal point), with
  a nonzero denominator and at most `maxDigits` digits in each run; it denotes `p/q`.
* `null`, booleans, duplicate keys (in any object), unknown keys, missing keys and wrong shapes
  are refused.

## Main definitions

* `Absorb.Checker.JValue`, `Absorb.Checker.parseJson` : JSON text to a value, refusing duplicate
  keys, nesting deeper than `maxDepth`, and literals outside the grammar.
* `Absorb.Checker.Frac` : an exact fraction `num / den` (`den ≠ 0`), the value of an entry.
* `Absorb.Checker.Document`, `Absorb.Checker.readDocument` : the validated input.
-/

namespace Absorb

namespace Checker

/-! ### Limits of the grammar -/

/-- The largest absolute value of the exponent of a number literal (`1e4096`, `1e-4096`). -/
def maxExponent : Nat := 4096

/-- The most digits in one digit run: the integer or the fraction part of a literal, `p` or `q`
of a string `"p/q"`. -/
def maxDigits : Nat := 4096

/-- The deepest nesting of arrays and objects that the parser follows (an input document nests
three deep; this bound keeps the recursion of the parser shallow on hostile input). -/
def maxDepth : Nat := 64

/-! ### Exact fractions -/

/-- An exact fraction `num / den`; the reader only builds it with `den ≠ 0`. The decision
module turns it into a rational number. -/
structure Frac where
  /-- The numerator. -/
  num : Int
  /-- The denominator, positive. -/
  den : Nat
  deriving Inhabited

/-- The value of a run of decimal digits. -/
def digitsValue (ds : List Char) : Nat :=
  ds.foldl (fun acc c => 10 * acc + (c.toNat - '0'.toNat)) 0

/-! ### JSON values -/

/-- A JSON number literal, kept as what it spells: the sign, the integer part, the fraction
part (digit runs) and the exponent (`exp`, already checked against `maxExponent`). -/
structure NumLit where
  /-- The literal starts with `-`. -/
  neg : Bool
  /-- The digits of the integer part. -/
  whole : List Char
  /-- The digits of the fraction part (empty when there is none). -/
  frac : List Char
  /-- The literal has a fraction part or an exponent (so it is not an integer literal). -/
  hasPoint : Bool
  /-- The exponent (`0` when there is none). -/
  exp : Int

/-- The exact value `±(whole.frac) · 10^exp` of a number literal. -/
def NumLit.value (x : NumLit) : Frac :=
  let mant : Int := Int.ofNat (digitsValue (x.whole ++ x.frac))
  let mant := if x.neg then -mant else mant
  let e : Int := x.exp - Int.ofNat x.frac.length
  if 0 ≤ e then { num := mant * (10 : Int) ^ e.toNat, den := 1 }
  else { num := mant, den := 10 ^ (-e).toNat }

/-- A JSON value as the reader keeps it: objects keep their members in order (keys are unique,
`parseJson` refuses duplicates). -/
inductive JValue where
  /-- `null`. -/
  | null
  /-- `true` or `false`. -/
  | bool (b : Bool)
  /-- A number literal. -/
  | num (x : NumLit)
  /-- A string. -/
  | str (s : String)
  /-- An array. -/
  | arr (items : Array JValue)
  /-- An object, its members in order. -/
  | obj (members : Array (String × JValue))

/-! ### The parser -/

/-- JSON whitespace: space, tab, line feed, carriage return. -/
def isWs (c : Char) : Bool :=
  c == ' ' || c == '\t' || c == '\n' || c == '\r'

/-- The text after leading JSON whitespace. -/
def skipWs (cs : List Char) : List Char :=
  cs.dropWhile isWs

/-- The value of a hexadecimal digit. -/
def hexValue (c : Char) : Option Nat :=
  if '0' ≤ c && c ≤ '9' then some (c.toNat - '0'.toNat)
  else if 'a' ≤ c && c ≤ 'f' then some (c.toNat - 'a'.toNat + 10)
  else if 'A' ≤ c && c ≤ 'F' then some (c.toNat - 'A'.toNat + 10)
  else none

/-- The code unit of the four hexadecimal digits after `\u`. -/
def hex4 : List Char → Except String (Nat × List Char)
  | a :: b :: c :: d :: rest =>
    match hexValue a, hexValue b, hexValue c, hexValue d with
    | some a, some b, some c, some d => pure (((a * 16 + b) * 16 + c) * 16 + d, rest)
    | _, _, _, _ => throw "invalid \\u escape in a JSON string"
  | _ => throw "invalid \\u escape in a JSON string"

/-- The body of a string literal after its opening quote: the string and the text after the
closing quote. Escapes are decoded (a UTF-16 surrogate pair to one character; a lone surrogate
to U+FFFD); an unescaped control character is refused, as JSON requires. -/
partial def parseStringBody (cs : List Char) (acc : Array Char) :
    Except String (String × List Char) :=
  match cs with
  | [] => throw "unterminated JSON string"
  | '"' :: rest => pure (String.mk acc.toList, rest)
  | '\\' :: c :: rest =>
    match c with
    | '"' => parseStringBody rest (acc.push '"')
    | '\\' => parseStringBody rest (acc.push '\\')
    | '/' => parseStringBody rest (acc.push '/')
    | 'b' => parseStringBody rest (acc.push (Char.ofNat 8))
    | 'f' => parseStringBody rest (acc.push (Char.ofNat 12))
    | 'n' => parseStringBody rest (acc.push '\n')
    | 'r' => parseStringBody rest (acc.push '\r')
    | 't' => parseStringBody rest (acc.push '\t')
    | 'u' => do
      let (u, rest) ← hex4 rest
      if 0xD800 ≤ u && u < 0xDC00 then
        match rest with
        | '\\' :: 'u' :: rest' =>
          let (l, rest'') ← hex4 rest'
          if 0xDC00 ≤ l && l < 0xE000 then
            parseStringBody rest''
              (acc.push (Char.ofNat (0x10000 + (u - 0xD800) * 0x400 + (l - 0xDC00))))
          else parseStringBody rest (acc.push (Char.ofNat 0xFFFD))
        | _ => parseStringBody rest (acc.push (Char.ofNat 0xFFFD))
      else if 0xDC00 ≤ u && u < 0xE000 then parseStringBody rest (acc.push (Char.ofNat 0xFFFD))
      else parseStringBody rest (acc.push (Char.ofNat u))
    | _ => throw "invalid escape in a JSON string"
  | c :: rest =>
    if c.toNat < 0x20 then throw "unescaped control character in a JSON string"
    else parseStringBody rest (acc.push c)

/-- Refuses a digit run longer than `maxDigits`. -/
def checkRun (what : String) (ds : List Char) : Except String Unit :=
  if ds.length > maxDigits then
    throw s!"a number has {ds.length} digits in its {what}, more than the limit {maxDigits}"
  else pure ()

/-- The digits of an exponent, read with their value capped at `maxExponent + 1` (leading zeros
carry no value: `1e0001` is `10`). -/
def exponentValue (ds : List Char) : Nat :=
  ds.foldl (fun acc c => min (maxExponent + 1) (10 * acc + (c.toNat - '0'.toNat))) 0

/-- A JSON number literal at the start of `cs` (RFC 8259 grammar), within the limits of the
number grammar. -/
def parseNumber (cs : List Char) : Except String (NumLit × List Char) := do
  let (neg, cs) := match cs with
    | '-' :: rest => (true, rest)
    | _ => (false, cs)
  let whole := cs.takeWhile Char.isDigit
  let cs := cs.dropWhile Char.isDigit
  if whole.isEmpty then throw "invalid JSON number"
  if whole.length > 1 && whole.head? == some '0' then
    throw "invalid JSON number (a leading zero)"
  checkRun "integer part" whole
  let (frac, hasFrac, cs) ← match cs with
    | '.' :: rest =>
      let f := rest.takeWhile Char.isDigit
      if f.isEmpty then throw "invalid JSON number (no digit after the decimal point)"
      else pure (f, true, rest.dropWhile Char.isDigit)
    | _ => pure (([] : List Char), false, cs)
  checkRun "fraction part" frac
  let (exp, hasExp, cs) ← match cs with
    | c :: rest =>
      if c == 'e' || c == 'E' then do
        let (eneg, rest) := match rest with
          | '-' :: r => (true, r)
          | '+' :: r => (false, r)
          | r => (false, r)
        let ds := rest.takeWhile Char.isDigit
        if ds.isEmpty then throw "invalid JSON number (no digit in the exponent)"
        let v := exponentValue ds
        if v > maxExponent then
          throw s!"a JSON number has an exponent beyond ±{maxExponent}"
        let e : Int := if eneg then -Int.ofNat v else Int.ofNat v
        pure (e, true, rest.dropWhile Char.isDigit)
      else pure ((0 : Int), false, cs)
    | [] => pure ((0 : Int), false, [])
  let lit : NumLit := { neg := neg, whole := whole, frac := frac,
                        hasPoint := hasFrac || hasExp, exp := exp }
  pure (lit, cs)

mutual

/-- A JSON value at the start of `cs` (after whitespace), nested at depth `depth`. -/
partial def parseValue (depth : Nat) (cs : List Char) : Except String (JValue × List Char) :=
  if depth > maxDepth then throw s!"JSON nested deeper than {maxDepth} levels"
  else
    match skipWs cs with
    | '{' :: rest =>
      match skipWs rest with
      | '}' :: rest' => pure (.obj #[], rest')
      | _ => parseMembers depth rest #[]
    | '[' :: rest =>
      match skipWs rest with
      | ']' :: rest' => pure (.arr #[], rest')
      | _ => parseItems depth rest #[]
    | '"' :: rest => do
      let (s, rest) ← parseStringBody rest #[]
      pure (.str s, rest)
    | 'n' :: 'u' :: 'l' :: 'l' :: rest => pure (.null, rest)
    | 't' :: 'r' :: 'u' :: 'e' :: rest => pure (.bool true, rest)
    | 'f' :: 'a' :: 'l' :: 's' :: 'e' :: rest => pure (.bool false, rest)
    | c :: rest =>
      if c == '-' || c.isDigit then do
        let (x, rest) ← parseNumber (c :: rest)
        pure (.num x, rest)
      else throw s!"unexpected character '{c}' in JSON"
    | [] => throw "unexpected end of JSON text"

/-- The members of an object after its `{`; `acc` holds the members read so far. A key that
is already among them is refused. -/
partial def parseMembers (depth : Nat) (cs : List Char) (acc : Array (String × JValue)) :
    Except String (JValue × List Char) :=
  match skipWs cs with
  | '"' :: rest => do
    let (key, rest) ← parseStringBody rest #[]
    if acc.any (fun kv => kv.1 == key) then throw s!"duplicate key \"{key}\" in a JSON object"
    match skipWs rest with
    | ':' :: rest => do
      let (v, rest) ← parseValue (depth + 1) rest
      let acc := acc.push (key, v)
      match skipWs rest with
      | ',' :: rest => parseMembers depth rest acc
      | '}' :: rest => pure (.obj acc, rest)
      | _ => throw "expected ',' or '}' in a JSON object"
    | _ => throw "expected ':' after a key in a JSON object"
  | _ => throw "expected a string key in a JSON object"

/-- The items of an array after its `[`; `acc` holds the items read so far. -/
partial def parseItems (depth : Nat) (cs : List Char) (acc : Array JValue) :
    Except String (JValue × List Char) := do
  let (v, rest) ← parseValue (depth + 1) cs
  let acc := acc.push v
  match skipWs rest with
  | ',' :: rest => parseItems depth rest acc
  | ']' :: rest => pure (.arr acc, rest)
  | _ => throw "expected ',' or ']' in a JSON array"

end

/-- The JSON document `text`: one value, then only whitespace. -/
def parseJson (text : String) : Except String JValue := do
  let (v, rest) ← parseValue 0 text.toList
  if (skipWs rest).isEmpty then pure v
  else throw "unexpected text after the JSON value"

/-! ### Entries -/

/-- A string entry `"p"` or `"p/q"` under the string grammar `-?[0-9]+(/[0-9]+)?`, `q ≠ 0`. -/
def parseRatString (loc s : String) : Except String Frac := do
  let bad : String :=
    s!"{loc}: string \"{s}\" is not a rational \"p/q\" or integer \"p\" " ++
      "(digits only: no '+', spaces, decimal point or exponent)"
  let cs := s.toList
  let (neg, cs) := match cs with
    | '-' :: rest => (true, rest)
    | _ => (false, cs)
  let p := cs.takeWhile Char.isDigit
  let rest := cs.dropWhile Char.isDigit
  if p.isEmpty then throw bad
  if p.length > maxDigits then
    throw s!"{loc}: string entry has a run of more than {maxDigits} digits"
  let pv : Int := if neg then -Int.ofNat (digitsValue p) else Int.ofNat (digitsValue p)
  match rest with
  | [] => pure { num := pv, den := 1 }
  | '/' :: q =>
    if q.isEmpty || !q.all Char.isDigit then throw bad
    if q.length > maxDigits then
      throw s!"{loc}: string entry has a run of more than {maxDigits} digits"
    let qv := digitsValue q
    if qv = 0 then throw s!"{loc}: string \"{s}\" has denominator 0"
    pure { num := pv, den := qv }
  | _ => throw bad

/-- One matrix or vector entry: a number literal or a string under the string grammar; `null`,
booleans, arrays and objects are refused. -/
def parseEntry (loc : String) : JValue → Except String Frac
  | .num x => pure x.value
  | .str s => parseRatString loc s
  | .null => throw s!"{loc}: null is not a number"
  | .bool _ => throw s!"{loc}: a boolean is not a number"
  | _ => throw s!"{loc}: expected a number or a string \"p/q\""

/-- A vector of exactly `len` entries. -/
def parseVector (name : String) (len : Nat) : JValue → Except String (Array Frac)
  | .arr items => do
    if items.size ≠ len then throw s!"{name} has {items.size} entries, expected {len}"
    let mut out : Array Frac := #[]
    for item in items do
      out := out.push (← parseEntry s!"{name}[{out.size}]" item)
    pure out
  | _ => throw s!"{name} must be a JSON array"

/-- A matrix of `rows` rows of `cols` entries each. -/
def parseMatrix (name : String) (rows cols : Nat) : JValue → Except String (Array (Array Frac))
  | .arr items => do
    if items.size ≠ rows then throw s!"{name} has {items.size} rows, expected {rows}"
    let mut out : Array (Array Frac) := #[]
    for item in items do
      out := out.push (← parseVector s!"{name}[{out.size}]" cols item)
    pure out
  | _ => throw s!"{name} must be a JSON array of rows"

/-- The shape `(rows, cols)` of a matrix given as a nonempty array of nonempty arrays (the
first row's length; `parseMatrix` checks every row). -/
def matrixShape (name : String) : JValue → Except String (Nat × Nat)
  | .arr items =>
    match items[0]? with
    | some (.arr row) =>
      if row.size = 0 then throw s!"{name} has an empty row; need a matrix with n ≥ 1, d ≥ 1"
      else pure (items.size, row.size)
    | some _ => throw s!"{name} must be a JSON array of rows"
    | none => throw s!"{name} has no rows; need a matrix with n ≥ 1, d ≥ 1"
  | _ => throw s!"{name} must be a JSON array of rows"

/-! ### The document -/

/-- The activations whose theorem chain the library can justify. -/
inductive Activation where
  /-- ReLU, `z ↦ max z 0`. -/
  | relu
  /-- GELU, `z ↦ z Φ(z)` (`Absorb.geluWith`). -/
  | gelu
  deriving DecidableEq, Inhabited

/-- The name of an activation in the file format. -/
def Activation.name : Activation → String
  | .relu => "relu"
  | .gelu => "gelu"

/-- What the document asks to decide: an index set `S` (0-based, distinct, `< n`) or a dual
certificate `Y` (`d × d`). -/
inductive Claim where
  /-- A candidate index set. -/
  | indexSet (S : Array Nat)
  /-- A dual certificate. -/
  | dual (Y : Array (Array Frac))

/-- A validated `absorb-check/2` document: `W_up` is `n × d`, `W_down` is `d × n`, `A_skip`
(`d × d`, absent: the identity), `b_up` (`n`) and `b_down` (`d`) are optional, every entry an
exact fraction. -/
structure Document where
  /-- The activation. -/
  activation : Activation
  /-- The model dimension `d ≥ 1`. -/
  d : Nat
  /-- The hidden width `n ≥ 1`. -/
  n : Nat
  /-- `W_up`, `n` rows of `d` entries. -/
  up : Array (Array Frac)
  /-- `W_down`, `d` rows of `n` entries. -/
  down : Array (Array Frac)
  /-- `A_skip` when given. -/
  skip : Option (Array (Array Frac))
  /-- `b_up` when given. -/
  bUp : Option (Array Frac)
  /-- `b_down` when given. -/
  bDown : Option (Array Frac)
  /-- `S` or `Y`. -/
  claim : Claim

/-- The value of the format key. -/
def formatTag : String := "absorb-check/2"

/-- The keys that a document may have. -/
def allowedKeys : List String :=
  ["format", "activation", "W_up", "W_down", "A_skip", "b_up", "b_down", "S", "Y"]

/-- The value at `key` in the members of an object (keys are unique). -/
def lookup (members : Array (String × JValue)) (key : String) : Option JValue :=
  (members.find? (fun kv => kv.1 == key)).map (·.2)

/-- One neuron index of `S`: an integer literal (no fraction part, no exponent) `i` with
`0 ≤ i < n`. -/
def parseIndex (n : Nat) : JValue → Except String Nat
  | .num x =>
    if x.hasPoint then throw "S: indices must be integer literals (no decimal point or exponent)"
    else
      let v := digitsValue x.whole
      if x.neg && v ≠ 0 then throw "S: indices must be non-negative"
      else if v < n then pure v
      else throw s!"S holds the index {v}, not below n = {n}"
  | _ => throw "S must be a JSON array of non-negative integers"

/-- The index set `S`: distinct indices below `n`. -/
def parseIndices (n : Nat) : JValue → Except String (Array Nat)
  | .arr items => do
    let mut out : Array Nat := #[]
    for item in items do
      let i ← parseIndex n item
      if out.contains i then throw "S repeats an index"
      out := out.push i
    pure out
  | _ => throw "S must be a JSON array of non-negative integers"

/-- Reads and validates a document: an object with only `allowedKeys`, `format` =
`"absorb-check/2"`, `activation` `"relu"` or `"gelu"`, `W_up` (`n × d`, `n, d ≥ 1`), `W_down`
(`d × n`), optional `A_skip` (`d × d`), `b_up` (`n`), `b_down` (`d`), and exactly one of `S`
and `Y` (`d × d`). -/
def readDocument (j : JValue) : Except String Document := do
  let members ← match j with
    | .obj m => pure m
    | _ => throw "the input must be a JSON object"
  for (key, _) in members do
    if !allowedKeys.contains key then
      throw s!"unknown key \"{key}\" (allowed keys: {", ".intercalate allowedKeys})"
  match lookup members "format" with
  | some (.str f) =>
    if f ≠ formatTag then throw s!"format must be \"{formatTag}\", got \"{f}\""
  | some _ => throw s!"format must be the string \"{formatTag}\""
  | none => throw s!"missing key \"format\" (\"{formatTag}\")"
  let activation ← match lookup members "activation" with
    | some (.str "relu") => pure Activation.relu
    | some (.str "gelu") => pure Activation.gelu
    | some _ => throw "activation must be \"relu\" or \"gelu\""
    | none => throw "missing key \"activation\" (\"relu\" or \"gelu\")"
  let upJ ← match lookup members "W_up" with
    | some v => pure v
    | none => throw "missing key \"W_up\""
  let downJ ← match lookup members "W_down" with
    | some v => pure v
    | none => throw "missing key \"W_down\""
  let (n, d) ← matrixShape "W_up" upJ
  let up ← parseMatrix "W_up" n d upJ
  let down ← parseMatrix "W_down" d n downJ
  let skip ← match lookup members "A_skip" with
    | some v => some <$> parseMatrix "A_skip" d d v
    | none => pure none
  let bUp ← match lookup members "b_up" with
    | some v => some <$> parseVector "b_up" n v
    | none => pure none
  let bDown ← match lookup members "b_down" with
    | some v => some <$> parseVector "b_down" d v
    | none => pure none
  let claim ← match lookup members "S", lookup members "Y" with
    | some s, none => Claim.indexSet <$> parseIndices n s
    | none, some y => Claim.dual <$> parseMatrix "Y" d d y
    | some _, some _ =>
      throw ("give exactly one of \"S\" (an index set) and \"Y\" (a dual certificate), " ++
        "not both")
    | none, none => throw "missing key \"S\" (an index set) or \"Y\" (a dual certificate)"
  pure { activation := activation, d := d, n := n, up := up, down := down, skip := skip,
         bUp := bUp, bDown := bDown, claim := claim }

end Checker

end Absorb
