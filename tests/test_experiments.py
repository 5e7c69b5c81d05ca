"""Every cross-validation experiment, on two seeds (0 and 5): it agrees with the theory, belongs
to the theorem the manifest files it under, controls/open explorations are labeled, the positive
controls hold at every seed, and captions state their data's numbers. (Determinism under the
seed: test_report compares its report's run with this module's seed-0 run.)"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from absorb import experiments
from absorb.errors import AbsorbError
from absorb.manifest import THEOREM_IDS, THEOREMS, get_theorem

FILED_UNDER = {name: thm.id for thm in THEOREMS for name in thm.experiments}

#: Experiments whose agreement rests on a search recovering planted (absorbable) instances:
#: the positive controls of the numerical fits, and the open explorations that fit planted
#: stacks beside generic ones (their `agrees` says every planted control was recovered).
SEARCH_CONTROLS = ("degree_fit_control_in_class", "index_set_necessary_search",
                   "depth_open_relu_gelu", "deep_open_fits")
#: Seeds of the controls in CI: at 4 and 5 a control of each search failed before the search
#: got unit re-draws and layer-wise starts (the stack fits at 4, the ReGLU degree control at 5);
#: 0 and 5 reuse the full registry's runs, so only seed 4 costs extra (≈ 13 s CPU). All of
#: 0–19 with ABSORB_ALL_SEEDS=1 (≈ 4.5 min CPU).
CI_SEEDS = (0, 4, 5)
CONTROL_SEEDS = range(20) if os.environ.get("ABSORB_ALL_SEEDS") else CI_SEEDS


@pytest.fixture(scope="module")
def seed0(experiments_seed0: dict[str, experiments.ExperimentResult]
          ) -> dict[str, experiments.ExperimentResult]:
    """The session's seed-0 run (tests/conftest.py); test_report reruns every experiment at
    seed 0 in its report and checks that the numbers are the same (determinism)."""
    return experiments_seed0


@functools.cache
def _run(name: str, seed: int) -> experiments.ExperimentResult:
    """One run per (experiment, seed) in this module: the agreement test at seed 5 and the
    controls test at seed 5 share it."""
    return experiments.run_experiment(name, seed)


#: The second seed of the full registry: 5, where the ReGLU degree control failed before.
SECOND_SEED = 5


@pytest.mark.parametrize("seed", [0, SECOND_SEED])
@pytest.mark.parametrize("name", sorted(experiments.EXPERIMENTS))
def test_experiment_agrees_with_the_theory(
    name: str, seed: int, seed0: dict[str, experiments.ExperimentResult]
) -> None:
    result = seed0[name] if seed == 0 else _run(name, seed)
    assert result.name == name
    assert result.theorem_id == FILED_UNDER[name]
    assert result.table, "an experiment shows its evidence"
    assert result.agrees, json.dumps(result.to_json()["table"], default=str)[:2000]
    if result.figure is not None:
        for series in result.figure["series"]:  # type: ignore[attr-defined]
            assert len(series["x"]) == len(series["y"]) > 1


def test_streams_differ_between_seeds_and_names() -> None:
    draw = [experiments.experiment_rng(n, s).standard_normal(3)
            for n, s in (("a", 0), ("a", 1), ("b", 0))]
    assert not np.allclose(draw[0], draw[1]) and not np.allclose(draw[0], draw[2])


def test_controls_and_open_explorations_are_labeled(
    seed0: dict[str, experiments.ExperimentResult],
) -> None:
    for name in experiments.EXPERIMENTS:
        r = seed0[name]
        assert r.control == ("control" in name), name
        if r.open:
            assert "open" in r.description.lower() and "open" in r.summary.lower()
            assert not r.control and r.status in ("open", "error")
    assert seed0["depth_open_relu_gelu"].open


def _sizes(result: experiments.ExperimentResult) -> set[tuple[object, object]]:
    return {(row["d"], row["n"]) for row in result.table if "d" in row and "n" in row}


def test_negative_results_name_an_agreeing_positive_control_of_the_same_size(
    seed0: dict[str, experiments.ExperimentResult],
) -> None:
    """Every negative result (nothing found) names a registered positive control that agrees,
    is no open exploration, and covers the negative result's sizes where both tables say."""
    negatives = {n: r.positive_control for n, r in seed0.items() if r.positive_control}
    assert set(experiments.POSITIVE_CONTROLS) <= set(negatives)
    for name, control in negatives.items():
        assert control in experiments.EXPERIMENTS, (name, control)
        c = seed0[str(control)]
        assert not c.open and c.status in ("agrees", "disagrees"), (name, control)
        assert c.status == "agrees", (name, control, c.table)
        assert _sizes(seed0[name]) <= _sizes(c) or not _sizes(c), (name, control)


