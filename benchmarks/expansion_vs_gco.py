"""AlphaExpansion against GCO's α-expansion on large must-link E-steps: time and energy.

GCO (Boykov, Veksler & Zabih's C++ library, through ``gco-wrapper``) is the field's
reference α-expansion; it is a benchmark-only dependency, never imported by ``hmrf``
(``pip install gco-wrapper``). Both engines get the same energy: ``n`` points, ``2n``
random must-links (average degree 4), ``k`` labels, unary costs uniform in [0, 1),
must-link weights uniform in [0.2, 2). GCO works in integers: every cost is scaled by
``SCALE`` and rounded, with ``down_weight_factor=1`` (otherwise gco-wrapper rescales and
truncates every cost to 0), and AlphaExpansion gets exactly the same rounded costs
divided by ``SCALE``, so both minimise one function. Both start from the unary argmin
and run to convergence. Energies are evaluated by ``PairwiseGraph.energy``.

Several instances per size (the number of sweeps either engine needs varies from one
instance to the next); on each, runs are interleaved (GCO, ours, GCO, ours, ...) and
the median time of each is reported, with the median of the paired ratios (ours over
the GCO run just before it) and the highest energy of the runs; the last rows of a size
give the median ratio and the lowest, highest and mean energy difference over all runs.
GCO's time is that of its C++ calls, without the wrapper's Python loop that sets every
site's initial label one call at a time (``inference_grid.run_gco``). Timings on a
shared machine are noisy: re-run on an idle one. Writes
``docs/results/expansion-vs-gco.md`` (``--no-write`` to skip).

Run from the repository root::

    python benchmarks/expansion_vs_gco.py                    # 5,000 and 50,000 points
    python benchmarks/expansion_vs_gco.py --sizes 5000 --instances 10 --label-order random
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from hmrf import PairwiseGraph
from hmrf.inference.expansion import AlphaExpansion

#: integer scale of the costs handed to GCO
SCALE = 1000


def must_link_instance(rng, n, k, degree=4.0):
    """Integer-valued costs ``(unary, pairs, weight)`` of a random must-link E-step."""
    m = int(round(degree * n / 2))
    pairs = rng.integers(n, size=(2 * m, 2))
    pairs = np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1)
    pairs = np.unique(pairs, axis=0)
    pairs = pairs[rng.permutation(pairs.shape[0])[:m]]
    unary = np.rint(rng.random((n, k)) * SCALE).astype(np.int32)
    weight = np.rint(rng.uniform(0.2, 2.0, size=pairs.shape[0]) * SCALE).astype(np.int32)
    return unary, pairs, weight


def run_gco(unary, pairs, weight, init):
    """GCO from the unary argmin (``init``): labels and the seconds of its C++ calls."""
    from inference_grid import run_gco as gco_core

    graph = PairwiseGraph.potts(unary.shape[0], pairs, weight / SCALE, np.ones(pairs.shape[0], dtype=np.int8))
    assert np.array_equal(init, np.argmin(unary, axis=1))
    return gco_core(unary / SCALE, graph, scale=SCALE)


def run_ours(unary, graph, seed, label_order):
    t0 = time.perf_counter()
    res = AlphaExpansion(label_order=label_order).map(unary, graph, rng=seed)
    return res, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000, 50000])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--instances", type=int, default=3, help="random instances per size")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each engine per instance")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--label-order", choices=("fixed", "random"), default="fixed",
                    help="AlphaExpansion's label order (random: one seed per timed run)")
    ap.add_argument("--no-write", action="store_true", help="do not write docs/results/")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()
    table = []
    small = must_link_instance(np.random.default_rng(0), 50, args.k)  # load compiled kernels untimed
    AlphaExpansion().map(small[0] / SCALE, PairwiseGraph.potts(50, small[1], small[2] / SCALE,
                                                               np.ones(small[1].shape[0], dtype=np.int8)))
    print(f"{'n':>7} {'edges':>7} {'E(GCO)':>12} {'E(ours)':>12} {'rel. diff':>10} "
          f"{'t GCO s':>8} {'t ours s':>8} {'ratio':>6} {'sweeps':>6}")
    for n in args.sizes:
        ratios, diffs, lowest, mean_diffs = [], [], [], []
        for inst in range(args.instances):
            rng = np.random.default_rng([args.seed, n, inst])
            unary_i, pairs, weight_i = must_link_instance(rng, n, args.k)
            unary = unary_i / SCALE
            graph = PairwiseGraph.potts(n, pairs, weight_i / SCALE, np.ones(pairs.shape[0], dtype=np.int8))
            init = np.argmin(unary, axis=1)
            t_gco, t_ours, energies, paired = [], [], [], []
            for r in range(args.repeats):
                labels_gco, t = run_gco(unary_i, pairs, weight_i, init)
                t_gco.append(t)
                res, t = run_ours(unary, graph, args.seed + r, args.label_order)
                t_ours.append(t)
                paired.append(t / t_gco[-1])
                energies.append(res.energy)
            e_gco = graph.energy(labels_gco, unary)
            rel = (max(energies) - e_gco) / abs(e_gco)  # the worst of the runs
            lowest.append((min(energies) - e_gco) / abs(e_gco))
            mean_diffs.append((np.mean(energies) - e_gco) / abs(e_gco))
            tg, to = float(np.median(t_gco)), float(np.median(t_ours))
            ratios.append(float(np.median(paired)))
            diffs.append(rel)
            print(f"{n:>7} {pairs.shape[0]:>7} {e_gco:>12.3f} {res.energy:>12.3f} {rel:>+10.4%} "
                  f"{tg:>8.3f} {to:>8.3f} {ratios[-1]:>6.2f} {res.n_iter:>6}", flush=True)
        print(f"{n:>7} {'all':>7} {'':>12} {'':>12} {max(diffs):>+10.4%} {'':>8} {'median':>8} "
              f"{float(np.median(ratios)):>6.2f}", flush=True)
        print(f"{'':>7} energy vs GCO over all runs: lowest {min(lowest):+.4%}, highest "
              f"{max(diffs):+.4%}, mean {float(np.mean(mean_diffs)):+.4%}", flush=True)
        table.append([f"{n:,}", f"{2 * n:,}", f"{min(lowest):+.4%} to {max(diffs):+.4%}",
                      f"{float(np.median(ratios)):.2f} ({min(ratios):.2f}–{max(ratios):.2f})"])
    load1 = os.getloadavg()
    if not args.no_write:
        from _results import markdown_table, write_result

        body = markdown_table(["points", "must-links", "energy vs GCO (lowest to highest run)",
                               "time / GCO's (median of paired ratios; range over instances)"], table)
        notes = (f"k = {args.k}, {args.instances} instances per size, {args.repeats} interleaved runs "
                 f"each, label order {args.label_order}. Load average (1, 5, 15 min) {load0[0]:.1f}, "
                 f"{load0[1]:.1f}, {load0[2]:.1f} before and {load1[0]:.1f}, {load1[1]:.1f}, {load1[2]:.1f} "
                 f"after, on {os.cpu_count()} cores.")
        print("wrote", write_result("expansion-vs-gco", body, notes=notes))


if __name__ == "__main__":
    main()
