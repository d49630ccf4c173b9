"""Re-weighting a graph under its cached structure (PairwiseGraph.with_weights): every
engine gives what it gives on a freshly built graph, the potentials and the model reuse
one structure across M-steps, and MPCKMeans fits are the same with the caches as without."""

import numpy as np
import pytest
from mrf_problems import random_problem
from sklearn.datasets import make_blobs

import hmrf.graph as graph_module
from hmrf import HMRF, Constraints, MPCKMeans, PairwiseGraph
from hmrf.emissions import Mahalanobis
from hmrf.inference import ENGINES, get_engine
from hmrf.inference.base import REDUCTION
from hmrf.inference.bp.order import NODE_ORDERS
from hmrf.inference.icm import BLOCKS
from hmrf.potentials import DistanceScaledPotts, TablePotential

NAMES = sorted(ENGINES)


def _fresh(g, weight, tables=None):
    """The graph of ``g``'s factors under ``weight``, built from scratch (no caches)."""
    tables = g.tables if tables is None else tables
    return PairwiseGraph(g.n_nodes, g.edges.copy(), np.array(weight), g.kind.copy(),
                         None if tables is None else tables.copy(),
                         None if g.table_index is None else g.table_index.copy())


def _problem(seed, tables, n=40, m=90):
    rng = np.random.default_rng(seed)
    unary, g = random_problem(rng, n, 4, m, p_cl=0.4, p_hard=0.3, tables=tables)
    # a hard must-link, so that the reduction contracts nodes
    w = g.weight.copy()
    ml = np.flatnonzero(g.kind == 1)
    w[ml[0]] = np.inf
    T = g.tables
    if T is not None:  # semi-metric tables (symmetric, zero diagonal), which every engine takes
        T = (T + np.swapaxes(T, 1, 2)) / 2
        T[:, np.arange(T.shape[1]), np.arange(T.shape[1])] = 0.0
    return unary, _fresh(g, w, T), rng


def _new_weights(g, rng, change_hard=False):
    w = g.weight.copy()
    soft = np.isfinite(w)
    w[soft] = rng.random(int(soft.sum())) * 3
    if change_hard:  # one more hard must-link
        w[np.flatnonzero((g.kind == 1) & soft)[0]] = np.inf
    return w


@pytest.mark.parametrize("change_hard", [False, True], ids=["same-hard-edges", "new-hard-edge"])
@pytest.mark.parametrize("tables", [False, True], ids=["potts", "tables"])
@pytest.mark.parametrize("name", NAMES)
def test_engine_on_reweighted_cached_graph_equals_fresh_graph(name, tables, change_hard):
    engine = get_engine(name)
    unary, g, rng = _problem(3, tables, *((10, 16) if name == "exact" else (40, 90)))  # the MILP: small
    init = rng.integers(0, 4, g.n_nodes)
    nodes, sub = g.constrained_part()
    engine.map(unary[nodes], sub, init=init[nodes], rng=0)  # fills the caches of the structure
    w = _new_weights(g, rng, change_hard)
    cached = g.with_weights(w)
    fresh = _fresh(g, w)
    c_nodes, c_sub = cached.constrained_part()
    f_nodes, f_sub = fresh.constrained_part()
    np.testing.assert_array_equal(c_nodes, f_nodes)
    assert c_sub.edges is sub.edges  # the structure is shared, not rebuilt
    got = engine.map(unary[c_nodes], c_sub, init=init[c_nodes], rng=0)
    want = engine.map(unary[f_nodes], f_sub, init=init[f_nodes], rng=0)
    np.testing.assert_array_equal(got.labels, want.labels)
    assert got.energy == pytest.approx(want.energy, rel=1e-12)
    assert got.energy == pytest.approx(f_sub.energy(got.labels, unary[f_nodes]), rel=1e-12)


