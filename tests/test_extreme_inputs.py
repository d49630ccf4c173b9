"""Data at extreme scales and degenerate directions."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris

from hmrf import HMRFKMeans, MPCKMeans, PCKMeans, SphericalKMeans
from hmrf.emissions import VonMisesFisher

X_IRIS, Y_IRIS = load_iris(return_X_y=True)


@pytest.mark.parametrize("scale", [1e155, 1e-300])
@pytest.mark.parametrize("make", [lambda: HMRFKMeans(3, random_state=0), lambda: PCKMeans(3, random_state=0),
                                  lambda: MPCKMeans(3, random_state=0)])
def test_squared_distances_out_of_range_are_named(scale, make):
    """Squares of 1e155 overflow float64 and squares of 1e-300 vanish: the error says so
    and what to do, instead of NaN costs and overflow warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"X's entries reach .* Rescale X"):
            make().fit(X_IRIS * scale, must_link=[(0, 1)])


def test_float32_overflow_is_judged_in_float32():
    with pytest.raises(ValueError, match="overflow float32"):
        HMRFKMeans(3, random_state=0).fit((X_IRIS * 1e18).astype(np.float32))
    HMRFKMeans(3, random_state=0).fit((X_IRIS * 1e17).astype(np.float64))


@pytest.mark.parametrize("sparse", [False, True])
def test_finiteness_check_is_exact_when_the_sum_overflows(sparse):
    """The entrance check proves finiteness by a finite sum; a sum that overflows (finite
    entries near the dtype's maximum) or turns to NaN (inf + -inf) is settled entry by entry."""
    from hmrf._validation import check_data

    big = np.array([[3e38, 3e38], [3e38, -1.0]], dtype=np.float32)
    make = sp.csr_matrix if sparse else np.asarray
    assert check_data(make(big), keep_float32=True).dtype == np.float32
    for bad, kind, where in [([[1.0, np.inf], [-np.inf, 0.0]], "an infinite value", "row 0, column 1"),
                             ([[1.0, 2.0], [3e38, np.nan]], "NaN", "row 1, column 1")]:
        with pytest.raises(ValueError, match=f"{kind} at {where}"):
            check_data(make(np.array(bad, dtype=np.float32)), keep_float32=True)


@pytest.mark.parametrize("scale", [1e-300, 1e155, 1e300])
@pytest.mark.parametrize("sparse", [False, True])
def test_cosine_is_scale_free(scale, sparse):
    """Cosine clustering ignores the scale of each row, however extreme (one run: the
    best of several runs with equal objectives would be decided by round-off)."""
    ref = SphericalKMeans(3, n_init=1, random_state=0).fit(X_IRIS)
    X = X_IRIS * scale
    est = SphericalKMeans(3, n_init=1, random_state=0).fit(sp.csr_matrix(X) if sparse else X)
    np.testing.assert_array_equal(est.labels_, ref.labels_)
    np.testing.assert_allclose(est.cluster_centers_, ref.cluster_centers_, rtol=1e-12)


def test_cosine_rows_of_mixed_extreme_scales():
    X = X_IRIS.copy()
    X[::2] *= 1e-300
    X[1::2] *= 1e300
    ref = SphericalKMeans(3, random_state=0).fit(X_IRIS)
    np.testing.assert_array_equal(SphericalKMeans(3, random_state=0).fit(X).labels_, ref.labels_)


def test_zero_row_is_still_refused():
    X = X_IRIS.copy()
    X[7] = 0.0
    with pytest.raises(ValueError, match="row 7 of X is all zeros"):
        SphericalKMeans(3).fit(X)


def test_must_link_between_opposite_points_has_a_direction():
    """A neighbourhood whose mean is the zero vector still gives an initial centre."""
    X = np.array([[1.0]] * 8 + [[-1.0]])
    est = SphericalKMeans(1, random_state=0).fit(X, must_link=[(0, 8)])
    assert est.labels_.tolist() == [0] * 9
    np.testing.assert_allclose(np.abs(est.cluster_centers_), 1.0)
    X2 = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    est = SphericalKMeans(2, random_state=0).fit(X2, must_link=[(0, 1)])
    assert np.all(np.isfinite(est.cluster_centers_))
    np.testing.assert_allclose(np.linalg.norm(est.cluster_centers_, axis=1), 1.0)


def test_zero_centre_takes_the_mean_direction_of_the_data():
    X = np.array([[1.0, 1.0], [2.0, 1.0], [1.0, 3.0]])
    p = VonMisesFisher().init_params(X, np.array([[0.0, 0.0], [1.0, 0.0]]))
    np.testing.assert_allclose(p.centers[0], X.sum(0) / np.linalg.norm(X.sum(0)))
    np.testing.assert_allclose(p.centers[1], [1.0, 0.0])


def test_dask_array_given_to_an_in_memory_method_is_named():
    da = pytest.importorskip("dask.array")
    from hmrf import HAC, NaiveBayesEM

    X = da.from_array(np.abs(X_IRIS), chunks=50)
    for est in (HAC(3), NaiveBayesEM(3)):
        with pytest.raises(TypeError, match="X is a Dask collection"):
            est.fit(X)
