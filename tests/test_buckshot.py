"""Buckshot initial centres (hmrf.classic.buckshot_centers) against SciPy's average link."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist

from hmrf.classic import buckshot, buckshot_centers
from hmrf.emissions import KL, IDivergence, VonMisesFisher


def blobs(n=400, d=5, k=4, seed=0, spread=1.0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=10.0, size=(k, d))
    y = rng.integers(k, size=n)
    return centers[y] + spread * rng.normal(size=(n, d)), y, centers


def reference_centers(Xs, k, metric):
    """Average-link HAC of the sample by SciPy, cut at k, cluster means (rows sorted)."""
    lab = fcluster(linkage(pdist(Xs, metric=metric), method="average"), k, criterion="maxclust")
    C = np.array([Xs[lab == c].mean(axis=0) for c in np.unique(lab)])
    return C[np.lexsort(C.T[::-1])]


def sorted_rows(C):
    return C[np.lexsort(C.T[::-1])]


@pytest.mark.parametrize("n, k", [(400, 4), (1000, 7), (30, 30), (5, 1)])
def test_sample_budget_is_ceil_sqrt_kn(n, k):
    X, _, _ = blobs(n=n)
    C, sample = buckshot_centers(X, k, rng=3, return_sample=True)
    s = min(n, math.ceil(math.sqrt(k * n)))
    assert sample.shape == (s,) and np.unique(sample).size == s
    assert np.all(np.diff(sample) > 0) and sample.min() >= 0 and sample.max() < n
    assert C.shape == (k, X.shape[1])
    assert buckshot.sample_size(n, k) == s


def test_only_the_sampled_rows_are_read():
    X, _, _ = blobs(n=500, seed=1)
    C, sample = buckshot_centers(X, 5, rng=11, return_sample=True)
    other = np.setdiff1d(np.arange(500), sample)
    Y = X.copy()
    Y[other] = np.random.default_rng(0).normal(scale=100.0, size=(other.size, X.shape[1]))
    np.testing.assert_array_equal(buckshot_centers(Y, 5, rng=11), C)


def test_deterministic_for_a_seed():
    X, _, _ = blobs(n=600, seed=2)
    a = buckshot_centers(X, 6, rng=5)
    np.testing.assert_array_equal(a, buckshot_centers(X, 6, rng=5))
    np.testing.assert_array_equal(a, buckshot_centers(X, 6, rng=np.random.RandomState(5)))
    assert not np.array_equal(a, buckshot_centers(X, 6, rng=6))
    g1, g2 = np.random.default_rng(9), np.random.default_rng(9)
    np.testing.assert_array_equal(buckshot_centers(X, 6, rng=g1), buckshot_centers(X, 6, rng=g2))


@pytest.mark.parametrize("family, metric", [(None, "sqeuclidean"), (VonMisesFisher(), "cosine")])
def test_centres_are_average_link_cluster_means_of_the_sample(family, metric):
    X, _, _ = blobs(n=800, seed=3, spread=4.0)
    if metric == "cosine":
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
    C, sample = buckshot_centers(X, 6, rng=0, family=family, return_sample=True)
    np.testing.assert_allclose(sorted_rows(C), reference_centers(X[sample], 6, metric), rtol=1e-10, atol=1e-12)


def test_a_general_family_uses_its_symmetrised_divergence_blockwise(monkeypatch):
    rng = np.random.default_rng(4)
    X = rng.poisson(1.0, size=(300, 12)).astype(float) + np.eye(12)[rng.integers(12, size=300)]
    fam = KL(smoothing=0.05)
    P = fam.prepare(X)
    C, sample = buckshot_centers(P, 4, rng=1, family=fam, return_sample=True)
    Ps = P[sample]
    D = fam.divergence(Ps, fam.init_params(Ps, Ps).centers)
    D = 0.5 * (D + D.T)
    np.fill_diagonal(D, 0.0)
    from scipy.spatial.distance import squareform

    lab = fcluster(linkage(squareform(D, checks=False), method="average"), 4, criterion="maxclust")
    ref = np.array([Ps[lab == c].mean(axis=0) for c in np.unique(lab)])
    np.testing.assert_allclose(sorted_rows(C), sorted_rows(ref), rtol=1e-10)
    monkeypatch.setattr(buckshot, "_BLOCK_ENTRIES", 25)  # two sample rows per block
    np.testing.assert_allclose(buckshot_centers(P, 4, rng=1, family=fam), C, rtol=1e-12)


@pytest.mark.parametrize("family", [None, VonMisesFisher()])
def test_sparse_stays_sparse_until_the_centroids(monkeypatch, family):
    rng = np.random.default_rng(5)
    X = sp.random(2000, 300, density=0.02, random_state=5, format="csr")
    X = X + sp.csr_matrix((np.ones(2000), (np.arange(2000), rng.integers(300, size=2000))), shape=X.shape)
    if family is not None:
        X = sp.csr_matrix(family.prepare(X))
    dense_answer = buckshot_centers(X.toarray(), 8, rng=0, family=family)
    k, d = 8, X.shape[1]
    originals = {}

    def guard(cls):
        original = cls.toarray

        def toarray(self, *a, **kw):
            if self.shape[1] == d and self.shape[0] > k:  # rows of X, not k centroids
                raise AssertionError(f"densified {self.shape[0]} rows of X")
            return original(self, *a, **kw)
        return toarray

    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        originals[cls] = cls.toarray
        monkeypatch.setattr(cls, "toarray", guard(cls))
        monkeypatch.setattr(cls, "todense", lambda self, *a, **kw: (_ for _ in ()).throw(AssertionError("todense")))
    C = buckshot_centers(X, k, rng=0, family=family)
    monkeypatch.undo()
    np.testing.assert_allclose(C, dense_answer, rtol=1e-9, atol=1e-12)


def test_well_separated_blobs_get_one_centre_each():
    hits = 0
    for seed in range(10):
        X, y, centers = blobs(n=1000, k=5, d=4, seed=seed, spread=0.5)
        C = buckshot_centers(X, 5, rng=seed)
        nearest = np.argmin(((C[:, None, :] - centers[None]) ** 2).sum(-1), axis=1)
        hits += np.unique(nearest).size == 5
    assert hits == 10


def test_feeds_spherical_kmeans():
    from hmrf import SphericalKMeans
    from hmrf.metrics import nmi

    X, y, _ = blobs(n=600, seed=6, spread=2.0)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    C = buckshot_centers(X, 4, rng=0, family=VonMisesFisher())
    est = SphericalKMeans(4, init=C, random_state=0).fit(X)
    assert nmi(y, est.labels_) > 0.8


def test_errors_are_named():
    X, _, _ = blobs(n=20)
    with pytest.raises(ValueError, match="larger than the number of samples"):
        buckshot_centers(X, 21, rng=0)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="row 3, column 1"):
        buckshot_centers(Xn, 2, rng=0)
    Z = np.zeros((20, 3))
    Z[:10, 0] = 1.0
    Z[10:, 1] = 1.0
    with pytest.raises(ValueError, match="not finite"):
        buckshot_centers(Z, 2, rng=0, family=IDivergence(smoothing=0.0))
