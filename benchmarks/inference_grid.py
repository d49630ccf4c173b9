"""E-step engines on image grids and on random-weight must-link graphs, against GCO.

What it measures: for every engine, the energy of its labelling relative to GCO's
α-expansion and to the best lower bound any engine proved, and its time relative to
GCO's (wall-clock and CPU), on the E-steps of HMRF image segmentation and on large
must-link graphs with random weights.

``python benchmarks/inference.py --grid`` (writes ``docs/results/inference-grid.md``).

**Image grids.** HMRF segmentation of a photograph: scikit-learn's bundled
``flower.jpg`` (427 x 640, 273,280 pixels; ``--grid-images flower.jpg,china.jpg``),
colours scaled to [0, 1], ``k = 8`` clusters by k-means (scikit-learn, seed 0), unary
cost the squared colour distance to each centre, a Potts must-link of weight ``λ`` on
every edge of the 4-neighbour grid (545,493 edges; ``--grid-connectivity 4,8`` adds the
diagonals, with the same weight), ``λ`` in ``--grid-lambdas`` (0.02, 0.1, 0.5).

**Random-weight must-link graphs** (``--grid-random N``, none by default: the results
file of ``benchmarks/must_link_esteps.py`` has these instances; TRW-S's bound tells how
far any labelling can be):
``n = 50,000`` nodes (``--grid-random-n``), unary costs uniform in [0, 1), ``2n``
must-links between random pairs (average degree 4) with weights uniform in [0.1, 1.1],
``k = 10``.

Every cost is rounded to a multiple of ``1 / SCALE`` (``SCALE = 10,000``) so that GCO,
which works in integers, minimises exactly the function the other engines see.
Engines: ICM, BP (the default), TRW-S (``inference="trws"``), α-expansion (its plain
sweeps, the default, and GCO's adaptive cycles, ``cycles="adaptive"``), ``auto``,
and GCO's α-expansion (C++, ``pip install gco-wrapper``; from the unary argmin, as
ours; its time is that of the C++ calls, without the wrapper's Python loop that sets
the initial label of every site one call at a time). Each engine runs on a fresh copy
of the graph (a cold call: it builds its own caches, as GCO builds its graph).

Timing: every engine first runs once, untimed, on a 30-node chain with the instance's
``k`` (TRW-S's must-link kernels are compiled per number of labels: loading them is not
solving). Then ``--repeats`` rounds; every round runs GCO and every engine, all in this
process, in the order GCO, ICM, BP, TRW-S, the two expansions, ``auto`` in even rounds and in
the reverse order in odd ones (so that no engine always runs right after the same
one: the position in a round, with the memory the previous run left behind, is not
charged to one engine). An engine's time ratio is the median over rounds of its time
divided by GCO's time *in the same round* (interleaving cancels most of a shared
machine's drift); the same for the process's CPU time (``time.process_time``), which
a loaded machine inflates less than the wall-clock time. Energies are those of the
first round (every engine is deterministic). The load average of the machine is
recorded before and after.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from hmrf import PairwiseGraph
from hmrf.inference import ICM, TRWS, BeliefPropagation

#: every cost is a multiple of 1 / SCALE (GCO's integer costs are the costs x SCALE)
SCALE = 10_000


def grid_edges(h, w, connectivity=4):
    """Edges of an ``h x w`` grid in raster numbering (4- or 8-neighbour)."""
    idx = np.arange(h * w).reshape(h, w)
    parts = [np.c_[idx[:, :-1].ravel(), idx[:, 1:].ravel()], np.c_[idx[:-1].ravel(), idx[1:].ravel()]]
    if connectivity == 8:
        parts += [np.c_[idx[:-1, :-1].ravel(), idx[1:, 1:].ravel()],
                  np.c_[idx[:-1, 1:].ravel(), idx[1:, :-1].ravel()]]
    return np.vstack(parts)


def image_unary(name, k=8):
    """Squared colour distances (colours in [0, 1]) to k-means centres, and the image shape."""
    from sklearn.cluster import KMeans
    from sklearn.datasets import load_sample_image

    img = load_sample_image(name).astype(np.float64) / 255.0
    h, w, _ = img.shape
    X = img.reshape(-1, 3)
    centres = KMeans(k, n_init=3, random_state=0).fit(X).cluster_centers_
    unary = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
    return unary, (h, w)


def rounded(unary, edges, weight, n):
    """The instance with every cost a multiple of ``1 / SCALE``."""
    u = np.rint(unary * SCALE) / SCALE
    w = np.rint(weight * SCALE) / SCALE
    return u, PairwiseGraph.potts(n, edges, w, np.ones(len(edges), dtype=np.int8))


def random_weight_instance(n, seed, k=10):
    """Unary costs uniform in [0, 1), 2n random must-links with weights uniform in [0.1, 1.1]."""
    rng = np.random.default_rng([seed, n, 22])
    unary = rng.random((n, k))
    pairs = rng.integers(n, size=(2 * n, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return rounded(unary, pairs, rng.uniform(0.1, 1.1, len(pairs)), n)


def run_gco(unary, graph, scale=SCALE, weight=None):
    """GCO's α-expansion from the unary argmin: (labels, seconds of the C++ calls).

    Set up as ``gco.cut_general_graph`` does, through the wrapper's ``GCO`` class, so
    that the per-site Python loop setting the initial labels stays out of the timing.
    ``weight`` replaces the graph's Potts weights (signed: a cannot-link as ``-w``).
    """
    labels, seconds, _ = run_gco_timed(unary, graph, scale, weight)
    return labels, seconds


def run_gco_timed(unary, graph, scale=SCALE, weight=None):
    """:func:`run_gco` with the CPU seconds of the same calls: ``(labels, wall, cpu)``."""
    import gco  # benchmark-only dependency

    n, k = unary.shape
    U = np.rint(unary * scale).astype(np.intc)
    W = np.rint((graph.weight if weight is None else weight) * scale).astype(np.intc)
    E = np.sort(graph.edges, axis=1)
    init = np.argmin(unary, axis=1)
    t0, c0 = time.perf_counter(), time.process_time()
    gc = gco.GCO()
    gc.create_general_graph(n, k, False)
    gc.set_data_cost(U)
    gc.set_all_neighbors(E[:, 0], E[:, 1], W)
    gc.set_smooth_cost((1 - np.eye(k)).astype(np.intc))
    t_setup, c_setup = time.perf_counter() - t0, time.process_time() - c0
    for i in range(n):  # the wrapper's own loop (cut_general_graph does the same)
        gc.init_label_at_site(i, int(init[i]))
    t1, c1 = time.perf_counter(), time.process_time()
    gc.expansion(-1)
    labels = np.asarray(gc.get_labels(), dtype=np.int64)
    gc.destroy_graph()
    return labels, t_setup + time.perf_counter() - t1, c_setup + time.process_time() - c1


def engines():
    from hmrf.inference.auto import AutoEngine
    from hmrf.inference.expansion import AlphaExpansion

    return {"icm": ICM, "bp": BeliefPropagation, "trws": TRWS, "expansion": AlphaExpansion,
            "expansion, adaptive": lambda: AlphaExpansion(cycles="adaptive"), "auto": AutoEngine}


def measure(unary, graph, repeats):
    """Interleaved runs (module docstring): per engine (energy, bound, median seconds,
    median time / GCO's, median CPU time / GCO's, note), GCO included."""
    names = ["gco", *engines()]
    chain = PairwiseGraph.potts(30, np.c_[np.arange(29), np.arange(1, 30)], np.full(29, 0.1), np.ones(29))
    for factory in engines().values():  # load the kernels compiled for this k (TRW-S's) untimed
        factory().map(unary[:30], chain, rng=0)
    wall = {name: [] for name in names}
    cpu = {name: [] for name in names}
    first = {}
    for r in range(repeats):
        times = {}
        for name in (names if r % 2 == 0 else names[::-1]):
            if name == "gco":
                labels, t, c = run_gco_timed(unary, graph)
                times[name] = (t, c)
                first.setdefault("gco", (graph.energy(labels, unary), None, ""))
                continue
            fresh = PairwiseGraph.potts(graph.n_nodes, graph.edges, graph.weight, graph.kind)
            t0, c0 = time.perf_counter(), time.process_time()
            res = engines()[name]().map(unary, fresh, rng=0)
            times[name] = (time.perf_counter() - t0, time.process_time() - c0)
            if name not in first:
                first[name] = (res, times[name][0])
        t_gco, c_gco = times["gco"]
        wall["gco"].append(t_gco)
        for name in engines():
            wall[name].append(times[name][0] / t_gco)
            cpu[name].append(times[name][1] / c_gco)
        if r == 0:
            first["gco_time"] = t_gco
        print(f"    round {r + 1}/{repeats} done", file=sys.stderr, flush=True)
    t_gco = float(np.median(wall["gco"]))
    out = {"gco": (first["gco"][0], None, t_gco, 1.0, 1.0, "")}
    for name in engines():
        res, _ = first[name]
        ratio, cpu_ratio = float(np.median(wall[name])), float(np.median(cpu[name]))
        out[name] = (res.energy, res.lower_bound, ratio * t_gco, ratio, cpu_ratio,
                     _note(name, res, first["gco"][0], first["gco_time"]))
    return out


def _note(name, res, e_gco, t_gco):
    """BP's and TRW-S's iterations and stop; TRW-S's best energy after 1× and 2× GCO's
    time (of the same round, wall-clock: it is an anytime method); α-expansion's cuts."""
    if name.startswith("expansion"):
        return f"{res.info['moves']} moves, {res.n_iter} {'cycles' if 'adaptive' in name else 'sweeps'}"
    if name not in ("bp", "trws"):
        return ""
    note = f"{res.n_iter} it"
    if res.info.get("stopped"):
        note += f", {res.info.get('trws_stopped', res.info['stopped'])}"
    if name == "trws":
        et, tt = np.array(res.info["energy_trace"]), np.array(res.info["time_trace"])
        offset = res.energy - et[-1]  # the isolated nodes' part
        for x in (1, 2):
            within = et[tt <= x * t_gco]
            if within.size:
                note += f"; at {x}× GCO {100 * (within[-1] + offset - e_gco) / e_gco:+.3f} %"
    return note


