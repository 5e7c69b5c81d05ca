"""Cross-validation experiments: every theorem of the manifest, tested on seeded random instances.

Each experiment takes a :class:`numpy.random.Generator` and returns an :class:`ExperimentResult`:
whether the numbers agree with what the theory predicts, an evidence table (a list of row dicts),
optionally the data of a figure, and whether the experiment is a *control* (a hypothesis is
dropped and the conclusion is shown to fail or the argument to break) or an exploration of an
*open* question (no theorem is claimed; ``agrees`` then says whether the numbers behave as the
report's text describes).

The experiments are grouped by theorem: ``absorb.experiments.<theorem ID>`` holds exactly the
experiments the manifest (:mod:`absorb.manifest`) files under that ID, its controls and open
explorations included; :mod:`absorb.experiments.base` holds the result type, the thresholds
and the instance builders the modules share.

Sizes are small on purpose: the whole registry runs in well under a minute on two cores, so the
report (:mod:`absorb.report`) stays a few-minutes command.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from types import MappingProxyType

import numpy as np

from absorb.errors import AbsorbError
from absorb.experiments import (
    bias_blowup,
    bounded,
    degree,
    depth_degree,
    depth_injective,
    depth_kink_rays,
    depth_linearization,
    depth_narrow,
    depth_two_kinks,
    generic_measure_zero,
    index_set_necessary,
    index_set_sufficient,
    linearization,
    odd_part,
    reduction,
    relaxation_certificate,
)
from absorb.experiments.base import STATUSES, Experiment, ExperimentResult
from absorb.manifest import THEOREMS

__all__ = ["BY_THEOREM", "EXPERIMENTS", "POSITIVE_CONTROLS", "STATUSES", "Experiment",
           "ExperimentResult", "check_registry", "experiment_rng", "registry_gaps",
           "run_experiment"]

#: The experiments of each theorem, keyed by the name of their module: the module
#: ``absorb.experiments.<theorem ID>`` holds, in its tuple ``EXPERIMENTS``, exactly the
#: experiments that the manifest files under that ID (a theorem's controls live with it), so
#: manifest → module → report is one hop. :func:`check_registry` holds the two together.
BY_THEOREM: Mapping[str, tuple[Experiment, ...]] = MappingProxyType({
    module.__name__.rpartition(".")[2]: module.EXPERIMENTS
    for module in (reduction, degree, linearization, bounded, depth_degree, depth_linearization,
                   depth_narrow, depth_injective, depth_two_kinks, depth_kink_rays, odd_part,
                   index_set_sufficient, index_set_necessary,
                   generic_measure_zero, relaxation_certificate, bias_blowup)
})

#: Every experiment, by name.
EXPERIMENTS: Mapping[str, Experiment] = MappingProxyType({
    fn.__name__: fn for fns in BY_THEOREM.values() for fn in fns
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


def registry_gaps(by_theorem: Mapping[str, Collection[Experiment]] | None = None) -> list[str]:
    """What the experiment modules lack against the manifest, one entry a gap: a theorem with no
    module named by its ID, a module named by no theorem ID, and per theorem the experiments
    the manifest files under it that its module does not hold, and the other way round.

    ``by_theorem`` defaults to :data:`BY_THEOREM`.
    """
    modules = BY_THEOREM if by_theorem is None else by_theorem
    gaps = [f"absorb.experiments.{tid} is the module of no theorem ID" for tid in modules
            if tid not in {thm.id for thm in THEOREMS}]
    for thm in THEOREMS:
        if thm.id not in modules:
            gaps.append(f"theorem {thm.id!r} has no module python/absorb/experiments/{thm.id}.py "
                        "in BY_THEOREM")
            continue
        held = [fn.__name__ for fn in modules[thm.id]]
        missing = [name for name in thm.experiments if name not in held]
        extra = [name for name in held if name not in thm.experiments]
        if missing:
            gaps.append(f"theorem {thm.id!r}: the manifest files {missing} under it, but "
                        f"absorb.experiments.{thm.id}.EXPERIMENTS does not hold them")
        if extra:
            gaps.append(f"theorem {thm.id!r}: absorb.experiments.{thm.id}.EXPERIMENTS holds "
                        f"{extra}, which the manifest does not file under it")
    return gaps


def check_registry(registered: Collection[str] | None = None) -> None:
    """The registry checks itself against the manifest: every experiment the manifest names is
    registered, every registered one is named, every positive control is registered, and each
    theorem's module holds exactly the experiments filed under it (:func:`registry_gaps`).

    ``registered`` defaults to the keys of :data:`EXPERIMENTS`.
    """
    names = set(EXPERIMENTS if registered is None else registered)
    unknown = sorted(set(_FILED_UNDER) - names)
    unused = sorted(names - set(_FILED_UNDER))
    controls = sorted(c for c in POSITIVE_CONTROLS.values() if c not in names)
    gaps = registry_gaps()
    if unknown or unused or controls or gaps:
        raise AbsorbError(f"manifest experiments not registered: {unknown}; registered but "
                          f"unused: {unused}; positive controls not registered: {controls}; "
                          f"modules: {'; '.join(gaps) or 'as filed'}")


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
