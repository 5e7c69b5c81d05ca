"""The common ground of the experiments: the result type, thresholds and instance builders."""


from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from absorb.activations import get_activation
from absorb.blocks import INPUT_SCALES, Block, planted_block, random_block, stack_forward
from absorb.fits.fit import FOUND_TOL as FOUND_TOL  # the experiments read it from here

if TYPE_CHECKING:
    from absorb.fits import FitResult

Array = NDArray[np.float64]

#: Thresholds of "agrees": a construction or identity holds when its relative error is below
#: EXACT_TOL (float64 round-off on O(1) weights is ~1e-15; 1e-9 leaves room for conditioning),
#: and a quantity counts as "bounded away from zero" above AWAY_TOL.
EXACT_TOL = 1e-9
AWAY_TOL = 1e-3
#: The t sequence of the linearization and depth limits (t → 0⁺).
TS: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5)
#: Budget of the numerical fits (kept small: the report must run in minutes): restarts, LM
#: steps per stage, training samples per scale, and single-unit re-draw moves per restart
#: (:meth:`absorb.fits.lm.VarPro.redraw_search`; 2n at the controls' width n = 3: they raise
#: the per-restart recovery of in-class ReGLU targets from 0.14 to 0.65, so 8 such restarts
#: find what 32 plain ones missed). The same number at every width, so the wider fits of the
#: negative results get the moves their control was measured with.
FIT_RESTARTS, FIT_STEPS, FIT_SAMPLES, FIT_REDRAWS = 8, 40, 128, 6
#: A fit stops restarting once it is this close at every scale (so only the fits that succeed
#: finish early; the negative results spend the whole budget).
FIT_STOP = 1e-9


#: The four evidence states of an experiment (``ExperimentResult.status``).
STATUSES: tuple[str, ...] = ("agrees", "disagrees", "open", "error")


@dataclass(frozen=True)
class ExperimentResult:
    """Outcome of one experiment.

    ``figure``, when present, is ``{"title", "xlabel", "ylabel", "xscale", "yscale",
    "series": [{"label", "x", "y"}], "caption"}`` with plain lists, plotted by the report
    (:mod:`absorb.report.figures`: a series may add ``"panel"`` and ``"style"``, the figure
    ``"xticks"`` and ``"xticklabels"``; independent instances are drawn as markers, never
    joined by lines, and a caption that quotes numbers is computed from the data);
    ``caption`` tells a reader what to look for.

    ``error`` is the one-line cause (``Type: message``) when the experiment raised instead of
    finishing; ``positive_control`` names the experiment of the same size that the same code
    gets right, for a *negative* result (nothing absorbable, no index set, the search found
    nothing): without it a negative result says nothing about the code that produced it.
    """

    name: str
    theorem_id: str
    description: str
    agrees: bool
    table: list[dict[str, object]]
    figure: dict[str, object] | None = None
    control: bool = False
    open: bool = False
    summary: str = field(default="")
    error: str | None = None
    positive_control: str | None = None
    #: One sentence that explains a table a student may misread (shown under the table).
    table_note: str = ""

    @property
    def status(self) -> str:
        """``error`` (it raised) before ``open`` (no theorem is claimed) before the verdict."""
        if self.error is not None:
            return "error"
        if self.open:
            return "open"
        return "agrees" if self.agrees else "disagrees"

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "theorem": self.theorem_id,
            "description": self.description,
            "summary": self.summary,
            "status": self.status,
            "agrees": self.agrees,
            "control": self.control,
            "open": self.open,
            "error": self.error,
            "positive_control": self.positive_control,
            "table": self.table,
            "table_note": self.table_note,
            "figure": self.figure,
        }

    @classmethod
    def crashed(cls, name: str, theorem_id: str, exc: BaseException) -> ExperimentResult:
        """The result of an experiment that raised: status ``error``, never ``disagrees``."""
        cause = f"{type(exc).__name__}: {exc}".splitlines()[0]
        return cls(name, theorem_id, "the experiment raised an exception before it finished",
                   False, [], summary=f"error: {cause}", error=cause)


Experiment = Callable[[np.random.Generator], ExperimentResult]


# --------------------------------------------------------------------------------------------
# helpers


