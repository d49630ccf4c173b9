"""LPRelaxation: the Kleinberg–Tardos LP (Basu 2005, App. A.2, eqs. A.1–A.8) and its rounding."""

import itertools

import numpy as np
import pytest
from mrf_problems import brute_force, random_problem

from hmrf import Constraints, PairwiseGraph
from hmrf.inference import ExactMILP, LPRelaxation
from hmrf.inference.lp import build_program, solve_lp, solve_relaxation
from hmrf.inference.rounding import best_per_component, kleinberg_tardos_rounding

# --------------------------------------------- the program and its bound


def test_lp_is_exact_when_its_solution_is_integral_and_gap_is_zero():
    # must-link-only problems with k = 2 are submodular: the relaxation is tight
    rng = np.random.default_rng(7)
    unary, g = random_problem(rng, 7, 2, 12, p_cl=0.0)
    res = LPRelaxation().map(unary, g, rng=0)
    assert res.info["integral_fraction"] == 1.0
    assert res.gap == pytest.approx(0.0, abs=1e-7)
    assert res.energy == pytest.approx(brute_force(unary, g)[0])


def test_cannot_links_make_the_relaxation_weak():
    # Three mutually cannot-linked points, two clusters, no unary preference. Some
    # cannot-link must be violated (cost = the smallest weight, 1.0), but u = 1/2
    # everywhere satisfies A.8 with z = 0, so the LP value is 0: an integrality gap.
    unary = np.zeros((3, 2))
    c = Constraints.from_pairs(cannot_link=[(0, 1), (1, 2), (0, 2)], n=3, weight=[1.0, 2.0, 3.0])
    lp = LPRelaxation().map(unary, c, rng=0)
    assert lp.lower_bound == pytest.approx(0.0, abs=1e-9)
    assert ExactMILP().map(unary, c).energy == pytest.approx(1.0)
    assert lp.energy >= 1.0 - 1e-9


def test_program_matches_equations_a1_to_a8_by_hand():
    # one must-link (w=2) and one cannot-link (w=3) on two clusters
    unary = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
    g = PairwiseGraph.potts(3, [(0, 1), (1, 2)], [2.0, 3.0], [1, -1])
    p = build_program(unary, g)
    # variables: 6 u, 2 z^(M), 2 z^(C); rows: A.5 + A.6 (2 each), A.7 + A.8 (2 each), A.2 (3)
    assert p.c.shape == (10,)
    assert p.A_ub.shape == (8, 10) and p.A_eq.shape == (3, 10)
    np.testing.assert_allclose(p.c[6:8], [1.0, 1.0])  # w/2 per z^(M)_h
    np.testing.assert_allclose(p.c[8:10], [3.0, 3.0])  # w per z^(C)_h
    np.testing.assert_allclose(p.b_ub, [0, 0, 0, 0, 0, 0, 1, 1])
    # any labelling's program value equals its energy
    for y in itertools.product(range(2), repeat=3):
        x = np.zeros(10)
        x[np.arange(3) * 2 + np.array(y)] = 1
        u = x[:6].reshape(3, 2)
        x[6:8] = np.abs(u[0] - u[1])
        x[8:10] = np.maximum(u[1] + u[2] - 1, 0)
        assert np.all(p.A_ub @ x <= p.b_ub + 1e-12) and np.allclose(p.A_eq @ x, p.b_eq)
        assert p.c @ x == pytest.approx(g.energy(np.array(y), unary))


def test_cvxpy_solver_states_the_same_lp():
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    unary, g = random_problem(rng, 6, 3, 10, tables=True)
    a = LPRelaxation(solver="highs").map(unary, g, rng=0)
    b = LPRelaxation(solver="cvxpy").map(unary, g, rng=0)
    assert b.lower_bound == pytest.approx(a.lower_bound, abs=1e-5)


def test_lp_callback_and_info():
    rng = np.random.default_rng(14)
    unary, g = random_problem(rng, 10, 3, 15)
    bounds = []
    res = LPRelaxation(polish="icm").map(unary, g, rng=0, callback=lambda it, y, e, b: bounds.append(b))
    assert bounds and all(b == pytest.approx(res.lower_bound) for b in bounds)
    assert {"lp_time", "rounding_time", "integral_fraction"} <= set(res.info)


