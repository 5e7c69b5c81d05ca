"""The verdict type: one frozen class per kind, each constructor checking its own evidence.

Every command that decides a block or a stack (``check``, ``inspect``, ``search``'s
prediction, stack decisions) builds one of

* :class:`Absorbed` — a residual-free block (stack) of the same kind and width equals the
  skip block, proved by an :class:`ExactCheck` on the stored values: an index set S with
  W_down[:,S] W_up[S,:] = −A exactly, A = 0 exactly, or an exact rank factorization of a
  linear block. An :class:`ExactCheck` is made only by the ``exact_*`` functions of this
  module, which decide in exact rational arithmetic on the stored numbers (every float is a
  dyadic rational); no float comparison, dtype policy or user tolerance can make one;
* :class:`AbsorbableUpToRounding` — an index set meets the condition within the storage
  tolerance, and not exactly; carries the distance in unit roundoffs;
* :class:`NotAbsorbed` — a certificate (with its proof) and every hypothesis of the chain met;
* :class:`Impossible` — an impossibility theorem with a witness computed from the weights;
* :class:`Undetermined` — why not (the reason, the unmet hypotheses).

Each renders itself: :meth:`Verdict.to_json` (the JSON contract of docs/DESIGN.md) and
:meth:`Verdict.text_lines`; a verdict is the command doing its job, so its exit code is 0.
A verdict is also a read-only mapping onto its JSON object (``v["verdict"]``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Literal

import numpy as np

from absorb import exact
from absorb.certificates.recheck import check_index_set, parse_matrix
from absorb.errors import AbsorbError
from absorb.manifest import get_theorem

__all__ = [
    "KINDS",
    "MAX_TOL",
    "AbsorbableUpToRounding",
    "Absorbed",
    "ExactCheck",
    "Impossible",
    "NotAbsorbed",
    "Subject",
    "Undetermined",
    "Verdict",
    "check_tol",
    "exact_index_set",
    "exact_linear_absorption",
    "exact_linear_rank",
    "exact_stack",
    "exact_zero_skip",
]

#: The largest storage tolerance (relative precision) accepted: beyond it a tolerance is no
#: longer a plausible precision of stored weights (bfloat16's unit roundoff is 2⁻⁸ ≈ 3.9e-3).
MAX_TOL = 1e-2

_SEAL = object()


def check_tol(tol: float | None) -> None:
    """Refuse a storage tolerance that is not a plausible relative precision of stored
    weights: not positive, not finite, or above :data:`MAX_TOL`. A tolerance can only widen
    ``absorbable_up_to_rounding``; it never makes a block ``absorbed``."""
    if tol is not None and not (math.isfinite(tol) and 0 < tol <= MAX_TOL):
        raise AbsorbError(f"--tol must be a relative precision of the stored weights in "
                          f"(0, {MAX_TOL:g}] (a storage tolerance, not an error budget), "
                          f"got {tol:g}")


@dataclass(frozen=True)
class ExactCheck:
    """Proof, in exact arithmetic on the stored values, that a residual-free block (stack) of
    the same kind and width equals the skip block. Made only by the ``exact_*`` functions.

    ``kind``: ``zero_skip`` (A = 0), ``index_set`` (W_down[:,S] W_up[S,:] = −A, S given),
    ``linear_rank`` (σ = id and rank(A + W_down W_up) ≤ n), ``stack`` (every layer matched
    exactly on the image of the layers before it).
    """

    kind: Literal["zero_skip", "index_set", "linear_rank", "stack"]
    detail: str
    S: tuple[int, ...] | None = None
    rank: int | None = None
    seal: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.seal is not _SEAL:
            raise TypeError("an ExactCheck is made only by the exact_* functions of "
                            "absorb.verdicts (exact arithmetic on the stored values)")

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "detail": self.detail, "arithmetic": "exact"}


def exact_zero_skip(A: Any) -> ExactCheck | None:
    """A = 0 exactly (A given as stored: Fractions or floats; None is the identity)."""
    M = None if A is None else np.asarray(A)
    # a float is zero exactly when its value is; rationals are compared as they are
    if M is None or (any(v != 0 for v in M.ravel()) if M.dtype == object else np.any(M)):
        return None
    return ExactCheck("zero_skip", "A = 0 exactly on the stored values: the block is "
                      "already residual-free", seal=_SEAL)


def exact_index_set(W_up: Any, W_down: Any, S: Sequence[int], A: Any) -> ExactCheck | None:
    """W_down[:,S] W_up[S,:] = −A exactly on the stored values (A None: the identity)."""
    idx = tuple(sorted(int(i) for i in S))
    if not check_index_set(W_up, W_down, idx, A):
        return None
    return ExactCheck("index_set", f"W_down[:,S] W_up[S,:] = -A holds exactly on the stored "
                      f"values (|S| = {len(idx)})", S=idx, seal=_SEAL)


def exact_linear_rank(L: Any, n: int) -> int | None:
    """The rank over ℚ of L = A + W_down W_up (stored values) of a linear block when it can
    exceed n (d > n); None when d ≤ n makes it unnecessary (rank L ≤ d ≤ n)."""
    Lq = parse_matrix(L)  # a float is a dyadic rational: no rounding
    return None if Lq.shape[0] <= n else exact.rank(Lq)


def exact_linear_absorption(L: Any, n: int, V_down: Any, V_up: Any) -> ExactCheck | None:
    """Proof that the linear block is absorbed by V_down V_up (width n): rank L ≤ n and
    V_down V_up = L exactly over ℚ on the stored values."""
    Lq = parse_matrix(L)
    rank = exact_linear_rank(Lq, n)
    if (rank is not None and rank > n) or not np.array_equal(
            parse_matrix(V_down) @ parse_matrix(V_up), Lq):
        return None
    bound = f"rank(A + W_down W_up) = {rank}" if rank is not None else "rank <= d"
    return ExactCheck("linear_rank", f"{bound} <= n = {n}, and V_down V_up = "
                      "A + W_down W_up, over Q on the stored values", rank=rank, seal=_SEAL)


def exact_stack(layers: Sequence[tuple[str, ExactCheck | bool]]) -> ExactCheck | None:
    """Every layer matched exactly: (mechanism, evidence) per layer, the evidence an index-set
    :class:`ExactCheck` or the image-cone construction's exact verification (True)."""
    if not layers or not all((isinstance(ev, ExactCheck) and ev.kind == "index_set")
                             or ev is True for _, ev in layers):
        return None
    how = ", ".join(f"layer {i} by {m.replace('_', ' ')}" for i, (m, _) in enumerate(layers))
    return ExactCheck("stack", f"every layer matched exactly over Q: {how}", seal=_SEAL)


