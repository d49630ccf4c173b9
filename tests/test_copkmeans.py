"""COP-KMeans and its E-step (GreedyFeasible): the paper's algorithm, restarts, MILP repair."""

import itertools

import numpy as np
import pytest
from mrf_problems import random_hard_problem

from hmrf import Constraints, COPKMeans, InconsistentConstraintsError, InfeasibleError, PairwiseGraph
from hmrf.inference import ExactMILP
from hmrf.inference.greedy import GreedyFeasible


def dense_cannot_link_problem(seed, p_ml=0.15, pairs_per_point=(1, 3)):
    """Random data with many cannot-links and few clusters: greedy dead ends are common."""
    rng = np.random.default_rng(seed)
    n, k, d = int(rng.integers(6, 31)), int(rng.integers(2, 4)), int(rng.integers(1, 5))
    X = rng.normal(size=(n, d))
    lo, hi = pairs_per_point
    pairs = rng.integers(0, n, size=(int(rng.integers(int(lo * n), int(hi * n))), 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    is_ml = rng.random(len(pairs)) < p_ml
    return X, k, pairs[is_ml].tolist(), pairs[~is_ml].tolist()


def feasible(n, k, ml, cl):
    """Whether all constraints can hold with k clusters (ExactMILP decides it exactly)."""
    try:
        c = Constraints.from_pairs(must_link=ml, cannot_link=cl, n=n, weight=np.inf)
        ExactMILP().map(np.zeros((n, k)), c)
    except (InfeasibleError, InconsistentConstraintsError):
        return False
    return True


def honours(labels, ml, cl):
    return all(labels[i] == labels[j] for i, j in ml) and all(labels[i] != labels[j] for i, j in cl)


# seeds of dense_cannot_link_problem where the paper's algorithm aborts on a feasible
# problem with random_state=0: the restarts rescue the first, only the MILP the second
RESCUED_BY_RESTARTS, RESCUED_BY_MILP = 80, 256


@pytest.mark.parametrize("seed, rescued_by_restarts", [(RESCUED_BY_RESTARTS, True), (RESCUED_BY_MILP, False)])
def test_wagstaffs_algorithm_aborts_and_the_options_rescue_feasible_problems(seed, rescued_by_restarts):
    """The paper's algorithm (one run, ``n_init=1``) aborts on these feasible problems."""
    X, k, ml, cl = dense_cannot_link_problem(seed)
    assert feasible(len(X), k, ml, cl)
    with pytest.raises(InfeasibleError, match="COP-KMeans aborts here") as info:
        COPKMeans(k, n_init=1, random_state=0).fit(X, must_link=ml, cannot_link=cl)
    assert info.value.point in range(len(X))
    if rescued_by_restarts:
        est = COPKMeans(k, inference=GreedyFeasible(n_restarts=10), n_init=1, random_state=0).fit(
            X, must_link=ml, cannot_link=cl)
        assert est.assignment_ == "restarts" and honours(est.labels_, ml, cl)
    else:
        with pytest.raises(InfeasibleError, match="other point orders"):
            COPKMeans(k, inference=GreedyFeasible(n_restarts=10), n_init=1, random_state=0).fit(
                X, must_link=ml, cannot_link=cl)
    for restarts in (0, 10):
        est = COPKMeans(k, inference=GreedyFeasible(n_restarts=restarts, repair="milp"), n_init=1,
                        random_state=0).fit(
            X, must_link=ml, cannot_link=cl)
        assert honours(est.labels_, ml, cl)
        assert est.assignment_ == ("restarts" if rescued_by_restarts and restarts else "milp")
        assert np.isfinite(est.objective_) and np.all(np.diff(est.history_) <= 1e-9)


def test_milp_repair_aborts_only_on_infeasible_problems():
    n_feasible = n_infeasible = 0
    for seed in range(40):
        if n_feasible >= 10 and n_infeasible >= 5:  # enough of both kinds checked
            break
        X, k, ml, cl = dense_cannot_link_problem(1000 + seed, p_ml=0.05, pairs_per_point=(0.5, 1.5))
        try:
            est = COPKMeans(k, inference=GreedyFeasible(repair="milp"), random_state=0).fit(
                X, must_link=ml, cannot_link=cl)
        except InconsistentConstraintsError:
            continue
        except InfeasibleError as exc:
            assert not feasible(len(X), k, ml, cl) and exc.point in range(len(X))
            n_infeasible += 1
            continue
        except ValueError as exc:  # fewer must-link components than clusters (initialisation)
            assert "must-link components" in str(exc)
            continue
        assert honours(est.labels_, ml, cl) and est.assignment_ in ("greedy", "milp")
        n_feasible += 1
    assert n_feasible >= 10 and n_infeasible >= 5


def test_assignment_is_greedy_without_dead_ends_and_parameters_are_checked():
    X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1]])
    est = COPKMeans(2, random_state=0).fit(X, must_link=[(2, 3)], cannot_link=[(0, 2)])
    assert est.assignment_ == "greedy" and honours(est.labels_, [(2, 3)], [(0, 2)])
    assert COPKMeans(2, random_state=0).fit(X).assignment_ == "greedy"
    with pytest.raises(ValueError, match=r"n_restarts must be an integer in \[0, inf\); got -1"):
        COPKMeans(2, inference=GreedyFeasible(n_restarts=-1)).fit(X)
    with pytest.raises(ValueError, match="repair must be one of None, 'milp'; got 'sat'"):
        COPKMeans(2, inference=GreedyFeasible(repair="sat")).fit(X)
    with pytest.raises(ValueError, match="inference must be one of 'greedy' or a GreedyFeasible instance"):
        COPKMeans(2, inference="icm").fit(X)
    # the arguments of the engine are the engine's: the old spelling names the new one
    with pytest.raises(TypeError, match=r"COPKMeans\(n_restarts=3, repair='milp'\) is spelled "
                                        r"COPKMeans\(inference=GreedyFeasible\(n_restarts=3, repair='milp'\)\)"):
        COPKMeans(2, n_restarts=3, repair="milp")


