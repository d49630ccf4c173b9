"""What the graph layer knows of its factors (hmrf.graph.PairwiseGraph): the edge classes,
the colouring into independent sets, and per-component energies and selection."""

import itertools

import numpy as np
import pytest
from mrf_problems import random_problem

from hmrf import PairwiseGraph


def _mixed_graph():
    """Five factors, one of each class, plus a zero-weight must-link and a table edge."""
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)]
    weight = [1.5, np.inf, 0.7, np.inf, 0.0, 2.0]
    kind = [1, 1, -1, -1, 1, 0]
    tables = np.array([[[0.0, 1.0], [1.0, 0.0]]])
    return PairwiseGraph(6, edges, weight, kind, tables, [-1, -1, -1, -1, -1, 0])


def test_edge_classes_by_hand():
    c = _mixed_graph().edge_classes()
    assert np.flatnonzero(c.must).tolist() == [0, 1, 4]
    assert np.flatnonzero(c.cannot).tolist() == [2, 3]
    assert np.flatnonzero(c.table).tolist() == [5]
    assert np.flatnonzero(c.hard).tolist() == [1, 3]
    assert np.flatnonzero(c.soft_must).tolist() == [0]  # the zero-weight must-link is neither
    assert np.flatnonzero(c.soft_cannot).tolist() == [2]
    assert np.flatnonzero(c.hard_must).tolist() == [1]
    assert np.flatnonzero(c.hard_cannot).tolist() == [3]
    with pytest.raises(ValueError):
        c.must[0] = False  # read-only: one copy shared by every engine


def test_edge_classes_follow_new_weights():
    g = _mixed_graph()
    g.edge_classes()
    h = g.with_weights([np.inf, 1.0, 0.7, 0.5, 0.0, 2.0])
    assert np.flatnonzero(h.edge_classes().hard_must).tolist() == [0]
    assert np.flatnonzero(h.edge_classes().soft_must).tolist() == [1]
    assert not h.edge_classes().hard_cannot.any()
    assert np.flatnonzero(g.edge_classes().hard_must).tolist() == [1]  # the original is unchanged


def test_independent_sets_are_a_cached_proper_colouring():
    _, g = random_problem(np.random.default_rng(3), 40, 3, 90)
    sets = g.independent_sets()
    assert g.independent_sets() is sets
    colour = np.full(g.n_nodes, -1)
    for c, members in enumerate(sets):
        assert (colour[members] == -1).all()
        colour[members] = c
    assert (colour >= 0).all()
    assert np.all(colour[g.edges[:, 0]] != colour[g.edges[:, 1]])


def test_component_energies_by_enumeration_of_the_candidates():
    rng = np.random.default_rng(5)
    unary, g = random_problem(rng, 12, 3, 8, p_cl=0.4)
    n_comp, comp = g.components()
    cands = rng.integers(0, 3, size=(4, 12))
    e = g.component_energies(unary, cands)
    assert e.shape == (n_comp, 4)
    np.testing.assert_allclose(e.sum(axis=0), [g.energy(c, unary) for c in cands])
    labels, choice = g.best_per_component(unary, cands)
    # every combination of candidates per component: the chosen one is the cheapest
    assert n_comp == 6  # 4**6 combinations
    best = min(g.energy(cands[np.array(pick)[comp], np.arange(12)], unary)
               for pick in itertools.product(range(4), repeat=n_comp))
    assert g.energy(labels, unary) == pytest.approx(best)
    np.testing.assert_array_equal(labels, cands[choice[comp], np.arange(12)])


def test_an_engine_keeps_its_own_entries_and_their_reweighting_rule():
    from hmrf.graph import CacheKey

    kept, dropped = CacheKey("test.kept", "keep"), CacheKey("test.dropped")
    rescaled = CacheKey("test.rescaled", lambda value, weight: value * 0 + weight.sum())
    g = _mixed_graph().subgraph(np.arange(5))  # Potts edges only
    builds = []
    assert g.cache.get(kept, lambda: builds.append(1) or "structure") == "structure"
    assert g.cache.get(kept, lambda: builds.append(1) or "other") == "structure"
    assert builds == [1]  # built once
    g.cache.get(dropped, lambda: "weighted")
    g.cache.get(rescaled, lambda: 0.0)
    h = g.with_weights(np.array([1.0, 2.0, 3.0, 4.0]))
    assert h.cache.peek(kept) == "structure"
    assert h.cache.peek(dropped) is None
    assert h.cache.peek(rescaled) == 10.0
    assert g.cache.peek(rescaled) == 0.0
    with pytest.raises(ValueError, match="on_reweight"):
        CacheKey("bad", "sometimes")


def test_potts_takes_one_weight_and_kind_for_every_edge():
    # annotated ``float | ArrayLike`` and ``int | ArrayLike``: scalars are broadcast
    g = PairwiseGraph.potts(4, [(0, 1), (1, 2), (2, 3)], 1.5, -1)
    assert g.weight.tolist() == [1.5, 1.5, 1.5] and g.kind.tolist() == [-1, -1, -1]
    assert g.pairwise_energy([0, 0, 1, 1]) == 3.0  # two violated cannot-links
    per_edge = PairwiseGraph.potts(4, [(0, 1), (1, 2), (2, 3)], [1.5, 1.5, 1.5], [-1, -1, -1])
    assert per_edge.pairwise_energy([0, 0, 1, 1]) == g.pairwise_energy([0, 0, 1, 1])
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        PairwiseGraph.potts(4, [(0, 1), (1, 2), (2, 3)], [1.0, 2.0], 1)


def test_table_costs_of_a_potts_only_graph_is_empty():
    g = PairwiseGraph.potts(3, [(0, 1)], 1.0, 1)
    assert g.table_costs().shape == (0, 0, 0)
    T = np.array([[0.0, 2.0], [1.0, 0.0]])
    mixed = PairwiseGraph.concatenate([g, PairwiseGraph.from_tables(3, [(1, 2)], T, weight=0.5)])
    np.testing.assert_array_equal(mixed.table_costs(), [0.5 * T])


def test_a_zero_weight_constraint_costs_nothing_at_any_scale():
    # w = inf makes every weighted constraint hard; a pair of weight 0 stays free (not NaN)
    from hmrf import Constraints, HMRFKMeans

    c = Constraints.from_pairs(must_link=[(0, 1), (2, 3)], n=6, weight=[0.0, 1.0])
    g = PairwiseGraph.from_constraints(c, np.inf)
    assert g.weight.tolist() == [0.0, np.inf]
    X = np.array([[0.0], [5.0], [0.1], [0.2], [5.1], [5.2]])
    est = HMRFKMeans(2, w=np.inf, random_state=0).fit(X, constraints=c)
    assert est.labels_[2] == est.labels_[3] and est.labels_[0] != est.labels_[1]
