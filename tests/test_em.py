"""The HMRF model, the EM loop, initialisation and empty-cluster handling."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris, make_blobs

from hmrf import HMRF, Constraints, PairwiseGraph
from hmrf.em import loop, run_em
from hmrf.emissions import EmissionParams, SquaredEuclidean
from hmrf.inference import ICM
from hmrf.initialization import initial_centers, weighted_farthest_first
from hmrf.potentials import PottsConstraints, TablePotential

X_IRIS, Y_IRIS = load_iris(return_X_y=True)


def fit_em(model, method="neighborhoods", seed=0, **kw):
    rng = np.random.default_rng(seed)
    c = model.constraints
    centers = initial_centers(model.X, model.n_clusters, model.emission, c, method, rng)
    return run_em(model, model.emission.init_params(model.X, centers), ICM(), rng=rng, **kw)


@pytest.mark.parametrize("emission, normalizer, data", [
    ("sqeuclidean", "constant", "iris"),
    ("sqeuclidean", "closed_form", "iris"),
    ("cosine", "constant", "iris"),
    ("cosine", "closed_form", "iris"),
    ("kl", "constant", "counts"),
    ("idiv", "constant", "counts"),
    ("itakura_saito", "constant", "positive"),
])
def test_objective_history_never_increases(emission, normalizer, data):
    rng = np.random.default_rng(1)
    if data == "iris":
        X, y = X_IRIS, Y_IRIS
    elif data == "counts":
        X = rng.poisson(np.repeat(rng.random((3, 20)) * 4, 50, axis=0)).astype(float)
        X[X.sum(1) == 0, 0] = 1.0
        y = np.repeat(np.arange(3), 50)
    else:
        X = np.exp(rng.normal(size=(150, 4)) + np.repeat(np.eye(3, 4) * 2, 50, axis=0))
        y = np.repeat(np.arange(3), 50)
    c = Constraints.sample_from_labels(y, 80, rng=2)
    model = HMRF(X, 3, emission=emission, constraints=c, normalizer=normalizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # EM warns if the objective rises
        res = fit_em(model, max_iter=50, tol=0.0)
    h = np.asarray(res.history)
    assert np.all(np.diff(h) <= 1e-9 * np.maximum(1.0, np.abs(h[:-1])))
    assert res.objective == pytest.approx(model.energy(res.labels, res.params))
    assert res.objective <= h[-1] + 1e-9


def test_objective_is_eq_4_10_computed_by_hand():
    c = Constraints.sample_from_labels(Y_IRIS, 60, rng=0)
    model = HMRF(X_IRIS, 3, constraints=c, w=2.0)
    res = fit_em(model)
    mu = res.params.centers
    distortion = ((X_IRIS - mu[res.labels]) ** 2).sum()
    violated = c.violations(res.labels)
    assert res.objective == pytest.approx(distortion + 2.0 * c.weight[violated].sum())
    terms = model.energy_terms(res.labels, res.params)
    assert terms["distortion"] == pytest.approx(distortion)
    assert terms["must_link"] + terms["cannot_link"] == pytest.approx(2.0 * c.weight[violated].sum())
    assert terms["total"] == pytest.approx(res.objective)
    assert terms["normalizer"] == pytest.approx(0.0)


def test_centres_are_cluster_means_at_convergence():
    model = HMRF(X_IRIS, 3, constraints=Constraints.sample_from_labels(Y_IRIS, 40, rng=3))
    res = fit_em(model, tol=0.0)
    assert res.converged
    for h in range(3):
        np.testing.assert_allclose(res.params.centers[h], X_IRIS[res.labels == h].mean(0))


def test_empty_cluster_is_reseeded_not_raised():
    X, _ = make_blobs(200, centers=3, random_state=0)
    model = HMRF(X, 4)
    far = np.vstack([X[:3], [[1e4, 1e4]]])  # the 4th centre attracts nobody
    res = run_em(model, EmissionParams(far), ICM(), rng=np.random.default_rng(0))
    assert np.unique(res.labels).tolist() == [0, 1, 2, 3]
    assert any(t["reseeded"] for t in res.trace)
    assert np.all(np.diff(res.history) <= 1e-9)


def _reseed(labels, unary, graph, k):
    """The EM loop's re-seeding of empty clusters given every point's cost rows."""
    cost = unary[np.arange(labels.shape[0]), labels]
    return loop._reseed(labels, cost, graph, k, lambda rows, h: np.isfinite(unary[rows, h]))


def test_reseeding_never_moves_a_point_whose_move_costs_pairwise_energy():
    labels = np.array([0, 0, 0, 1, 1])
    unary = np.array([[0, 5, 5], [0, 5, 5], [9, 5, 5], [5, 0, 5], [5, 1, 5]], dtype=float)
    # point 2 is the farthest but is must-linked to 0 (same label): moving it costs 3
    g = PairwiseGraph.potts(5, [[0, 2]], [3.0], [1])
    new, n = _reseed(labels, unary, g, 3)
    assert n == 1 and new[2] == 0 and new[4] == 2  # point 4 (cost 1) moves instead
    # a violated cannot-link is repaired by a move: allowed
    g2 = PairwiseGraph.potts(5, [[0, 2]], [3.0], [-1])
    new2, _ = _reseed(labels, unary, g2, 3)
    assert new2[2] == 2
    # nobody qualifies: the cluster stays empty instead of raising the objective
    g3 = PairwiseGraph.potts(5, [[0, 1], [0, 2], [3, 4]], [1.0, 1.0, 1.0], [1, 1, 1])
    new3, n3 = _reseed(labels, unary, g3, 3)
    assert n3 == 0 and np.array_equal(new3, labels)


def test_model_validation_errors():
    with pytest.raises(ValueError, match="larger than"):
        HMRF(np.zeros((3, 2)), 4)
    with pytest.raises(ValueError, match="at least 1"):
        HMRF(np.zeros((3, 2)), 0)
    with pytest.raises(ValueError, match="refer to 5 points"):
        HMRF(np.zeros((3, 2)), 2, constraints=Constraints.empty(5))
    with pytest.raises(ValueError, match="normalizer"):
        HMRF(np.zeros((3, 2)), 2, normalizer="approx")
    with pytest.raises(ValueError, match="no closed-form"):
        HMRF(np.ones((3, 2)), 2, emission="kl", normalizer="closed_form")
    m = HMRF(np.eye(3), 2)
    with pytest.raises(ValueError, match="labels must"):
        m.energy([0, 1, 2], EmissionParams(np.eye(3)[:2]))


def test_clamped_labels_get_infinite_cost_elsewhere():
    m = HMRF(X_IRIS[:10], 3, clamped=[2] + [-1] * 9)
    U = m.unary(EmissionParams(X_IRIS[:3]))
    assert np.isinf(U[0, :2]).all() and np.isfinite(U[0, 2]) and np.isfinite(U[1:]).all()


def test_factor_graph_view_matches_fig_a1():
    c = Constraints.from_pairs(must_link=[(0, 1), (0, 3)], cannot_link=[(1, 2)], n=5)
    g = HMRF(np.random.default_rng(0).normal(size=(5, 2)), 3, constraints=c).to_networkx()
    roles = [d["role"] for _, d in g.nodes(data=True)]
    assert roles.count("hidden") == 5 and roles.count("observed") == 5 and roles.count("unary") == 5
    assert roles.count("must_link") == 2 and roles.count("cannot_link") == 1
    # every factor node touches only variable nodes: the graph is bipartite
    for u, v in g.edges:
        assert g.nodes[u]["bipartite"] != g.nodes[v]["bipartite"] or "observed" in (g.nodes[u]["role"], g.nodes[v]["role"])
    ml = [n for n, d in g.nodes(data=True) if d["role"] == "must_link"]
    assert {frozenset(g.neighbors(n)) for n in ml} == {frozenset({("y", 0), ("y", 1)}), frozenset({("y", 0), ("y", 3)})}


def test_table_potential_in_em_and_graph_concatenation():
    T = np.full((3, 3), 2.0)
    np.fill_diagonal(T, 0.5)
    T[0, 0] = 0.0
    pot = TablePotential(150, [(0, 50), (1, 51)], T)
    model = HMRF(X_IRIS, 3, constraints=Constraints.sample_from_labels(Y_IRIS, 10, rng=0), potentials=pot)
    g = model.graph(None)
    assert g.n_edges == 12 and not g.is_potts
    res = fit_em(model)
    assert np.all(np.diff(res.history) <= 1e-9)


def test_weighted_farthest_first_prefers_large_and_far():
    cents = np.array([[0.0, 0.0], [0.1, 0.0], [10.0, 0.0], [5.0, 0.0]])
    sizes = np.array([5.0, 10.0, 1.0, 3.0])
    # start at the largest (1); then size * squared distance: 1 * 9.9^2 = 98 beats
    # 3 * 4.9^2 = 72 and 5 * 0.1^2; then 3 * 4.9^2 (distance to 1) beats 5 * 0.1^2
    chosen = weighted_farthest_first(cents, sizes, 3, SquaredEuclidean())
    assert chosen.tolist() == [1, 2, 3]


def test_initialisation_cases_of_section_4_4_3():
    fam = SquaredEuclidean()
    rng = np.random.default_rng(0)
    X = X_IRIS
    # lambda == k: exactly the neighbourhood centroids
    c = Constraints.from_pairs(must_link=[(0, 1), (50, 51), (100, 101)], n=150)
    C = initial_centers(X, 3, fam, c, "neighborhoods", rng)
    np.testing.assert_allclose(np.sort(C[:, 0]), np.sort([X[[0, 1]].mean(0)[0], X[[50, 51]].mean(0)[0], X[[100, 101]].mean(0)[0]]))
    # lambda < k: the rest are perturbations of the global centroid (close to it)
    C2 = initial_centers(X, 3, fam, Constraints.from_pairs(must_link=[(0, 1)], n=150), "neighborhoods", rng)
    np.testing.assert_allclose(C2[0], X[[0, 1]].mean(0))
    g = X.mean(0)
    assert np.all(np.linalg.norm(C2[1:] - g, axis=1) <= 0.1 * np.linalg.norm(X - g, axis=1).max() + 1e-12)
    # pckmeans: a point cannot-linked to every neighbourhood seeds the next cluster
    c3 = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(0, 120), (1, 120)], n=150)
    C3 = initial_centers(X, 3, fam, c3, "pckmeans", rng)
    np.testing.assert_allclose(C3[1], X[120])
    # k-means++ fills the remaining clusters with data points
    C4 = initial_centers(X, 3, fam, c3, "k-means++", rng)
    assert all(any(np.allclose(row, x) for x in X) for row in C4[1:])
    with pytest.raises(ValueError, match="init must be"):
        initial_centers(X, 3, fam, c, "magic", rng)
    with pytest.raises(ValueError, match=r"shape \(3, 4\)"):
        initial_centers(X, 3, fam, c, np.zeros((2, 4)), rng)


def test_em_on_sparse_cosine_data_stays_sparse():
    X = sp.random(300, 2000, density=0.01, format="csr", random_state=0)
    X = X + sp.csr_matrix((np.ones(300), (np.arange(300), np.arange(300) % 3)), shape=(300, 2000))
    y = np.arange(300) % 3
    model = HMRF(X, 3, emission="cosine", constraints=Constraints.sample_from_labels(y, 50, rng=0))
    assert sp.issparse(model.X)
    res = fit_em(model)
    assert res.labels.shape == (300,)


def test_potts_potential_rejects_bad_w():
    with pytest.raises(ValueError, match="w must be"):
        PottsConstraints(Constraints.empty(2), w=-1.0)


def test_energy_terms_split_learned_metric_distortion_from_log_det():
    from hmrf import MPCKMeans

    c = Constraints.sample_from_labels(Y_IRIS, 40, rng=5)
    est = MPCKMeans(3, random_state=0).fit(X_IRIS, constraints=c)
    model = HMRF(X_IRIS, 3, emission="mahalanobis")
    p = est.params_
    a = p.metric[0]  # shared diagonal metric (g = 1)
    by_hand = (((X_IRIS - p.centers[est.labels_]) ** 2) * a).sum()
    terms = model.energy_terms(est.labels_, p)
    assert terms["distortion"] == pytest.approx(by_hand)
    assert terms["distortion"] + terms["normalizer"] == pytest.approx(
        model.unary(p)[np.arange(150), est.labels_].sum())


def test_buckshot_init_is_deterministic_and_uses_the_family():
    from hmrf.classic import buckshot_centers
    from hmrf.emissions import VonMisesFisher

    model = HMRF(X_IRIS, 3, emission="cosine")
    a = initial_centers(model.X, 3, model.emission, None, "buckshot", np.random.default_rng(4))
    b = buckshot_centers(model.X, 3, np.random.default_rng(4), VonMisesFisher())
    np.testing.assert_array_equal(a, b)
    c = initial_centers(model.X, 3, model.emission, None, "buckshot", np.random.default_rng(4))
    np.testing.assert_array_equal(a, c)


# ------------------------------------------------- the monotonicity warning's precision
def _offset_float32_blobs():
    from sklearn.datasets import make_blobs

    X, y = make_blobs(20000, 20, centers=8, cluster_std=4.0, random_state=20)
    return (X + 100).astype(np.float32), y  # costs cancel: ||x||² ~ 2e5, D ~ 300


def test_float32_round_off_is_not_reported_as_a_rising_objective(monkeypatch):
    """A float32 fit whose objective rises by round-off of float32 costs (2e-6 of it here)
    does not warn (RuntimeWarnings from hmrf are errors in this suite); judged in
    float64 precision the same fit warns, so the case is a real one."""
    import warnings

    import hmrf.em.loop as loop
    from hmrf import Constraints, HMRFKMeans

    X, y = _offset_float32_blobs()
    c = Constraints.sample_from_labels(y, 200, np.random.default_rng(20))
    est = HMRFKMeans(8, inference="icm", n_init=1, random_state=20)
    est.fit(X, constraints=c)
    monkeypatch.setattr(loop, "RISE_ULPS", 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        HMRFKMeans(8, inference="icm", n_init=1, random_state=20).fit(X, constraints=c)
    assert any("EM objective increased" in str(w.message) for w in caught)


def test_rise_tolerance_is_the_working_precision():
    from hmrf.em import rise_tolerance

    assert rise_tolerance(1e7, np.float64) == pytest.approx(1e-9 * 1e7)
    assert rise_tolerance(1e7, np.float32) == pytest.approx(100 * np.finfo(np.float32).eps * 1e7)
    assert rise_tolerance(0.5, np.float32) == pytest.approx(100 * np.finfo(np.float32).eps)


def test_a_real_rise_in_float32_still_warns():
    """An M-step that is not the minimiser (centres pushed further off the means at
    every step) raises the objective far beyond float32 round-off: the warning fires."""
    from hmrf import HMRFKMeans
    from hmrf.emissions import EmissionParams, SquaredEuclidean

    class Pushed(SquaredEuclidean):
        steps = 0

        def update(self, stats, params=None, normalizer="constant", context=None):
            p = super().update(stats, params, normalizer, context)
            Pushed.steps += 1
            return EmissionParams(p.centers + 3.0 * Pushed.steps)

    X, _ = _offset_float32_blobs()
    with pytest.warns(RuntimeWarning, match="EM objective increased"):
        HMRFKMeans(8, emission=Pushed(), n_init=1, init="k-means++", random_state=0).fit(X[:2000])
