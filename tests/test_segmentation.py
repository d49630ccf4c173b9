"""HMRF image segmentation: pixels in and out, EM on a pixel grid, the grid
energy against pgmpy, and empty clusters when every point is constrained."""

import itertools

import numpy as np
import pytest

from hmrf import HMRF, Constraints, HMRFKMeans, KMeans
from hmrf.datasets import (
    DataFileError,
    image_pixels,
    label_image,
    read_image,
    segmented_image,
    write_image,
)
from hmrf.em import loop
from hmrf.emissions import EmissionParams
from hmrf.graph import PairwiseGraph

ENGINES = ["icm", "bp", "trws", "expansion", "auto"]


def two_blocks(seed, h=16, w=16, sigma=0.35):
    """Left half one colour, right half another, plus Gaussian noise: (image, truth)."""
    rng = np.random.default_rng(seed)
    truth = np.zeros((h, w), dtype=np.int64)
    truth[:, w // 2:] = 1
    colours = np.array([[0.25, 0.4, 0.3], [0.75, 0.6, 0.7]])
    return colours[truth] + rng.normal(scale=sigma, size=(h, w, 3)), truth.reshape(-1)


def errors(labels, truth):
    """Misplaced pixels of a two-cluster labelling, up to swapping the labels."""
    return int(min(np.sum(labels != truth), np.sum(labels != 1 - truth)))


# ------------------------------------------------------------------ pixels in, out
def test_image_pixels_scales_and_orders_row_major():
    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3) * 10
    X = image_pixels(image)
    assert X.shape == (6, 3) and X.dtype == np.float32
    for r, c in itertools.product(range(2), range(3)):
        np.testing.assert_allclose(X[r * 3 + c], image[r, c] / 255.0, rtol=1e-6)
    # the grid numbers pixels the same way: horizontal neighbours are consecutive rows
    grid = Constraints.grid((2, 3))
    horizontal = grid.pairs[grid.pairs[:, 1] - grid.pairs[:, 0] == 1]
    for p, q in horizontal:
        assert np.allclose(image_pixels(image[p // 3:p // 3 + 1, p % 3:p % 3 + 2])[1], X[q])


def test_image_pixels_of_grey_16_bit_float_and_bool_images():
    grey = np.array([[0, 65535]], dtype=np.uint16)
    assert image_pixels(grey).tolist() == [[0.0], [1.0]]
    floats = np.array([[[-1.0, 2.0]]])
    assert image_pixels(floats).tolist() == [[-1.0, 2.0]]
    assert image_pixels(np.array([[True, False]])).tolist() == [[1.0], [0.0]]


@pytest.mark.parametrize("image, match", [
    (np.zeros(5), "must be an"),
    (np.zeros((2, 2, 2, 2)), "must be an"),
    (np.zeros((0, 3)), "must be an"),
    (np.array([[1, 2]], dtype=np.int16), "signed integer"),
    (np.array([[np.nan, 0.0]]), r"pixel \(row 0, column 0\) is NaN"),
    (np.array([["a"]]), "must hold numbers"),
])
def test_image_pixels_bad_input(image, match):
    with pytest.raises(ValueError, match=match):
        image_pixels(image)


def test_label_and_segmented_images():
    labels = np.array([0, 1, 1, 2, 2, 0])
    np.testing.assert_array_equal(label_image(labels, (2, 3)), [[0, 1, 1], [2, 2, 0]])
    centers = np.array([[0.0, 0.0, 0.0], [1.0, 0.5, 0.0], [0.2, 0.2, 0.2]])
    seg = segmented_image(labels, centers, (2, 3))
    assert seg.shape == (2, 3, 3)
    for p in range(6):
        np.testing.assert_allclose(seg[p // 3, p % 3], centers[labels[p]])
    assert segmented_image(labels, centers[:, :1], (2, 3)).shape == (2, 3)  # grey
    with pytest.raises(ValueError, match="one entry per pixel"):
        label_image(labels, (3, 3))
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 1\]"):
        segmented_image(labels, centers[:2], (2, 3))
    with pytest.raises(ValueError, match="integers"):
        label_image(labels.astype(float), (2, 3))


def test_write_and_read_image_round_trip(tmp_path):
    pytest.importorskip("PIL")
    rgb = np.random.default_rng(0).integers(0, 256, size=(5, 7, 3)).astype(np.uint8)
    np.testing.assert_array_equal(read_image(write_image(tmp_path / "rgb.png", rgb)), rgb)
    grey = np.arange(12, dtype=np.uint8).reshape(3, 4)
    np.testing.assert_array_equal(read_image(write_image(tmp_path / "grey.png", grey)), grey)
    # floats in [0, 1] are the units of image_pixels: written as 0-255
    back = read_image(write_image(tmp_path / "f.png", np.array([[0.0, 0.5, 1.0, 2.0]])))
    assert back.tolist() == [[0, 128, 255, 255]]
    with pytest.raises(ValueError, match=r"\[0, 255\]"):
        write_image(tmp_path / "bad.png", np.array([[0, 300]]))


def test_read_image_errors_name_the_file(tmp_path):
    with pytest.raises(DataFileError, match="missing.png: no such file"):
        read_image(tmp_path / "missing.png")
    fake = tmp_path / "fake.png"
    fake.write_text("not an image")
    pytest.importorskip("PIL")
    with pytest.raises(DataFileError, match="fake.png: not an image file"):
        read_image(fake)


# ----------------------------------------------------------------- EM on a grid
@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.parametrize("engine", ENGINES)
def test_grid_prior_recovers_blocks_that_kmeans_mixes_up(engine, seed):
    image, truth = two_blocks(seed)
    X = image_pixels(image)
    km = KMeans(2, init="k-means++", random_state=0).fit(X)
    assert errors(km.labels_, truth) >= 0.1 * truth.size  # the noise fools KMeans
    # the same start, with the pixel grid as soft must-links
    est = HMRFKMeans(2, inference=engine, w=0.5, init=km.cluster_centers_, random_state=0)
    est.fit(X, constraints=Constraints.grid(image.shape[:2]))
    limit = 2 if engine != "icm" else 0.05 * truth.size  # ICM: a local minimum
    assert errors(est.labels_, truth) <= limit
    assert np.all(np.diff(est.history_) <= 1e-9 * np.abs(est.history_[:-1]))


def test_objective_counts_boundary_edges():
    image, _ = two_blocks(0, h=6, w=5)
    X = image_pixels(image)
    est = HMRFKMeans(3, inference="bp", w=0.3, init="k-means++", random_state=0)
    est.fit(X, constraints=Constraints.grid((6, 5), 8, weight=2.0))
    model = HMRF(X, 3, constraints=Constraints.grid((6, 5), 8, weight=2.0), w=0.3)
    terms = model.energy_terms(est.labels_, est.params_)
    y = label_image(est.labels_, (6, 5))
    straight = np.sum(y[:, 1:] != y[:, :-1]) + np.sum(y[1:] != y[:-1])
    diagonal = np.sum(y[1:, 1:] != y[:-1, :-1]) + np.sum(y[1:, :-1] != y[:-1, 1:])
    assert terms["must_link"] == pytest.approx(0.3 * 2.0 * (straight + diagonal / np.sqrt(2)))
    assert terms["total"] == pytest.approx(est.objective_)


# ------------------------------------------------------------- pgmpy cross-check
@pytest.mark.parametrize("connectivity, contrast", [(4, False), (8, False), (8, True)])
def test_grid_energy_against_pgmpy(connectivity, contrast):
    """The HMRF energy of a 2 x 3 image equals -log of a pgmpy Markov network built here
    from the definition (pixel loops, exp(-cost) factors), up to a constant, for every
    labelling; its exact MAP is the enumerated minimiser."""
    pytest.importorskip("pgmpy")
    from pgmpy.factors.discrete import DiscreteFactor
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteMarkovNetwork

    rng = np.random.default_rng(connectivity)
    image = rng.random((2, 3, 3))
    X = image_pixels(image).astype(np.float64)  # float64 costs: agreement to 1e-9
    lam, k = 0.4, 2
    centers = np.array([[0.2, 0.3, 0.4], [0.7, 0.6, 0.5]])
    c = Constraints.grid((2, 3), connectivity, weight=lam, image=image if contrast else None)
    model = HMRF(X, k, constraints=c)
    params = EmissionParams(centers)
    # the network from the definition
    names = [f"p{r}{col}" for r in range(2) for col in range(3)]
    steps = [(0, 1), (1, 0)] + ([(1, 1), (1, -1)] if connectivity == 8 else [])
    pairs = [((r, col), (r + dr, col + dc)) for r, col in itertools.product(range(2), range(3))
             for dr, dc in steps if 0 <= r + dr < 2 and 0 <= col + dc < 3]
    diffs = [np.sum((image[a] - image[b]) ** 2) for a, b in pairs]
    beta = 1.0 / (2.0 * np.mean(diffs))
    net = DiscreteMarkovNetwork()
    net.add_nodes_from(names)
    factors = []
    for p, name in enumerate(names):
        cost = np.sum((X[p][None, :] - centers) ** 2, axis=1)
        factors.append(DiscreteFactor([name], [k], np.exp(-cost)))
    for (a, b), d2 in zip(pairs, diffs):
        wt = lam / np.hypot(b[0] - a[0], b[1] - a[1]) * (np.exp(-beta * d2) if contrast else 1.0)
        na, nb = f"p{a[0]}{a[1]}", f"p{b[0]}{b[1]}"
        net.add_edge(na, nb)
        factors.append(DiscreteFactor([na, nb], [k, k], np.exp(-wt * (1 - np.eye(k)))))
    net.add_factors(*factors)
    joint = factors[0]
    for f in factors[1:]:
        joint = joint.product(f, inplace=False)
    energies, logp = [], []
    for y in itertools.product(range(k), repeat=6):
        energies.append(model.energy(np.array(y), params))
        logp.append(np.log(joint.get_value(**dict(zip(names, y)))))
    energies, logp = np.array(energies), np.array(logp)
    np.testing.assert_allclose(logp + energies, (logp + energies)[0], atol=1e-9)
    best = VariableElimination(net).map_query(variables=names, show_progress=False)
    y_map = np.array([best[nm] for nm in names])
    assert model.energy(y_map, params) == pytest.approx(energies.min(), abs=1e-12)


# --------------------------------------------- empty clusters, every point constrained
def test_a_cluster_emptied_on_a_grid_is_reseeded():
    """The default initialisation on a grid (one neighbourhood: the global centroid and
    small perturbations) lets an exact E-step put every pixel in one cluster; the other
    is re-seeded by a move that raises the pairwise energy but lowers the objective."""
    image, truth = two_blocks(0)
    X = image_pixels(image)

    def fit():
        return HMRFKMeans(2, inference="expansion", w=0.2, init="neighborhoods", n_init=1,
                          random_state=0).fit(
            X, constraints=Constraints.grid(image.shape[:2]))

    est = fit()
    assert any(t["reseeded"] for t in est.em_result_.trace)
    assert np.unique(est.labels_).tolist() == [0, 1]
    assert errors(est.labels_, truth) <= 0.05 * truth.size
    assert np.all(np.diff(est.history_) <= 1e-9 * np.abs(est.history_[:-1]))
    # without the rule the cluster stays empty for good
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loop, "_own_cost", lambda model, params, labels: None)
        assert np.unique(fit().labels_).size == 1


@pytest.mark.parametrize("lam, moves", [(1.0, True), (20.0, False)])
def test_reseed_by_own_cost_never_raises_the_objective(lam, moves):
    # 1 x 3 pixels 0, 0.1, 5 in one cluster; moving pixel 2 costs its one edge, lam
    X = np.array([[0.0], [0.1], [5.0]])
    model = HMRF(X, 2, constraints=Constraints.grid((1, 3), weight=lam))
    labels = np.zeros(3, dtype=np.int64)
    params = model.m_step(labels, EmissionParams(np.array([[0.0], [-7.0]])))
    before = model.energy(labels, params)
    graph = model.graph(params)
    unary = model.unary(params)
    cost = unary[np.arange(3), labels]
    new, n = loop._reseed(labels, cost, graph, 2, lambda rows, h: np.ones(len(rows), bool),
                          own_cost=loop._own_cost(model, params, labels))
    assert n == int(moves)
    if moves:  # gain (5 - 1.7)^2 - lam > 0 = cost at its own centre
        assert new.tolist() == [0, 0, 1]
        after = model.energy(new, model.m_step(new, params))
        assert after < before - (cost[2] - lam) + 1e-9
    else:
        assert new.tolist() == [0, 0, 0]


def test_reseed_by_own_cost_only_where_it_is_exact():
    X = np.abs(np.random.default_rng(0).random((6, 2))) + 0.1
    c = Constraints.grid((2, 3))
    params = EmissionParams(X[:2].copy())
    assert loop._own_cost(HMRF(X, 2, constraints=c), params, np.zeros(6, int)) is not None
    closed = HMRF(X, 2, constraints=c, normalizer="closed_form")
    assert loop._own_cost(closed, params, np.zeros(6, int)) is None
    metric = HMRF(X, 2, emission="mahalanobis", constraints=c)
    assert loop._own_cost(metric, params, np.zeros(6, int)) is None


@pytest.mark.parametrize("emission", ["sqeuclidean", "kl", "cosine", "itakura_saito"])
def test_own_cost_bounds_the_objective_after_the_move(emission):
    """The inequality the rule rests on, for every family it accepts (KL's smoothing and
    vMF's normalisation included): after moving point i to the empty cluster h and an
    M-step, J <= J(y, Θ) - c_i + Δ_i + own_cost(i, h)."""
    X = np.random.default_rng(3).random((6, 4)) + 0.05
    model = HMRF(X, 3, emission=emission, constraints=Constraints.grid((2, 3), weight=0.01))
    labels = np.array([0, 0, 1, 1, 0, 1])  # cluster 2 empty
    params = model.m_step(labels, model.emission.init_params(model.X, model.X[:3]))
    before = model.energy(labels, params)
    own = loop._own_cost(model, params, labels)
    unary = model.unary(params)
    for i in range(6):
        moved = labels.copy()
        moved[i] = 2
        delta = model.graph(params).pairwise_energy(moved) - model.graph(params).pairwise_energy(labels)
        after = model.energy(moved, model.m_step(moved, params))
        bound = before - unary[i, labels[i]] + delta + own(i, 2)
        assert after <= bound + 1e-9 * abs(bound), (emission, i)
        assert own(i, 2) <= unary[i, labels[i]] + 1e-9  # a cluster fitted to the point


def test_pairwise_graph_of_a_grid_is_the_constraints():
    c = Constraints.grid((3, 4), 8, weight=0.5)
    g = PairwiseGraph.from_constraints(c, 2.0)
    np.testing.assert_array_equal(g.edges, c.pairs)
    np.testing.assert_allclose(g.weight, 2.0 * c.weight)
    nodes, sub = g.constrained_part()
    assert nodes.tolist() == list(range(12)) and sub.n_edges == len(c)
