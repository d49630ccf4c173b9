"""Benchmark of the E-step inference engines (Basu 2005, §4.5.4 and Appendix A): how close
each engine comes to the optimum or to a proven lower bound, and how long it takes.

Part 1 — quality against the exact optimum, read like the OpenGM benchmark (Kappes et
al. 2015): random E-step instances (50–200 constrained points, k = 3–10, n..3n
constraints with random weights; 20 with must-links only, 20 with mixed must- and
cannot-links). For every engine: the energy's excess over the ExactMILP optimum
``(E - E*) / E*``, how often it is within 1 % and how often it *is* the optimum, the
LP relaxation's gap ``(E* - LB) / E*`` and how often the LP result is verified optimal
(energy = bound), and the time.

Part 2 — speed on one large E-step: 5,000 constrained points, 10,000 constraints,
k = 10; ICM, BP and LP (with the share of the LP time spent inside HiGHS).

``--raw-unary`` keeps the squared distances as they are (no row minimum removed), so
the excess is relative to the whole E-step energy, as the EM objective sees it.

Group "closure": every pair of 20–60 labelled points constrained by its classes, k =
3–6 (a complete graph: must-link cliques joined by complete bipartite cannot-links),
what a noise-free oracle's answers become after the transitive closure, as active
selection and ``closure=True`` produce them.

Optional part 1b (``--cl-stress``): cannot-links only between random pairs, k = 3,
unary costs scaled by 0.25, 40–80 points — frustrated colouring-like problems where
the LP relaxation is weak (the uniform fractional labelling pays nothing for any
cannot-link).

Instances. Points come from a k-component Gaussian mixture in the plane with
overlapping components; the unary cost is ``||x - mu_h||^2 / 2`` minus its row
minimum, so the unconstrained optimum costs 0 and every unit of energy is due to the
constraints (this makes "within 1 %" a demanding target). Constraints join random
pairs; their kind follows the mixture labels (must-link inside a component,
cannot-link across) with 10 % of them flipped, as a noisy oracle would. Must-link-only
instances draw pairs inside components (and flip 10 % of them to cross-component
must-links). Every engine receives the same ``(unary, graph)`` arrays.

Part 3 (``--scale``): must-link-only and mixed E-steps of 5,000, 50,000 and
200,000 constrained points and the 40 small instances, every engine of the package and
GCO's α-expansion and PGMax as external references, against the best labelling and the
best lower bound found (:mod:`inference_scale`).

``--milp``: ExactMILP's anytime behaviour and the strength of its program
(:mod:`inference_milp`; writes ``docs/results/inference-milp.md``).

Part 4 (``--grid``): image grids (HMRF segmentation of scikit-learn's
``flower.jpg`` at several ``λ``) and 50,000-node random-weight must-link E-steps, every
engine against GCO, timed interleaved (:mod:`inference_grid`); writes
``docs/results/inference-grid.md``.

Run from the repository root::

    python benchmarks/inference.py                 # full run, writes results/bench_inference/
    python benchmarks/inference.py --quick         # 4 + 4 small instances, smaller part 2
    python benchmarks/inference.py --scale         # part 3 only (GCO: pip install gco-wrapper)
    python benchmarks/inference.py --grid          # part 4 only (GCO: pip install gco-wrapper)
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time

import numpy as np

from hmrf import PairwiseGraph
from hmrf.inference import ICM, AutoEngine, BeliefPropagation, ExactMILP, LPRelaxation

ENGINES = {
    "auto": lambda: AutoEngine(),  # the estimators' default
    "icm": lambda: ICM(),
    # BP, default: sequential schedule, TRW-S on must-link-only components
    "bp": lambda: BeliefPropagation(),
    "bp+icm": lambda: BeliefPropagation(polish="icm"),
    "bp-gap1%": lambda: BeliefPropagation(rel_gap=1e-2),     # TRW-S proves 1 % (default 0.1 %)
    "bp-seq": lambda: BeliefPropagation(reweight=None),      # sequential, ordinary max-product
    "bp-trws": lambda: BeliefPropagation(reweight="trw"),    # sequential, TRW-S everywhere
    # the flooding schedule (parallel updates), beside the default sequential one
    "bp-flood": lambda: BeliefPropagation(schedule="flooding"),
    "bp-flood-d.5": lambda: BeliefPropagation(schedule="flooding", damping=0.5),
    "bp-flood-trw": lambda: BeliefPropagation(schedule="flooding", reweight="trw", damping=0.5, max_iter=200),
    "lp": lambda: LPRelaxation(),
    "lp+icm": lambda: LPRelaxation(polish="icm"),
}
#: how the results files name the engines: their settings as a user writes them
LABELS = {
    "auto": "auto", "icm": "icm", "bp": "bp", "bp+icm": 'bp, polish="icm"',
    "bp-gap1%": "bp, rel_gap=1e-2", "bp-seq": "bp, reweight=None", "bp-trws": 'bp, reweight="trw"',
    "bp-flood": 'bp, schedule="flooding"', "bp-flood-d.5": 'bp, schedule="flooding", damping=0.5',
    "bp-flood-trw": 'bp, schedule="flooding", reweight="trw", damping=0.5, max_iter=200', "lp": "lp",
    "lp+icm": 'lp, polish="icm"',
}
#: engines of part 2 (the flooding TRW variant takes seconds there)
PART2 = ("icm", "auto", "bp", "bp-gap1%", "bp-seq", "bp-trws", "bp-flood", "lp", "lp+icm")


def make_instance(rng, mixed, n=None, k=None, m=None, noise=0.1, dim=2, unary_scale=1.0, raw=False):
    """A random E-step problem ``(unary, graph)`` (see module docstring).

    ``mixed`` is False (must-links only), True (mixed) or ``"cl"`` (cannot-links only
    between random pairs, the stress test of the LP relaxation).
    """
    n = int(rng.integers(50, 201)) if n is None else n
    k = int(rng.integers(3, 11)) if k is None else k
    m = int(rng.integers(n, 3 * n + 1)) if m is None else m
    centres = rng.normal(scale=1.5, size=(k, dim))
    truth = rng.integers(k, size=n)
    X = centres[truth] + rng.normal(size=(n, dim))
    unary = ((X[:, None, :] - centres[None]) ** 2).sum(-1) / 2.0
    if not raw:  # harsh variant (default): only the constraints' share of the energy
        unary -= unary.min(axis=1, keepdims=True)
    unary *= unary_scale
    pairs = np.empty((0, 2), dtype=np.int64)
    while pairs.shape[0] < m:
        p = rng.integers(n, size=(4 * m, 2))
        p = p[p[:, 0] != p[:, 1]]
        if not mixed:
            p = p[truth[p[:, 0]] == truth[p[:, 1]]]
        pairs = np.vstack([pairs, p])[:m]
    if mixed == "cl":
        kind = -np.ones(m, dtype=np.int64)
    elif mixed:
        kind = np.where(truth[pairs[:, 0]] == truth[pairs[:, 1]], 1, -1)
        flip = rng.random(m) < noise
        kind[flip] = -kind[flip]
    else:
        kind = np.ones(m, dtype=np.int64)
        flip = rng.random(m) < noise  # must-links across components (oracle mistakes)
        other = rng.integers(n, size=m)
        ok = flip & (other != pairs[:, 0])
        pairs[ok, 1] = other[ok]
    weight = rng.uniform(0.2, 2.0, size=m)
    return unary, PairwiseGraph.potts(n, pairs, weight, kind)


def closure_instance(rng, n=None, k=None, noise=0.0):
    """Every pair of ``n`` labelled points constrained by its classes (a complete graph).

    What a noise-free oracle's answers become after the transitive closure, as active
    selection and ``closure=True`` produce them: must-link cliques joined by complete
    bipartite cannot-links. Unary costs as in :func:`make_instance`.
    """
    n = int(rng.integers(20, 61)) if n is None else n
    k = int(rng.integers(3, 7)) if k is None else k
    centres = rng.normal(scale=1.5, size=(k, 2))
    truth = rng.integers(k, size=n)
    X = centres[truth] + rng.normal(size=(n, 2))
    unary = ((X[:, None, :] - centres[None]) ** 2).sum(-1) / 2.0
    unary -= unary.min(axis=1, keepdims=True)
    i, j = np.triu_indices(n, 1)
    kind = np.where(truth[i] == truth[j], 1, -1)
    return unary, PairwiseGraph.potts(n, np.c_[i, j], rng.uniform(0.2, 2.0, size=i.size), kind)


def run_engine(factory, unary, graph, seed):
    t0 = time.perf_counter()
    res = factory().map(unary, graph, rng=seed)
    return res, time.perf_counter() - t0


def part1(args, rng):
    rows = []
    groups = [("must-link only", False, {}), ("mixed", True, {})]
    if args.cl_stress:
        groups.append(("cannot-link stress", "cl",
                       dict(n=None, k=3, unary_scale=0.25)))
    groups.append(("closure", "closure", {}))
    closure_rng = np.random.default_rng([args.seed, 1])
    n_inst = 4 if args.quick else args.instances
    for gname, mixed, kw in groups:
        for i in range(n_inst):
            if mixed == "cl":
                kw = dict(kw, n=int(rng.integers(40, 81)))
            if mixed == "closure":  # its own stream: the other groups' instances stay as they were
                unary, graph = closure_instance(closure_rng)
            else:
                unary, graph = make_instance(rng, mixed, raw=args.raw_unary, **kw)
            ex, t_ex = run_engine(lambda: ExactMILP(time_limit=args.time_limit), unary, graph, 0)
            ref = ex.energy
            row = {"group": gname, "instance": i, "n": unary.shape[0], "k": unary.shape[1],
                   "m": graph.n_edges, "exact_energy": ref, "exact_bound": ex.lower_bound,
                   "exact_proven": ex.converged, "exact_time": t_ex}
            for name, factory in ENGINES.items():
                res, t = run_engine(factory, unary, graph, i)
                row[f"{name}_energy"] = res.energy
                row[f"{name}_time"] = t
                if name == "lp":
                    row["lp_bound"] = res.lower_bound
                    row["lp_solver_time"] = res.info.get("lp_time", np.nan)
            best = min(row[f"{e}_energy"] for e in ENGINES)
            if best < ref - 1e-6 * max(1.0, abs(ref)):
                row["note"] = "an engine beat the MILP incumbent (time limit)"
            rows.append(row)
            print(f"  {gname:18s} #{i:2d} n={row['n']:3d} k={row['k']:2d} m={row['m']:3d} "
                  f"E*={ref:9.3f} exact {t_ex:6.2f}s{'' if ex.converged else ' (not proven)'}",
                  file=sys.stderr)
    return rows


def summarise(rows):
    lines = []
    header = (f"{'group':18s} {'engine':12s} {'mean excess':>11s} {'max excess':>10s} "
              f"{'<=1%':>6s} {'optimal':>8s} {'mean time':>10s}")
    lines.append(header)
    lines.append("-" * len(header))
    summary = {}
    for gname in dict.fromkeys(r["group"] for r in rows):
        g = [r for r in rows if r["group"] == gname]
        ref = np.array([r["exact_energy"] for r in g])
        scale = np.maximum(np.abs(ref), 1e-12)
        for name in ENGINES:
            e = np.array([r[f"{name}_energy"] for r in g])
            t = np.array([r[f"{name}_time"] for r in g])
            excess = (e - ref) / scale
            within = np.mean(excess <= 0.01)
            optimal = np.mean(excess <= 1e-7)
            summary[(gname, name)] = dict(mean=excess.mean(), within=within, optimal=optimal, time=t.mean())
            lines.append(f"{gname:18s} {name:12s} {100 * excess.mean():10.2f}% {100 * excess.max():9.2f}% "
                         f"{100 * within:5.0f}% {100 * optimal:7.0f}% {1e3 * t.mean():8.1f}ms")
        t_ex = np.array([r["exact_time"] for r in g])
        proven = np.mean([r["exact_proven"] for r in g])
        lines.append(f"{gname:18s} {'exact':12s} {'0 (ref)':>11s} {'':>10s} {'':>6s} "
                     f"{100 * proven:7.0f}% {1e3 * t_ex.mean():8.1f}ms   (proven optimal)")
        lb = np.array([r["lp_bound"] for r in g])
        gap = (ref - lb) / scale
        e_lp = np.array([r["lp_energy"] for r in g])
        verified = np.mean(e_lp - lb <= 1e-6 * np.maximum(1.0, np.abs(lb)))
        share = np.mean([r["lp_solver_time"] / r["lp_time"] for r in g])
        lines.append(f"{gname:18s} LP bound: mean gap (E*-LB)/E* = {100 * gap.mean():.2f}%, "
                     f"max {100 * gap.max():.2f}%; LP result verified optimal on {100 * verified:.0f}%; "
                     f"HiGHS share of LP time {100 * share:.0f}%")
        lines.append("")
    return "\n".join(lines), summary


def summary_markdown(rows):
    """Part 1 as two Markdown tables (engines against the optimum; the LP bound)."""
    from _results import markdown_table

    body, lp_rows = [], []
    for gname in dict.fromkeys(r["group"] for r in rows):
        g = [r for r in rows if r["group"] == gname]
        ref = np.array([r["exact_energy"] for r in g])
        scale = np.maximum(np.abs(ref), 1e-12)
        for i, name in enumerate(ENGINES):
            excess = (np.array([r[f"{name}_energy"] for r in g]) - ref) / scale
            t = np.mean([r[f"{name}_time"] for r in g])
            body.append([f"{gname} ({len(g)})" if i == 0 else "", LABELS[name],
                         f"{100 * excess.mean():.2f} %", f"{100 * excess.max():.2f} %",
                         f"{100 * np.mean(excess <= 0.01):.0f} %", f"{100 * np.mean(excess <= 1e-7):.0f} %",
                         f"{1e3 * t:.1f} ms"])
        body.append(["", "exact", "—", "—", "—", f"{100 * np.mean([r['exact_proven'] for r in g]):.0f} %",
                     f"{1e3 * np.mean([r['exact_time'] for r in g]):.0f} ms"])
        lb = np.array([r["lp_bound"] for r in g])
        gap = (ref - lb) / scale
        e_lp = np.array([r["lp_energy"] for r in g])
        verified = np.mean(e_lp - lb <= 1e-6 * np.maximum(1.0, np.abs(lb)))
        share = np.mean([r["lp_solver_time"] / r["lp_time"] for r in g])
        lp_rows.append([gname, f"{round(100 * gap.mean(), 2) + 0.0:.2f} %", f"{100 * gap.max():.2f} %",
                        f"{100 * verified:.0f} %", f"{100 * share:.0f} %"])
    engines = markdown_table(["group", "engine", "mean excess", "max excess", "within 1 %", "optimal",
                              "mean time"], body, ["---", "---", *["---:"] * 5])
    lp = markdown_table(["group", "LP gap (E* − LB)/E*, mean", "max", "LP result verified optimal",
                         "HiGHS share of the LP engine's time"], lp_rows, ["---", *["---:"] * 4])
    return engines, lp


def part2(args, rng):
    """Speed on large E-steps: warm and cold timings of ICM and BP, LP once.

    Warm (what every E-step of EM after the first sees: the graph, and its cached
    reduction, colouring or BFS layout, stays the same): every engine runs once untimed,
    then ``--repeats`` interleaved rounds time each fast engine; the ratio to ICM is
    taken within each round and its median reported (interleaving cancels the drift of
    a shared machine). Cold: one call on a fresh copy of the graph, each engine building
    its own caches (numba's compiled kernels are already loaded). LP runs once per
    instance (cold), on the first instance only unless ``--part2-lp-all``.
    """
    n, m, k = (1000, 2000, 10) if args.quick else (5000, 10000, 10)
    lines = [f"Large E-step: {n} constrained points, {m} constraints, k = {k}; "
             f"{args.part2_instances} instance(s) per group, {args.repeats} interleaved warm rounds"]
    ratios = {}
    args.part2_cells = []  # (instance, {engine: cell}) for the results file
    for gname, mixed in (("must-link only", False), ("mixed", True)):
        for inst in range(args.part2_instances):
            unary, graph = make_instance(rng, mixed, n=n, k=k, m=m)
            fast = [e for e in PART2 if not e.startswith("lp")]
            slow = [e for e in PART2 if e.startswith("lp")] if (inst == 0 or args.part2_lp_all) else []
            res, cold = {}, {}
            for name in fast + slow:  # cold: fresh graph, own caches
                fresh = PairwiseGraph.potts(graph.n_nodes, graph.edges, graph.weight, graph.kind)
                res[name], cold[name] = run_engine(ENGINES[name], unary, fresh, 0)
            warm = {name: [] for name in fast}
            for name in fast:
                run_engine(ENGINES[name], unary, graph, 0)
            for _ in range(args.repeats):
                for name in fast:
                    warm[name].append(run_engine(ENGINES[name], unary, graph, 0)[1])
            t_icm = np.array(warm["icm"])
            bounds = [r.lower_bound for r in res.values() if r.lower_bound is not None]
            lb = max(bounds) if bounds else min(r.energy for r in res.values())
            cells = {}
            args.part2_cells.append((f"{gname} #{inst}", cells))
            lines.append(f"  {gname} #{inst}: best lower bound {lb:.3f} "
                         f"({'LP' if slow else 'BP/TRW-S'} bound; excess over it below)")
            for name in fast + slow:
                r = res[name]
                over = 100 * (r.energy - lb) / abs(lb)
                if name in warm:
                    t = np.array(warm[name])
                    ratio = float(np.median(t / t_icm))
                    ratios.setdefault((gname, name), []).append(ratio)
                    timing = (f"warm {1e3 * np.median(t):7.1f} ms = {ratio:5.1f}x ICM, "
                              f"cold {1e3 * cold[name]:7.1f} ms = {cold[name] / cold['icm']:5.1f}x")
                    cells[name] = (f"{1e3 * np.median(t):.1f} ms" if name == "icm" else f"{ratio:.1f}×") + (
                        f" ({r.n_iter} it)" if name == "bp" else "")
                else:
                    timing = f"cold {cold[name]:7.2f} s  = {cold[name] / cold['icm']:6.0f}x ICM"
                    cells[name] = f"{cold[name]:.1f} s (HiGHS {100 * r.info['lp_time'] / cold[name]:.0f} %)"
                cells[name] += f", +{max(over, 0.0):.2f} %"  # round-off below the bound reads as 0
                extra = ""
                if name.startswith("lp"):
                    extra = f"  HiGHS {r.info['lp_time']:.2f}s ({100 * r.info['lp_time'] / cold[name]:.0f}%)"
                if name.startswith("bp"):
                    extra = f"  {r.n_iter} it, stopped={r.info['stopped']}"
                    if r.lower_bound is not None:
                        extra += f", own bound {100 * (r.energy - r.lower_bound) / abs(r.energy):.2f}% below"
                lines.append(f"    {name:10s} energy {r.energy:11.3f} (+{over:5.2f}%)  {timing}{extra}")
    lines.append("  median warm time / ICM over instances: " + "; ".join(
        f"{g} {e} {np.median(v):.1f}x" for (g, e), v in ratios.items() if e != "icm"))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small run for a smoke test")
    p.add_argument("--instances", type=int, default=20, help="instances per group (default 20)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-limit", type=float, default=120.0, help="ExactMILP time limit per instance")
    p.add_argument("--out", default=os.path.join("results", "bench_inference"))
    p.add_argument("--skip-part2", action="store_true")
    p.add_argument("--skip-part1", action="store_true")
    p.add_argument("--part2-instances", type=int, default=3, help="large E-steps per group (default 3)")
    p.add_argument("--part2-lp-all", action="store_true", help="run LP on every large E-step, not the first")
    p.add_argument("--repeats", type=int, default=7, help="interleaved warm timing rounds (default 7)")
    p.add_argument("--raw-unary", action="store_true",
                   help="keep the unary costs as HMRF-KMeans gives them (do not subtract row minima): "
                        "excess is then relative to the whole E-step energy")
    p.add_argument("--cl-stress", action="store_true",
                   help="add a third group: cannot-links only, k = 3, weak unary costs (x 0.25), "
                        "40-80 points -- where the LP relaxation is weak")
    p.add_argument("--scale", action="store_true", help="part 3 only: E-steps up to 200,000 points")
    p.add_argument("--scale-sizes", type=lambda v: [int(x) for x in v.split(",")],
                   default=[5000, 50000, 200000],
                   help="constrained points of the --scale instances (default 5000,50000,200000)")
    p.add_argument("--scale-instances", type=int, default=1, help="--scale instances per group and size")
    p.add_argument("--scale-repeats", type=int, default=3,
                   help="--scale: rounds interleaved with GCO per instance (default 3)")
    p.add_argument("--no-scale-small", dest="scale_small", action="store_false",
                   help="--scale without the 40 small instances of part 1")
    p.add_argument("--lp-max-n", type=int, default=5000, help="--scale: run LP up to this many points")
    p.add_argument("--pgmax-python", default=None,
                   help="--scale: a Python with pgmax and jax==0.4.30 (PGMax runs in a subprocess)")
    p.add_argument("--pgmax-max-n", type=int, default=50000, help="--scale: run PGMax up to this many points")
    p.add_argument("--trace", action="store_true", help="--scale: write BP's energy and bound per iteration")
    p.add_argument("--grid", action="store_true",
                   help="part 4 only: image grids and random-weight must-links")
    p.add_argument("--grid-images", type=lambda v: v.split(","), default=["flower.jpg"],
                   help="--grid: scikit-learn sample images (default flower.jpg; also china.jpg)")
    p.add_argument("--grid-lambdas", type=lambda v: [float(x) for x in v.split(",")],
                   default=[0.02, 0.1, 0.5],
                   help="--grid: Potts weights (default 0.02,0.1,0.5)")
    p.add_argument("--grid-connectivity", type=lambda v: [int(x) for x in v.split(",")], default=[4],
                   help="--grid: 4 and/or 8 neighbours (default 4)")
    p.add_argument("--grid-random", type=int, default=0,
                   help="--grid: random-weight must-link instances (default 0: "
                        "benchmarks/must_link_esteps.py writes the results file that has them)")
    p.add_argument("--grid-random-n", type=int, default=50000, help="--grid: their number of nodes")
    p.add_argument("--grid-repeats", type=int, default=3,
                   help="--grid: interleaved timing rounds (default 3)")
    p.add_argument("--milp", action="store_true",
                   help="ExactMILP only: anytime behaviour and the strength of its program")
    p.add_argument("--milp-limits", type=lambda v: [float(x) for x in v.split(",")],
                   default=[0.05, 0.5, 2, 10], help="--milp: time limits (default 0.05,0.5,2,10)")
    p.add_argument("--milp-time", type=float, default=60.0,
                   help="--milp: HiGHS' limit in the formulation table")
    p.add_argument("--no-write", action="store_true",
                   help="do not write docs/results/ (inference-small, -small-lp and -large; "
                        "--grid, --scale, --milp: their own)")
    args = p.parse_args(argv)
    u_small, g_small = make_instance(np.random.default_rng(0), True, n=30, k=3, m=40)
    for name in ENGINES:  # load what is loaded once per process (numba's kernels) untimed
        ENGINES[name]().map(u_small, g_small)
    t0 = time.perf_counter()
    out, rows = [], []
    if args.milp:
        import inference_milp

        inference_milp.part_milp(args)
        return 0
    if args.grid:
        import inference_grid

        for factory in inference_grid.engines().values():  # load their compiled kernels untimed
            factory().map(u_small[:, :2] + 0.0, PairwiseGraph.potts(30, g_small.edges, g_small.weight,
                                                                     np.ones(g_small.n_edges)))
        args.repeats = args.grid_repeats
        inference_grid.part_grid(args)
        return 0
    if args.scale:
        import inference_scale

        for factory in inference_scale.optional_engines().values():
            factory().map(u_small, g_small)
        os.makedirs(args.out, exist_ok=True)
        text = inference_scale.part_scale(args) + f"\n\ntotal time {time.perf_counter() - t0:.1f}s"
        print(text)
        with open(os.path.join(args.out, "scale.txt"), "w") as f:
            f.write(text + "\n")
        return 0
    if not args.skip_part1:
        rows = part1(args, np.random.default_rng(args.seed))
        table, _ = summarise(rows)
        out += [f"Part 1: energy relative to ExactMILP (seed {args.seed})", "", table]
    if not args.skip_part2:  # its own random stream: independent of part 1's options
        out += ["Part 2", part2(args, np.random.default_rng([args.seed, 2]))]
    out.append(f"\ntotal time {time.perf_counter() - t0:.1f}s")
    text = "\n".join(out)
    print(text)
    if not args.no_write and not args.quick:
        from _results import markdown_table, write_result

        if rows:
            engines, lp = summary_markdown(rows)
            print("wrote", write_result("inference-small", engines, notes=(
                f"{args.instances} random E-steps per group (seed {args.seed}); must-link and mixed "
                "groups: 50–200 constrained points, k = 3–10, n–3n constraints with weights in [0.2, 2], "
                "10 % of them contradicting the clusters; cannot-link stress: 40–80 points, k = 3; "
                "closure: 20–60 points, k = 3–6, every pair constrained as the clusters say (the "
                "groups of docs/inference.md); unary costs shifted so that the unconstrained optimum "
                "costs 0. Excess: "
                "(E − E*)/E* against the ExactMILP optimum; \"exact\" gives the share proven optimal. "
                "Times on a shared 2-core machine, numba's kernels loaded before any timing; load "
                f"average at the end {' '.join(f'{x:.1f}' for x in os.getloadavg())}.")))
            print("wrote", write_result("inference-small-lp", lp, notes=(
                "The LP relaxation's lower bound LB on the same instances against the optimum E*, how "
                "often the rounded LP labelling is proven optimal by it, and HiGHS' share of the LP "
                "engine's time.")))
        if getattr(args, "part2_cells", None):
            names = [e for e in PART2 if any(e in c for _, c in args.part2_cells)]
            body = [[inst, *[c.get(e, "—") for e in names]] for inst, c in args.part2_cells]
            print("wrote", write_result("inference-large", markdown_table(
                ["instance", *[LABELS[e] for e in names]], body, ["---", *["---:"] * len(names)]), notes=(
                "5,000 constrained points, 10,000 constraints, k = 10. ICM: its warm time; the others: "
                f"the median over {args.repeats} interleaved warm rounds of the ratio to ICM's time in the "
                "same round (BP's iterations in brackets); LP: one cold call, first instance of each group. "
                "+x %: the energy above the best lower bound known (LP's on #0, else the TRW-S bound).")))
    os.makedirs(args.out, exist_ok=True)
    if rows:
        with open(os.path.join(args.out, "instances.csv"), "w", newline="") as f:
            keys = sorted({key for r in rows for key in r}, key=lambda s: (s not in rows[0], s))
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
    with open(os.path.join(args.out, "summary.txt" if not args.skip_part1 else "part2.txt"), "w") as f:
        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