@pytest.mark.parametrize("seed", range(30))
def test_greedy_engine_with_milp_repair_is_feasible_exactly_when_enumeration_is(seed):
    # hard cannot-links and forbidden labels on tiny problems; enumeration decides
    rng = np.random.default_rng(seed)
    unary, g = random_hard_problem(rng, p_cl=0.9, p_hard=1.0, p_forbidden=0.1)
    n, k = unary.shape
    hard = np.isinf(g.weight)
    g = PairwiseGraph.potts(n, g.edges[hard], g.weight[hard], g.kind[hard])
    ys = np.array(list(itertools.product(range(k), repeat=n)))
    energies = np.array([g.energy(y, unary) for y in ys])
    try:
        res = GreedyFeasible(repair="milp").map(unary, g, rng=seed)
    except InfeasibleError as exc:
        assert not np.isfinite(energies).any() and exc.point in range(n)
        return
    assert np.isfinite(res.energy) and np.isfinite(energies).any()
    assert res.info.get("method", "greedy") in ("greedy", "milp")
    if res.info.get("method") == "milp" and g.n_edges and len(g.components()[1]) == n:
        assert res.energy >= energies.min() - 1e-9


def test_greedy_engine_reports_the_wagstaff_abort_point():
    # point 2 is cannot-linked to 0 and 1, which the unary costs put in the two clusters
    # first (they have the most constraints); 2 then has no legal cluster
    unary = np.array([[0.0, 5.0], [5.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    g = PairwiseGraph.potts(4, [(0, 1), (0, 2), (1, 2)], np.full(3, np.inf), [-1, -1, -1])
    with pytest.raises(InfeasibleError, match="point 2") as info:
        GreedyFeasible().map(unary, g, rng=0)
    assert info.value.point == 2


# ---------------------------------------------------------------- initialisation
def test_default_start_finds_separated_classes_the_papers_random_start_merges():
    """Ten well-separated classes, no constraints: the paper's start (random points,
    one run) puts two centres in one class for some seeds; the default k-means++ start
    (and its runs) recovers every class."""
    from sklearn.datasets import make_blobs

    from hmrf.metrics import nmi

    X, y = make_blobs(2000, 5, centers=10, cluster_std=0.5, random_state=0)
    paper = [nmi(y, COPKMeans(10, init="random", n_init=1, random_state=s).fit(X).labels_) for s in range(4)]
    ours = [nmi(y, COPKMeans(10, random_state=s).fit(X).labels_) for s in range(4)]
    assert min(ours) == pytest.approx(1.0)
    assert min(paper) < 0.99


def test_random_start_takes_points_of_distinct_must_link_components():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    c = Constraints.from_pairs([(i, i + 1) for i in range(0, 20)], None, n=30)  # one component 0..20
    comp = c.component_labels()
    for s in range(10):
        est = COPKMeans(3, init="random", n_init=1, max_iter=1, random_state=s)
        model_params = []
        real = est._initial_params

        def spy(model, constraints, y, gen, real=real, store=model_params):
            p = real(model, constraints, y, gen)
            store.append(np.asarray(p.centers))
            return p

        est._initial_params = spy
        est.fit(X, constraints=c)
        rows = [int(np.flatnonzero(np.all(X == ctr, axis=1))[0]) for ctr in model_params[0]]
        assert len({comp[r] for r in rows}) == 3


def test_k_means_plus_plus_start_seeds_a_must_link_component_by_its_centroid():
    """Two tight groups joined by must-links within, and a third: the default start's
    centres include the must-linked group's centroid whenever a member is drawn."""
    from hmrf.emissions import SquaredEuclidean
    from hmrf.initialization import initial_centers

    X = np.vstack([np.zeros((5, 2)) + [[i * 0.01, 0] for i in range(5)],
                   np.full((5, 2), 10.0), np.full((5, 2), -10.0)])
    c = Constraints.from_pairs([(0, i) for i in range(1, 5)], None, n=15)
    for s in range(5):
        C = initial_centers(X, 3, SquaredEuclidean(), c, "pckmeans++", np.random.default_rng(s))
        assert any(np.allclose(row, X[:5].mean(axis=0)) for row in C)
        est = COPKMeans(3, random_state=s).fit(X, constraints=c)
        assert len(set(est.labels_[:5])) == 1 and len(set(est.labels_)) == 3


def test_text_gets_the_cosine_model():
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    X = sp.random(40, 30, density=0.2, format="csr", random_state=2)
    X = X + sp.csr_matrix((np.ones(40), (np.arange(40), rng.integers(0, 30, 40))), shape=(40, 30))
    c = Constraints.from_pairs([(0, 1)], [(2, 3)], n=40)
    auto = COPKMeans(3, random_state=0).fit(X, constraints=c)
    cos = COPKMeans(3, emission="cosine", random_state=0).fit(X, constraints=c)
    assert auto.emission_ == "cosine"
    np.testing.assert_array_equal(auto.labels_, cos.labels_)
    assert COPKMeans(3, random_state=0).fit(X.toarray(), constraints=c).emission_ == "sqeuclidean"


def test_bad_init_is_named():
    with pytest.raises(ValueError, match="init"):
        COPKMeans(2, init="pckmeans").fit(np.eye(4))


def test_extra_potentials_must_be_hard():
    # the greedy assignment reads hard costs only: soft factors are refused by name, hard
    # table factors are kept like hard pairs
    from sklearn.datasets import load_iris

    from hmrf import Constraints
    from hmrf.potentials import DistanceScaledPotts, PottsConstraints, TablePotential

    X, _ = load_iris(return_X_y=True)
    soft = Constraints.from_pairs(must_link=[(0, 100)], n=150, weight=5.0)
    for pot in (PottsConstraints(soft, 1.0), DistanceScaledPotts(soft)):
        with pytest.raises(ValueError, match=type(pot).__name__):
            COPKMeans(3, random_state=0).fit(X, potentials=pot)
    T = np.full((3, 3), np.inf)
    np.fill_diagonal(T, 0.0)  # a hard must-link as a table
    est = COPKMeans(3, random_state=0).fit(X, potentials=TablePotential(150, [(0, 100), (1, 101)], T))
    assert est.labels_[0] == est.labels_[100] and est.labels_[1] == est.labels_[101]
    assert np.isfinite(est.objective_)
