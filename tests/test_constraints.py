"""Constraints: construction, validation, closure, conflicts, immutability."""

import pickle
import warnings

import networkx as nx
import numpy as np
import pytest

from hmrf import Constraints, InconsistentConstraintsError
from hmrf.exceptions import ConstraintConflictWarning


def test_from_pairs_canonical_order_and_sorting():
    c = Constraints.from_pairs(must_link=[(3, 1), (0, 2)], cannot_link=[(4, 0)], n=5)
    assert c.pairs.tolist() == [[0, 2], [0, 4], [1, 3]]
    assert c.kind.tolist() == [1, -1, 1]
    assert c.n_must_link == 2 and c.n_cannot_link == 1 and len(c) == 3


def test_weight_array_follows_input_order_must_links_first():
    c = Constraints.from_pairs(must_link=[(0, 1), (2, 3)], cannot_link=[(1, 2)], n=4,
                               weight=[1.0, 2.0, 3.0])
    w = {(i, j, k): wt for i, j, k, wt in c}
    assert w == {(0, 1, 1): 1.0, (2, 3, 1): 2.0, (1, 2, -1): 3.0}


def test_duplicates_merged_by_summing_weights():
    c = Constraints.from_pairs(must_link=[(0, 1), (1, 0), (0, 1)], n=2, weight=[1.0, 2.0, 0.5])
    assert len(c) == 1
    assert c.weight.tolist() == [3.5]


def test_duplicate_with_hard_stays_hard():
    c = Constraints.from_pairs(must_link=[(0, 1), (1, 0)], n=2, weight=[np.inf, 2.0])
    assert np.isinf(c.weight[0]) and c.is_hard.all()


def test_ml_and_cl_on_same_pair_kept_when_soft():
    c = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(0, 1)], n=2)
    assert sorted(c.kind.tolist()) == [-1, 1]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(must_link=[(0, 5)], n=5), r"must_link pair #0 is \(0, 5\).*\[0, 4\]"),
        (dict(cannot_link=[(-1, 2)], n=5), r"cannot_link pair #0"),
        (dict(must_link=[(2, 2)], n=5), r"i == j"),
        (dict(must_link=[(0, 1)], n=5, weight=-1.0), r"weight\[0\] is -1.0"),
        (dict(must_link=[(0, 1)], n=5, weight=np.nan), r"weight\[0\] is NaN"),
        (dict(must_link=[(0, 1), (1, 2)], n=5, weight=[1.0]), r"one entry per pair"),
        (dict(must_link=[(0, 1, 2)], n=5), r"\(i, j\) pairs"),
        (dict(must_link=[(0.5, 1)], n=5), r"integers"),
    ],
)
def test_bad_input_errors_name_the_problem(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Constraints.from_pairs(**kwargs)


def test_hard_contradiction_through_closure_names_pair_and_chain():
    with pytest.raises(InconsistentConstraintsError) as info:
        Constraints.from_pairs(must_link=[(0, 1), (1, 2), (2, 3)], cannot_link=[(0, 3)], n=4,
                               weight=np.inf)
    assert info.value.pair == (0, 3)
    assert info.value.path == (0, 1, 2, 3)
    assert "(0, 3)" in str(info.value) and "0 - 1 - 2 - 3" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_direct_hard_contradiction():
    with pytest.raises(InconsistentConstraintsError, match=r"\(1, 2\)"):
        Constraints.from_pairs(must_link=[(1, 2)], cannot_link=[(1, 2)], n=3, weight=np.inf)


def test_soft_contradiction_is_allowed():
    c = Constraints.from_pairs(must_link=[(0, 1), (1, 2)], cannot_link=[(0, 2)], n=3)
    assert len(c) == 3


def test_soft_cl_against_hard_ml_is_allowed():
    c = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(0, 1)], n=2, weight=[np.inf, 1.0])
    assert len(c) == 2


def test_conflict_policies():
    args = dict(must_link=[(0, 1), (1, 2)], cannot_link=[(0, 2)], n=3, weight=np.inf)
    with pytest.warns(ConstraintConflictWarning):
        warned = Constraints.from_pairs(**args, conflicts="warn")
    assert warned.weight[warned.kind == -1].tolist() == [1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        soft = Constraints.from_pairs(**args, conflicts="soften")
    assert soft == warned
    with pytest.warns(ConstraintConflictWarning, match="dropped 1"):
        dropped = Constraints.from_pairs(**args, conflicts="drop")
    assert dropped.n_cannot_link == 0 and dropped.n_must_link == 2
    # drop also removes soft contradictions
    with pytest.warns(ConstraintConflictWarning):
        d2 = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(0, 1), (1, 2)], n=3,
                                    conflicts="drop")
    assert d2.cannot_link.tolist() == [[1, 2]]
    with pytest.raises(ValueError, match="conflicts must be"):
        Constraints.from_pairs(**args, conflicts="ignore")


