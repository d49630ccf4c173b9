"""``inference="auto"`` against GCO on the mixed E-steps of ``benchmarks/inference.py --scale``,
at the same energy: ``python benchmarks/inference_mixed_reach.py``.

On E-steps with cannot-links GCO's α-expansion ends far above ``auto``'s energy (a
cannot-link is a negative Potts weight, which its moves cannot optimise), so the
finishing times of the two solve different problems. This script measures the time
``auto`` takes to reach GCO's final energy: on these graphs ``auto`` hands the whole
graph to belief propagation (then runs α-expansion moves from its labelling), and BP
reports its best labelling after every iteration; the time to the first iteration at or
below GCO's energy is read from that report (its energy evaluations included), as CPU
time (``time.process_time``) over GCO's CPU time in the same round. ``auto``'s time to
finish and its energy below GCO's are given beside it.

The instances are those of ``--scale`` (:func:`inference_scale.scale_instance`, group
``mixed``, seeds 0-2), rounds interleaved with GCO (GCO first), the median over rounds
after one warm-up round. Writes ``docs/results/inference-mixed-reach.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import inference_grid  # noqa: E402
import inference_scale  # noqa: E402
from _results import write_result  # noqa: E402

from hmrf import PairwiseGraph  # noqa: E402
from hmrf.inference import auto  # noqa: E402
from hmrf.inference.bp import BeliefPropagation  # noqa: E402


@contextlib.contextmanager
def traced_bp(trace: list):
    """``auto``'s belief propagation, recording ``(CPU time, iteration, energy)`` after
    every iteration (the progress BP reports to ``auto``) while the context is open; the
    energy is that of the problem ``auto`` hands BP (isolated nodes left out)."""

    class Traced(BeliefPropagation):
        def _solve(self, unary, graph, init, rng, notify):
            def record(it, labels, bound=None):
                trace.append((time.process_time(), it, float(graph.energy(labels, unary))))
                notify(it, labels, bound)
            return super()._solve(unary, graph, init, rng, record)

    original = auto.BeliefPropagation
    auto.BeliefPropagation = Traced
    try:
        yield
    finally:
        auto.BeliefPropagation = original


def gco_cpu(unary, graph):
    """GCO's energy and CPU seconds on the E-step (cannot-links as negative weights)."""
    signed = np.where(graph.kind == 1, graph.weight, -graph.weight)
    labels, _, cpu = inference_grid.run_gco_timed(unary, graph, scale=inference_scale.SCALE, weight=signed)
    return graph.energy(labels, unary), cpu


def measure(n: int, seed: int, repeats: int) -> dict:
    unary, graph = inference_scale.scale_instance("mixed", n, seed)
    isolated = np.bincount(graph.edges.ravel(), minlength=graph.n_nodes) == 0
    offset = unary[isolated].min(axis=1).sum()  # BP's reported energy leaves isolated nodes out
    reach, finish, trace = [], [], []
    for round_ in range(repeats + 1):
        e_gco, c_gco = gco_cpu(unary, graph)
        trace.clear()
        fresh = PairwiseGraph.potts(graph.n_nodes, graph.edges, graph.weight, graph.kind)
        with traced_bp(trace):
            c0 = time.process_time()
            res = auto.AutoEngine().map(unary, fresh, rng=0)
            c_auto = time.process_time() - c0
        if res.info["expansion_nodes"]:
            raise RuntimeError("auto cut part of a mixed graph alone; the trace misses that part")
        first = next(((t - c0, it) for t, it, e in trace if e + offset <= e_gco + 1e-9), None)
        if first is None:
            raise RuntimeError(f"auto's BP never reached GCO's energy on mixed {n} #{seed}")
        if round_:  # the first round warms up numba's kernels and the caches
            reach.append(first[0] / c_gco)
            finish.append(c_auto / c_gco)
    return dict(e_gco=e_gco, e_auto=res.energy, iteration=first[1], reach=float(np.median(reach)),
                finish=float(np.median(finish)))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")], default=[5000, 50000])
    p.add_argument("--instances", type=int, default=3)
    p.add_argument("--repeats", type=int, default=5, help="timed rounds per instance (after a warm-up)")
    p.add_argument("--no-write", dest="write", action="store_false")
    args = p.parse_args(argv)
    load = os.getloadavg()
    rows = ["| E-step | E (GCO) | auto's E − GCO's | BP iteration at GCO's E | CPU time to GCO's E / GCO "
            "| CPU time to finish / GCO |", "|---|---:|---:|---:|---:|---:|"]
    for n in args.sizes:
        for seed in range(args.instances):
            r = measure(n, seed, args.repeats)
            below = 100 * (r["e_auto"] / r["e_gco"] - 1)
            line = (f"| mixed {n:,} #{seed} | {r['e_gco']:.1f} | {below:+.1f} % "
                    f"| {r['iteration']} | {r['reach']:.2f}× | {r['finish']:.2f}× |")
            print(line, flush=True)
            rows.append(line)
    after = os.getloadavg()
    notes = (f"Median over {args.repeats} rounds interleaved with GCO, after a warm-up round. "
             f"Load average (1, 5, 15 min) {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f} before and "
             f"{after[0]:.1f}, {after[1]:.1f}, {after[2]:.1f} after.")
    if args.write:
        print(write_result("inference-mixed-reach", "\n".join(rows), notes=notes))


if __name__ == "__main__":
    main()
