"""``Constraints.grid``: the pixel-grid must-links of MRF image segmentation."""

import itertools
import tracemalloc

import numpy as np
import pytest

from hmrf import Constraints

SQRT2 = np.sqrt(2.0)


def brute_force_grid(h, w, connectivity):
    """Neighbour pairs by a loop over pixels and their neighbours (the definition)."""
    steps = [(0, 1), (1, 0)] + ([(1, 1), (1, -1)] if connectivity == 8 else [])
    pairs = {}
    for r, c in itertools.product(range(h), range(w)):
        for dr, dc in steps:
            rr, cc = r + dr, c + dc
            if 0 <= rr < h and 0 <= cc < w:
                p, q = sorted((r * w + c, rr * w + cc))
                pairs[(p, q)] = np.hypot(dr, dc)
    return pairs


# --------------------------------------------------------------------- structure
def test_2x3_four_connected_by_hand():
    # 0 1 2
    # 3 4 5
    c = Constraints.grid((2, 3), 4, weight=0.5)
    assert c.n == 6 and c.n_must_link == 7 and c.n_cannot_link == 0
    assert c.pairs.tolist() == [[0, 1], [0, 3], [1, 2], [1, 4], [2, 5], [3, 4], [4, 5]]
    np.testing.assert_array_equal(c.weight, np.full(7, 0.5))


def test_2x3_eight_connected_by_hand():
    c = Constraints.grid((2, 3), 8, weight=2.0)
    diagonals = {(0, 4), (1, 5), (1, 3), (2, 4)}
    expected = sorted({(0, 1), (0, 3), (1, 2), (1, 4), (2, 5), (3, 4), (4, 5)} | diagonals)
    assert [tuple(p) for p in c.pairs.tolist()] == expected
    for (p, q), wt in zip(c.pairs.tolist(), c.weight):
        assert wt == pytest.approx(2.0 / SQRT2 if (p, q) in diagonals else 2.0)


@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (5, 1), (2, 2), (3, 7), (6, 4)])
@pytest.mark.parametrize("connectivity", [4, 8])
def test_edges_match_the_definition(shape, connectivity):
    h, w = shape
    c = Constraints.grid(shape, connectivity, weight=1.5)
    expected = brute_force_grid(h, w, connectivity)
    count = h * (w - 1) + (h - 1) * w + (2 * (h - 1) * (w - 1) if connectivity == 8 else 0)
    assert len(c) == len(expected) == count
    got = {tuple(p): wt for p, wt in zip(c.pairs.tolist(), c.weight)}
    assert got.keys() == expected.keys()
    for pair, dist in expected.items():
        assert got[pair] == pytest.approx(1.5 / dist)
    # canonical, as the validating constructor stores it
    assert c == Constraints(c.n, c.pairs, c.kind, c.weight)


def test_photograph_size_edge_count():
    # scikit-learn's flower photograph: 427 x 640 pixels, 545,493 4-neighbour edges
    assert len(Constraints.grid((427, 640))) == 545_493
    assert len(Constraints.grid((427, 640), 8)) == 545_493 + 2 * 426 * 639


def test_grid_is_one_neighbourhood_and_row_major():
    c = Constraints.grid((3, 4))
    assert [nb.tolist() for nb in c.neighborhoods()] == [list(range(12))]
    image = np.arange(12).reshape(3, 4)
    flat = image.reshape(-1)
    # pixel p = r * w + c: horizontal pairs differ by 1 in a row, vertical by w
    for p, q in c.pairs.tolist():
        (r1, c1), (r2, c2) = np.argwhere(image == flat[p])[0], np.argwhere(image == flat[q])[0]
        assert abs(r1 - r2) + abs(c1 - c2) == 1


def test_numpy_integer_shape_and_hard_weight():
    c = Constraints.grid(np.array([2, 2]), weight=np.inf)
    assert c.is_hard.all() and len(c) == 4


# ----------------------------------------------------------------- contrast weights
def contrast_by_formula(image, connectivity, lam, beta=None):
    h, w = image.shape[:2]
    pairs = brute_force_grid(h, w, connectivity)
    rows = image.reshape(h * w, -1).astype(float)
    sq = {pq: float(np.sum((rows[pq[0]] - rows[pq[1]]) ** 2)) for pq in pairs}
    if beta is None:
        beta = 1.0 / (2.0 * np.mean(list(sq.values())))
    return {pq: lam * np.exp(-beta * sq[pq]) / dist for pq, dist in pairs.items()}


