"""ExactMILP: the Kleinberg–Tardos program with integrality (Basu 2005, App. A.2).

Checked against brute-force enumeration, and as an anytime solver under a time limit.
"""

import numpy as np
import pytest
from mrf_problems import brute_force, random_problem

from hmrf.inference import ExactMILP


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
