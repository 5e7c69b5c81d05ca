"""absorb benchmarks: every figure next to its comparison, measured in one run.

    python benchmarks/run.py                    # full run: tables on stdout, markdown in $TMPDIR
    python benchmarks/run.py --quick            # smaller sizes (a minute or so)
    python benchmarks/run.py --out FILE.md      # the markdown where you want it
    python benchmarks/run.py --update-results   # replace the committed benchmarks/results.md

1. exact index-set search: time against n, meet-in-the-middle and HiGHS milp against brute
   force over all 2^n subsets (where brute force is feasible), planted and generic instances;
2. relaxation certificate: Gram form against naive least squares on the explicit d²×n matrix,
   the Gram form at d = 1024, n = 4096 (the explicit matrix would take d²·n·8 bytes), and the
   rank-deficient path beside the Gram builds and eigendecomposition it no longer repeats;
3. fit engine: FLOP/s of one full-batch Adam step against numpy.matmul FLOP/s at the same
   shapes, float64 and float32, and against the same fit in PyTorch when it is installed;
4. peak memory of each section (tracemalloc: numpy's allocations are traced) and of the run;
5.–7. LLM-scale inspect, the counterexample search, and exactness at float speed (the exact
   index-set search and exact check against float work: benchmarks/exact_bench.py);
8. exact stack decisions (d = 2, 3, 4) against their predicted cost (benchmarks/stack_bench.py);
9. whole planted and random layers beside their prediction and GEMM bound, scan plans
   against their runs, the exact check against a GEMM (benchmarks/layer_bench.py).

``--only bench_layers,bench_exact`` runs the named sections alone.

Timings are the minimum over repeats (the least-disturbed run on a shared machine).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from absorb.activations import get_activation
from absorb.atomic_files import write_atomic
from absorb.blocks import random_block
from absorb.certificates import brute_force_index_set, find_index_set, gram, relaxation
from absorb.certificates.real_relaxation import eigenpairs
from absorb.fits import AdamFit
from absorb.fits.units import unit_function
from exact_bench import bench_exact  # section 7, exactness at float speed (exact_bench.py)
from layer_bench import bench_layers  # section 9, whole layers at GEMM speed (layer_bench.py)
from scale_bench import bench_scale  # section 5, LLM-scale inspect (benchmarks/scale_bench.py)
from search_bench import bench_search  # section 6, search (benchmarks/search_bench.py)
from stack_bench import stack_table  # section 8, exact stack decisions (stack_bench.py)
from tables import Table  # the result table every section returns (benchmarks/tables.py)

HERE = Path(__file__).resolve().parent
#: The committed results; rewritten only with --update-results.
RESULTS = HERE / "results.md"
TITLE = "# absorb benchmarks"


def best_time(fn: Callable[[], object], repeats: int = 3, inner: int = 1) -> float:
    """Minimum over ``repeats`` of the mean time of ``inner`` calls (one warm-up call first)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
    return min(times)


