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

from collections.abc import Collection, Mapping
from dataclasses import replace
from types import MappingProxyType

import numpy as np

from absorb.errors import AbsorbError
from absorb.experiments.base import STATUSES, Experiment, ExperimentResult
from absorb.experiments.bounded import EXPERIMENTS_BOUNDED
from absorb.experiments.certificates import EXPERIMENTS_CERTIFICATES
from absorb.experiments.controls import EXPERIMENTS_CONTROLS
from absorb.experiments.deep import EXPERIMENTS_DEEP
from absorb.experiments.index_sets import EXPERIMENTS_INDEX_SETS
from absorb.experiments.scaling import EXPERIMENTS_SCALING
from absorb.experiments.search import EXPERIMENTS_SEARCH
from absorb.manifest import THEOREMS

__all__ = ["EXPERIMENTS", "POSITIVE_CONTROLS", "STATUSES", "Experiment", "ExperimentResult",
           "check_registry", "experiment_rng", "run_experiment"]

#: Every experiment, by name. A new family of experiments lives in a module of its own and
#: adds its tuple here.
EXPERIMENTS: Mapping[str, Experiment] = MappingProxyType({
    fn.__name__: fn for fn in (*EXPERIMENTS_SCALING, *EXPERIMENTS_INDEX_SETS,
                               *EXPERIMENTS_CONTROLS, *EXPERIMENTS_DEEP,
                               *EXPERIMENTS_CERTIFICATES, *EXPERIMENTS_SEARCH,
                               *EXPERIMENTS_BOUNDED)
})

#: Negative results (the search found nothing, no index set, fraction 0) and the experiment of
#: the same size that the same code gets right; an experiment may also name its control itself
#: through ``ExperimentResult.positive_control``.  A negative result that carries its planted
#: rows in its own table names itself.
POSITIVE_CONTROLS: Mapping[str, str] = MappingProxyType({
    "degree_best_fit": "degree_fit_control_in_class",
    "index_set_necessary_search": "index_set_necessary_search",
    "generic_random_draws": "generic_control_planted",
    "relaxation_generic_vs_planted": "relaxation_generic_vs_planted",
})

_FILED_UNDER: Mapping[str, str] = {name: thm.id for thm in THEOREMS for name in thm.experiments}


def check_registry(registered: Collection[str] | None = None) -> None:
    """The registry checks itself against the manifest: every experiment the manifest names is
    registered, every registered one is named, and every positive control is registered.

    ``registered`` defaults to the keys of :data:`EXPERIMENTS`.
    """
    names = set(EXPERIMENTS if registered is None else registered)
    unknown = sorted(set(_FILED_UNDER) - names)
    unused = sorted(names - set(_FILED_UNDER))
    controls = sorted(c for c in POSITIVE_CONTROLS.values() if c not in names)
    if unknown or unused or controls:
        raise AbsorbError(f"manifest experiments not registered: {unknown}; registered but "
                          f"unused: {unused}; positive controls not registered: {controls}")


def run_experiment(name: str, seed: int = 0) -> ExperimentResult:
    """Run one registered experiment with its own generator, seeded from ``seed`` and the
    experiment's name (so adding or reordering experiments leaves the others unchanged).

    An exception inside the experiment becomes a result with status ``error`` carrying its
    one-line cause: a crash is never counted as a disagreement, nor hidden.
    """
    try:
        fn = EXPERIMENTS[name]
    except KeyError:
        raise AbsorbError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}") from None
    theorem_id = _FILED_UNDER.get(name, "")
    try:
        result = fn(experiment_rng(name, seed))
    except Exception as exc:  # any crash is the evidence state `error`, shown with its cause
        return ExperimentResult.crashed(name, theorem_id, exc)
    if result.positive_control is None and name in POSITIVE_CONTROLS:
        result = replace(result, positive_control=POSITIVE_CONTROLS[name])
    return result


def experiment_rng(name: str, seed: int) -> np.random.Generator:
    """The generator of experiment ``name`` under ``seed``: independent streams per name."""
    key = [int(b) for b in name.encode("utf-8")]
    return np.random.default_rng(np.random.SeedSequence([seed, *key]))
