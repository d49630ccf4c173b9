"""HAC (hmrf.HAC): SciPy parity without constraints, constrained HAC against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist, squareform

from hmrf import HAC, Constraints, InconsistentConstraintsError, InfeasibleError
from hmrf.classic.linkage import constrained_linkage, cut_linkage

LINKAGES = ["single", "complete", "average"]


def same_partition(a, b) -> bool:
    """Equal up to a renaming of the clusters."""
    a, b = np.asarray(a), np.asarray(b)
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def blobs(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=4.0, size=(4, d))
    return centers[rng.integers(4, size=n)] + rng.normal(size=(n, d))


# ------------------------------------------------------------ unconstrained
@pytest.mark.parametrize("method", LINKAGES)
@pytest.mark.parametrize("metric", ["euclidean", "cosine", "cityblock", "sqeuclidean"])
def test_labels_equal_scipy_fcluster(method, metric):
    X = blobs(seed=1)
    Z = linkage(pdist(X, metric=metric), method=method)
    for k in (1, 2, 3, 5, 9, 40):
        ours = HAC(n_clusters=k, linkage=method, metric=metric).fit(X)
        ref = fcluster(Z, k, criterion="maxclust")
        assert same_partition(ours.labels_, ref), (method, metric, k)
        assert ours.n_clusters_ == k
    for t in np.quantile(Z[:, 2], [0.0, 0.3, 0.8, 1.0]):
        ours = HAC(distance_threshold=float(t), linkage=method, metric=metric).fit(X)
        assert same_partition(ours.labels_, fcluster(Z, t, criterion="distance"))


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "cityblock", "sqeuclidean"])
def test_sparse_input_gives_the_dense_answer(metric):
    X = np.abs(blobs(seed=2))
    X[X < 1.0] = 0.0
    X[:, 0] += 1.0  # no all-zero row (cosine)
    for method in LINKAGES:
        dense = HAC(n_clusters=4, linkage=method, metric=metric).fit(X)
        sparse = HAC(n_clusters=4, linkage=method, metric=metric).fit(sp.csr_matrix(X))
        np.testing.assert_array_equal(dense.labels_, sparse.labels_)
        np.testing.assert_allclose(dense.linkage_matrix_, sparse.linkage_matrix_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", LINKAGES)
def test_merge_loop_without_constraints_is_scipy_linkage(method):
    """The constrained loop (Lance-Williams + nearest-neighbour chain) run with no
    constraint builds SciPy's tree: same heights, same cuts."""
    X = blobs(n=300, d=5, seed=3)
    D = pdist(X)
    ref = linkage(D, method=method)
    Z, sizes = constrained_linkage(D.copy(), X.shape[0], method)
    np.testing.assert_allclose(Z[:, 2], ref[:, 2], rtol=1e-10)
    np.testing.assert_array_equal(Z[:, 3], ref[:, 3])
    assert np.all(sizes == 1)
    for k in (2, 7, 50):
        assert same_partition(cut_linkage(Z, 300, 300 - k), fcluster(ref, k, criterion="maxclust"))


# ------------------------------------------------------ constrained, brute force
def brute_force_hac(X, method, must_link, cannot_link):
    """Greedy constrained HAC straight from the definition: components of the
    must-links first, then repeatedly the closest pair of clusters (min / max / mean
    over their cross pairs of points) that no cannot-link joins. Returns the partition
    after every merge, until a dead end."""
    n = X.shape[0]
    D = squareform(pdist(X))
    parent = list(range(n))

    def find(v):
        while parent[v] != v:
            v = parent[v]
        return v

    for i, j in must_link:
        parent[find(i)] = find(j)
    clusters = {}
    for i in range(n):
        clusters.setdefault(find(i), []).append(i)
    clusters = list(clusters.values())
    agg = {"single": np.min, "complete": np.max, "average": np.mean}[method]
    cl = {frozenset(p) for p in cannot_link}

    def labels():
        out = np.empty(n, dtype=int)
        for c, members in enumerate(clusters):
            out[members] = c
        return out

    history = [labels()]
    while len(clusters) > 1:
        best = None
        for a, b in itertools.combinations(range(len(clusters)), 2):
            if any(frozenset((i, j)) in cl for i in clusters[a] for j in clusters[b]):
                continue
            d = agg(D[np.ix_(clusters[a], clusters[b])])
            if best is None or d < best[0]:
                best = (d, a, b)
        if best is None:
            break
        _, a, b = best
        clusters[a] = clusters[a] + clusters[b]
        del clusters[b]
        history.append(labels())
    return history


