"""The ``odd_part`` lemma: σ(z) − σ(−z) = z exactly for the odd-part-linear entries of the catalog,
and not for the others (controls)."""

from __future__ import annotations

import numpy as np

from absorb.activations import CATALOG
from absorb.experiments.base import EXACT_TOL, Experiment, ExperimentResult, _series


def odd_part_catalog(rng: np.random.Generator) -> ExperimentResult:
    """max_z |σ(z) − σ(−z) − z| on a grid in [−20, 20] (plus random points) for the catalog.

    The ungated entries and the gates of the gated ones; the flag ``odd_part_linear`` of the
    catalog must agree with the numbers (tanh, ReLU², sigmoid and the identity are controls).
    """
    z = np.concatenate([np.linspace(-20, 20, 4001), 20 * rng.standard_normal(256)])
    rows: list[dict[str, object]] = []
    series: list[dict[str, object]] = []
    zz = np.linspace(-4, 4, 161)
    for act in CATALOG.values():
        if act.gated:
            continue
        err = float(np.max(np.abs(act(z) - act(-z) - z)))
        rows.append({"activation": act.name, "catalog: odd-part-linear": act.odd_part_linear,
                     "max |σ(z) − σ(−z) − z|": err,
                     "agree": (err < EXACT_TOL) == act.odd_part_linear})
        panel = ("odd-part-linear: 0 up to round-off" if act.odd_part_linear
                 else "not odd-part-linear (controls)")
        series.append(_series(act.name, zz, act(zz) - act(-zz) - zz, panel=panel))
    figure: dict[str, object] = {
        "title": "σ(z) − σ(−z) − z (zero for odd-part-linear σ)", "xlabel": "z",
        "ylabel": "σ(z) − σ(−z) − z", "xscale": "linear", "yscale": "linear",
        "series": series,
        "caption": "Look for: on the left, every odd-part-linear activation gives the flat line "
                   "0 (the curves lie on top of each other; their markers are staggered so each "
                   "one shows); on the right, the controls leave 0, so σ(z) − σ(−z) = z fails "
                   "for them."}
    return ExperimentResult(
        "odd_part_catalog", "odd_part",
        "Odd part of every ungated catalog activation: z/2 exactly for ReLU, GELU, GELU-tanh, "
        "SiLU; not for tanh, ReLU², sigmoid (controls).",
        all(bool(r["agree"]) for r in rows), rows, figure,
        summary=f"{sum(bool(r['agree']) for r in rows)}/{len(rows)} activations match the catalog",
    )


#: The experiments the manifest files under ``odd_part``, in its order.
EXPERIMENTS: tuple[Experiment, ...] = (
    odd_part_catalog,
)