def test_the_e_steps_of_one_graph_start_from_the_last_basis_and_equal_cold_solves():
    # the E-steps of a fit: one graph, new unary costs each time, a label forbidden at
    # one step and allowed again after it
    rng = np.random.default_rng(5)
    unary, g = random_problem(rng, 12, 3, 30)
    for step in range(6):
        u = unary + rng.random(unary.shape) * step
        if step == 3:
            u[[0, 4], [1, 2]] = np.inf
        cold_u, cold, _ = solve_relaxation(build_program(u, g))
        warm_u, warm, info = solve_lp(u, g)
        assert warm == pytest.approx(cold, abs=1e-9)
        assert info["lp_warm"] == (step > 0)
        np.testing.assert_allclose(warm_u.sum(axis=1), 1.0, atol=1e-9)
        assert np.all(warm_u[np.isinf(u)] == 0.0)
        # the value is the program's at the returned u, z^(M) and z^(C) at their optimum
        # given u (A.4-A.8): the solution is this step's, not a stale one
        a, b, w = g.edges[:, 0], g.edges[:, 1], g.weight
        ml = g.kind == 1
        pairwise = (w[ml] / 2 * np.abs(warm_u[a[ml]] - warm_u[b[ml]]).sum(axis=1)).sum() + \
            (w[~ml] * np.maximum(warm_u[a[~ml]] + warm_u[b[~ml]] - 1, 0).sum(axis=1)).sum()
        assert warm == pytest.approx(np.sum(np.where(np.isinf(u), 0.0, u) * warm_u) + pairwise, abs=1e-7)


def test_a_graph_with_a_loaded_relaxation_pickles_and_solves_again():
    import pickle

    rng = np.random.default_rng(6)
    unary, g = random_problem(rng, 9, 3, 14)
    value = solve_lp(unary, g)[1]
    copy = pickle.loads(pickle.dumps(g))
    u, again, info = solve_lp(unary, copy)
    assert again == pytest.approx(value, abs=1e-9) and not info["lp_warm"]
    assert solve_lp(unary + 1.0, copy)[1] == pytest.approx(value + 9.0, abs=1e-9)


# -------------------------------------------------------------- rounding


def test_rounding_returns_valid_labellings_and_respects_zero_weights():
    rng = np.random.default_rng(0)
    u = rng.dirichlet(np.ones(5) * 0.3, size=200)
    u[u < 0.05] = 0.0
    u /= u.sum(1, keepdims=True)
    labels, info = kleinberg_tardos_rounding(u, rng, n_rounds=20)
    assert labels.shape == (20, 200)
    assert labels.min() >= 0 and labels.max() < 5
    assert np.all(u[np.arange(200)[None, :], labels] > 0)  # never a label the LP gave 0
    assert info["fallback"] == 0
    # integral u is reproduced exactly
    y = rng.integers(5, size=50)
    lab, _ = kleinberg_tardos_rounding(np.eye(5)[y], rng, n_rounds=3)
    assert np.all(lab == y)


def test_rounding_phase_cap_falls_back_to_argmax():
    u = np.full((30, 4), 0.25)
    labels, info = kleinberg_tardos_rounding(u, np.random.default_rng(0), n_rounds=2, max_phases=1)
    assert labels.min() >= 0 and info["fallback"] > 0


def test_rounding_marginals_and_separation_probability():
    # Kleinberg & Tardos: P(y_i = h) = u_ih, and P(y_i != y_j) <= ||u_i - u_j||_1
    rng = np.random.default_rng(1)
    u = rng.dirichlet(np.ones(3), size=4)
    labels, _ = kleinberg_tardos_rounding(u, rng, n_rounds=20000)
    freq = np.stack([(labels == h).mean(0) for h in range(3)], axis=1)
    np.testing.assert_allclose(freq, u, atol=0.02)
    for i, j in itertools.combinations(range(4), 2):
        sep = np.mean(labels[:, i] != labels[:, j])
        assert sep <= np.abs(u[i] - u[j]).sum() + 0.02


def test_best_per_component_is_no_worse_than_any_candidate():
    rng = np.random.default_rng(2)
    unary, g = random_problem(rng, 12, 3, 8)
    n_comp, comp = g.components()
    cands = rng.integers(3, size=(6, 12))
    labels, _ = best_per_component(unary, g, cands, comp, n_comp)
    assert g.energy(labels, unary) <= min(g.energy(c, unary) for c in cands) + 1e-12


def test_cvxpy_solver_without_cvxpy_gives_the_install_command(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "cvxpy", None)  # what an environment without cvxpy sees
    c = Constraints.from_pairs(must_link=[(0, 1)], n=2)
    with pytest.raises(ImportError, match=r"pip install .*cvxpy.*solver='highs'"):
        LPRelaxation(solver="cvxpy").map(np.zeros((2, 2)), c)