def colourable(n_nodes, edges, k) -> bool:
    """Whether the graph can be coloured with ``k`` colours (backtracking, tiny graphs)."""
    colour = [-1] * n_nodes
    adj = [set() for _ in range(n_nodes)]
    for a, b in edges:
        adj[a].add(b)
        adj[b].add(a)

    def place(v):
        if v == n_nodes:
            return True
        for c in range(k):
            if all(colour[u] != c for u in adj[v]):
                colour[v] = c
                if place(v + 1):
                    return True
        colour[v] = -1
        return False

    return place(0)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n=st.integers(2, 14), n_ml=st.integers(0, 5),
       n_cl=st.integers(0, 8), method=st.sampled_from(LINKAGES))
def test_constrained_hac_equals_brute_force_and_honours_every_constraint(seed, n, n_ml, n_cl, method):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    pairs = lambda m: [tuple(rng.choice(n, 2, replace=False).tolist()) for _ in range(m)]  # noqa: E731
    ml, cl = pairs(n_ml), pairs(n_cl)
    c = Constraints.from_pairs(ml, cl, n=n)  # unit (soft) weights: contradictions allowed
    components = c.component_labels()
    if any(components[i] == components[j] for i, j in cl):
        with pytest.raises(InconsistentConstraintsError):  # HAC enforces every constraint
            HAC(n_clusters=1, linkage=method).fit(X, constraints=c)
        return
    history = brute_force_hac(X, method, ml, cl)
    n_leaves = history[0].max() + 1
    dead_end = history[-1].max() + 1
    leaf_edges = {(min(components[i], components[j]), max(components[i], components[j])) for i, j in cl}
    for k in range(1, n + 1):
        est = HAC(n_clusters=k, linkage=method)
        if k > n_leaves or (k < dead_end and not colourable(n_leaves, leaf_edges, k)):
            with pytest.raises(InfeasibleError):  # proven: too few groups, or no k-colouring
                est.fit(X, constraints=c)
            continue
        lab = est.fit(X, constraints=c).labels_
        if k >= dead_end:
            assert same_partition(lab, history[n_leaves - k]), (k, lab, history[n_leaves - k])
            assert est.n_moved_ == 0
        else:  # a greedy dead end, repaired: k clusters all the same
            assert est.n_moved_ > 0
        assert np.unique(lab).size == k
        for i, j in ml:
            assert lab[i] == lab[j]
        for i, j in cl:
            assert lab[i] != lab[j]
    # the merge heights are what the brute force merged at, in order
    full = HAC(n_clusters=dead_end, linkage=method).fit(X, constraints=c)
    assert full.linkage_matrix_.shape[0] == n_leaves - dead_end
    assert np.all(np.diff(full.linkage_matrix_[:, 2]) >= -1e-12)


def test_must_linked_points_are_merged_first_with_component_distances():
    """The first merge of the leaves happens at the single/complete/average distance
    between whole must-link components."""
    X = np.array([[0.0, 0], [0, 1], [3, 0], [3, 1.5], [10, 0]])
    D = squareform(pdist(X))
    ml = [(0, 1), (2, 3)]
    for method, agg in [("single", np.min), ("complete", np.max), ("average", np.mean)]:
        est = HAC(n_clusters=2, linkage=method).fit(X, must_link=ml)
        assert est.n_leaves_ == 3
        np.testing.assert_array_equal(est.leaf_sizes_, [2, 2, 1])
        assert est.linkage_matrix_[0, 2] == pytest.approx(agg(D[np.ix_([0, 1], [2, 3])]))
        assert same_partition(est.labels_, [0, 0, 0, 0, 1])


def test_partial_labels_become_constraints():
    X = blobs(n=30, seed=4)
    y = np.full(30, -1)
    y[[0, 1]] = 0
    y[[2, 3]] = 1
    lab = HAC(n_clusters=2, linkage="complete").fit(X, y).labels_
    assert lab[0] == lab[1] and lab[2] == lab[3] and lab[0] != lab[2]