def test_neighborhoods_and_inferred_cannot_links():
    c = Constraints.from_pairs(must_link=[(0, 1), (1, 2), (5, 6)], cannot_link=[(2, 5), (0, 7), (3, 4)], n=8)
    hoods = [h.tolist() for h in c.neighborhoods()]
    assert hoods == [[0, 1, 2], [5, 6]]
    with_single = [h.tolist() for h in c.neighborhoods(include_singletons=True)]
    assert with_single == [[0, 1, 2], [5, 6], [3], [4], [7]]
    q = c.inferred_cannot_links()
    named = {tuple(sorted((with_single[a][0], with_single[b][0]))) for a, b in q}
    assert named == {(0, 5), (0, 7), (3, 4)}


def test_closure_contains_all_implied_pairs_with_unit_weight():
    c = Constraints.from_pairs(must_link=[(0, 1), (1, 2)], cannot_link=[(2, 3)], n=4, weight=5.0)
    cl = c.closure()
    pairs = {(i, j, k): w for i, j, k, w in cl}
    assert pairs[(0, 1, 1)] == 5.0 and pairs[(1, 2, 1)] == 5.0  # originals keep weights
    assert pairs[(0, 2, 1)] == 1.0  # inferred
    assert {(0, 3, -1), (1, 3, -1), (2, 3, -1)} <= set(pairs)
    assert len(cl) == 6


def test_long_must_link_chain_closure_is_not_recursive():
    n = 100_000
    idx = np.arange(n - 1)
    c = Constraints.from_pairs(must_link=np.column_stack([idx, idx + 1]), n=n)
    comp = c.component_labels()
    assert np.unique(comp).shape[0] == 1
    assert c.neighborhoods()[0].shape[0] == n


def test_pairs_keep_their_kind_and_weight():
    c = Constraints.from_pairs(must_link=[(1, 0)], cannot_link=[(2, 1)], n=3, weight=[2.0, 3.0])
    signed = {tuple(p): k * w for p, k, w in zip(c.pairs.tolist(), c.kind.tolist(), c.weight.tolist())}
    assert signed == {(0, 1): 2.0, (1, 2): -3.0}  # i < j; +w must-link, -w cannot-link
    assert c.cannot_link.tolist() == [[1, 2]] and c.must_link.tolist() == [[0, 1]]


def test_from_labels_all_and_spanning_imply_same_partition():
    y = np.array([0, -1, 0, 1, 1, -1, 2])
    full = Constraints.from_labels(y)
    labelled = np.flatnonzero(y >= 0)
    assert len(full) == len(labelled) * (len(labelled) - 1) // 2
    for i, j, k, _ in full:
        assert (k == 1) == (y[i] == y[j])
    span = Constraints.from_labels(y, pairs="spanning")
    assert len(span) < len(full)
    assert [h.tolist() for h in span.neighborhoods()] == [h.tolist() for h in full.neighborhoods()]
    assert span.closure().n_cannot_link == full.n_cannot_link


def test_from_networkx_and_metric_learn_and_roundtrip():
    g = nx.Graph()
    g.add_edge(0, 1, kind="must_link", weight=2.0)
    g.add_edge(1, 2, kind="cl")
    c = Constraints.from_networkx(g, n=4)
    assert c == Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(1, 2)], n=4, weight=[2.0, 1.0])
    back = Constraints.from_networkx(c.to_networkx(), n=4)
    assert back == c
    m = Constraints.from_metric_learn([(0, 1), (1, 2)], [1, -1], n=4)
    assert m == Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(1, 2)], n=4)
    with pytest.raises(ValueError, match="metric-learn"):
        Constraints.from_metric_learn([(0, 1)], [0], n=4)
    bad = nx.Graph()
    bad.add_edge(0, 1, kind="maybe")
    with pytest.raises(ValueError, match="kind='maybe'"):
        Constraints.from_networkx(bad)


def test_immutable_and_inputs_not_mutated():
    ml = np.array([[3, 1], [0, 2]])
    w = np.array([1.0, 2.0])
    ml_copy, w_copy = ml.copy(), w.copy()
    c = Constraints.from_pairs(must_link=ml, n=4, weight=w)
    assert np.array_equal(ml, ml_copy) and np.array_equal(w, w_copy)
    with pytest.raises(AttributeError):
        c.n = 3
    with pytest.raises(ValueError):
        c.pairs[0, 0] = 1
    with pytest.raises(ValueError):
        c.weight[0] = 9.0


def test_pickle_roundtrip():
    c = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(1, 2)], n=3, weight=[np.inf, 1.0])
    assert pickle.loads(pickle.dumps(c)) == c


def test_violations_subset_select_and_union():
    c = Constraints.from_pairs(must_link=[(0, 1), (2, 3)], cannot_link=[(1, 2)], n=4)
    assert c.violations([0, 1, 1, 1]).tolist() == [True, True, False]
    sub = c.subset([1, 2, 3])
    assert sub.n == 3 and sub.pairs.tolist() == [[0, 1], [1, 2]] and sub.kind.tolist() == [-1, 1]
    assert len(c.select(c.kind == 1)) == 2
    both = c + Constraints.from_pairs(must_link=[(0, 1)], n=4)
    assert both.weight[0] == 2.0
    with pytest.raises(ValueError, match="4 and 5"):
        c + Constraints.empty(5)


