"""BP's default on large must-link E-steps with random weights, against GCO, several seeds.

``python benchmarks/must_link_esteps.py`` (writes ``docs/results/must-link-esteps.md``).

What it measures: on 50,000-node must-link E-steps (``--n``), the energy of BP's default
(``inference="bp"``), of TRW-S (``inference="trws"``) and of ordinary max-product
(``BeliefPropagation(reweight=None)``, without the TRW-S that BP's default composes on
must-link components) relative to GCO's α-expansion, the gap to the best lower bound
any engine proved, and the time relative to GCO's. Families, ``--seeds`` instances each:

* ``uniform``: :func:`inference_grid.random_weight_instance`: unary costs uniform in
  [0, 1), ``2n`` must-links between random pairs (mean degree 4), weights uniform in
  [0.1, 1.1], ``k = 10`` (the grid study's instances are its seeds 0 and 1);
* ``sparse``: the same with ``n`` must-links (mean degree 2: a giant component among
  many trees, where the TRW-S bound is loose);
* ``k = 20``: the same with 20 labels;
* ``EM``: the first E-step of ``HMRFKMeans(10, inference="bp")`` on 50,000 points from a
  mixture of 10 Gaussians in the plane (centres N(0, 1.5²), unit spread), with ``2n``
  must-links between points of one component, 10 % of them redirected to a random
  point (oracle mistakes); constraint weights ``w="auto"``; the unary costs with their
  row minimum removed (only the constraints' share of the energy).

Costs are rounded to multiples of ``1 / SCALE`` (``SCALE = 10,000``) so that GCO, which
works in integers, minimises the function the other engines see (:mod:`inference_grid`).
Each engine runs on a fresh copy of the graph (a cold call), after one untimed call on a
30-node chain with the instance's ``k`` (loading compiled kernels is not solving). Timing:
``--repeats`` rounds, GCO and every engine in each, the order reversed every other round;
an engine's time ratio is the median over rounds of its time over GCO's in the same round
(wall-clock and CPU, ``time.process_time``). Energies are those of the first round (every
engine is deterministic).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from inference_grid import SCALE, random_weight_instance, rounded, run_gco_timed

from hmrf import PairwiseGraph
from hmrf.inference import TRWS, BeliefPropagation

#: BP's default, TRW-S, and ordinary max-product (BP without TRW-S)
ENGINES = {"bp": BeliefPropagation, "trws": TRWS,
           "bp, reweight=None": lambda: BeliefPropagation(reweight=None)}
FAMILIES = ("uniform", "sparse", "k = 20", "EM")


def random_instance(n, seed, k=10, degree=4):
    """Unary costs uniform in [0, 1), ``degree n / 2`` random must-links, weights in [0.1, 1.1]."""
    rng = np.random.default_rng([seed, n, k, degree, 38])
    unary = rng.random((n, k))
    pairs = rng.integers(n, size=(degree * n // 2, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return rounded(unary, pairs, rng.uniform(0.1, 1.1, len(pairs)), n)


def em_instance(n, seed, k=10):
    """The first E-step of an HMRF-KMeans fit (module docstring), reduced to the constrained
    points, unary row minima removed, costs rounded."""
    from hmrf import Constraints, HMRFKMeans

    rng = np.random.default_rng([seed, n, 39])
    truth = rng.integers(k, size=n)
    X = rng.normal(scale=1.5, size=(k, 2))[truth] + rng.normal(size=(n, 2))
    pairs = np.empty((0, 2), dtype=np.int64)
    while len(pairs) < 2 * n:
        p = rng.integers(n, size=(4 * n, 2))
        pairs = np.vstack([pairs, p[(p[:, 0] != p[:, 1]) & (truth[p[:, 0]] == truth[p[:, 1]])]])[:2 * n]
    wrong = rng.random(len(pairs)) < 0.1
    pairs[wrong, 1] = rng.integers(n, size=int(wrong.sum()))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    seen = []

    class Recording(BeliefPropagation):
        def _solve(self, unary, graph, init, rng, notify):
            if not seen:
                seen.append((unary.copy(), graph))
            return super()._solve(unary, graph, init, rng, notify)

    HMRFKMeans(k, inference=Recording(), n_init=1, max_iter=1, random_state=seed).fit(
        X, constraints=Constraints.from_pairs(must_link=pairs, n=n))
    unary, graph = seen[0]
    return rounded(unary - unary.min(axis=1, keepdims=True), graph.edges, graph.weight, unary.shape[0])


def instance(family, n, seed):
    if family == "uniform":
        return random_weight_instance(n, seed)
    if family == "sparse":
        return random_instance(n, seed, degree=2)
    if family == "k = 20":
        return random_instance(n, seed, k=20)
    return em_instance(n, seed)


def measure(unary, graph, repeats):
    """Per engine (GCO included): energy, bound, median time / GCO's (wall, CPU), note."""
    chain = PairwiseGraph.potts(30, np.c_[np.arange(29), np.arange(1, 30)], np.full(29, 0.1), np.ones(29))
    for factory in ENGINES.values():  # load the kernels compiled for this k, untimed
        factory().map(unary[:30], chain, rng=0)
    names = ["gco", *ENGINES]
    first, wall, cpu = {}, {name: [] for name in ENGINES}, {name: [] for name in ENGINES}
    for r in range(repeats):
        times = {}
        for name in names if r % 2 == 0 else names[::-1]:
            if name == "gco":
                labels, t, c = run_gco_timed(unary, graph, SCALE)
                first.setdefault("gco", graph.energy(labels, unary))
                times[name] = (t, c)
                continue
            fresh = PairwiseGraph.potts(graph.n_nodes, graph.edges, graph.weight, graph.kind)
            t0, c0 = time.perf_counter(), time.process_time()
            res = ENGINES[name]().map(unary, fresh, rng=0)
            times[name] = (time.perf_counter() - t0, time.process_time() - c0)
            first.setdefault(name, res)
        for name in ENGINES:
            wall[name].append(times[name][0] / times["gco"][0])
            cpu[name].append(times[name][1] / times["gco"][1])
        first.setdefault("gco_time", times["gco"][0])
    return first, {name: (float(np.median(wall[name])), float(np.median(cpu[name]))) for name in ENGINES}