def _num(value: object) -> float:
    """A table cell as a float (cells hold plain numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


def _rel(a: Array, b: Array) -> float:
    """max |a − b| / max(|b|, tiny): relative sup-norm error of a against b."""
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))


def _points(rng: np.random.Generator, d: int, m: int = 64) -> Array:
    """m Gaussian inputs at each of the INPUT_SCALES 1e-2, 1, 1e2 (the scales the arguments use)."""
    return np.concatenate([s * rng.standard_normal((m, d)) for s in INPUT_SCALES])


def _planted(name: str, d: int, n: int, rng: np.random.Generator, *, biases: bool = False,
             skip: Array | None = None) -> Block:
    """A random block of activation ``name`` with a planted index set S of d + 1 units (at most
    n), so that W_down[:,S] W_up[S,:] = −A (:func:`absorb.blocks.planted_block`); the other
    units stay random, so S is planted in otherwise generic weights. The generic block drawn
    first is only the template of its kind and size."""
    return planted_block(random_block(get_activation(name), d, n, rng, biases=biases, skip=skip),
                         rng)


def _residual_free(name: str, d: int, n: int, rng: np.random.Generator) -> Block:
    b = random_block(get_activation(name), d, n, rng)
    return Block(b.activation, b.W_up, b.W_down, b.W_gate, residual=False)


def _invertible(d: int, rng: np.random.Generator) -> Array:
    """I + a small Gaussian perturbation: invertible and well-conditioned with high probability."""
    A: Array = np.eye(d) + 0.4 * rng.standard_normal((d, d)) / np.sqrt(d)
    return A


def _series(label: str, x: Sequence[object] | Array, y: Sequence[object] | Array, *,
            panel: str = "", style: str = "both") -> dict[str, object]:
    """One plotted series; ``panel`` groups series into side-by-side subplots, ``style`` is
    ``"line"``, ``"markers"`` or ``"both"`` (see :mod:`absorb.report.figures`)."""
    out: dict[str, object] = {"label": label, "x": np.asarray(x, dtype=np.float64).tolist(),
                              "y": np.asarray(y, dtype=np.float64).tolist()}
    if panel:
        out["panel"] = panel
    if style != "both":
        out["style"] = style
    return out


def _worst(errors: dict[float, float]) -> float:
    return max(errors.values())


def decade(x: float, floor: float = 1e-16) -> float:
    """The power of ten at or below max(x, floor): fit errors are path-dependent in their digits
    (a last-bit difference, e.g. from the memory alignment numpy's SIMD reductions see, can
    steer Levenberg–Marquardt to another nearby minimum), not in their decade."""
    return float(10.0 ** np.floor(np.log10(max(x, floor))))


def budget_fit(target: Block, width: int, rng: np.random.Generator, *, every_restart: bool = False
               ) -> FitResult:
    """The residual-free fit of the degree experiments: one budget (FIT_*) for the negative
    result and its positive control, so the control exercises exactly the negative result's
    code path and effort. ``every_restart`` runs all restarts even after an exact one (a
    positive control does, so that "recovered in k of m restarts" is a per-restart rate; the
    negative results run them all anyway, since none of their restarts gets below FIT_STOP)."""
    from absorb.fits import fit_residual_free

    return fit_residual_free(target, width=width, scales=INPUT_SCALES, rng=rng,
                             restarts=FIT_RESTARTS, steps=FIT_STEPS, samples=FIT_SAMPLES,
                             stop_below=None if every_restart else FIT_STOP,
                             redraws=FIT_REDRAWS)


def recovered(per_restart: Sequence[dict[float, float]], tol: float) -> tuple[int, int]:
    """(k, m): k of the m restarts that ran reached ``tol`` at every scale."""
    return sum(max(r.values()) <= tol for r in per_restart), len(per_restart)


# --------------------------------------------------------------------------------------------
# the t → 0⁺ limits of residual and residual-free stacks (depth_degree, depth_linearization)


def _stack_limits(name: str, rng: np.random.Generator, L: int = 3) -> list[dict[str, object]]:
    """Rows per t ∈ TS of ‖R(tx)/t − x‖ and ‖H(tx)/t‖ for a random residual stack R and a
    random residual-free stack H of depth L (activation ``name``, d = 3, n = 6) at a random x."""
    d, n = 3, 6
    act = get_activation(name)
    R = [random_block(act, d, n, rng) for _ in range(L)]
    H = [_residual_free(name, d, n, rng) for _ in range(L)]
    x = rng.standard_normal(d)
    t = np.asarray(TS)
    R_gap = np.linalg.norm(stack_forward(R, t[:, None] * x) / t[:, None] - x, axis=1)
    H_size = np.linalg.norm(stack_forward(H, t[:, None] * x) / t[:, None], axis=1)
    return [{"activation": name, "L": L, "t": float(ti), "‖R(tx)/t − x‖": float(r),
             "‖H(tx)/t‖": float(h), "‖x‖": float(np.linalg.norm(x))}
            for ti, r, h in zip(t, R_gap, H_size, strict=True)]


def _limits_agree(rows: Sequence[dict[str, object]]) -> bool:
    """At the smallest t, R(tx)/t is within 10⁻³‖x‖ of x and H(tx)/t within 10⁻³‖x‖ of 0."""
    last = rows[-1]
    xn = _num(last["‖x‖"])
    return (_num(last["‖R(tx)/t − x‖"]) < 1e-3 * xn
            and _num(last["‖H(tx)/t‖"]) < 1e-3 * xn)


def _depth_figure(rows: Sequence[dict[str, object]], title: str, rate: str
                  ) -> dict[str, object]:
    """The figure of :func:`_stack_limits` rows: one panel per activation, ``rate`` saying how
    fast H(tx)/t falls."""
    series = []
    for name in dict.fromkeys(str(r["activation"]) for r in rows):
        part = [r for r in rows if r["activation"] == name]
        series.append(_series("‖R(tx)/t − x‖ (residual stack)", TS,
                              [r["‖R(tx)/t − x‖"] for r in part], panel=name))
        series.append(_series("‖H(tx)/t‖ (residual-free stack)", TS,
                              [r["‖H(tx)/t‖"] for r in part], panel=name))
    return {"title": title, "xlabel": "t", "ylabel": "norm", "xscale": "log", "yscale": "log",
            "series": series,
            "caption": "Look for: both curves fall to 0 as t → 0⁺, but they say opposite things. "
                       "R(tx)/t − x → 0 means the residual stack tends to the identity near 0, "
                       f"while H(tx)/t → 0 ({rate}) means the residual-free stack tends to the "
                       "zero map: near 0 they differ by about ‖x‖, so they are not equal. The "
                       "plotted values are the table's, unclipped."}