def test_sample_from_labels_is_deterministic_and_respects_among():
    y = np.repeat([0, 1, 2], 20)
    a = Constraints.sample_from_labels(y, 50, rng=3, among=np.arange(30))
    b = Constraints.sample_from_labels(y, 50, rng=3, among=np.arange(30))
    assert a == b and len(a) == 50
    assert a.pairs.max() < 30
    for i, j, k, _ in a:
        assert (k == 1) == (y[i] == y[j])
    capped = Constraints.sample_from_labels(y, 10_000, rng=0, among=[0, 1, 2, 3])
    assert len(capped) == 6


# ------------------------------------------------- awkward inputs get named errors
@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(must_link=[(0, 1), (2, 3, 4)], n=5), ValueError, r"must_link pair #1 has 3 entries"),
    (dict(cannot_link=[(0, 1), (2,)], n=5), ValueError, r"cannot_link pair #1 has 1 entry"),
    (dict(must_link=[(0, 1), 3], n=5), ValueError, r"must_link pair #1 is 3"),
    (dict(must_link=[(0, 1)], n=5, weight="heavy"), TypeError, r"weight must be a number .* got 'heavy'"),
    (dict(must_link=[(0, 1), (1, 2)], n=5, weight=[1.0, "a"]), TypeError, r"weight\[1\] is 'a'"),
    (dict(must_link=[(0, 1)], n=5, weight=1j), TypeError, r"weight must be a number"),
    (dict(must_link={0: 1}, n=5), TypeError, r"must_link is a dict"),
    (dict(must_link={(0, 1), (2, 3)}, n=5, weight=[1.0, 2.0]), TypeError, r"must_link is a set"),
])
def test_awkward_pair_lists_and_weights_are_named(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        Constraints.from_pairs(**kwargs)


def test_sets_and_generators_of_pairs_are_accepted():
    a = Constraints.from_pairs(must_link={(3, 4), (0, 1)}, cannot_link=((i, i + 2) for i in range(2)), n=5)
    b = Constraints.from_pairs(must_link=[(0, 1), (3, 4)], cannot_link=[(0, 2), (1, 3)], n=5)
    assert a.pairs.tolist() == b.pairs.tolist() and a.kind.tolist() == b.kind.tolist()
    # an iterator of numpy rows, and a set with one weight for all pairs
    c = Constraints.from_pairs(must_link=iter(np.array([[0, 1], [3, 4]])), n=5, weight=2.0)
    assert c.pairs.tolist() == [[0, 1], [3, 4]] and c.weight.tolist() == [2.0, 2.0]
    m = Constraints.from_metric_learn(((i, i + 1) for i in range(3)), [1, -1, 1])
    assert m.pairs.tolist() == [[0, 1], [1, 2], [2, 3]] and m.kind.tolist() == [1, -1, 1]


@pytest.mark.parametrize("args, kwargs, exc, match", [
    ((-5,), {}, ValueError, r"n_pairs must be an integer >= 0; got -5"),
    ((2.5,), {}, ValueError, r"n_pairs must be an integer >= 0; got 2.5"),
    (("3",), {}, ValueError, r"n_pairs must be an integer"),
    ((2,), dict(among=[0, 9]), ValueError, r"among.* 9 .*\[0, 3\]"),
    ((2,), dict(rng="x"), ValueError, r"must be None, an int"),
])
def test_sample_from_labels_bad_arguments_are_named(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        Constraints.sample_from_labels(np.array([0, 1, 0, 1]), *args, **kwargs)


def test_sample_from_labels_needs_1d_labels_and_zero_pairs_is_empty():
    with pytest.raises(ValueError, match=r"y must be 1-D"):
        Constraints.sample_from_labels(np.zeros((2, 2)), 2)
    assert len(Constraints.sample_from_labels(np.array([0, 1, 0]), 0)) == 0
    assert len(Constraints.sample_from_labels(np.array([0, 1, 0]), np.int64(3), rng=0)) == 3


def test_subset_and_with_weight_bad_arguments_are_named():
    c = Constraints.from_pairs(must_link=[(0, 1)], n=5)
    with pytest.raises(ValueError, match=r"indices.* 7 .*\[0, 4\]"):
        c.subset([0, 7])
    with pytest.raises(TypeError, match=r"weight must be a number"):
        c.with_weight("x")


def test_closure_of_many_neighbourhoods_is_vectorised_and_complete():
    """Tens of thousands of neighbourhoods: the closure has every implied pair, once."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, 50_000)
    c = Constraints.sample_from_labels(y, 20_000, rng=1)
    full = c.closure()
    comp = c.component_labels()
    ml = full.must_link
    assert np.all(comp[ml[:, 0]] == comp[ml[:, 1]])
    sizes = np.bincount(comp[c.constrained_points])
    assert len(ml) == int((sizes * (sizes - 1) // 2).sum())
    assert len(np.unique(full.pairs, axis=0)) == len(full)
