"""The scale behind ``w="auto"`` (:meth:`hmrf.HMRF.data_scale`) in one pass, and the reads
of the chunks a Dask fit makes for it and for k-means++.

The scale is ``mean_i u(x_i, θ̄) - u(μ̄, θ̄)`` for the family's fit ``θ̄`` to all the points
as one cluster. The reference here computes it by its definition, in two passes: the
M-step of one cluster, then every point's unary cost under it. The library computes it
from one pass (the Bregman information ``E φ(X) - φ(E X)``, Banerjee et al. 2005), which
on data far from the origin is also free of the cancellation of the two-pass costs.
"""

import collections

import numpy as np
import pytest
import scipy.sparse as sp

from hmrf import HMRF
from hmrf.emissions import get_emission
from hmrf.emissions.stats import Spread

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

FAMILIES = [("sqeuclidean", "constant"), ("sqeuclidean", "closed_form"), ("kl", "constant"),
            ("idiv", "constant"), ("cosine", "constant"), ("cosine", "closed_form"),
            ("itakura_saito", "constant"), ("mahalanobis", "constant")]
#: every family on dense, float32 and sparse rows; Itakura-Saito takes dense data only
CASES = [(e, n, kind) for e, n in FAMILIES for kind in ("dense", "float32", "sparse")
         if not (kind == "sparse" and e == "itakura_saito")]


def _data(emission, kind, seed=0, n=700, d=5):
    rng = np.random.default_rng(seed)
    X = rng.gamma(2.0, size=(n, d)) * rng.uniform(0.5, 3.0, size=d) + 0.05
    if kind == "sparse":
        dense = sp.random(n, 3 * d, density=0.3, format="csr", random_state=seed).toarray()
        dense[dense > 0] += 0.05
        dense[dense.sum(axis=1) == 0, 0] = 1.0  # no empty row (KL, cosine)
        X = sp.csr_matrix(dense)
    elif kind == "float32":
        X = X.astype(np.float32)
    return X


def _two_pass_scale(X, emission, normalizer, k=3):
    """The definition: the one-cluster M-step, then the mean unary cost above the centre's."""
    fam = get_emission(emission)
    Xp = fam.prepare(X)
    theta = fam.m_step(Xp, np.zeros(Xp.shape[0], dtype=np.int64), None, normalizer)
    costs = fam.unary(Xp, theta, normalizer)[:, 0].astype(np.float64)
    centre = fam.unary(np.asarray(theta.centers[:1], dtype=np.float64), theta, normalizer)[0, 0]
    return costs.mean() - centre


@pytest.mark.parametrize("emission, normalizer, kind", CASES)
def test_one_pass_scale_is_the_mean_cost_above_the_centre(emission, normalizer, kind):
    X = _data(emission, kind)
    expected = _two_pass_scale(X, emission, normalizer)
    got = HMRF(X, 3, emission=emission, normalizer=normalizer).data_scale()
    # float32 costs carry 1e-7 round-off per point in the two-pass reference
    assert got == pytest.approx(expected, rel=1e-5 if kind == "float32" else 1e-10)
    assert got > 0


