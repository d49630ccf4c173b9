"""AlphaExpansion against GCO's α-expansion on large must-link E-steps (issue 17).

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
the median time of each is reported, with the ratio and the highest energy of the
runs; the last rows of a size give the median ratio and the lowest, highest and mean
energy difference over all runs. Timings on a shared machine are noisy: re-run on an
idle one.

Run from the repository root::

    python benchmarks/expansion_vs_gco.py                    # 5,000 and 50,000 points
    python benchmarks/expansion_vs_gco.py --sizes 5000 --instances 10 --label-order random
"""

from __future__ import annotations

import argparse
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
    import gco  # benchmark-only dependency

    k = unary.shape[1]
    pairwise = (1 - np.eye(k)).astype(np.int32)
    t0 = time.perf_counter()
    labels = gco.cut_general_graph(pairs.astype(np.int32), weight, unary, pairwise, n_iter=-1,
                                   algorithm="expansion", init_labels=init.astype(np.int32),
                                   down_weight_factor=1)
    return np.asarray(labels, dtype=np.int64), time.perf_counter() - t0


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
    args = ap.parse_args(argv)
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
            t_gco, t_ours, energies = [], [], []
            for r in range(args.repeats):
                labels_gco, t = run_gco(unary_i, pairs, weight_i, init)
                t_gco.append(t)
                res, t = run_ours(unary, graph, args.seed + r, args.label_order)
                t_ours.append(t)
                energies.append(res.energy)
            e_gco = graph.energy(labels_gco, unary)
            rel = (max(energies) - e_gco) / abs(e_gco)  # the worst of the runs
            lowest.append((min(energies) - e_gco) / abs(e_gco))
            mean_diffs.append((np.mean(energies) - e_gco) / abs(e_gco))
            tg, to = float(np.median(t_gco)), float(np.median(t_ours))
            ratios.append(to / tg)
            diffs.append(rel)
            print(f"{n:>7} {pairs.shape[0]:>7} {e_gco:>12.3f} {res.energy:>12.3f} {rel:>+10.4%} "
                  f"{tg:>8.3f} {to:>8.3f} {to / tg:>6.2f} {res.n_iter:>6}", flush=True)
        print(f"{n:>7} {'all':>7} {'':>12} {'':>12} {max(diffs):>+10.4%} {'':>8} {'median':>8} "
              f"{float(np.median(ratios)):>6.2f}", flush=True)
        print(f"{'':>7} energy vs GCO over all runs: lowest {min(lowest):+.4%}, highest "
              f"{max(diffs):+.4%}, mean {float(np.mean(mean_diffs)):+.4%}", flush=True)


if __name__ == "__main__":
    main()