# --------------------------------------------------------------------------------------------
# what is decided


@dataclass(frozen=True)
class Subject:
    """What the verdict is about: a skip block, or a stack (``depth``, ``widths``)."""

    activation: str
    d: int
    n: int
    biases: bool
    skip: Literal["identity", "matrix"]
    exact: bool
    depth: int | None = None
    widths: tuple[int, ...] | None = None
    extra: Mapping[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.depth is not None:
            out.update(stack=True, depth=self.depth, widths=list(self.widths or ()))
        out.update(activation=self.activation, d=self.d, n=self.n, biases=self.biases,
                   skip=self.skip, exact=self.exact)
        return {**out, **self.extra}

    def header(self) -> str:
        kind = (f"stack, d={self.d}, depth {self.depth}, widths {list(self.widths or ())}"
                if self.depth is not None else f"block, d={self.d}, n={self.n}")
        return (f"{self.activation} {kind}" + (", biases" if self.biases else "")
                + (", skip matrix A" if self.skip == "matrix" else "")
                + (", exact arithmetic" if self.exact else ""))


# --------------------------------------------------------------------------------------------
# the verdicts


@dataclass(frozen=True, kw_only=True, eq=False)
class Verdict(Mapping[str, object]):
    """Common part: the subject, the theorem chain (first entry: ``theorem``), the reason and
    further evidence (``details``: JSON-ready values rendered as they are)."""

    kind: ClassVar[str]
    #: JSON fields every verdict of the kind carries besides the common ones (DESIGN.md).
    FIELDS: ClassVar[tuple[str, ...]] = ()
    #: Common JSON fields of every verdict.
    COMMON: ClassVar[tuple[str, ...]] = ("verdict", "theorem", "chain", "lean", "reason")
    exit_code: ClassVar[int] = 0

    subject: Subject
    reason: str
    chain: tuple[str, ...] = ()
    details: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.reason.strip():
            raise ValueError(f"a {self.kind} verdict needs its reason")
        for tid in self.chain:
            get_theorem(tid)  # AbsorbError for an unknown ID

    @property
    def theorem(self) -> str | None:
        return self.chain[0] if self.chain else None

    def own_fields(self) -> dict[str, object]:
        """The kind's own JSON fields (:data:`FIELDS`)."""
        return {}

    @cached_property
    def _json(self) -> dict[str, object]:
        return {**self.subject.to_json(), "verdict": self.kind, "theorem": self.theorem,
                "chain": list(self.chain),
                "lean": [name for tid in self.chain for name in get_theorem(tid).lean],
                "reason": self.reason, **self.own_fields(), **self.details}

    def to_json(self) -> dict[str, object]:
        """The JSON object of docs/DESIGN.md (a fresh top-level dict)."""
        return dict(self._json)

    def __getitem__(self, key: str) -> object:
        return self._json[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._json)

    def __len__(self) -> int:
        return len(self._json)

    def text_lines(self) -> list[str]:
        """The human-readable form (``check``'s text output)."""
        return _text_lines(self.to_json(), self.subject)


def _finite_nonnegative(x: float, what: str) -> None:
    if not (np.isfinite(x) and x >= 0):
        raise ValueError(f"{what} must be finite and >= 0, got {x}")


@dataclass(frozen=True, kw_only=True, eq=False)
class Absorbed(Verdict):
    """Absorbed, proved exactly on the stored values (``proof``); ``construction`` is the
    absorbing residual-free block (stack) and ``check`` its numerical check on fresh points."""

    kind: ClassVar[str] = "absorbed"
    FIELDS: ClassVar[tuple[str, ...]] = ("S", "proof", "condition_exact")

    proof: ExactCheck
    construction: Mapping[str, object]
    check: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.proof, ExactCheck):
            raise TypeError("Absorbed needs an ExactCheck (exact arithmetic on the stored "
                            "values)")
        if not self.construction:
            raise ValueError("Absorbed needs the absorbing construction")
        if self.proof.kind == "index_set" and "index_set_sufficient" not in self.chain:
            raise ValueError("an index-set proof rests on index_set_sufficient")

    def own_fields(self) -> dict[str, object]:
        return {"S": None if self.proof.S is None else list(self.proof.S),
                "proof": self.proof.to_json(), "condition_exact": True,
                **self.construction, **self.check}


