"""ExactMILP: the Kleinberg–Tardos program with integrality (Basu 2005, App. A.2).

Checked against brute-force enumeration, and as an anytime solver under a time limit.
"""

import numpy as np
import pytest
from mrf_problems import brute_force, random_problem

from hmrf.inference import ICM, BeliefPropagation, ExactMILP
from hmrf.inference.auto import AutoEngine


@pytest.mark.parametrize("seed", range(12))
def test_exact_milp_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(3, 7)), int(rng.integers(2, 4))
    unary, g = random_problem(rng, n, k, int(rng.integers(2, 10)), p_hard=0.2 * (seed % 2),
                              tables=seed % 3 == 0)
    best, _ = brute_force(unary, g)
    res = ExactMILP().map(unary, g)
    assert res.converged
    assert res.energy == pytest.approx(best, abs=1e-7)
    assert res.lower_bound == pytest.approx(best, abs=1e-6)


def test_exact_time_limit_reports_bound_and_not_converged():
    rng = np.random.default_rng(13)
    unary, g = random_problem(rng, 40, 5, 120, p_cl=0.8)
    res = ExactMILP(time_limit=1e-4).map(unary, g, rng=0)
    assert not res.converged
    assert res.lower_bound <= res.energy + 1e-7
    assert res.info["anytime_batches"] >= 1


# ------------------- anytime: never worse than the warm start, never worse with more time
def _hard_instance():
    # 60 nodes, ~400 edges, mostly cannot-links: HiGHS needs far more than 0.5 s
    rng = np.random.default_rng(0)
    return random_problem(rng, 60, 3, 400, p_cl=0.7)


@pytest.mark.parametrize("time_limit", [1e-6, 0.05, 0.5])
def test_time_limited_milp_is_never_worse_than_its_warm_start(time_limit):
    unary, g = _hard_instance()
    icm = ICM().map(unary, g, rng=0)
    auto = AutoEngine().map(unary, g, rng=0)
    res = ExactMILP(time_limit=time_limit).map(unary, g, init=icm.labels, rng=0)
    assert not res.converged
    assert res.energy <= min(icm.energy, auto.energy) + 1e-9
    assert res.energy <= res.info["warm_energy"] + 1e-9
    assert res.energy == pytest.approx(g.energy(res.labels, unary))
    assert res.lower_bound <= res.energy + 1e-7
    assert res.info["anytime_batches"] >= 1


def test_more_time_never_gives_a_worse_labelling():
    # the warm start does not depend on the limit and HiGHS' incumbent only improves
    # as it runs: the energy is non-increasing in time_limit (same seed)
    unary, g = random_problem(np.random.default_rng(0), 60, 4, 400)
    energies = [ExactMILP(time_limit=t).map(unary, g, rng=0).energy for t in (0.01, 0.05, 0.3, 1.5)]
    assert all(b <= a + 1e-9 for a, b in zip(energies, energies[1:]))
    assert energies[0] <= BeliefPropagation().map(unary, g, rng=0).energy + 1e-9


def _stopped_highs(labels, k, bound):
    """What HiGHS returns when the time limit stops it: an incumbent (or none) and a bound."""
    from scipy.optimize import OptimizeResult

    x = None if labels is None else np.eye(k)[labels].ravel()
    return OptimizeResult(x=x, status=1, fun=np.nan, mip_dual_bound=bound, mip_node_count=7,
                          message="time limit reached")


def test_time_limited_milp_keeps_the_better_of_incumbent_and_warm_start(monkeypatch):
    # HiGHS is replaced by a stub that stops with a given incumbent, so the anytime
    # step is tested deterministically: the result is the better of the incumbent and
    # the warm start on the batch, and the bound the larger of HiGHS' and the LP's
    import hmrf.inference.milp as milp_module
    from hmrf.inference.lp import build_program, solve_relaxation

    unary, g = _hard_instance()
    lp = solve_relaxation(build_program(unary, g, cycles=True))[1]
    warm = ExactMILP(time_limit=1e-6).map(unary, g, rng=0)
    poor = np.random.default_rng(1).integers(0, 3, 60)
    for incumbent, bound in ((poor, lp + 1.0), (warm.labels, lp - 1.0), (None, -np.inf)):
        monkeypatch.setattr(milp_module, "_solve_milp",
                            lambda u, sub, t, gap, y=incumbent, b=bound: _stopped_highs(y, 3, b))
        res = ExactMILP(time_limit=1.0).map(unary, g, rng=0)
        assert res.energy == pytest.approx(warm.energy)  # never worse than the warm start
        assert not res.converged and res.lower_bound == pytest.approx(max(lp, bound))
        assert res.info["mip_nodes"] == 7
    # an incumbent better than the warm start is kept
    unary2, g2 = random_problem(np.random.default_rng(4), 8, 3, 14, p_cl=0.8)
    best, y = brute_force(unary2, g2)
    monkeypatch.setattr(milp_module, "_solve_milp", lambda u, sub, t, gap: _stopped_highs(y, 3, -np.inf))
    monkeypatch.setattr(milp_module, "_warm_start", lambda u, gr, init, rng: np.zeros(8, dtype=np.int64))
    res = ExactMILP(time_limit=1.0).map(unary2, g2, rng=0)
    assert res.energy == pytest.approx(best) and res.info["highs_incumbents"] == 1


