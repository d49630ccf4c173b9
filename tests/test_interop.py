"""pgmpy export of E-step problems, and cross-checks of our engines against pgmpy."""

import itertools

import numpy as np
import pytest

pytest.importorskip("pgmpy")

from pgmpy.inference import VariableElimination  # noqa: E402

from hmrf import HMRF, Constraints, PairwiseGraph  # noqa: E402
from hmrf.inference import BeliefPropagation, ExactMILP  # noqa: E402
from hmrf.interop import labels_from_assignment, to_pgmpy, variable_name  # noqa: E402


def pgmpy_map(unary, graph):
    """Exact MAP labelling by pgmpy's variable elimination on our export (small problems)."""
    n = np.asarray(unary).shape[0]
    assignment = VariableElimination(to_pgmpy(unary, graph)).map_query(
        variables=[variable_name(i) for i in range(n)], show_progress=False)
    return labels_from_assignment(assignment, n)


def loopy_problem(seed, n=6, k=3, tables=True, hard=False):
    rng = np.random.default_rng(seed)
    unary = rng.random((n, k)) * 3
    pairs = np.array([(i, j) for i, j in itertools.combinations(range(n), 2) if rng.random() < 0.4])
    kind = np.where(rng.random(len(pairs)) < 0.5, -1, 1)
    w = rng.random(len(pairs)) * 2
    if hard:
        w[np.flatnonzero(kind == -1)[:2]] = np.inf
    g = PairwiseGraph.potts(n, pairs, w, kind)
    if tables:
        T = rng.random((2, k, k)) * 2
        T[1, 0, k - 1] = np.inf  # a forbidden label pair
        g = PairwiseGraph.concatenate([g, PairwiseGraph.from_tables(n, [(0, 1), (2, n - 1)], T, [0, 1])])
    return unary, g


def tree_problem(seed, n=7, k=3):
    rng = np.random.default_rng(seed)
    edges = [(int(rng.integers(0, i)), i) for i in range(1, n)]
    kind = np.where(rng.random(n - 1) < 0.5, -1, 1)
    return rng.random((n, k)) * 3, PairwiseGraph.potts(n, edges, rng.random(n - 1) * 2, kind)


@pytest.mark.parametrize("seed", range(3))
def test_factors_are_exp_of_minus_the_energy(seed):
    unary, g = loopy_problem(seed, n=4, k=2, hard=True)
    model = to_pgmpy(unary, g)
    joint = model.factors[0]
    for f in model.factors[1:]:
        joint = joint.product(f, inplace=False)
    names = [variable_name(i) for i in range(4)]
    joint = joint.copy()
    vals = []
    for y in itertools.product(range(2), repeat=4):
        p = joint.get_value(**dict(zip(names, y)))
        e = g.energy(np.array(y), unary)
        vals.append((p, e))
    p = np.array([v[0] for v in vals])
    e = np.array([v[1] for v in vals])
    finite = np.isfinite(e)
    assert np.all(p[~finite] == 0)  # hard factors: probability 0
    c = np.log(p[finite]) + e[finite]  # log p = -E + const
    np.testing.assert_allclose(c, c[0], atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_exact_milp_matches_pgmpy_map(seed):
    unary, g = loopy_problem(10 + seed, hard=seed % 2 == 1)
    y = pgmpy_map(unary, g)
    res = ExactMILP().map(unary, g)
    assert res.energy == pytest.approx(g.energy(y, unary), abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_bp_on_trees_matches_pgmpy_map(seed):
    unary, g = tree_problem(20 + seed)
    y = pgmpy_map(unary, g)
    res = BeliefPropagation(damping=0.0).map(unary, g, rng=0)
    assert res.energy == pytest.approx(g.energy(y, unary), abs=1e-9)


def test_sum_product_on_a_tree_matches_pgmpy_marginals():
    unary, g = tree_problem(30, n=6)
    ve = VariableElimination(to_pgmpy(unary, g))
    marg = BeliefPropagation(mode="sum", damping=0.0, tol=1e-12).marginals(unary, g)
    for i in range(6):
        q = ve.query([variable_name(i)], show_progress=False)
        np.testing.assert_allclose(marg[i], q.values / q.values.sum(), atol=1e-9)


def test_factor_graph_export_is_bipartite_fig_a1():
    unary, g = loopy_problem(40, tables=False)
    fg = to_pgmpy(unary, g, factor_graph=True)
    variables = {variable_name(i) for i in range(6)}
    assert variables <= set(fg.nodes())
    assert len(fg.factors) == 6 + g.n_edges  # one unary factor D_i per point, one per constraint
    for f in fg.factors:
        assert set(fg.neighbors(f)) == set(f.scope())


def test_hmrf_to_pgmpy_uses_the_model_energy():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.4, (3, 2)), rng.normal(2, 0.4, (3, 2))])
    c = Constraints.from_pairs(must_link=[(0, 3)], cannot_link=[(1, 2)], n=6, weight=2.0)
    model = HMRF(X, 2, constraints=c)
    params = model.emission.init_params(model.X, X[[0, 5]])
    mn = model.to_pgmpy(params)
    assert len(mn.factors) == 6 + 2
    y = labels_from_assignment(VariableElimination(mn).map_query(show_progress=False), 6)
    best = ExactMILP().map(model.unary(params), model.graph(params))
    assert model.energy(y, params) == pytest.approx(best.energy)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="shape"):
        to_pgmpy(np.zeros(3), None)
    g = PairwiseGraph.from_tables(2, [(0, 1)], np.zeros((3, 3)))
    with pytest.raises(ValueError, match="labels"):
        to_pgmpy(np.zeros((2, 2)), g)


def test_submodules_load_on_attribute_access():
    """``import hmrf`` alone gives ``hmrf.inference.ICM`` and friends (PEP 562)."""
    import subprocess
    import sys

    code = ("import hmrf; print(hmrf.inference.ICM.__name__, hmrf.metrics.nmi.__name__, "
            "hmrf.datasets.__name__, hmrf.experiments.__name__, hmrf.active.__name__); "
            "print(set(dir(hmrf)) >= {'inference', 'metrics'})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["ICM", "nmi", "hmrf.datasets", "hmrf.experiments", "hmrf.active", "True"]
