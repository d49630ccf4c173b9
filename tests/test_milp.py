"""ExactMILP: the Kleinberg–Tardos program with integrality (Basu 2005, App. A.2).

Checked against brute-force enumeration, and as an anytime solver under a time limit.
"""

import numpy as np
import pytest
from mrf_problems import brute_force, random_problem

from hmrf.inference import ICM, ExactMILP


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
    assert res.info["fallback_nodes"] > 0


# ------------------------------------------------------------ anytime (issue 14)
def _hard_instance():
    # 60 nodes, ~400 edges, mostly cannot-links: HiGHS needs far more than 0.5 s
    rng = np.random.default_rng(0)
    return random_problem(rng, 60, 3, 400, p_cl=0.7)


@pytest.mark.parametrize("time_limit", [1e-6, 0.05, 0.5])
def test_time_limited_milp_is_never_worse_than_its_warm_start(time_limit):
    unary, g = _hard_instance()
    icm = ICM().map(unary, g, rng=0)
    res = ExactMILP(time_limit=time_limit).map(unary, g, init=icm.labels, rng=0)
    assert not res.converged
    assert res.energy <= icm.energy + 1e-9
    assert res.energy == pytest.approx(g.energy(res.labels, unary))
    assert res.lower_bound <= res.energy + 1e-7
    assert res.info["anytime_batches"] >= 1


def _stopped_highs(labels, k, bound):
    """What HiGHS returns when the time limit stops it: an incumbent (or none) and a bound."""
    from scipy.optimize import OptimizeResult

    x = None if labels is None else np.eye(k)[labels].ravel()
    return OptimizeResult(x=x, status=1, fun=np.nan, mip_dual_bound=bound, mip_node_count=7,
                          message="time limit reached")


def test_time_limited_milp_keeps_the_best_of_incumbent_warm_start_and_polish(monkeypatch):
    # HiGHS is replaced by a stub that stops with a given incumbent, so the anytime
    # step is tested deterministically: the result is no worse than the incumbent, than
    # ICM from it, nor than the warm start, and the bound is HiGHS' dual bound
    import hmrf.inference.milp as milp_module

    unary, g = _hard_instance()
    rng = np.random.default_rng(1)
    poor = rng.integers(0, 3, 60)
    good = ICM().map(unary, g, rng=0).labels
    for incumbent, init in ((poor, good), (good, poor), (poor, None)):
        monkeypatch.setattr(milp_module, "_solve_milp",
                            lambda u, sub, t, gap, y=incumbent: _stopped_highs(y, 3, 42.0))
        res = ExactMILP(time_limit=1.0).map(unary, g, init=init, rng=0)
        assert res.energy <= g.energy(incumbent, unary) + 1e-9
        if init is not None:
            assert res.energy <= g.energy(init, unary) + 1e-9
        assert not res.converged and res.lower_bound == pytest.approx(42.0)
        assert res.info["fallback_nodes"] == 0 and res.info["mip_nodes"] == 7


def test_time_limited_milp_without_incumbent_uses_the_lp_and_its_bound(monkeypatch):
    import hmrf.inference.milp as milp_module
    from hmrf.inference.lp import solve_lp

    unary, g = _hard_instance()
    monkeypatch.setattr(milp_module, "_solve_milp", lambda u, sub, t, gap: _stopped_highs(None, 3, -np.inf))
    init = ICM().map(unary, g, rng=0).labels
    res = ExactMILP(time_limit=1.0).map(unary, g, init=init, rng=0)
    assert res.energy <= g.energy(init, unary) + 1e-9
    assert res.lower_bound == pytest.approx(solve_lp(unary, g)[1])  # the LP value
    assert res.info["fallback_nodes"] == 60


def test_exact_milp_is_monotone_from_its_init():
    assert ExactMILP.monotone_from_init
    rng = np.random.default_rng(3)
    unary, g = random_problem(rng, 8, 3, 14, p_cl=0.8)
    best, y = brute_force(unary, g)
    res = ExactMILP(time_limit=1e-6).map(unary, g, init=y, rng=0)
    assert res.energy == pytest.approx(best)  # the optimal warm start survives