def test_the_spread_of_two_parts_is_their_within_plus_between_information():
    X = _data("kl", "dense", seed=3)
    for emission in ("sqeuclidean", "kl", "itakura_saito"):
        fam = get_emission(emission)
        Xp = fam.prepare(X)
        whole, parts = Spread.of(fam, Xp), Spread.of(fam, Xp[:123]) + Spread.of(fam, Xp[123:])
        assert parts.count == whole.count == X.shape[0]
        np.testing.assert_allclose(parts.sums, whole.sums, rtol=1e-13)
        # Σ D(x_i, x̄) by the definition, from the mean of all the rows
        direct = fam.divergence(Xp, Xp.mean(axis=0)[None, :])[:, 0].sum()
        assert parts.information == pytest.approx(direct, rel=1e-10)
        assert whole.information == pytest.approx(direct, rel=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_offset_data_keep_their_scale(dtype):
    """Data offset by 1e6 (1e3 in float32, whose resolution there is 6e-5): the scale is the
    mean squared distance to the mean computed from the differences, on the client and on
    the chunks alike; the sum of the rows' costs ||x||² - 2<x, μ> + ||μ||² would cancel."""
    rng = np.random.default_rng(5)
    offset = 1e6 if dtype == np.float64 else 1e3
    X = (rng.normal(size=(2000, 4)) * [1.0, 0.5, 2.0, 0.1] + offset).astype(dtype)
    Z = X.astype(np.float64)
    exact = ((Z - Z.mean(axis=0)) ** 2).sum(axis=1).mean()
    mem = HMRF(X, 2).data_scale()
    assert mem == pytest.approx(exact, rel=1e-9)
    with dask.config.set(scheduler="synchronous"):
        for persist in (True, False):
            dist = HMRF(_rows(X, 300, persist), 2).data_scale()
            assert dist == pytest.approx(exact, rel=1e-9)
    # the closed-form normaliser: w = d, the scale of the fitted Gaussian (σ² = tr Σ / d)
    assert HMRF(X, 2, normalizer="closed_form").data_scale() == pytest.approx(2.0, rel=1e-9)


def _rows(X, chunk, persist=True):
    from hmrf.distributed import DaskRows

    arr = da.from_array(X, chunks=(chunk, -1), asarray=not sp.issparse(X))
    return DaskRows(arr, persist)


@pytest.mark.parametrize("emission, normalizer, kind", CASES)
def test_dask_scale_equals_in_memory(emission, normalizer, kind):
    X = _data(emission, kind)
    mem = HMRF(X, 3, emission=emission, normalizer=normalizer).data_scale()
    with dask.config.set(scheduler="synchronous"):
        dist = HMRF(_rows(X, 130, persist=False), 3, emission=emission, normalizer=normalizer).data_scale()
    assert dist == pytest.approx(mem, rel=1e-6 if kind == "float32" else 1e-12)


# ------------------------------------------------------------ reads of the chunks
def _counted(X, chunk):
    """``X`` as a Dask array whose every read of a chunk is counted (by chunk)."""
    reads = collections.Counter()

    def read(block, block_info=None):
        reads[block_info[0]["chunk-location"][0]] += 1
        return block

    arr = da.from_array(X, chunks=(chunk, -1)).map_blocks(read, dtype=X.dtype)
    return arr, reads


def _passes(reads, n_chunks):
    """Whole passes over the chunks: the reads of the least read chunk (rows fetched by
    index read only the few chunks that hold them)."""
    return min(reads.get(c, 0) for c in range(n_chunks))


@pytest.mark.parametrize("emission", ["sqeuclidean", "kl", "cosine", "mahalanobis"])
def test_the_scale_needs_no_pass_beyond_the_summary(emission):
    from hmrf.distributed import DaskHMRF

    X = _data(emission, "dense", n=1200)
    arr, reads = _counted(X, 100)
    with dask.config.set(scheduler="synchronous"):
        model = DaskHMRF(arr, 3, emission=emission, persist=False)
        assert _passes(reads, 12) == 1 and max(reads.values()) == 1  # the summary pass
        scale = model.data_scale()
    assert _passes(reads, 12) == 1 and max(reads.values()) == 1
    assert scale == pytest.approx(HMRF(X, 3, emission=emission).data_scale(), rel=1e-12)


def test_kmeanspp_reads_the_chunks_once_per_centre():
    """k-means++ of k centres: one pass for the minima to the first centre, then one per
    further centre (the candidates' potentials; the chosen one's minima are formed from
    what that pass kept on the workers), and the centres of the in-memory seeding."""
    from hmrf.distributed import DaskHMRF
    from hmrf.initialization import initial_centers

    k, n_chunks = 5, 24
    rng = np.random.default_rng(7)
    X = rng.normal(size=(2400, 3)) + 6 * rng.normal(size=(k, 3))[rng.integers(0, k, 2400)]
    arr, reads = _counted(X, 100)
    with dask.config.set(scheduler="synchronous"):
        model = DaskHMRF(arr, k, persist=False)
        reads.clear()
        got = initial_centers(model.X, k, model.emission, None, "k-means++", np.random.default_rng(0))
    assert _passes(reads, n_chunks) == k
    fam = get_emission("sqeuclidean")
    expected = initial_centers(X, k, fam, None, "k-means++", np.random.default_rng(0))
    np.testing.assert_array_equal(got, expected)