def test_a_crashing_experiment_is_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real crash (the index-set search fails inside an experiment) gives status `error`
    with the one-line cause, never `disagrees`."""
    from absorb import certificates

    def broken(*args: object, **kwargs: object) -> object:
        raise np.linalg.LinAlgError("SVD did not converge\nsecond line")

    monkeypatch.setattr(certificates, "find_index_set", broken)
    r = experiments.run_experiment("generic_random_draws", 0)
    assert r.status == "error" and r.error == "LinAlgError: SVD did not converge"
    assert r.to_json()["status"] == "error" and r.theorem_id == "generic_measure_zero"


def test_every_theorem_has_a_non_control_experiment(
    seed0: dict[str, experiments.ExperimentResult],
) -> None:
    for thm in THEOREMS:
        kinds = [seed0[n] for n in thm.experiments]
        assert any(not r.control and not r.open for r in kinds), thm.id


@pytest.mark.parametrize("tid", THEOREM_IDS)
def test_each_theorem_module_holds_exactly_its_manifest_experiments(tid: str) -> None:
    """manifest → experiment is one hop: the module absorb.experiments.<ID> holds, in its tuple
    EXPERIMENTS, exactly the experiments the manifest files under <ID>, and the registry
    reads that tuple."""
    guide = '(CONTRIBUTING.md, "Add an experiment")'
    try:
        module = importlib.import_module(f"absorb.experiments.{tid}")
    except ModuleNotFoundError:
        pytest.fail(f"theorem {tid!r} has no module python/absorb/experiments/{tid}.py {guide}")
    held = [fn.__name__ for fn in getattr(module, "EXPERIMENTS", ())]
    filed = get_theorem(tid).experiments
    missing = [name for name in filed if name not in held]
    extra = [name for name in held if name not in filed]
    assert not missing, f"absorb.experiments.{tid}.EXPERIMENTS lacks {missing}, which the " \
                        f"manifest files under {tid!r} {guide}"
    assert not extra, f"absorb.experiments.{tid}.EXPERIMENTS holds {extra}, which the " \
                      f"manifest does not file under {tid!r} {guide}"
    assert experiments.BY_THEOREM[tid] is module.EXPERIMENTS, \
        f"the registry does not read absorb.experiments.{tid} {guide}"


def test_the_experiment_modules_are_the_theorem_ids() -> None:
    """Besides the shared base, every module under experiments/ is a theorem's."""
    here = Path(experiments.__file__).parent
    modules = {p.stem for p in here.glob("*.py")} - {"__init__", "base"}
    assert modules == set(THEOREM_IDS), sorted(modules ^ set(THEOREM_IDS))


def test_registry_gaps_name_the_missing_piece() -> None:
    """The registry's own check can fail, and names what is missing or stray."""
    assert experiments.registry_gaps() == []
    by = dict(experiments.BY_THEOREM)
    del by["odd_part"]
    by["degree"] = by["degree"][1:]
    by["linearization"] = (*by["linearization"], experiments.EXPERIMENTS["odd_part_catalog"])
    by["stray"] = ()
    gaps = " | ".join(experiments.registry_gaps(by))
    for piece in ("python/absorb/experiments/odd_part.py", "['degree_scaling_witness']",
                  "absorb.experiments.linearization.EXPERIMENTS holds ['odd_part_catalog']",
                  "absorb.experiments.stray is the module of no theorem ID"):
        assert piece in gaps, gaps


def test_unknown_experiment_is_bad_input() -> None:
    with pytest.raises(AbsorbError, match="unknown experiment"):
        experiments.run_experiment("nope")


def test_degree_witness_numbers_are_the_theorem() -> None:
    """The table of the degree experiment reproduces (2 − 2^k)Ax: re-derive one row."""
    r = experiments.degree.degree_scaling_witness(np.random.default_rng(3))
    for row in r.table:
        assert row["k"] == 2.0
        assert row["discrepancy to (2 − 2^k)Ax"] < 1e-9 * row["‖f(2x) − 2^k f(x)‖"]  # type: ignore[operator]


def _controls() -> list[str]:
    """Every experiment that is a control or names one, and the search controls."""
    named = set(experiments.POSITIVE_CONTROLS.values())
    return sorted(named | set(SEARCH_CONTROLS) | {
        "deep_narrow_control_planted", "dual_certificate_control_planted",
        "generic_control_planted"})