def test_reweighted_graph_keeps_structure_and_drops_weighted_caches():
    unary, g, rng = _problem(4, False)
    nodes, sub = g.constrained_part()
    get_engine("bp").map(unary[nodes], sub, rng=0)
    get_engine("icm").map(unary[nodes], sub, init=np.zeros(nodes.size, dtype=np.int64), rng=0)
    reduced = sub.cache.peek(REDUCTION).sub  # the graph the engines solve
    assert reduced.cache.peek(BLOCKS) is not None and reduced.cache.peek(NODE_ORDERS)
    g.components()
    w = _new_weights(g, rng)
    h = g.with_weights(w)
    structural = [key for key in g.cache.keys() if key.on_reweight == "keep"]  # edges and kinds alone
    assert graph_module.COMPONENTS in structural
    for key in structural:
        assert h.cache.peek(key) is g.cache.peek(key)
    h_sub = h.constrained_part()[1]
    np.testing.assert_array_equal(h_sub.weight, w)
    red = h_sub.cache.peek(REDUCTION)
    assert red is not None and red.node_of is sub.cache.peek(REDUCTION).node_of
    np.testing.assert_array_equal(red.sub.weight, w[red.kept])
    assert red.sub.edges is reduced.edges
    assert red.sub.cache.peek(BLOCKS) is None  # holds weights: built anew
    assert red.sub.cache.peek(NODE_ORDERS) == reduced.cache.peek(NODE_ORDERS)  # BP's layouts: kept
    # a new hard edge changes the contraction: the reduction is built anew
    w2 = _new_weights(g, rng, change_hard=True)
    assert g.with_weights(w2).constrained_part()[1].cache.peek(REDUCTION) is None


def test_with_weights_checks_the_weights():
    unary, g, _ = _problem(5, True)
    with pytest.raises(ValueError, match="shape"):
        g.with_weights(np.ones(g.n_edges + 1))
    with pytest.raises(ValueError, match=">= 0"):
        g.with_weights(np.r_[-1.0, np.ones(g.n_edges - 1)])
    w = np.ones(g.n_edges)
    w[np.flatnonzero(g.kind == 0)[0]] = np.inf
    with pytest.raises(ValueError, match="finite"):
        g.with_weights(w)
    h = g.with_weights(np.ones(g.n_edges))
    assert not h.weight.flags.writeable


def _blobs(n=300, seed=0):
    X, y = make_blobs(n, n_features=4, centers=3, cluster_std=2.5, random_state=seed)
    return X, y


def test_distance_scaled_potts_reweights_one_structure():
    X, y = _blobs()
    c = Constraints.sample_from_labels(y, 60, rng=0)
    pot = DistanceScaledPotts(c, w=2.0)
    fam = Mahalanobis()
    p0 = fam.init_params(X, X[:3])
    p1 = p0.replace(metric=np.array([[0.5, 2.0, 1.0, 3.0]]))
    g0, g1 = pot.graph(X, p0), pot.graph(X, p1)
    assert g1.edges is g0.edges and g1.kind is g0.kind
    f = pot.edge_scale(X, p1)
    np.testing.assert_array_equal(g1.weight, PairwiseGraph.from_constraints(c, 2.0 * f).weight)


def test_model_with_several_potentials_reweights_the_joined_graph():
    X, y = _blobs()
    c = Constraints.sample_from_labels(y, 60, rng=0)
    T = np.full((3, 3), 1.0)
    np.fill_diagonal(T, 0.0)
    table = TablePotential(len(X), [(0, 1), (2, 3)], T)
    model = HMRF(X, 3, emission=Mahalanobis(), potentials=[DistanceScaledPotts(c), table])
    p0 = model.emission.init_params(model.X, X[:3])
    g0 = model.graph(p0)
    g1 = model.graph(p0.replace(metric=np.array([[0.5, 2.0, 1.0, 3.0]])))
    assert g1.edges is g0.edges
    fresh = PairwiseGraph.concatenate([p.graph(model.X, p0.replace(metric=np.array([[0.5, 2.0, 1.0, 3.0]])), 3)
                                       for p in model.potentials])
    np.testing.assert_array_equal(g1.weight, fresh.weight)
    labels = np.random.default_rng(0).integers(0, 3, len(X))
    assert g1.pairwise_energy(labels) == fresh.pairwise_energy(labels)


@pytest.mark.parametrize("inference", ["icm", "bp", "auto"])
def test_mpckmeans_fit_is_the_same_with_and_without_the_reused_structure(inference, monkeypatch):
    X, y = _blobs(400, seed=2)
    c = Constraints.sample_from_labels(y, 120, rng=1)
    cached = MPCKMeans(3, inference=inference, random_state=0).fit(X, constraints=c)
    monkeypatch.setattr(graph_module.GraphCache, "reweighted", lambda self, weight: graph_module.GraphCache())
    fresh = MPCKMeans(3, inference=inference, random_state=0).fit(X, constraints=c)
    np.testing.assert_array_equal(cached.labels_, fresh.labels_)
    assert cached.objective_ == fresh.objective_
    np.testing.assert_array_equal(cached.metric_, fresh.metric_)