@dataclass(frozen=True, kw_only=True, eq=False)
class AbsorbableUpToRounding(Verdict):
    """An index set S meets the condition within the storage tolerance, not exactly: a change
    of W_down[:,S] of ``roundoffs`` unit roundoffs of the stored format makes it exact."""

    kind: ClassVar[str] = "absorbable_up_to_rounding"
    FIELDS: ClassVar[tuple[str, ...]] = ("S", "distance_in_unit_roundoffs", "rounding",
                                         "condition_exact")

    S: tuple[int, ...]
    roundoffs: float
    rounding: Mapping[str, object]

    def __post_init__(self) -> None:
        super().__post_init__()
        _finite_nonnegative(self.roundoffs, "the distance in unit roundoffs")
        if not self.rounding.get("within_rounding_bound"):
            raise ValueError("absorbable_up_to_rounding needs a repair within the rounding "
                             "bound")

    def own_fields(self) -> dict[str, object]:
        return {"S": list(self.S), "distance_in_unit_roundoffs": self.roundoffs,
                "rounding": dict(self.rounding), "condition_exact": False}


@dataclass(frozen=True, kw_only=True, eq=False)
class NotAbsorbed(Verdict):
    """No residual-free block of the same kind and width equals the block: ``certificate``
    (with its ``proof``, re-checked exactly or with a proven bound) and every hypothesis of
    the chain met on the stored values (``unmet_hypotheses`` must be empty)."""

    kind: ClassVar[str] = "not_absorbed"
    FIELDS: ClassVar[tuple[str, ...]] = ("certificate",)

    certificate: Mapping[str, object]
    unmet_hypotheses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.unmet_hypotheses:
            raise ValueError("not_absorbed needs every hypothesis of its chain: unmet "
                             + "; ".join(self.unmet_hypotheses))
        if not str(self.certificate.get("proof") or "").strip():
            raise ValueError("not_absorbed needs a certificate with its proof")

    def own_fields(self) -> dict[str, object]:
        return {"certificate": dict(self.certificate)}