@pytest.mark.parametrize("seed", CONTROL_SEEDS)
@pytest.mark.parametrize("name", _controls())
def test_positive_controls_hold_at_every_seed(
    name: str, seed: int, seed0: dict[str, experiments.ExperimentResult]
) -> None:
    """A negative result is worth something only where its positive control is recovered:
    every control holds at seeds 0–19 (CI runs CI_SEEDS; ABSORB_ALL_SEEDS=1 runs all 20).
    Seeds 0 and SECOND_SEED reuse the full registry's runs."""
    result = seed0[name] if seed == 0 else _run(name, seed)
    assert result.status != "error", result.error
    assert result.agrees, (name, seed, json.dumps(result.table, default=str)[:1500])


def _count(caption: str, label: str) -> list[tuple[int, int]]:
    """The "k of m" pairs of ``caption`` that follow ``label``."""
    return [(int(k), int(m)) for k, m in re.findall(rf"{re.escape(label)}: (\d+) of (\d+)",
                                                     caption)]


def test_captions_state_the_numbers_of_their_data(
    seed0: dict[str, experiments.ExperimentResult],
) -> None:
    """Every number a generated caption claims is recomputed from the plotted series and the
    table: restarts at or below the threshold, block and stack counts, bounds and floors."""
    r = seed0["index_set_necessary_search"]
    assert r.figure is not None
    caption = str(r.figure["caption"])
    series = {str(s["label"]): s["y"] for s in r.figure["series"]}  # type: ignore[attr-defined]
    for name in ("relu", "gelu"):
        planted, generic = _count(caption, name)
        for (k, m), kind in ((planted, "planted"), (generic, "generic")):
            label = f"{name}, {kind}: ≤ 1e-08 in {k}/{m} restarts"  # the legend states it too
            ys = series[label]
            assert (k, m) == (sum(y <= 1e-8 for y in ys), len(ys)), (name, kind)
            row = next(t for t in r.table if t["activation"] == name
                       and t["planted S"] == (kind == "planted"))
            assert row["restarts ≤ 1e-08"] == f"{k}/{m}"

    r = seed0["deep_narrow_certified"]
    assert r.figure is not None
    caption = str(r.figure["caption"])
    methods = [m for t in r.table for m in str(t["methods"]).split(", ")]
    plotted = {str(s["label"]): s["y"] for s in r.figure["series"]}  # type: ignore[attr-defined]
    assert f"{len(methods)} blocks in {len(r.table)} stacks" in caption
    assert f"{methods.count('enumeration')} certified by enumerating" in caption
    assert f"{methods.count('norm_bound')} by the norm bound" in caption
    assert sum(len(v) for v in plotted.values()) == len(methods)  # one marker per block
    assert {t["activation"] for t in r.table} >= {"gelu", "silu"}  # both biased instances
    low = min(float(str(t["smallest |det| lower bound"])) for t in r.table)
    assert f"smallest: {low:.3g}" in caption and low > 0
    assert min(y for v in plotted.values() for y in v) == pytest.approx(low, rel=1e-2)
    assert r.figure["xticks"] == list(range(len(r.table)))

    r = seed0["deep_open_jacobian_rank"]
    assert r.figure is not None
    caption = str(r.figure["caption"])
    above = sum(bool(t["rank J_R > bound"]) for t in r.table)
    assert f"above the bound for residual-free H in {above} of {len(r.table)} draws" in caption
    draws = next(s for s in r.figure["series"]  # type: ignore[attr-defined]
                 if s["label"].startswith("rank of R") and s["label"].endswith("each draw"))
    assert sorted(draws["y"]) == sorted(float(str(t["rank J_R"])) for t in r.table)
    assert any("mean" in s["label"] for s in r.figure["series"])  # type: ignore[attr-defined]

    r = seed0["degree_best_fit"]
    assert r.figure is not None
    floor = min(float(str(t["rel. error @ 0.01"])) for t in r.table if t["activation"] != "relu")
    assert f"at least {floor:.2g}" in str(r.figure["caption"])


def test_figures_draw_independent_instances_as_points(
    seed0: dict[str, experiments.ExperimentResult],
) -> None:
    """Restarts, draws and stacks are independent: no line joins them."""
    for name in ("index_set_necessary_search", "deep_narrow_certified",
                 "deep_open_jacobian_rank", "degree_best_fit"):
        figure = seed0[name].figure
        assert figure is not None
        assert all(s.get("style") == "markers" for s in figure["series"]), name  # type: ignore[attr-defined]
        assert "xticks" in figure, name