def once(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def traced(fn: Callable[[], Table]) -> tuple[Table, float]:
    """Run a section under tracemalloc; returns its table and peak traced MiB."""
    tracemalloc.start()
    table = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return table, peak / 2**20


# ---------------------------------------------------------------------------------------------
# 1. index-set search


def planted(rng: np.random.Generator, d: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    W_up, W_down = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    S = np.sort(rng.choice(n, size=k, replace=False))
    T, rest = S[:d], S[d:]
    W_down[:, T] = (-np.eye(d) - W_down[:, rest] @ W_up[rest]) @ np.linalg.inv(W_up[T])
    return W_up, W_down


def bench_index_set(quick: bool) -> Table:
    ns = [8, 12, 16, 20, 24] if quick else [8, 12, 16, 20, 24, 28, 32, 36, 40]
    brute_max = 16 if quick else 22
    milp_max = 24 if quick else 36
    table = Table(
        "Exact index-set search, d = 2 (time in s; ratio = brute force / meet-in-the-middle)",
        ["n", "instance", "status", "meet-in-the-middle", "milp", "brute force", "ratio"],
    )
    rng = np.random.default_rng(0)
    for n in ns:
        for kind in ("planted", "generic"):
            if kind == "planted":
                W_up, W_down = planted(rng, 2, n, max(3, n // 4))
            else:
                W_up, W_down = rng.standard_normal((n, 2)), rng.standard_normal((2, n))
            t_mitm, res = once(partial(find_index_set, W_up, W_down, method="meet-in-the-middle"))
            t_milp, res_m = (
                once(partial(find_index_set, W_up, W_down, method="milp"))
                if n <= milp_max
                else (float("nan"), None)
            )
            decisive = res_m is not None and res_m.status != "limit"
            if decisive and res_m is not None and res_m.status != res.status:
                raise AssertionError(f"milp and meet-in-the-middle disagree at n={n}")
            milp_cell = "—" if res_m is None else f"{t_milp:.3g}" + ("" if decisive else " (limit)")
            if n <= brute_max:
                t_brute, S = once(partial(brute_force_index_set, W_up, W_down))
                if (S is None) != (res.status == "none"):
                    raise AssertionError(f"brute force disagrees at n={n}")
                brute, ratio = f"{t_brute:.3g}", f"{t_brute / t_mitm:.3g}"
            else:
                # 2^n subset sums of d² = 4 doubles: extrapolate from the largest measured n
                brute, ratio = "—", "—"
            table.rows.append(
                [
                    str(n),
                    kind,
                    res.status,
                    f"{t_mitm:.3g}",
                    milp_cell,
                    brute,
                    ratio,
                ]
            )
    for row in table.rows:
        if row[0] == str(ns[-1]):
            table.notes.append(f"target (issue 5): n = {ns[-1]}, {row[1]}: {row[2]} in {row[3]} s")
    table.notes.append(
        "meet-in-the-middle: 2·2^(n/2) subset sums of the rank-4 reduced system, keys on a "
        "random projection, every key match confirmed; milp: scipy HiGHS, binary s"
    )
    table.notes.append("brute force: all 2^n subset sums of vec(a_i b_iᵀ) by doubling (vectorized)")
    return table


# ---------------------------------------------------------------------------------------------
# 2. relaxation certificate


def naive_relaxation(W_up: np.ndarray, W_down: np.ndarray) -> float:
    n, d = W_up.shape
    K = (W_down.T[:, :, None] * W_up[:, None, :]).reshape(n, d * d).T  # d²×n, explicit
    s, *_ = np.linalg.lstsq(K, -np.eye(d).ravel(), rcond=None)
    r = K @ s + np.eye(d).ravel()
    return float(r @ r)


def bench_relaxation(quick: bool) -> Table:
    table = Table(
        "Relaxation certificate r² (time in s)",
        [
            "d",
            "n",
            "Gram form",
            "naive lstsq on d²×n",
            "ratio",
            "r² Gram",
            "r² naive",
            "explicit matrix",
        ],
    )
    rng = np.random.default_rng(1)
    sizes = [(16, 64), (32, 128)] if quick else [(16, 64), (32, 128), (64, 256)]
    for d, n in sizes:
        W_up = rng.standard_normal((n, d)) / np.sqrt(d)
        W_down = rng.standard_normal((d, n)) / np.sqrt(n)
        t_g = best_time(partial(relaxation, W_up, W_down))
        t_n = best_time(partial(naive_relaxation, W_up, W_down), repeats=1)
        rg, rn = relaxation(W_up, W_down).residual, naive_relaxation(W_up, W_down)
        table.rows.append(
            [
                str(d),
                str(n),
                f"{t_g:.3g}",
                f"{t_n:.3g}",
                f"{t_n / t_g:.3g}",
                f"{rg:.6g}",
                f"{rn:.6g}",
                f"{d * d * n * 8 / 2**20:.0f} MiB",
            ]
        )
    big = (512, 2048) if quick else (1024, 4096)
    d, n = big
    W_up = rng.standard_normal((n, d)) / np.sqrt(d)
    W_down = rng.standard_normal((d, n)) / np.sqrt(n)
    t_big, rel = once(lambda: relaxation(W_up, W_down))
    table.rows.append(
        [
            str(d),
            str(n),
            f"{t_big:.3g}",
            "not run",
            "—",
            f"{rel.residual:.6g}",
            "—",
            f"{d * d * n * 8 / 2**30:.0f} GiB",
        ]
    )
    table.notes.append(f"target (issue 5): d = {d}, n = {n} in a few seconds: {t_big:.2f} s")
    table.notes.append(
        "Gram form: G = (W_downᵀW_down) ⊙ (W_up W_upᵀ), pivoted Cholesky "
        "(LAPACK pstrf), r² from the d×d residual; never forms the d²×n matrix"
    )
    return table


def bench_rank_deficient(quick: bool) -> Table:
    """The rank-deficient relaxation, which builds G once, beside what it used to repeat: two
    more Gram builds when the Cholesky attempt failed (n ≤ d²), one when n > d²; and, where
    r² = 0 sends the index-set search to its reduced coordinates, one more build and eigh."""
    table = Table(
        "Rank-deficient relaxation: G built once (time in s; before = now + the repeated work, "
        "each part timed in this run)",
        ["block", "d", "n", "rank", "Gram build", "eigh", "relaxation now", "before", "ratio",
         "index-set search: reduced coordinates before → now"],
    )
    rng = np.random.default_rng(3)
    n = 768 if quick else 2048
    dup = n // 8
    d_wide, d_narrow = n // 4, int(np.sqrt(n - 1)) - 4
    W_up, W_down = rng.standard_normal((n, d_wide)), rng.standard_normal((d_wide, n))
    W_up[n - dup:], W_down[:, n - dup:] = W_up[:dup], W_down[:, :dup]  # repeated units
    blocks = [(f"{dup} units repeated (n ≤ d², Cholesky fails)", W_up, W_down, 2),
              ("generic, n > d²", rng.standard_normal((n, d_narrow)),
               rng.standard_normal((d_narrow, n)), 1)]
    for name, W_up, W_down, repeated_builds in blocks:
        t_gram = best_time(partial(gram, W_up, W_down), repeats=2)
        G = gram(W_up, W_down)
        t_eig = best_time(partial(eigenpairs, G), repeats=1)
        del G
        t_rel, rel = once(partial(relaxation, W_up, W_down))
        before = t_rel + repeated_builds * t_gram
        search = (f"{t_gram + t_eig:.3g} → 0" if rel.is_zero
                  else "not reached (r² > 0 decides)")
        table.rows.append([name, str(W_up.shape[1]), str(n), str(rel.rank), f"{t_gram:.3g}",
                           f"{t_eig:.3g}", f"{t_rel:.3g}", f"{before:.3g}",
                           f"{before / t_rel:.3g}", search])
    table.notes.append(
        "G's factorizations (potrf, pstrf) overwrite its upper triangle and diagonal only; G is "
        "restored from the lower triangle and a kept diagonal, and the index-set search "
        "reuses G and its eigenpairs (certificates.real_relaxation.FloatSystem)")
    return table


# ---------------------------------------------------------------------------------------------
# 3. fit engine


def torch_step_time(d: int, n: int, m: int, act: str, dtype: str) -> float | None:
    """The same plain fit in PyTorch (autograd + torch.optim.Adam), timed in a subprocess:
    torch's OpenMP threads spin after each parallel region and would slow every numpy
    measurement taken later in this process."""
    import json
    import subprocess

    try:
        out = subprocess.run(
            [sys.executable, __file__, "--torch-worker", json.dumps([d, n, m, act, dtype])],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
    except (subprocess.SubprocessError, OSError):
        return None
    value = json.loads(out.stdout.strip().splitlines()[-1])
    return None if value is None else float(value)


def torch_worker(spec: str) -> None:
    import json

    d, n, m, act, dtype = json.loads(spec)
    try:
        import torch
    except ImportError:
        print("null")
        return
    torch.set_num_threads(os.cpu_count() or 1)
    tdt = torch.float64 if dtype == "float64" else torch.float32
    gen = torch.Generator().manual_seed(0)
    Xt = torch.randn(m, d, generator=gen, dtype=tdt)
    Tt = torch.randn(m, d, generator=gen, dtype=tdt)
    om = torch.full((m, 1), 1.0 / m, dtype=tdt)
    Vu = (torch.randn(n, d, generator=gen, dtype=tdt) / d**0.5).requires_grad_()
    Vd = (torch.randn(d, n, generator=gen, dtype=tdt) / n**0.5).requires_grad_()
    sigma = {"relu": torch.relu, "gelu": torch.nn.functional.gelu}[act]
    opt = torch.optim.Adam([Vu, Vd], lr=1e-4, eps=1e-8)

    def step() -> None:
        opt.zero_grad(set_to_none=False)
        Y = sigma(Xt @ Vu.T) @ Vd.T
        loss = ((Y - Tt) ** 2 * om).sum()
        loss.backward()
        opt.step()

    print(json.dumps(best_time(step, repeats=5, inner=10)))


def bench_fit(quick: bool) -> Table:
    d, n, m = 64, 256, 4096
    table = Table(
        f"Fit engine, one full-batch Adam step, d = {d}, n = width = {n}, {m} samples "
        "(GFLOP/s of matrix work; % = share of numpy.matmul's rate)",
        [
            "dtype",
            "activation",
            "mode",
            "ms/step",
            "GFLOP/s",
            "% of matmul",
            "matmul GFLOP/s",
            "PyTorch ms/step",
            "numpy/PyTorch speed",
        ],
    )
    rng = np.random.default_rng(2)
    acts = ["relu"] if quick else ["relu", "gelu"]
    for dtype in (np.float64, np.float32):
        A = rng.standard_normal((m, d)).astype(dtype)
        B = rng.standard_normal((d, n)).astype(dtype)
        C = np.empty((m, n), dtype)
        for name in acts:
            block = random_block(get_activation(name), d, n, rng)
            X = rng.standard_normal((m, d))
            T = block(X)
            omega = np.full(m, 1.0 / float(np.sum(T * T)))
            params = {
                "V_up": rng.standard_normal((n, d)) / np.sqrt(d),
                "V_down": rng.standard_normal((d, n)) / np.sqrt(n),
            }
            for project in (False, True):
                fit = AdamFit(unit_function(block), X, T, omega, params, dtype, project=project)
                # interleave: the matmul rate is measured right before the step it is compared to
                t_mm = best_time(partial(np.matmul, A, B, out=C), repeats=7, inner=20)
                t_step = best_time(partial(fit.step, 1e-4), repeats=7, inner=10)
                mm_rate = 2 * m * d * n / t_mm / 1e9
                rate = fit.flops_per_step / t_step / 1e9
                t_torch = None if project else torch_step_time(d, n, m, name, np.dtype(dtype).name)
                table.rows.append(
                    [
                        np.dtype(dtype).name,
                        name,
                        "projected" if project else "plain",
                        f"{t_step * 1e3:.2f}",
                        f"{rate:.1f}",
                        f"{100 * rate / mm_rate:.0f} %",
                        f"{mm_rate:.1f}",
                        "—" if t_torch is None else f"{t_torch * 1e3:.2f}",
                        "—" if t_torch is None else f"{t_torch / t_step:.2f}×",
                    ]
                )
    for row in table.rows:
        if row[1] == "relu" and row[2] == "plain":
            table.notes.append(
                f"target (issue 5) ≥ 60 % of matmul and not slower than PyTorch: {row[0]} relu "
                f"plain {row[5]} of matmul, numpy/PyTorch speed {row[8]}"
            )
    table.notes.append(
        "plain: Adam on both layers, 10·m·d·n flops/step; projected: output "
        "layer solved by least squares each step, 8·m·d·n + m·n² + n³/3 flops"
    )
    table.notes.append(
        "PyTorch: the same plain fit with autograd and torch.optim.Adam "
        "(numpy/PyTorch speed > 1 means numpy is faster)"
    )
    return table


# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# 4. whole runs: `absorb report` on defaults, by stage

def bench_report(quick: bool) -> Table:
    """`write_report` end to end, beside its stages timed one by one in the same run."""
    import tempfile

    from absorb.experiments import EXPERIMENTS, run_experiment
    from absorb.lean import audit
    from absorb.report import write_report

    root = HERE.parent
    stages = [("audit of Absorb/", once(lambda: audit(root))[0])]
    stages += [(f"experiment {name}", once(partial(run_experiment, name, 0))[0])
               for name in EXPERIMENTS]
    with tempfile.TemporaryDirectory() as tmp:
        total, _ = once(lambda: write_report(Path(tmp) / "report", seed=0, progress=False))
    timed = sum(t for _, t in stages)
    stages.append(("figures, HTML and files (the rest)", max(total - timed, 0.0)))
    table = Table(
        f"`absorb report` on defaults: {total:.1f} s end to end, by stage",
        ["stage", "s", "share"],
    )
    table.rows = [[name, f"{t:.2f}", f"{100 * t / total:.0f} %"]
                  for name, t in sorted(stages, key=lambda st: -st[1])]
    table.notes.append("stages timed separately in the same process; the rest = total − stages")
    return table


#: Every section, in the order of results.md.
SECTIONS: tuple[Callable[[bool], Any], ...] = (
    bench_index_set, bench_relaxation, bench_rank_deficient, bench_fit, bench_report,
    bench_scale, bench_search, bench_exact, stack_table, bench_layers)


#: Sections run without tracemalloc: they time scans in this process, whose every allocation
#: tracing would slow.
UNTRACED: tuple[Callable[[bool], Any], ...] = (bench_layers,)


def environment() -> list[str]:
    lines = [
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"{os.cpu_count()} CPUs, {platform.machine()}"
    ]
    try:
        from threadpoolctl import threadpool_info  # type: ignore[import-untyped]

        for info in threadpool_info():
            lines.append(
                f"BLAS: {info.get('internal_api')} {info.get('version')}, kernel "
                f"{info.get('architecture')}, {info.get('num_threads')} threads"
            )
    except ImportError:
        lines.append("BLAS: threadpoolctl not installed")
    lines.append(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    try:
        lines.append(f"torch {importlib.metadata.version('torch')} (timed in a subprocess)")
    except importlib.metadata.PackageNotFoundError:
        lines.append("torch not installed (PyTorch column skipped)")
    lines.append(f"load average at start: {os.getloadavg()[0]:.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--torch-worker", help=argparse.SUPPRESS)
    ap.add_argument("--only", metavar="NAMES", help="comma-separated sections to run "
                    f"(default: all: {', '.join(f.__name__ for f in SECTIONS)})")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, help="markdown results file (default: a new file "
                       "under the system temp dir, its path printed on stderr)")
    where.add_argument("--update-results", action="store_true",
                       help=f"write the committed {RESULTS.relative_to(HERE.parent)} "
                       "(only on an idle machine)")
    args = ap.parse_args(argv)
    if args.torch_worker:
        torch_worker(args.torch_worker)
        return 0
    try:
        out = results_path(args.out, update=args.update_results, quick=args.quick)
        sections = chosen(args.only)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return run(args.quick, out, sections)
    except KeyboardInterrupt:
        print("interrupted; no results written", file=sys.stderr)
        return 130


def results_path(out: Path | None, *, update: bool, quick: bool) -> Path:
    """Where the markdown goes, checked before anything is measured: ``--update-results``
    is the only way to the committed file; ``--out`` must not be a folder nor a file other
    than an earlier benchmark result; by default a fresh file under the system temp dir."""
    if update:
        return RESULTS
    if out is None:
        folder = Path(tempfile.gettempdir()) / "absorb-benchmarks"
        folder.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        return folder / f"results-{stamp}{'-quick' if quick else ''}.md"
    if out.resolve() == RESULTS.resolve():
        raise ValueError(f"{out} is the committed results file; use --update-results")
    if out.is_dir():
        raise ValueError(f"{out} is a directory, not a file")
    if not out.parent.is_dir():
        raise ValueError(f"{out.parent}: no such directory")
    if out.exists() and not out.read_text(errors="replace").startswith(TITLE):
        raise ValueError(f"{out} exists and is not a benchmark result; choose another --out")
    return out


def chosen(only: str | None) -> list[Callable[[bool], Any]]:
    """The sections ``--only`` names (all when None); ValueError naming an unknown one."""
    if only is None:
        return list(SECTIONS)
    by_name = {f.__name__: f for f in SECTIONS}
    names = [name.strip() for name in only.split(",") if name.strip()]
    unknown = [name for name in names if name not in by_name]
    if unknown or not names:
        raise ValueError(f"--only: unknown section(s) {', '.join(unknown) or '(none given)'} "
                         f"(one of: {', '.join(by_name)})")
    return [by_name[name] for name in names]


def run(quick: bool, out: Path, sections_to_run: list[Callable[[bool], Any]]) -> int:
    """Measure the sections, print the tables, write the markdown to ``out`` atomically."""
    env = environment()
    print("\n".join(env), flush=True)
    sections = []
    t_start = time.perf_counter()
    for fn in sections_to_run:
        if fn in UNTRACED:
            table = fn(quick)
        else:
            table, peak = traced(partial(fn, quick))
            table.notes.append(f"peak traced memory of this section: {peak:.0f} MiB")
        print("\n" + table.text(), flush=True)
        sections.append(table)
    total = time.perf_counter() - t_start
    only = ("" if len(sections_to_run) == len(SECTIONS)
            else " --only " + ",".join(f.__name__ for f in sections_to_run))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    summary = (
        f"total {total:.0f} s; peak resident memory of the run {rss:.0f} MiB; "
        f"load average at the end {os.getloadavg()[0]:.2f}"
    )
    print("\n" + summary)
    md = [
        TITLE,
        "",
        f"Measured by `python benchmarks/run.py{' --quick' if quick else ''}{only}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
    ]
    md += [f"- {line}" for line in env] + [f"- {summary}", ""]
    md += [t.markdown() for t in sections]
    write_atomic(out, "\n".join(md))
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
