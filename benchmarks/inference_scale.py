"""E-step engines at scale: ``python benchmarks/inference.py --scale``.

What it measures: every engine's energy against the best labelling and the best lower
bound found, and its time against GCO's α-expansion, on must-link-only and mixed
E-steps from 5,000 to 200,000 constrained points and on the 40 small instances.

Instances (``k = 10``, average degree 4, i.e. ``m = 2n`` constraints):

* ``must-link`` — :func:`inference.make_instance` with must-links only (pairs inside
  the Gaussian-mixture components, 10 % between them), unary costs with their row
  minimum removed;
* ``must-link, uniform`` — what a new user tries first: unary costs uniform in [0, 1),
  random pairs, weights uniform in [0, 2);
* ``mixed`` — :func:`inference.make_instance` with must- and cannot-links;

at 5,000, 50,000 and 200,000 constrained points (``--scale-sizes``), plus the 40 small
instances of part 1 (must-link only and mixed, 50–200 points; ``--scale-small``).
Every cost is rounded to a multiple of ``1 / SCALE`` so that GCO, which works in
integers, minimises exactly the function the other engines see.

Engines: ICM, BP (the default engine), TRW-S (``inference="trws"``),
LP (up to ``--lp-max-n`` points), ExactMILP (the small instances), AlphaExpansion,
``inference="auto"`` when the package has them, and as external references GCO's
α-expansion (``pip install gco-wrapper``; costs ``x SCALE`` as integers with
``down_weight_factor=1``; a cannot-link is handed to it as a negative Potts weight,
which it accepts without being able to optimise it, so its mixed rows are marked) and
PGMax's loopy max-product (``--pgmax-python``: a Python with ``pgmax`` and a jax it
supports, run in a subprocess; see :func:`run_pgmax`). For every instance: the energy
relative to the best labelling any engine found, relative to the best lower bound
(TRW-S, LP, ExactMILP), and the time (cold calls, each on a fresh copy of the graph;
numba's kernels are loaded before any timing). Timing is interleaved with GCO:
``--scale-repeats`` rounds, GCO first in each, and an engine's time ratio is the median
over rounds of its time over GCO's time in the same round, for the wall-clock and for
the CPU time (``time.process_time``), which the tables give; LP and ExactMILP run in the
first round only. GCO's time is that of its C++ calls, without the wrapper's Python
loop that sets every site's initial label (:func:`inference_grid.run_gco`).
``--scale`` writes ``docs/results/inference-scale.md``.

``--trace`` also writes BP's energy and bound per iteration on every large instance
(``trace_<group>_<n>_<seed>.csv``).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from hmrf import PairwiseGraph
from hmrf.inference import ICM, TRWS, BeliefPropagation, ExactMILP, LPRelaxation

#: every cost is a multiple of 1 / SCALE (GCO's integer costs are the costs x SCALE)
SCALE = 1000
GROUPS = ("must-link", "must-link, uniform", "mixed")


def optional_engines() -> dict:
    """Engines of the package that may not exist in every version: AlphaExpansion, auto."""
    out = {}
    try:
        from hmrf.inference.expansion import AlphaExpansion
        out["expansion"] = AlphaExpansion
    except ImportError:
        pass
    try:
        from hmrf.inference.auto import AutoEngine
        out["auto"] = AutoEngine
    except ImportError:
        pass
    return out


def rounded(unary, graph):
    """The instance with every cost rounded to a multiple of ``1 / SCALE``."""
    u = np.rint(unary * SCALE) / SCALE
    w = np.rint(graph.weight * SCALE) / SCALE
    return u, PairwiseGraph.potts(graph.n_nodes, graph.edges, w, graph.kind)


def uniform_instance(rng, n, k=10):
    """Unary costs uniform in [0, 1), 2n random must-links with weights uniform in [0, 2)."""
    unary = rng.random((n, k))
    pairs = rng.integers(n, size=(2 * n, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return unary, PairwiseGraph.potts(n, pairs, 2.0 * rng.random(len(pairs)), np.ones(len(pairs), np.int64))


def scale_instance(group, n, seed):
    from inference import make_instance

    rng = np.random.default_rng([seed, n, GROUPS.index(group)])
    if group == "must-link, uniform":
        return rounded(*uniform_instance(rng, n))
    return rounded(*make_instance(rng, group == "mixed", n=n, k=10, m=2 * n))


def run_gco(unary, graph):
    """GCO's α-expansion from the unary argmin; returns (labels, seconds, CPU seconds) or None.

    A cannot-link is handed to GCO as a negative Potts weight (``w [=] = -w [!=] + w``),
    which it accepts without being able to optimise it; its time is that of the C++
    calls (:func:`inference_grid.run_gco`).
    """
    try:
        import gco  # noqa: F401  benchmark-only dependency
    except ImportError:
        return None
    import inference_grid

    signed = np.where(graph.kind == 1, graph.weight, -graph.weight)
    return inference_grid.run_gco_timed(unary, graph, scale=SCALE, weight=signed)


PGMAX_SCRIPT = r'''
import json, sys, time
import numpy as np
from pgmax import fgraph, fgroup, infer, vgroup
d = np.load(sys.argv[1])
unary, edges, weight, kind = d["unary"], d["edges"], d["weight"], d["kind"]
n, k = unary.shape
eye = np.eye(k)
cost = np.where(kind[:, None, None] == 1, weight[:, None, None] * (1 - eye), weight[:, None, None] * eye)
pairs, inverse = np.unique(np.sort(edges, axis=1), axis=0, return_inverse=True)
merged = np.zeros((len(pairs), k, k))   # PGMax wants one factor per pair
np.add.at(merged, inverse.ravel(), cost)
t0 = time.perf_counter()
variables = vgroup.NDVarArray(num_states=k, shape=(n,))
fg = fgraph.FactorGraph(variable_groups=variables)
fg.add_factors(fgroup.PairwiseFactorGroup(
    variables_for_factors=[[variables[int(a)], variables[int(b)]] for a, b in pairs],
    log_potential_matrix=-merged))
bp = infer.build_inferer(fg.bp_state, backend="bp")
t_build = time.perf_counter() - t0
times = []
for _ in range(2):  # the first run compiles; the second is timed
    t1 = time.perf_counter()
    arrays = bp.run(bp.init(evidence_updates={variables: -unary}), num_iters=int(sys.argv[3]),
                    damping=float(sys.argv[4]), temperature=0.0)
    labels = np.asarray(infer.decode_map_states(bp.get_beliefs(arrays))[variables])
    times.append(time.perf_counter() - t1)
np.save(sys.argv[2], labels.astype(np.int64))
print(json.dumps({"build": t_build, "first": times[0], "run": times[1]}))
'''


def run_pgmax(python, unary, graph, num_iters=200, damping=0.5):
    """PGMax's loopy max-product (200 damped iterations) in the Python ``python``.

    PGMax needs a jax release it supports (``pgmax 0.6.1`` runs with ``jax==0.4.30``, not
    with jax 0.10, which dropped ``jax.lib.xla_bridge``), so it runs in its own
    environment: ``python -m venv pgmax-env && pgmax-env/bin/pip install pgmax
    jax==0.4.30 jaxlib==0.4.30``. Returns (labels, seconds of the second, compiled run)
    or None.
    """
    if not python:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        src, dst, script = (os.path.join(tmp, f) for f in ("in.npz", "out.npy", "run.py"))
        np.savez(src, unary=unary, edges=graph.edges, weight=graph.weight, kind=graph.kind)
        with open(script, "w") as f:
            f.write(PGMAX_SCRIPT)
        proc = subprocess.run([python, script, src, dst, str(num_iters), str(damping)], capture_output=True,
                              text=True, timeout=3600)
        if proc.returncode != 0:
            print(f"    pgmax failed: {proc.stderr.strip().splitlines()[-1]}", file=sys.stderr)
            return None
        times = json.loads(proc.stdout.strip().splitlines()[-1])
        return np.load(dst), times["run"]


def engines_for(n, args, group="") -> dict:
    """The package's engines run on an instance of ``n`` constrained points.

    LP runs up to ``--lp-max-n`` points, but not on the uniform-cost must-link group,
    where HiGHS took 553 s at 2,000 points (3 s on the other must-link group).
    """
    out = {"icm": ICM, "bp": BeliefPropagation, "trws": TRWS}
    if n <= args.lp_max_n and group != "must-link, uniform":
        out["lp"] = LPRelaxation
    if n <= 200:
        out["exact"] = lambda: ExactMILP(time_limit=args.time_limit)
    out.update(optional_engines())
    return out


#: engines timed once (first round): their time is far from GCO's and the same every round
ONCE = ("lp", "exact")


def solve_all(unary, graph, args, trace_path=None, group="", repeats=1) -> dict:
    """Every engine on one instance: ``{name: (energy, bound or None, seconds, note, ratio, cpu_ratio)}``.

    ``repeats`` interleaved rounds (module docstring): ``seconds`` is the median time,
    ``ratio`` the median over rounds of the time over GCO's in the same round, and
    ``cpu_ratio`` the same for the process's CPU time (``time.process_time``, less
    inflated by other jobs on a loaded machine); both ``None`` without GCO.
    """
    times, first = {}, {}
    mixed = bool(np.any(graph.kind != 1))
    for r in range(repeats):
        gco_out = run_gco(unary, graph)
        t_gco, c_gco = (None, None) if gco_out is None else gco_out[1:]
        if gco_out is not None:
            times.setdefault("gco", []).append((t_gco, 1.0, 1.0))
            first.setdefault("gco", (graph.energy(gco_out[0], unary), None,
                                     "CL as negative weights" if mixed else ""))
        for name, factory in engines_for(unary.shape[0], args, group).items():
            if r and name in ONCE:
                continue
            fresh = PairwiseGraph.potts(graph.n_nodes, graph.edges, graph.weight, graph.kind)
            trace, t0, c0 = [], time.perf_counter(), time.process_time()
            callback = None
            if trace_path and name == "bp" and r == 0:
                def callback(it, y, e, b, t0=t0, trace=trace):
                    trace.append((it, e, b, time.perf_counter() - t0))
            res = factory().map(unary, fresh, rng=0, callback=callback)
            t, c = time.perf_counter() - t0, time.process_time() - c0
            times.setdefault(name, []).append((t, None if t_gco is None else t / t_gco,
                                               None if c_gco is None else c / c_gco))
            if name not in first:
                note = f"{res.n_iter} it" if name in ("bp", "trws") else ""
                first[name] = (res.energy, res.lower_bound, note)
            if trace:
                with open(trace_path, "w", newline="") as f:
                    w = csv.writer(f)
                    w.writerow(["iteration", "energy", "bound", "seconds"])
                    w.writerows(trace)
    out = {}
    for name, (e, b, note) in first.items():
        t = np.array([x for x, _, _ in times[name]])
        ratios = [y for _, y, _ in times[name] if y is not None]
        cpu = [z for _, _, z in times[name] if z is not None]
        out[name] = (e, b, float(np.median(t)), note, float(np.median(ratios)) if ratios else None,
                     float(np.median(cpu)) if cpu else None)
    if unary.shape[0] <= args.pgmax_max_n:
        pg = run_pgmax(args.pgmax_python, unary, graph)
        if pg is not None:
            out["pgmax"] = (graph.energy(pg[0], unary), None, pg[1], "200 it, damping 0.5", None, None)
    return out


def relative(results):
    """Best energy, best bound, and per engine (excess over best, excess over bound, seconds,
    note, time ratio to GCO, CPU-time ratio to GCO)."""
    best = min(r[0] for r in results.values())
    bounds = [r[1] for r in results.values() if r[1] is not None]
    bound = max(bounds) if bounds else None
    rel = {}
    for name, (e, _, t, note, ratio, cpu_ratio) in results.items():
        over_best = (e - best) / abs(best)
        over_bound = None if bound is None else (e - bound) / abs(bound)
        rel[name] = (over_best, over_bound, t, note, ratio, cpu_ratio)
    return best, bound, rel


#: column order of the results tables
COLUMNS = ("icm", "bp", "trws", "expansion", "auto", "gco", "lp", "exact", "pgmax")


def _cell(over, ratio):
    """``excess, time ratio`` of one table cell."""
    e = "0" if over <= 5e-7 else f"{100 * over:.3f} %"
    return e if ratio is None else f"{e}, {ratio:.2f}×"


def part_scale(args) -> str:
    """Run the scale study; returns the text report and writes docs/results/inference-scale.md."""
    from _results import write_result

    load0 = os.getloadavg()
    t_start = time.perf_counter()
    lines = ["Part 3 (--scale): energy over the best labelling any engine found and over the best lower "
             "bound; time, and its ratio to GCO's (median of rounds interleaved with GCO)", ""]
    rows, summary = [], {}
    lines.append(f"{'instance':28s} {'engine':10s} {'E - best':>9s} {'E - bound':>9s} {'time':>9s} "
                 f"{'/ GCO':>6s} {'CPU/GCO':>7s}")
    for n in args.scale_sizes:
        for group in GROUPS:
            for seed in range(args.scale_instances):
                unary, graph = scale_instance(group, n, seed)
                t0 = time.perf_counter()
                trace = (os.path.join(args.out, f"trace_{group.replace(', ', '_')}_{n}_{seed}.csv")
                         if args.trace else None)
                results = solve_all(unary, graph, args, trace, group, repeats=args.scale_repeats)
                best, bound, rel = relative(results)
                name = f"{group} n={n} #{seed}"
                lines.append(f"{name:28s} best E = {best:.3f}, best bound = "
                             f"{'-' if bound is None else f'{bound:.3f}'}")
                for eng, (ob, obd, t, note, ratio, cpu_ratio) in rel.items():
                    ratio_s = "     -" if ratio is None else f"{ratio:5.2f}x"
                    ratio_s += "       -" if cpu_ratio is None else f" {cpu_ratio:6.2f}x"
                    obd_s = "        -" if obd is None else f"{100 * obd:8.3f}%"
                    lines.append(f"{'':28s} {eng:10s} {100 * ob:8.3f}% {obd_s} {t:8.2f}s {ratio_s} {note}")
                    rows.append({"group": group, "n": n, "seed": seed, "engine": eng,
                                 "energy": results[eng][0], "bound": results[eng][1], "best": best,
                                 "best_bound": bound, "time": t, "ratio_to_gco": ratio,
                                 "cpu_ratio_to_gco": cpu_ratio, "over_best": ob,
                                 "over_bound": obd, "note": note})
                    summary.setdefault((group, n), {}).setdefault(eng, []).append((ob, ratio, obd, cpu_ratio))
                print(f"  scale {name} done in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    table = _markdown(summary, args)
    small = ""
    if args.scale_small:
        small_text, small = small_instances(args, rows)
        lines += ["", small_text]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "scale.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    load1 = os.getloadavg()
    notes = (f"Each cell: the largest excess over the best labelling any engine found on the instances of "
             f"the row, and the median over instances of the engine's CPU time (the process's, "
             f"time.process_time, which other jobs on a shared machine inflate less than the wall-clock "
             f"time) over GCO's (itself the median of "
             f"{args.scale_repeats} rounds interleaved with GCO; LP once). Load average (1, 5, 15 min) "
             f"{load0[0]:.1f}, {load0[1]:.1f}, {load0[2]:.1f} before and {load1[0]:.1f}, {load1[1]:.1f}, "
             f"{load1[2]:.1f} after, on {os.cpu_count()} cores; "
             f"{time.perf_counter() - t_start:.0f} s in all.")
    if not getattr(args, "no_write", False):
        body = table + ("\n\n" + small if small else "")
        print("wrote", write_result("inference-scale", body, notes=notes), file=sys.stderr)
    return "\n".join(lines) + "\n\n" + table + "\n\n" + notes


def _markdown(summary, args) -> str:
    """One row per (group, size): per engine the largest excess over the best and the
    median CPU-time ratio to GCO; a second table of the excess over the best bound."""
    from _results import markdown_table

    engines = [e for e in COLUMNS if any(e in v for v in summary.values())]
    body, body_b = [], []
    for (group, n), per in summary.items():
        label = f"{group} {n:,} ({args.scale_instances})"
        cells, cells_b = [label], [label]
        for eng in engines:
            if eng not in per:
                cells.append("—")
                cells_b.append("—")
                continue
            ob = max(x[0] for x in per[eng])
            ratios = [x[3] for x in per[eng] if x[3] is not None]  # CPU time
            cells.append(_cell(ob, float(np.median(ratios)) if ratios else None))
            obd = [x[2] for x in per[eng] if x[2] is not None]
            cells_b.append("—" if not obd else ("0" if max(obd) <= 5e-7 else f"{100 * max(obd):.3f} %"))
        body.append(cells)
        body_b.append(cells_b)
    head = ["E-steps", *engines]
    return (markdown_table(head, body) + "\n\nExcess over the best lower bound (the largest over the "
            "instances of the row):\n\n" + markdown_table(head, body_b))


def _warm_small(args):
    """Every engine once on a tiny instance of each number of labels the small instances
    draw (``make_instance``: 3-10), untimed: TRW-S and BP compile kernels per number of
    labels, which would otherwise land in the first timed instance with that number."""
    from inference import make_instance

    rng = np.random.default_rng(12345)
    for k in range(3, 11):
        for mixed in (False, True):
            unary, graph = rounded(*make_instance(rng, mixed, n=30, k=k, m=45))
            for factory in engines_for(unary.shape[0], args).values():
                fresh = PairwiseGraph.potts(graph.n_nodes, graph.edges, graph.weight, graph.kind)
                factory().map(unary, fresh, rng=0)


def small_instances(args, rows):
    """The 40 instances of part 1 (must-link only and mixed): excess over the best per
    engine, aggregated per group; returns (text, markdown table)."""
    from _results import markdown_table
    from inference import make_instance

    _warm_small(args)
    rng = np.random.default_rng(args.seed)  # the stream of part 1: the same instances
    lines = [f"{'small (part 1)':18s} {'engine':10s} {'mean E-best':>11s} {'max E-best':>10s} "
             f"{'= best':>7s} {'mean time':>10s}"]
    body = []
    for gname, mixed in (("must-link only", False), ("mixed", True)):
        per = {}
        for i in range(args.instances):
            unary, graph = rounded(*make_instance(rng, mixed))
            results = solve_all(unary, graph, args)
            _, _, rel = relative(results)
            for eng, (ob, obd, t, note, _, _) in rel.items():
                per.setdefault(eng, []).append((ob, t))
                rows.append({"group": f"small {gname}", "n": unary.shape[0], "seed": i, "engine": eng,
                             "energy": results[eng][0], "bound": results[eng][1], "best": None,
                             "best_bound": None, "time": t, "ratio_to_gco": None, "cpu_ratio_to_gco": None,
                             "over_best": ob,
                             "over_bound": obd, "note": note})
        for j, eng in enumerate([e for e in COLUMNS if e in per]):
            ob, t = np.array(per[eng]).T
            lines.append(f"{gname:18s} {eng:10s} {100 * ob.mean():10.3f}% {100 * ob.max():9.3f}% "
                         f"{100 * np.mean(ob <= 1e-9):6.0f}% {1e3 * t.mean():8.1f}ms")
            body.append([gname if j == 0 else "", eng, f"{100 * ob.mean():.3f} %",
                         f"{100 * ob.max():.3f} %", f"{100 * np.mean(ob <= 1e-9):.0f} %",
                         f"{1e3 * t.mean():.1f} ms"])
    table = ("The 40 small E-steps of part 1 (50–200 points), their costs rounded to multiples of 1/1000 "
             "as GCO needs them (so ICM's excess differs from inference-small.md's on the same instances), "
             "over the best labelling of each:\n\n"
             + markdown_table(["group", "engine", "mean excess", "max excess", "= best", "mean time"], body))
    return "\n".join(lines), table
