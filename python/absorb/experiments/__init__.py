"""Cross-validation experiments: every theorem of the manifest, tested on seeded random instances.

Each experiment takes a :class:`numpy.random.Generator` and returns an :class:`ExperimentResult`:
whether the numbers agree with what the theory predicts, an evidence table (a list of row dicts),
optionally the data of a figure, and whether the experiment is a *control* (a hypothesis is
dropped and the conclusion is shown to fail or the argument to break) or an exploration of an
*open* question (no theorem is claimed; ``agrees`` then says whether the numbers behave as the
report's text describes).

Sizes are small on purpose: the whole registry runs in well under a minute on two cores, so the
report (:mod:`absorb.report`) stays a few-minutes command.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from absorb.errors import AbsorbError
from absorb.experiments.base import Experiment, ExperimentResult
from absorb.experiments.index_sets import EXPERIMENTS_INDEX_SETS
from absorb.experiments.scaling import EXPERIMENTS_SCALING

__all__ = ["EXPERIMENTS", "Experiment", "ExperimentResult", "experiment_rng", "run_experiment"]

#: Every experiment, by name. A new family of experiments lives in a module of its own and
#: adds its tuple here.
EXPERIMENTS: Mapping[str, Experiment] = MappingProxyType({
    fn.__name__: fn for fn in (*EXPERIMENTS_SCALING, *EXPERIMENTS_INDEX_SETS)
})


def run_experiment(name: str, seed: int = 0) -> ExperimentResult:
    """Run one registered experiment with its own generator, seeded from ``seed`` and the
    experiment's name (so adding or reordering experiments leaves the others unchanged)."""
    try:
        fn = EXPERIMENTS[name]
    except KeyError:
        raise AbsorbError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}") from None
    return fn(experiment_rng(name, seed))


def experiment_rng(name: str, seed: int) -> np.random.Generator:
    """The generator of experiment ``name`` under ``seed``: independent streams per name."""
    key = [int(b) for b in name.encode("utf-8")]
    return np.random.default_rng(np.random.SeedSequence([seed, *key]))