def test_cannot_links_reaching_k_is_reported_as_infeasible():
    """Three mutually cannot-linked points need three clusters: proven, so InfeasibleError."""
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    with pytest.raises(InfeasibleError, match="cannot be coloured with 2 colours"):
        HAC(n_clusters=2).fit(X, cannot_link=[(0, 1), (1, 2), (0, 2)])
    with pytest.raises(InfeasibleError, match="must-links join the points into 2 groups"):
        HAC(n_clusters=3).fit(X, must_link=[(0, 1), (2, 3)])


def test_greedy_dead_end_although_k_is_feasible_is_repaired():
    """Davidson & Ravi (2005): B and C are closest and merge first; then every pair is
    cannot-linked, though {A, C} | {B, D} satisfies every constraint. The repair moves
    one point (B or C) out of {B, C}: the only 2-clustering that keeps every constraint."""
    A, B, C, D = 0, 1, 2, 3
    X = np.array([[-5.0], [0.0], [0.1], [5.0]])
    cl = [(A, B), (C, D), (A, D)]
    for method in LINKAGES:
        est = HAC(n_clusters=2, linkage=method).fit(X, cannot_link=cl)
        assert same_partition(est.labels_, [0, 1, 0, 1])
        assert est.n_moved_ == 1
    lab = HAC(n_clusters=3, linkage="single").fit(X, cannot_link=cl).labels_
    assert same_partition(lab, [0, 1, 1, 2])


def test_repair_moves_the_fewest_points():
    """Dead-end clusters: leaves 0 (three points) and 3 (two) in one, leaves 1 and 2 alone;
    cannot-links 0-1, 3-2, 1-2 join every two clusters, k = 2. Enumerating every
    2-labelling of the leaves that keeps the constraints, the fewest points leaving their
    cluster is what the repair moves (leaf 3: two points)."""
    from hmrf.classic.linkage import repair_dead_end

    clusters = np.array([0, 1, 2, 0])
    sizes = np.array([3, 1, 1, 2])
    cl = np.array([[0, 1], [3, 2], [1, 2]])
    labels, moved = repair_dead_end(clusters, sizes, cl, 2)
    assert all(labels[a] != labels[b] for a, b in cl)

    def moved_points(lab):  # clusters keep the label most of their points have
        total = 0
        for c in np.unique(clusters):
            leaves = np.flatnonzero(clusters == c)
            kept = max(sizes[leaves][lab[leaves] == g].sum() for g in range(2))
            total += sizes[leaves].sum() - kept
        return total

    best = min(moved_points(np.array(lab)) for lab in itertools.product(range(2), repeat=4)
               if all(lab[a] != lab[b] for a, b in cl) and len(set(lab)) == 2)
    assert moved == best == 2
    assert labels[0] != labels[3]


def test_hac_on_wine_with_consistent_random_pairs_never_calls_it_infeasible():
    """Issue 21: wine (standardised), 40 random pairs the true classes satisfy: a
    3-clustering keeps them all, whatever the linkage."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    for seed in range(3):
        c = Constraints.sample_from_labels(y, 40, np.random.default_rng(seed))
        for method in LINKAGES:
            est = HAC(3, linkage=method).fit(X, constraints=c)
            assert np.unique(est.labels_).size == 3
            assert not c.violations(est.labels_).any()


def test_a_repair_out_of_time_raises_a_search_error_not_infeasibility(monkeypatch):
    """When HiGHS stops at its time limit with no labelling, the error says the
    constraints may be satisfiable (and is not an InfeasibleError)."""
    import scipy.optimize

    from hmrf.exceptions import ConstraintSearchError

    class Timeout:
        status, x = 1, None

    monkeypatch.setattr(scipy.optimize, "milp", lambda *a, **k: Timeout())
    X = np.array([[-5.0], [0.0], [0.1], [5.0]])
    with pytest.raises(ConstraintSearchError, match="may be satisfiable") as err:
        HAC(n_clusters=2, linkage="single", time_limit=1.0).fit(X, cannot_link=[(0, 1), (2, 3), (0, 3)])
    assert not isinstance(err.value, InfeasibleError)


def test_distance_threshold_with_constraints_stops_at_a_dead_end():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    est = HAC(distance_threshold=100.0, linkage="single").fit(X, cannot_link=[(0, 3)])
    assert est.n_clusters_ == 2 and est.labels_[0] != est.labels_[3]


def test_contradiction_is_named():
    """Soft constraints may contradict each other; HAC enforces all, so it names the
    cannot-link inside a must-link group."""
    X = np.arange(6.0).reshape(3, 2)
    with pytest.raises(InconsistentConstraintsError, match=r"cannot-link \(0, 2\)") as err:
        HAC(n_clusters=1).fit(X, must_link=[(0, 1), (1, 2)], cannot_link=[(0, 2)])
    assert err.value.pair == (0, 2)


def test_larger_constrained_problem_agrees_with_its_unconstrained_merges():
    """n = 1500 through the constrained loop (one cannot-link between two points that
    the unconstrained tree joins only at the root) cut at k >= 2 is SciPy's tree."""
    X = blobs(n=1500, d=4, seed=5)
    Z = linkage(pdist(X), method="average")
    ref = fcluster(Z, 2, criterion="maxclust")
    i, j = int(np.flatnonzero(ref == 1)[0]), int(np.flatnonzero(ref == 2)[0])
    for k in (2, 6):
        lab = HAC(n_clusters=k, linkage="average").fit(X, cannot_link=[(i, j)]).labels_
        assert same_partition(lab, fcluster(Z, k, criterion="maxclust"))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("params, match", [
    (dict(), "exactly one of n_clusters and distance_threshold"),
    (dict(n_clusters=2, distance_threshold=1.0), "exactly one"),
    (dict(n_clusters=2, linkage="ward"), "linkage must be one of"),
    (dict(n_clusters=2, metric="minkowski"), "metric must be one of"),
    (dict(distance_threshold=-1.0), "distance_threshold must be"),
    (dict(n_clusters=0), "n_clusters must be"),
])
def test_bad_hyperparameters(params, match):
    with pytest.raises(ValueError, match=match):
        HAC(**params).fit(blobs(n=10))