def test_exact_milp_is_monotone_from_its_init():
    assert ExactMILP.monotone_from_init
    rng = np.random.default_rng(3)
    unary, g = random_problem(rng, 8, 3, 14, p_cl=0.8)
    best, y = brute_force(unary, g)
    res = ExactMILP(time_limit=1e-6).map(unary, g, init=y, rng=0)
    assert res.energy == pytest.approx(best)  # the optimal warm start survives


# ------------------------------------------------------------ the strengthened program
def _frustrated_by_hand(g):
    """Triangles (as sorted node triples with the cannot-link pair) by looping over triples."""
    import itertools

    kinds = {}
    for (a, b), kd, w in zip(g.edges, g.kind, g.weight):
        if w > 0 and kd != 0 and not (kd == 1 and np.isinf(w)):
            kinds.setdefault((min(a, b), max(a, b)), set()).add(int(kd))
    out = set()
    for a, b, c in itertools.combinations(range(g.n_nodes), 3):
        sides = [(a, b), (b, c), (a, c)]
        if all(p in kinds for p in sides):
            for neg in sides:
                if -1 in kinds[neg] and all(1 in kinds[p] for p in sides if p != neg):
                    out.add((a, b, c, neg))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_frustrated_triangles_are_every_two_must_link_one_cannot_link_triangle(seed):
    from hmrf.inference.lp import frustrated_triangles

    rng = np.random.default_rng(50 + seed)
    unary, g = random_problem(rng, 12, 3, 40, p_cl=0.4, p_hard=0.3 * (seed % 2))
    pairs, rows = frustrated_triangles(g)
    found = set()
    for r in rows:
        nodes = sorted(set(pairs[r].ravel().tolist()))
        found.add((*nodes, tuple(pairs[r[2]].tolist())))
    assert found == _frustrated_by_hand(g)


@pytest.mark.parametrize("seed", range(10))
def test_cycle_inequalities_tighten_the_relaxation_but_keep_the_optimum(seed):
    from hmrf.inference.lp import build_program, solve_relaxation

    rng = np.random.default_rng(70 + seed)
    unary, g = random_problem(rng, 7, 3, 16, p_cl=0.5, p_hard=0.2 * (seed % 2))
    best, y = brute_force(unary, g)
    plain = solve_relaxation(build_program(unary, g))[1]
    strong = solve_relaxation(build_program(unary, g, cycles=True))[1]
    assert plain - 1e-7 <= strong <= best + 1e-7
    res = ExactMILP().map(unary, g)  # the integer program with the cycles
    assert res.energy == pytest.approx(best, abs=1e-7) and res.converged


def test_cycle_inequalities_cut_off_the_relaxation_of_a_frustrated_triangle():
    # two must-links and a cannot-link on a triangle, no unary preference: the plain
    # relaxation pays nothing (uniform rows satisfy the cannot-link, equal rows the
    # must-links); every labelling pays the cheapest of the three, and so does the
    # strengthened relaxation
    from hmrf import PairwiseGraph
    from hmrf.inference.lp import build_program, solve_relaxation

    g = PairwiseGraph.potts(3, [(0, 1), (1, 2), (0, 2)], [1.0, 2.0, 1.5], [1, 1, -1])
    unary = np.zeros((3, 3))
    assert solve_relaxation(build_program(unary, g))[1] == pytest.approx(0.0, abs=1e-9)
    assert solve_relaxation(build_program(unary, g, cycles=True))[1] == pytest.approx(1.0)
    assert brute_force(unary, g)[0] == pytest.approx(1.0)


def test_time_limit_without_a_feasible_labelling_raises_constraint_search_error(monkeypatch):
    # a feasible problem (two hard cannot-linked points, k = 2) whose warm start breaks
    # the cannot-link: when HiGHS stops without an incumbent, the engine has neither a
    # labelling nor a proof, which is ConstraintSearchError, not InfeasibleError
    import hmrf.inference.milp as milp_module
    from hmrf import Constraints
    from hmrf.exceptions import ConstraintSearchError, InfeasibleError

    unary = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    c = Constraints.from_pairs(cannot_link=[(0, 1)], n=3, weight=np.inf)
    assert ExactMILP().map(unary, c).energy == pytest.approx(1.0)  # feasible
    monkeypatch.setattr(milp_module, "_warm_start", lambda u, gr, init, rng: np.zeros(len(u), dtype=np.int64))
    with pytest.raises(ConstraintSearchError, match="time_limit"):
        ExactMILP(time_limit=1e-9).map(unary, c)  # too short to start HiGHS
    monkeypatch.setattr(milp_module, "_solve_milp", lambda u, sub, t, gap: _stopped_highs(None, 2, -np.inf))
    with pytest.raises(ConstraintSearchError, match="neither a labelling"):
        ExactMILP(time_limit=1.0).map(unary, c)
    # a proof of infeasibility stays an InfeasibleError
    monkeypatch.undo()
    c3 = Constraints.from_pairs(cannot_link=[(0, 1), (1, 2), (0, 2)], n=3, weight=np.inf)
    with pytest.raises(InfeasibleError):
        ExactMILP().map(unary, c3)
