"""ExactMILP as an anytime solver, and the strength of its program.

What it measures: whether more time never gives ExactMILP a worse answer (its energy,
bound and gap per time limit), and how much the triangle inequalities of frustrated
triangles tighten the program's LP bound and speed up HiGHS' branch and cut.

``python benchmarks/inference.py --milp`` (writes ``docs/results/inference-milp.md``).

Instances: :func:`mrf_problems.random_problem` of the test suite (``tests/``), random
unary costs in [0, 3), random pairs, half must-links and half cannot-links, weights in
[0, 2). Two tables:

* **anytime** — 60 points, 400 constraints, k = 4 (seeds 0-2): the energy, the bound and
  the gap ``(E - LB) / E`` of ``ExactMILP(time_limit=t)`` for ``t`` in
  ``--milp-limits``, with belief propagation's and ``auto``'s energies for reference;
* **formulation** — the Kleinberg–Tardos program (A.1-A.8) with and without the
  triangle inequalities of its frustrated triangles (:func:`hmrf.inference.lp.
  build_program` with ``cycles``): the LP bound, and HiGHS' branch and cut on the
  integer program (``scipy.optimize.milp``, 60 s): its time, status and final bound.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from hmrf.inference import BeliefPropagation, ExactMILP
from hmrf.inference.auto import AutoEngine
from hmrf.inference.lp import build_program, solve_relaxation

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from mrf_problems import random_problem  # noqa: E402


def instance(n, m, k, seed):
    return random_problem(np.random.default_rng(seed), n, k, m)


def anytime(limits):
    rows = []
    for seed in range(3):
        unary, g = instance(60, 400, 4, seed)
        bp = BeliefPropagation().map(unary, g, rng=0).energy
        auto = AutoEngine().map(unary, g, rng=0).energy
        for t in limits:
            t0 = time.perf_counter()
            res = ExactMILP(time_limit=t).map(unary, g, rng=0)
            wall = time.perf_counter() - t0
            src = "HiGHS" if res.info["highs_incumbents"] else "warm start"
            head = t == limits[0]
            rows.append([f"#{seed}" if head else "", f"{bp:.2f}" if head else "",
                         f"{auto:.2f}" if head else "", f"{t:g} s", f"{res.energy:.2f}",
                         f"{res.lower_bound:.2f}",
                         f"{100 * res.gap / res.energy:.1f} %", src, f"{wall:.1f} s"])
            print(f"  anytime #{seed} t={t}: {res.energy:.3f} lb {res.lower_bound:.3f}", file=sys.stderr,
                  flush=True)
    return rows


def integer_program(unary, g, cycles, time_limit):
    prog = build_program(unary, g, cycles=cycles)
    lp = solve_relaxation(prog)[1]
    integ = np.zeros(prog.c.shape[0])
    integ[:prog.n_u] = 1
    cons = [LinearConstraint(prog.A_eq, prog.b_eq, prog.b_eq),
            LinearConstraint(prog.A_ub, -np.inf, prog.b_ub)]
    t0 = time.perf_counter()
    res = milp(prog.c, integrality=integ, bounds=Bounds(prog.lb, prog.ub), constraints=cons,
               options={"time_limit": time_limit, "mip_rel_gap": 1e-9})
    return lp, time.perf_counter() - t0, res


def formulation(time_limit):
    rows = []
    for n, m, seeds in ((30, 120, (0, 1, 2)), (40, 200, (0,)), (60, 400, (0,))):
        for seed in seeds:
            unary, g = instance(n, m, 4, seed)
            for cycles in (False, True):
                lp, t, res = integer_program(unary, g, cycles, time_limit)
                bound = getattr(res, "mip_dual_bound", np.nan)
                status = "optimal" if res.status == 0 else "time limit"
                rows.append([f"{n} points, {m} constraints, #{seed}" if not cycles else "",
                             "KT + cycles" if cycles else "KT (A.1-A.8)", f"{lp:.2f}", f"{bound:.2f}",
                             "—" if res.x is None else f"{res.fun:.2f}", status, f"{t:.1f} s"])
                print(f"  formulation n={n} #{seed} cycles={cycles}: lp {lp:.3f} {status} {t:.1f}s",
                      file=sys.stderr, flush=True)
    return rows


def part_milp(args) -> str:
    from _results import markdown_table, write_result

    load0 = os.getloadavg()
    t0 = time.perf_counter()
    a = markdown_table(["instance", "BP", "auto", "time_limit", "E", "bound", "gap", "labelling from",
                        "wall"], anytime(args.milp_limits))
    f = markdown_table(["instance", "program", "LP bound", "MILP bound", "MILP incumbent", "status",
                        "time"], formulation(args.milp_time))
    load1 = os.getloadavg()
    body = ("Anytime: 60 points, 400 constraints, k = 4 (seeds 0-2).\n\n" + a
            + f"\n\nThe program, HiGHS alone ({args.milp_time:g} s limit, no warm start), k = 4:\n\n" + f)
    notes = (f"Load average (1, 5, 15 min) {load0[0]:.1f}, {load0[1]:.1f}, {load0[2]:.1f} before and "
             f"{load1[0]:.1f}, {load1[1]:.1f}, {load1[2]:.1f} after, on {os.cpu_count()} cores; "
             f"{time.perf_counter() - t0:.0f} s in all.")
    print(body + "\n\n" + notes)
    if not args.no_write:
        print("wrote", write_result("inference-milp", body, notes=notes), file=sys.stderr)
    return body