def main(argv=None) -> str:
    from _results import markdown_table, write_result

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=50_000, help="nodes per E-step (default 50,000)")
    p.add_argument("--seeds", type=int, default=3, help="instances per family (default 3)")
    p.add_argument("--families", type=lambda v: v.split(","), default=list(FAMILIES),
                   help="comma-separated, of: " + ", ".join(FAMILIES))
    p.add_argument("--repeats", type=int, default=3, help="interleaved timing rounds (default 3)")
    p.add_argument("--no-write", action="store_true", help="print the table only")
    args = p.parse_args(argv)
    load0, t_start = os.getloadavg(), time.perf_counter()
    rows = []
    for family in args.families:
        for seed in range(args.seeds):
            unary, graph = instance(family, args.n, seed)
            print(f"  {family} #{seed}", file=sys.stderr, flush=True)
            res, ratios = measure(unary, graph, args.repeats)
            e_gco = res["gco"]
            bound = max((r.lower_bound for name, r in res.items() if name in ENGINES
                         and r.lower_bound is not None), default=None)
            cells = [f"{family} #{seed}", f"{e_gco:.2f} ({res['gco_time']:.2f} s)",
                     "—" if bound is None else f"{100 * (e_gco - bound) / abs(e_gco):+.3f} %"]
            for name in ENGINES:
                r = res[name]
                stop = r.info.get("stopped", "")
                cells.append(f"{100 * (r.energy - e_gco) / abs(e_gco):+.3f} %, {ratios[name][0]:.2f}× "
                             f"(CPU {ratios[name][1]:.2f}×; {r.n_iter} it, {stop})")
            rows.append(cells)
            print("  | " + " | ".join(cells), file=sys.stderr, flush=True)
    load1 = os.getloadavg()
    text = markdown_table(["E-step", "GCO: energy (time)", "GCO − best bound",
                           *(f"{name}: E − E_GCO, time / GCO" for name in ENGINES)], rows)
    notes = (f"n = {args.n:,}; {args.repeats} interleaved rounds per instance (the order reversed every "
             "other round); time / GCO: the median of the paired ratios, wall-clock (CPU beside it). "
             "Best bound: the highest lower bound BP or TRW-S proved. Load average (1, 5, 15 min) "
             f"{load0[0]:.1f}, {load0[1]:.1f}, {load0[2]:.1f} before and {load1[0]:.1f}, {load1[1]:.1f}, "
             f"{load1[2]:.1f} after, on {os.cpu_count()} cores; "
             f"{time.perf_counter() - t_start:.0f} s in all.")
    print(text + "\n\n" + notes)
    if not args.no_write:
        print("wrote", write_result("must-link-esteps", text, notes=notes), file=sys.stderr)
    return text


if __name__ == "__main__":
    main()