#: The theorems that prove a verdict ``impossible`` (for any weights of the kind).
IMPOSSIBILITY_THEOREMS = frozenset({"degree", "linearization", "bounded", "depth_degree",
                                    "depth_linearization"})


@dataclass(frozen=True, kw_only=True, eq=False)
class Impossible(Verdict):
    """No residual-free block of the kind equals the block, for any weights: an impossibility
    theorem (first in ``chain``) and a ``witness`` computed from the weights."""

    kind: ClassVar[str] = "impossible"
    FIELDS: ClassVar[tuple[str, ...]] = ("witness",)

    witness: Mapping[str, object]

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.theorem not in IMPOSSIBILITY_THEOREMS:
            raise ValueError(f"impossible rests on one of {sorted(IMPOSSIBILITY_THEOREMS)}, "
                             f"got {self.theorem}")
        if not self.witness:
            raise ValueError("impossible needs its witness")

    def own_fields(self) -> dict[str, object]:
        return {"witness": dict(self.witness)}


@dataclass(frozen=True, kw_only=True, eq=False)
class Undetermined(Verdict):
    """Nothing decided: the reason, and the hypotheses that are not met (may be empty when a
    decision was stopped by a limit, which the reason names)."""

    kind: ClassVar[str] = "undetermined"
    FIELDS: ClassVar[tuple[str, ...]] = ("unmet_hypotheses",)

    unmet_hypotheses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.chain:
            raise ValueError("undetermined rests on no theorem")

    def own_fields(self) -> dict[str, object]:
        return {"unmet_hypotheses": list(self.unmet_hypotheses)}


#: Every kind, in the order DESIGN.md lists them.
KINDS: tuple[type[Verdict], ...] = (Impossible, Absorbed, AbsorbableUpToRounding, NotAbsorbed,
                                    Undetermined)


# --------------------------------------------------------------------------------------------
# text


def _fmt(x: object) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def _witness_lines(w: Mapping[str, Any]) -> list[str]:
    if "gap_norm" in w:
        exact = w.get("expected_gap_exact")
        return [f"witness: |f({w['lambda']:g}x) - {w['lambda']:g}^{w['k']:g} f(x)| = "
                f"{w['gap_norm']:.6g} (= |(λ - λ^k) A x|, discrepancy "
                f"{w['discrepancy']:.2g}); zero for every residual-free block"
                + (f"; exactly, (λ - λ^k) A x = {exact}" if exact is not None else "")]
    if "Ax_norm" in w and "skip_gap" in (w.get("steps") or [{}])[0]:
        return [f"witness: |Ax| = {w['Ax_norm']:.6g}; as t -> 0, |f(tx)/t - Ax| and the bound "
                "on |h(tx)/t| vanish:",
                *(f"  t={s['t']:.0e}  gap={s['skip_gap']:.3e}  bound={s['bound']:.3e}"
                  for s in w["steps"])]
    if "residual_free_bound" in w:
        def num(q: str) -> str:
            try:
                f = float(Fraction(q))
            except OverflowError:  # beyond float range: the exact value
                return q
            return q if f == 0 and Fraction(q) != 0 else f"{f:.6g}"

        def low(v: float | None) -> str:  # None: beyond the float range
            return "(beyond float range)" if v is None else f"{v:.6g}"

        return [f"witness: v = e_{w['x'].index(1.0)}, |Av|_max = {num(w['Av_norm'])}; every "
                "residual-free block with no larger row sums of |V_down| and |c_down| stays "
                f"below C = {num(w['residual_free_bound'])} (max-norm), while |f(tv)| >= "
                f"t|Av| - C > C for t > t* = {num(w['t_star'])} (exact values in the JSON):",
                *(f"  t={s['t']:.3g}  |f(tv)|={s['f_norm']:.6g}  >= {low(s['lower_bound'])}"
                  for s in w["steps"])]
    return ["witness: |R(tx)/t - x| = " + ", ".join(
        f"{s['gap']:.2e} (t={s['t']:g})" for s in w["steps"]) + f"; |x| = {w['x_norm']:.3g}"]