@pytest.mark.parametrize("connectivity", [4, 8])
@pytest.mark.parametrize("channels", [None, 1, 3])
def test_contrast_weights_follow_the_formula(connectivity, channels):
    rng = np.random.default_rng(connectivity)
    shape = (4, 5) if channels is None else (4, 5, channels)
    image = rng.integers(0, 256, size=shape).astype(np.uint8)
    c = Constraints.grid((4, 5), connectivity, weight=0.7, image=image)
    expected = contrast_by_formula(image, connectivity, 0.7)
    got = {tuple(p): wt for p, wt in zip(c.pairs.tolist(), c.weight)}
    assert got.keys() == expected.keys()
    for pq in expected:
        assert got[pq] == pytest.approx(expected[pq], rel=1e-12)
    # GrabCut's beta makes the mean exponent -1/2: not all weights at the extremes
    assert 0 < c.weight.min() < c.weight.max() <= 0.7


def test_contrast_with_explicit_beta_and_uniform_image():
    image = np.random.default_rng(1).random((3, 3, 3))
    c = Constraints.grid((3, 3), 8, weight=1.0, image=image, beta=0.25)
    expected = contrast_by_formula(image, 8, 1.0, beta=0.25)
    np.testing.assert_allclose(c.weight, [expected[tuple(p)] for p in c.pairs.tolist()], rtol=1e-12)
    # one colour: beta = 0, the weights are the uniform ones
    flat = Constraints.grid((3, 3), 8, weight=1.0, image=np.full((3, 3, 3), 0.4))
    assert flat == Constraints.grid((3, 3), 8, weight=1.0)
    # beta = 0 turns the contrast off
    assert Constraints.grid((3, 3), image=image, beta=0.0) == Constraints.grid((3, 3))


def test_contrast_weights_are_smaller_across_an_edge():
    image = np.zeros((4, 4))
    image[:, 2:] = 1.0  # a vertical colour edge between columns 1 and 2
    c = Constraints.grid((4, 4), image=image)
    across = (c.pairs[:, 0] % 4 == 1) & (c.pairs[:, 1] - c.pairs[:, 0] == 1)
    assert across.sum() == 4
    assert c.weight[across].max() < c.weight[~across].min()


def test_inputs_are_not_modified():
    image = np.random.default_rng(2).random((3, 4, 3))
    before = image.copy()
    Constraints.grid((3, 4), 8, image=image)
    np.testing.assert_array_equal(image, before)


def test_memory_is_linear_in_pixels():
    """Peak allocation per pixel does not grow with the image (no n^2 or dense n x n)."""
    def peak_per_pixel(h, w):
        image = np.random.default_rng(0).random((h, w, 3))
        tracemalloc.start()
        try:
            Constraints.grid((h, w), 8, image=image)
            return tracemalloc.get_traced_memory()[1] / (h * w)
        finally:
            tracemalloc.stop()

    small, large = peak_per_pixel(40, 50), peak_per_pixel(160, 200)
    assert large < 1.5 * small
    assert large < 4 * 8 * 30  # a few (m,) and (m, 3) float64 / int64 arrays, m <= 4 n


# ------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("shape, match", [
    ((5,), "shape must be 2-D"),
    ((2, 3, 3), "shape must be 2-D"),
    (7, "shape must be"),
    ((0, 4), "the height must be an integer >= 1"),
    ((4, -2), "the width must be an integer >= 1"),
    ((2.5, 3), "the height must be an integer"),
    ((True, 3), "the height must be an integer"),
])
def test_bad_shape(shape, match):
    with pytest.raises(ValueError, match=match):
        Constraints.grid(shape)


@pytest.mark.parametrize("connectivity", [6, 0, "4", True, None])
def test_bad_connectivity(connectivity):
    with pytest.raises(ValueError, match="connectivity must be 4 or 8"):
        Constraints.grid((3, 3), connectivity)


@pytest.mark.parametrize("weight, error, match", [
    (-0.5, ValueError, r"weight\[0\] is -0.5"),
    (np.nan, ValueError, "NaN"),
    ([1.0, 2.0], ValueError, "one number"),
    ("heavy", TypeError, "must be a number"),
])
def test_bad_weight(weight, error, match):
    with pytest.raises(error, match=match):
        Constraints.grid((3, 3), weight=weight)


@pytest.mark.parametrize("image, match", [
    (np.zeros((3, 4)), r"image has shape \(3, 4\) but the grid is \(4, 3\)"),
    (np.zeros((4, 3, 3, 1)), "image has shape"),
    (np.zeros(12), "image has shape"),
    (np.array([[1.0, np.nan, 0.0]] * 4), r"pixel \(row 0, column 1\) is NaN"),
    (np.full((4, 3), "a"), "must hold numbers"),
])
def test_bad_image(image, match):
    with pytest.raises(ValueError, match=match):
        Constraints.grid((4, 3), image=image)


@pytest.mark.parametrize("beta", [-1.0, np.inf, np.nan, "auto"])
def test_bad_beta(beta):
    with pytest.raises(ValueError, match="beta must be"):
        Constraints.grid((3, 3), image=np.zeros((3, 3)), beta=beta)


def test_hard_weight_with_contrast_is_refused():
    with pytest.raises(ValueError, match="finite weight"):
        Constraints.grid((3, 3), weight=np.inf, image=np.zeros((3, 3)))