def _pct(x):
    return "—" if x is None else f"{100 * x:+.3f} %"


def table(rows):
    """Markdown table of ``rows``: (instance, {engine: (energy, bound, seconds, ratio, cpu ratio, note)})."""
    from _results import markdown_table

    body = []
    for instance, res in rows:
        e_gco = res["gco"][0]
        bounds = [v[1] for v in res.values() if v[1] is not None]
        bound = max(bounds) if bounds else None
        for name, (e, _, t, ratio, cpu_ratio, note) in res.items():
            over_gco = (e - e_gco) / abs(e_gco)
            over_bound = None if bound is None else (e - bound) / abs(bound)
            cells = [instance if name == "gco" else "", name,
                     f"{e:.2f}" if name == "gco" else _pct(over_gco), _pct(over_bound),
                     f"{t:.2f} s", "1" if name == "gco" else f"{ratio:.2f}",
                     "1" if name == "gco" else f"{cpu_ratio:.2f}", note]
            body.append(cells)
    return markdown_table(["instance", "engine", "E (GCO) / E − E_GCO", "E − best bound", "time",
                           "time / GCO (median)", "CPU time / GCO (median)", "notes"], body)


def part_grid(args) -> str:
    """Run the study; write docs/results/inference-grid.md unless ``--no-write``."""
    from _results import write_result

    load0 = os.getloadavg()
    t_start = time.perf_counter()
    rows = []
    for name in args.grid_images:
        unary0, (h, w) = image_unary(name)
        for conn in args.grid_connectivity:
            edges = grid_edges(h, w, conn)
            for lam in args.grid_lambdas:
                unary, graph = rounded(unary0, edges, np.full(len(edges), lam), h * w)
                label = f"{name.split('.')[0]} {h}×{w}, {conn}-nbr, λ = {lam:g}"
                print(f"  {label}", file=sys.stderr, flush=True)
                rows.append((label, measure(unary, graph, args.repeats)))
    random_rows = []
    for seed in range(args.grid_random):
        unary, graph = random_weight_instance(args.grid_random_n, seed)
        label = f"random-weight must-link n = {args.grid_random_n:,} #{seed}"
        print(f"  {label}", file=sys.stderr, flush=True)
        random_rows.append((label, measure(unary, graph, args.repeats)))
    load1 = os.getloadavg()
    text = table(rows)
    if random_rows:
        text += "\n\n" + table(random_rows)
    notes = (f"{args.repeats} interleaved rounds per instance (the engines' order reversed in every "
             "other round); load average (1, 5, 15 min) "
             f"{load0[0]:.1f}, {load0[1]:.1f}, {load0[2]:.1f} before and {load1[0]:.1f}, {load1[1]:.1f}, "
             f"{load1[2]:.1f} after, on {os.cpu_count()} cores; "
             f"{time.perf_counter() - t_start:.0f} s in all. "
             "Energies relative to GCO's; bound: the best lower bound any engine reported "
             "(TRW-S's, or BP's on lattices). Time: wall-clock; CPU time: the process's "
             "(time.process_time), less inflated by other jobs on the machine.")
    print(text + "\n\n" + notes)
    if not args.no_write:
        print("wrote", write_result("inference-grid", text, notes=notes), file=sys.stderr)
    return text