def test_bad_data_is_named():
    X = blobs(n=10)
    with pytest.raises(ValueError, match="max_samples=5"):
        HAC(n_clusters=2, max_samples=5).fit(X)
    Xz = X.copy()
    Xz[4] = 0.0
    with pytest.raises(ValueError, match="row 4 of X is all zeros"):
        HAC(n_clusters=2, metric="cosine").fit(Xz)
    with pytest.raises(ValueError, match="larger than the number of samples"):
        HAC(n_clusters=11).fit(X)
    with pytest.raises(ValueError, match="not both"):
        HAC(n_clusters=2).fit(X, must_link=[(0, 1)], constraints=Constraints.empty(10))


def test_inputs_untouched_and_deterministic():
    X = blobs(n=25, seed=6)
    X.flags.writeable = False
    a = HAC(n_clusters=3).fit(X, cannot_link=[(0, 1)]).labels_
    b = HAC(n_clusters=3).fit(X, cannot_link=[(0, 1)]).labels_
    np.testing.assert_array_equal(a, b)


class _HACWithoutSupervision(HAC):
    """HAC that ignores ``y``: scikit-learn's checks pass arbitrary class labels as y,
    which HAC (like the other estimators) takes as must-/cannot-link supervision."""

    def fit(self, X, y=None, **kwargs):
        return super().fit(X, **kwargs)


def test_sklearn_estimator_checks():
    from sklearn.utils.estimator_checks import check_clustering, check_estimator

    results = check_estimator(_HACWithoutSupervision(n_clusters=3), on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    assert not failed, failed
    assert sum(r["status"] == "passed" for r in results) >= 25
    check_clustering("HAC", HAC(n_clusters=3))
    check_clustering("HAC", HAC(n_clusters=3), readonly_memmap=True)


# ---------------------------------------------------------------- dendrogram
def test_dendrogram_draws_every_merge_and_marks_a_forest():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from hmrf.classic import plot_dendrogram

    X = blobs(n=12, seed=7)
    est = HAC(n_clusters=3).fit(X)
    ax = plot_dendrogram(est)
    assert len(ax.collections[0].get_paths()) + sum(len(c.get_paths()) for c in ax.collections[1:]) >= 11
    plt.close("all")
    est = HAC(n_clusters=3, linkage="single").fit(X, must_link=[(0, 1)], cannot_link=[(0, 2), (0, 3), (2, 3)])
    fig, ax = plt.subplots()
    assert est.plot_dendrogram(ax=ax) is ax
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(labels) == est.n_leaves_ == 11 and "0+1" in labels
    assert any(t.get_text().startswith("no merge allowed") for t in ax.texts)
    plt.close("all")