def _stack_layer_lines(layers: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = []
    for layer in layers:
        parts = [f"layer {layer['layer']}: n={layer['n']}",
                 f"index set {layer['index_set']['status']}"]
        if layer.get("mechanism"):
            parts.append(f"matched by {layer['mechanism'].replace('_', ' ')}")
        if layer.get("index_set_exact") is False:
            parts.append("its index set holds only within the float tolerance")
        cone = layer.get("image_cone")
        if cone and not cone.get("applies"):
            parts.append(f"image cone: {cone['reason']}")
        dets = layer.get("determinants")
        if dets:
            parts.append(f"determinants {'certified' if dets['certified'] else 'NOT certified'}"
                         f" ({dets['method']})")
        lines.append("  " + "; ".join(parts))
    return lines


def _text_lines(r: Mapping[str, Any], subject: Subject) -> list[str]:
    lines = [subject.header(),
             f"verdict: {r['verdict']}" + (f"  (theorem {r['theorem']})" if r["theorem"] else "")
             + (f"  (construction {r['construction']})" if r.get("construction") else ""),
             f"why: {r['reason']}"]
    if r.get("witness"):
        lines += _witness_lines(r["witness"])
    if r.get("S") is not None:
        lines.append(f"index set S ({len(r['S'])} units): {r['S']}")
    if r.get("proof"):
        lines.append(f"proof: {r['proof']['detail']}")
    lines += _stack_layer_lines(r.get("layers") or [])
    if "max_abs_error" in r:
        lines.append(f"construction checked numerically: max |h(x) - f(x)| = "
                     f"{r['max_abs_error']:.3g} (relative {r['max_relative_error']:.3g}) at "
                     "scales " + ", ".join(_fmt(e["scale"]) for e in r["errors_by_scale"]))
    if "exact_check" in r:
        lines.append(f"exact check over Q at {r['exact_check']['points']} points: "
                     + ("equal" if r["exact_check"]["equal"] else "NOT equal"))
    cert = r.get("certificate") or {}
    if cert.get("relaxation_residual") is not None:  # None: the relaxation was not run
        lines.append(f"certificate: relaxation residual r^2 = {cert['relaxation_residual']:.6g} "
                     f"({cert['method']}, {'exact' if cert['exact'] else 'floating point'}); "
                     f"{cert['detail']}")
    elif "rank" in cert:
        lines.append(f"rank of A + W_down W_up: {cert['rank']} (exact, over Q)")
    if cert.get("proof"):
        lines.append(f"proof: {cert['proof']}")
    if len(r.get("chain") or []) > 1:
        lines.append("theorems used: " + " + ".join(r["chain"]))
    dual = cert.get("dual")
    if dual:
        # beyond float range the margin has no float form; its exact value stays in the JSON
        margin = dual.get("margin_float")
        shown = f"{margin:.3g}" if isinstance(margin, float) else "beyond float range"
        lines.append(f"dual certificate: Y ({dual['source']}, grid {dual['grid']}), margin "
                     f"{shown}; verified by {dual['verified']}")
    if cert.get("up_to_rounding"):
        lines.append(f"up to rounding: {cert['up_to_rounding']}")
    if cert.get("distance") is not None:
        lines.append(f"distance to absorbable (every index set S has |W_down[:,S] W_up[S,:] + "
                     f"A|_F >= this times |A|_F; {cert['distance_source']}): "
                     f"{cert['distance']:.3g}")
    rnd = r.get("rounding")
    if rnd:
        lines.append(f"rounding: {rnd['storage_dtype']} weights; the least-norm change of "
                     f"W_down[:,S] is {rnd['delta_norm_relative_to_W_down']:.3g} of |W_down|"
                     + (f" ({r['distance_in_unit_roundoffs']:.3g} unit roundoffs of "
                        f"{rnd['storage_dtype']})" if "distance_in_unit_roundoffs" in r else ""))
    if r.get("stored_weights_exactly"):
        lines.append(f"on the stored weights: {r['stored_weights_exactly']}")
    for hyp in r.get("unmet_hypotheses") or []:
        lines.append(f"unmet hypothesis: {hyp}")
    search = r.get("search")
    if search and "relative_error" in search:  # else only its note (a search not run)
        lines.append("search (best relative error per input scale): " + ", ".join(
            f"{_fmt(float(k))}: {_fmt(v)}" for k, v in search["relative_error"].items()))
    if search and search.get("note"):
        lines.append(f"  ({search['note']})")
    if r.get("scope"):
        lines.append(f"note: {r['scope']}")
    return lines
