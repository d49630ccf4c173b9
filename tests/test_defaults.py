"""Defaults that give the best answer: the scale-aware constraint weight ``w="auto"``,
the default engine and initialisation, ``n_init="auto"``, the command line's text model."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_wine, make_blobs

from hmrf import HMRF, Constraints, HMRFKMeans, MKMeans, MPCKMeans, PCKMeans, SphericalKMeans
from hmrf.emissions import BregmanFamily, SquaredEuclidean
from hmrf.metrics import objective

X_WINE, Y_WINE = load_wine(return_X_y=True)


def _pairs(y, n, seed=0):
    return Constraints.sample_from_labels(y, n, np.random.default_rng(seed))


# ----------------------------------------------------------------- w = "auto"
def test_auto_w_is_the_expected_squared_distance_between_two_random_points():
    X = np.random.default_rng(0).normal(size=(40, 3)) * [1.0, 10.0, 100.0]
    c = Constraints.from_pairs(must_link=[(0, 1)], n=40)
    model = HMRF(X, 2, constraints=c, w="auto")
    pairs = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)  # all n² ordered pairs, i = j included
    assert model.w == pytest.approx(pairs.mean(), rel=1e-12)
    assert model.w == pytest.approx(2 * X.var(axis=0).sum(), rel=1e-12)
    assert model.graph().weight.tolist() == [pytest.approx(model.w)]


def test_auto_w_of_a_bregman_family_is_twice_its_bregman_information():
    # I-divergence without smoothing, defined by φ alone: s = mean φ(x_i) - φ(x̄)
    def phi(A):
        A = np.asarray(A)
        return (A * np.log(A) - A).sum(axis=1)

    fam = BregmanFamily(phi, lambda M: np.log(M), name="idiv-raw")
    X = np.random.default_rng(1).uniform(0.5, 3.0, size=(30, 4))
    model = HMRF(X, 2, emission=fam, constraints=Constraints.from_pairs(cannot_link=[(0, 1)], n=30),
                 w="auto")
    info = phi(X).mean() - phi(X.mean(axis=0)[None])[0]
    assert model.data_scale() == pytest.approx(info, rel=1e-10)
    assert model.w == pytest.approx(2 * info, rel=1e-10)


def test_auto_w_of_cosine_is_twice_the_mean_cosine_distance_to_the_mean_direction():
    X = sp.random(50, 20, density=0.3, random_state=2, format="csr")
    X.data += 0.1
    Xn = X.toarray() / np.linalg.norm(X.toarray(), axis=1, keepdims=True)
    mu = Xn.mean(axis=0) / np.linalg.norm(Xn.mean(axis=0))
    est = SphericalKMeans(3, random_state=0).fit(X, must_link=[(0, 1)])
    assert est.w_ == pytest.approx(2 * np.mean(1 - Xn @ mu), rel=1e-10)


def test_auto_w_with_the_closed_form_normaliser_is_in_the_units_of_the_fitted_gaussian():
    # one isotropic Gaussian of all the data: σ² = tr(Σ) / d, so the mean scaled cost
    # ||x - x̄||² / (2σ²) is d / 2 and w = d
    X = np.random.default_rng(3).normal(size=(60, 5)) * 7.0
    model = HMRF(X, 2, emission=SquaredEuclidean(), normalizer="closed_form",
                 constraints=Constraints.from_pairs(must_link=[(0, 1)], n=60), w="auto")
    assert model.w == pytest.approx(5.0, rel=1e-10)


def test_auto_w_makes_the_clustering_independent_of_the_units_of_x():
    X, y = make_blobs(300, centers=3, n_features=4, cluster_std=2.5, random_state=0)
    c = _pairs(y, 60)
    for scale in (1e-3, 1e3):
        a = HMRFKMeans(3, inference="icm", random_state=0).fit(X, constraints=c)
        b = HMRFKMeans(3, inference="icm", random_state=0).fit(X * scale, constraints=c)
        assert np.array_equal(a.labels_, b.labels_)
        assert b.w_ == pytest.approx(a.w_ * scale**2, rel=1e-9)
        assert b.objective_ == pytest.approx(a.objective_ * scale**2, rel=1e-6)


def test_a_number_keeps_its_meaning():
    c = _pairs(Y_WINE, 50)
    est = HMRFKMeans(3, w=2.5, inference="icm", random_state=0).fit(X_WINE, constraints=c)
    assert est.w_ == 2.5
    assert est.objective_ == pytest.approx(
        objective(X_WINE, est.labels_, est.cluster_centers_, c, w=2.5), rel=1e-12)


def test_the_default_weight_is_auto_and_counts_on_unscaled_data():
    # wine's squared distances are ~1e5: w = 1 leaves the constraints ignored
    c = _pairs(Y_WINE, 500)
    auto = HMRFKMeans(3, inference="icm", init="neighborhoods", n_init=1, random_state=0)
    one = HMRFKMeans(3, w=1.0, inference="icm", init="neighborhoods", n_init=1, random_state=0)
    assert HMRFKMeans().w == "auto" and PCKMeans().w == "auto" and MPCKMeans().w == "auto"
    auto.fit(X_WINE, constraints=c)
    one.fit(X_WINE, constraints=c)
    assert auto.w_ == pytest.approx(2 * X_WINE.var(axis=0).sum(), rel=1e-12)
    assert c.violations(auto.labels_).sum() < c.violations(one.labels_).sum()


def test_pckmeans_auto_weight_is_the_models():
    c = _pairs(Y_WINE, 40)
    est = PCKMeans(3, random_state=0).fit(X_WINE, constraints=c)
    assert est.w_ == pytest.approx(2 * X_WINE.var(axis=0).sum(), rel=1e-12)


def test_distance_scaled_penalties_take_w_one():
    c = _pairs(Y_WINE, 40)
    assert MPCKMeans(3, random_state=0).fit(X_WINE, constraints=c).w_ == 1.0
    assert MKMeans(3, random_state=0).fit(X_WINE, constraints=c).w_ == 1.0
    # plain Potts penalties under the learned metric: the metric fitted to one cluster
    # whitens the data, so a point's mean cost above the centre's is d (less shrinkage)
    const = MPCKMeans(3, penalty="constant", random_state=0).fit(X_WINE, constraints=c)
    assert 1.9 * X_WINE.shape[1] < const.w_ <= 2 * X_WINE.shape[1] + 1e-9


def test_auto_w_on_a_dask_array_equals_in_memory():
    dask = pytest.importorskip("dask")
    import dask.array as da

    c = _pairs(Y_WINE, 40)
    mem = HMRFKMeans(3, inference="icm", random_state=0).fit(X_WINE, constraints=c)
    with dask.config.set(scheduler="synchronous"):
        dist = HMRFKMeans(3, inference="icm", random_state=0).fit(
            da.from_array(X_WINE, chunks=50), constraints=c)
    assert dist.w_ == pytest.approx(mem.w_, rel=1e-12)
    assert np.array_equal(np.asarray(dist.labels_), mem.labels_)


@pytest.mark.parametrize("w", ["big", -1.0, float("nan"), True])
def test_bad_w_names_the_problem(w):
    with pytest.raises(ValueError, match="w"):
        HMRFKMeans(2, w=w).fit(X_WINE[:20], must_link=[(0, 1)])
    with pytest.raises(ValueError, match="w must be"):
        HMRF(X_WINE[:20], 2, constraints=Constraints.from_pairs(must_link=[(0, 1)], n=20), w=w)


def test_fit_command_reports_the_resolved_weight(tmp_path, capsys):
    from hmrf.cli import main

    assert main(["fit", "--dataset", "wine", "--constraints", "20", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["parameters"]["w"] == "auto"
    assert summary["w"] == pytest.approx(2 * X_WINE.var(axis=0).sum(), rel=1e-9)
    assert "w=auto = " in out
    assert main(["fit", "--dataset", "wine", "--constraints", "20", "--w", "3", "--out",
                 str(tmp_path)]) == 0
    assert json.loads((tmp_path / "summary.json").read_text())["w"] == 3.0


# ------------------------------------------------------- text on the command line
def _text_corpus(tmp_path):
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 12)
    words = {0: "apple banana cherry fruit", 1: "engine wheel brake road", 2: "goal match team ball"}
    docs = [" ".join(rng.permutation(words[c].split())) + f" common{c}" for c in y]
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n")
    (tmp_path / "labels.csv").write_text("topic\n" + "\n".join(map(str, y)) + "\n")
    return docs, y


def test_fit_on_a_text_file_runs_the_cosine_model_and_says_so(tmp_path, capsys):
    from hmrf.cli import main
    from hmrf.datasets.text import thesis_tfidf

    docs, y = _text_corpus(tmp_path)
    out = tmp_path / "out"
    args = ["fit", "--data", str(tmp_path / "docs.txt"), "--labels", str(tmp_path / "labels.csv"),
            "--constraints", "20", "--out", str(out)]
    assert main(args) == 0
    assert "emission=cosine (default)" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["emission"] == "cosine"
    Xt, _ = thesis_tfidf(docs)
    c = Constraints.sample_from_labels(y, 20, np.random.default_rng(0), among=np.arange(36))
    ref = HMRFKMeans(3, emission="cosine", random_state=0).fit(Xt, constraints=c)
    labels = [int(line.split(",")[1]) for line in (out / "labels.csv").read_text().split()[1:]]
    assert labels == ref.labels_.tolist()
    # asked for, the squared Euclidean model runs; PCKMeans takes the text model too, so
    # does MPCKMeans (its metric on the unit sphere), and MPCKMeans asked for a learned
    # Mahalanobis metric learns one
    assert main(args + ["--emission", "sqeuclidean"]) == 0
    assert json.loads((out / "summary.json").read_text())["emission"] == "sqeuclidean"
    assert main(args + ["--estimator", "pckmeans"]) == 0
    assert json.loads((out / "summary.json").read_text())["emission"] == "cosine"
    assert main(args + ["--estimator", "mpckmeans"]) == 0
    assert json.loads((out / "summary.json").read_text())["emission"] == "cosine"
    assert main(args + ["--estimator", "mpckmeans", "--emission", "mahalanobis"]) == 0
    assert json.loads((out / "summary.json").read_text())["emission"] == "mahalanobis"


def test_dense_data_keep_squared_euclidean(tmp_path):
    from hmrf.cli import main

    assert main(["fit", "--dataset", "iris", "--constraints", "10", "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "summary.json").read_text())["emission"] == "sqeuclidean"


def test_curve_and_compare_on_text_use_cosine(tmp_path, capsys, monkeypatch):
    from hmrf.cli import main
    from hmrf.commands import _common

    _text_corpus(tmp_path)
    data = ["--data", str(tmp_path / "docs.txt"), "--labels", str(tmp_path / "labels.csv")]
    assert main(["curve", *data, "--constraints", "0,10", "--folds", "2", "--no-progress",
                 "--metrics", "nmi", "--out", str(tmp_path / "c")]) == 0
    assert "emission cosine (the default for text)" in capsys.readouterr().out
    built = []
    real = _common.emission_for
    monkeypatch.setattr(_common, "emission_for", lambda *a: built.append(real(*a)) or built[-1])
    assert main(["compare", *data, "--engines", "icm", "--constraints", "10", "--runs", "1",
                 "--bound", "none", "--no-progress", "--out", str(tmp_path / "e")]) == 0
    assert built == ["cosine"]
    assert "emission cosine (the default for text)" in capsys.readouterr().out


def test_sparse_non_negative_rows_are_text_as_emission_auto_decides():
    """The commands take for text exactly what ``emission="auto"`` takes for text."""
    from hmrf.commands._common import Data, is_text
    from hmrf.emissions import data_emission

    X = sp.csr_matrix(sp.random(10, 5, density=0.5, random_state=0) + sp.eye(10, 5))
    empty = X.tolil()
    empty[3] = 0
    for M, text in ((X, True), (X.toarray(), False), (-X, False), (empty.tocsr(), False)):
        assert is_text(Data(M, None, "x", {})) == text == (data_emission(M) == "cosine")


# --------------------------------------------------- engine and initialisation
def test_default_engine_and_initialisation():
    for est in (HMRFKMeans(), PCKMeans(), MPCKMeans()):
        p = est.get_params()
        assert (p["inference"], p["init"], p["n_init"], p["w"]) == ("auto", "pckmeans++", "auto", "auto")


def test_the_largest_neighbourhoods_lock_in_and_the_default_does_not():
    """Issue 21, at a unit-test size: 10 well-separated classes, 800 random correct
    pairs. The paper's seeding (the k largest neighbourhoods, two from one class) locks
    EM into a wrong clustering; the default seeding and runs recover the classes."""
    from hmrf.metrics import nmi

    X, y = make_blobs(5000, 10, centers=10, random_state=0)
    c = _pairs(y, 800, seed=0)
    paper = PCKMeans(10, w=1.0, inference="icm", init="pckmeans", n_init=1, random_state=0)
    assert nmi(y, paper.fit(X, constraints=c).labels_) < 0.95
    for est in (PCKMeans(10, random_state=0), MPCKMeans(10, random_state=0)):
        assert nmi(y, est.fit(X, constraints=c).labels_) >= 0.99


def test_pckmeans_pp_seeds_each_class_neighbourhood_once():
    """Neighbourhoods that cover well-separated classes: whatever the draws, the k seeds
    are the k neighbourhood centroids (a drawn member seeds its neighbourhood's
    centroid; a neighbourhood seeds at most one centre)."""
    from hmrf.emissions import SquaredEuclidean
    from hmrf.initialization import initial_centers

    X, y = make_blobs(300, 3, centers=[[0, 0, 0], [20, 0, 0], [0, 20, 0]], random_state=1)
    must = [(i, j) for c in range(3) for i, j in zip(np.flatnonzero(y == c)[:-1], np.flatnonzero(y == c)[1:])]
    c = Constraints.from_pairs(must_link=must, n=300)
    means = np.array([X[y == h].mean(axis=0) for h in range(3)])
    for seed in range(5):
        C = initial_centers(X, 3, SquaredEuclidean(), c, "pckmeans++", np.random.default_rng(seed))
        order = [int(np.argmin(((means - row) ** 2).sum(1))) for row in C]
        assert sorted(order) == [0, 1, 2]
        np.testing.assert_allclose(C, means[order], atol=1e-12)


def test_one_neighbourhood_of_all_points_seeds_one_centre():
    """Soft must-links between neighbours of a chain make one neighbourhood of every
    point (as a grid does): it seeds one centre, the others are points."""
    from hmrf.emissions import SquaredEuclidean
    from hmrf.initialization import initial_centers

    X = np.r_[np.zeros((50, 1)), np.full((50, 1), 10.0), np.full((50, 1), 20.0)]
    X += np.random.default_rng(0).normal(0, 0.1, X.shape)
    chain = Constraints.from_pairs(must_link=[(i, i + 1) for i in range(149)], n=150)
    C = initial_centers(X, 3, SquaredEuclidean(), chain, "pckmeans++", np.random.default_rng(0))
    assert np.unique(np.round(C, 9), axis=0).shape[0] == 3
    assert np.sum(np.isclose(C[:, 0], X.mean())) == 1


def _objectives_of_runs(monkeypatch):
    """The objective of every EM run on the constrained model of a fit, in order (a start
    from the data alone also runs EM on the model without its potentials first)."""
    from hmrf.estimators import base

    found, real = [], base.run_em

    def spy(model, params, *a, **kw):
        res = real(model, params, *a, **kw)
        if model.potentials:
            found.append(res.objective)
        return res

    monkeypatch.setattr(base, "run_em", spy)
    return found


@pytest.mark.parametrize("data, runs", [("blobs", 3), ("wine", 9)])
def test_auto_stops_once_two_seedings_reach_the_lowest_objective(monkeypatch, data, runs):
    """``n_init="auto"`` makes the first runs of the fit without the stopping rule (the same
    generator, the same starts: the supervision's seeding and the data alone in turn),
    stops at the first run where two runs from the supervision's seeding reach the lowest
    objective (round-off apart) and keeps that objective: on well-separated blobs every
    start finds the classes, so three runs; on wine with a few pairs more."""
    from hmrf.em import rise_tolerance
    from hmrf.estimators import base

    X, y = make_blobs(600, 5, centers=4, random_state=0) if data == "blobs" else (X_WINE, Y_WINE)
    k, c = len(np.unique(y)), Constraints.sample_from_labels(y, 20, rng=2)
    found = _objectives_of_runs(monkeypatch)
    est = HMRFKMeans(k, random_state=0).fit(X, constraints=c)
    stopped = list(found)
    monkeypatch.setattr(base, "AUTO_AGREE", base.AUTO_MAX_RUNS + 1)  # every run
    found.clear()
    full = HMRFKMeans(k, random_state=0).fit(X, constraints=c)
    assert full.n_runs_ == base.AUTO_MAX_RUNS == len(found)
    assert est.n_runs_ == len(stopped) == runs and stopped == found[:runs]
    best = min(stopped)
    seeded = [j <= best + rise_tolerance(best, np.float64) for j in stopped[::2]]  # the seedings
    assert sum(seeded) == 2 and seeded[-1] and runs % 2 == 1  # the last run was the second
    assert est.objective_ == pytest.approx(best, rel=1e-12) and full.objective_ <= best * (1 + 1e-12)


def test_auto_runs_shrink_with_the_work_and_skip_repeated_starts():
    from hmrf.estimators.base import AUTO_MAX_RUNS, auto_n_init

    assert auto_n_init(HMRF(X_WINE, 3)) == AUTO_MAX_RUNS

    class Big:  # only the sizes are read
        X, n_clusters, constraints = np.empty((10**6, 100)), 20, Constraints.empty(10)

    assert auto_n_init(Big) == 1
    # the thesis's neighbourhood seeding of exactly k neighbourhoods is deterministic:
    # of its kind only the first run is made; the runs from the data alone differ
    labels = np.where(np.arange(178) % 4 == 0, Y_WINE, -1)
    est = HMRFKMeans(3, init="neighborhoods", inference="icm", random_state=0).fit(X_WINE, labels)
    assert est.constraints_.neighborhoods().__len__() == 3
    assert est.n_runs_ == 1 + AUTO_MAX_RUNS // 2


def test_auto_runs_on_sparse_rows_go_up_to_their_own_cap():
    """Sparse rows (text) get up to ``AUTO_MAX_RUNS_SPARSE`` runs where they are cheap,
    within the same work budget; dense rows of the same size keep ``AUTO_MAX_RUNS``."""
    from hmrf.estimators.base import AUTO_MAX_RUNS, AUTO_MAX_RUNS_SPARSE, AUTO_WORK, auto_n_init

    assert AUTO_MAX_RUNS_SPARSE > AUTO_MAX_RUNS
    X = sp.random(60, 40, density=0.2, random_state=0, format="csr")
    X.data += 0.1
    assert auto_n_init(HMRF(X, 3, emission="cosine")) == AUTO_MAX_RUNS_SPARSE
    assert auto_n_init(HMRF(X.toarray(), 3)) == AUTO_MAX_RUNS

    class Rows:  # only the sizes are read: non-zeros for a budget of 12 runs
        shape, nnz = (10, 10), int(AUTO_WORK // 12)

    class Wide:
        X, n_clusters, constraints = Rows(), 1, Constraints.empty(10)

    assert auto_n_init(Wide) == 12
    # every run from other centres: k-means++ and the chordal start, in turn
    assert SphericalKMeans(3, random_state=0).fit(X).n_runs_ == AUTO_MAX_RUNS_SPARSE


def test_a_few_pairs_leave_the_cosine_models_mix_of_starts_as_it_is():
    """On the cosine model every other run of ``n_init="auto"`` starts from Lloyd's
    iterations on the unit rows (the chordal model, squared Euclidean), with two pairs
    as without any: the pairs change the seeding of the other runs, not how many runs
    start from the data alone."""
    from hmrf.emissions import SquaredEuclidean

    X = sp.random(60, 40, density=0.2, random_state=0, format="csr")
    X.data += 0.1
    chordal = []

    class Counting(HMRFKMeans):
        def _best_of_runs(self, model, constraints, y, em, initial_params):
            def counted(m, params, rng):
                chordal.append(isinstance(m.emission, SquaredEuclidean))
                return em(m, params, rng)

            return super()._best_of_runs(model, constraints, y, counted, initial_params)

    counts = []
    for kw in ({}, dict(must_link=[(0, 1)], cannot_link=[(2, 3)])):
        chordal.clear()
        est = Counting(3, random_state=0).fit(X, **kw)
        assert est.emission_ == "cosine"
        counts.append(sum(chordal))
        assert sum(chordal) == est.n_runs_ // 2
    assert counts[0] == counts[1]


def test_the_objective_decides_between_runs():
    """n_init="auto" keeps the run of lowest objective J among the runs it made (every
    run's final J recorded by wrapping the EM it calls)."""
    finals = []

    class Recording(HMRFKMeans):
        def _best_of_runs(self, model, constraints, y, em, initial_params):
            def recorded(m, params, rng):
                res = em(m, params, rng)
                if m is model:  # the constrained EM, not a data-alone start
                    finals.append(res.objective)
                return res

            return super()._best_of_runs(model, constraints, y, recorded, initial_params)

    c = _pairs(Y_WINE, 30)
    best = Recording(3, inference="icm", random_state=0).fit(X_WINE, constraints=c)
    assert best.n_runs_ == len(finals) > 1
    assert len(set(np.round(finals, 6))) > 1  # the runs differ, so the choice matters
    assert best.objective_ == pytest.approx(min(finals), rel=1e-9)


def test_copkmeans_runs_until_one_finds_a_labelling():
    """A feasible problem on which the paper's single run aborts (tests/test_copkmeans.py,
    seed 80): among the default runs, one finds a labelling that keeps every constraint."""
    import sys
    from pathlib import Path

    from hmrf import COPKMeans, InfeasibleError

    sys.path.insert(0, str(Path(__file__).parent))
    from test_copkmeans import dense_cannot_link_problem, honours

    X, k, ml, cl = dense_cannot_link_problem(80)
    with pytest.raises(InfeasibleError):
        COPKMeans(k, n_init=1, random_state=0).fit(X, must_link=ml, cannot_link=cl)
    est = COPKMeans(k, random_state=0).fit(X, must_link=ml, cannot_link=cl)
    assert honours(est.labels_, ml, cl)


def _topics(n_docs=90, n_words=40, k=3, seed=0):
    """Sparse word counts of ``k`` topics (each topic favours its own block of words)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(k), n_docs // k)
    p = np.full((k, n_words), 0.2)
    for h in range(k):
        p[h, h * (n_words // k):(h + 1) * (n_words // k)] = 1.0
    p /= p.sum(axis=1, keepdims=True)
    counts = np.vstack([rng.multinomial(12, p[t]) for t in y]).astype(float)
    return sp.csr_matrix(counts), y


def test_text_runs_start_in_turn_from_lloyd_on_the_chord():
    """Cosine model, ``n_init="auto"``, no constraints: runs in turn start SP-KMeans
    from the normalised means of Lloyd's iterations with squared Euclidean distance on
    the unit rows (scikit-learn's KMeans from the same centres gives the same means),
    and the cosine objective decides between all runs."""
    from sklearn.cluster import KMeans as SKKMeans

    from hmrf.estimators import base

    X, _ = _topics()
    calls = []
    real = base.run_em

    def spy(model, params, *a, **kw):
        res = real(model, params, *a, **kw)
        calls.append((type(model.emission).__name__, model.X, np.array(params.centers), res))
        return res

    mp = pytest.MonkeyPatch()
    mp.setattr(base, "run_em", spy)
    try:
        est = HMRFKMeans(3, tol=0.0, random_state=0).fit(X)
    finally:
        mp.undo()
    assert est.emission_ == "cosine"
    chord = [i for i, c in enumerate(calls) if c[0] == "SquaredEuclidean"]
    assert 0 < len(chord) < est.n_runs_
    for i in chord:
        _, U, start, res = calls[i]
        ref = SKKMeans(3, init=start, n_init=1, tol=0.0).fit(U)
        means = ref.cluster_centers_ / np.linalg.norm(ref.cluster_centers_, axis=1, keepdims=True)
        assert calls[i + 1][0] == "VonMisesFisher"
        next_start = calls[i + 1][2] / np.linalg.norm(calls[i + 1][2], axis=1, keepdims=True)
        np.testing.assert_allclose(next_start, means, atol=1e-9)
    finals = [c[3].objective for c in calls if c[0] == "VonMisesFisher"]
    assert est.objective_ == pytest.approx(min(finals), rel=1e-12)
    # dense data and soft EM keep one kind of start
    assert HMRFKMeans(3, emission="cosine", em="soft", random_state=0)._chordal(HMRF(X, 3, "cosine")) is None
    assert HMRFKMeans(3, random_state=0)._chordal(HMRF(X_WINE, 3)) is None


def _supervision_benchmark():
    """``benchmarks/supervision.py`` as a module (it is a script, not part of the package)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).parents[1] / "benchmarks" / "supervision.py"
    spec = importlib.util.spec_from_file_location("bench_supervision", path)
    module = importlib.util.module_from_spec(spec)
    saved = list(sys.path)
    try:
        spec.loader.exec_module(module)  # it puts benchmarks/ on the path for its helpers
    finally:
        sys.path[:] = saved
    return module


def test_the_supervision_benchmark_compares_the_models_own_objective():
    """The note of benchmarks/supervision.py on a text set compares HMRF-KMeans' cosine
    objective with the cosine objective of KMeans' labelling (the M-step's parameters
    for it), not with KMeans' inertia: at HMRF-KMeans' own labels the function gives its
    ``objective_``; on dense rows, at KMeans' labels, scikit-learn's inertia."""
    from sklearn.cluster import KMeans as SKKMeans

    bench = _supervision_benchmark()
    X, _ = _topics()
    est = HMRFKMeans(3, random_state=0).fit(X)
    model = HMRF(X, 3, emission=est.emission_)
    assert est.emission_ == "cosine"
    assert bench._objective_of(model, est.labels_, est.params_) == pytest.approx(est.objective_, rel=1e-9)
    km = SKKMeans(3, n_init=1, random_state=0).fit(X)
    theirs = bench._objective_of(model, km.labels_, est.params_)
    assert theirs != pytest.approx(km.inertia_, rel=1e-3)  # another objective than KMeans'
    Xd, _ = make_blobs(200, 3, centers=3, random_state=0)
    km = SKKMeans(3, n_init=1, random_state=0).fit(Xd)
    dense = HMRFKMeans(3, random_state=0).fit(Xd)
    assert bench._objective_of(HMRF(Xd, 3), km.labels_, dense.params_) == pytest.approx(km.inertia_, rel=1e-6)


class _FakeCells:
    """Cells of a larger sample for :func:`confirm`: a table of NMI by (estimator, pairs)."""

    def __init__(self, nmi, ref):
        self.nmi, self.ref, self.asked = nmi, ref, []

    def reference(self, ds, runs):
        self.asked.append((ds, "ref", runs))
        return self.ref

    def cell(self, ds, est, n_pairs, runs):
        self.asked.append((ds, est, n_pairs, runs))
        return {"nmi": self.nmi[(est, n_pairs)], "failed": 0, "seconds": 0.0}


def test_the_supervision_benchmark_confirms_a_miss_over_more_runs():
    """A drop and a shortfall against KMeans found at 10 runs are re-measured on exactly
    the cells they compare; a miss counts only when it holds with the larger sample."""
    bench = _supervision_benchmark()
    cell = lambda v: {"nmi": v, "failed": 0, "seconds": 0.0}  # noqa: E731
    results = {("d", "ref"): 0.50,
               ("d", "SeededKMeans"): {0: cell(0.50), 100: cell(0.47), 500: cell(0.60), 3: cell(0.51)},
               ("d", "HMRFKMeans"): {0: cell(0.45), 100: cell(0.55), 500: cell(0.70), 3: cell(0.45)}}
    misses = bench.check(results, ["d"], ["SeededKMeans", "HMRFKMeans"])
    assert [str(m) for m in misses] == [
        "d SeededKMeans: NMI drops to 0.470 at 100 pairs (best before 0.510)",
        "d HMRFKMeans: 0.450 without constraints < KMeans 0.500 - 0.01"]
    # the drop holds with 40 runs, the shortfall is noise
    cells = _FakeCells({("SeededKMeans", 3): 0.52, ("SeededKMeans", 100): 0.50, ("HMRFKMeans", 0): 0.49},
                       ref=0.495)
    confirmed, notes = bench.confirm(misses, cells, 40)
    assert confirmed == misses[:1]
    assert sorted(cells.asked, key=str) == sorted([("d", "SeededKMeans", 3, 40), ("d", "SeededKMeans", 100, 40),
                                                   ("d", "HMRFKMeans", 0, 40), ("d", "ref", 40)], key=str)
    assert "confirmed over 40 runs" in notes[0] and "not confirmed over 40 runs" in notes[1]


def test_benchmarks_record_their_command_without_local_paths(monkeypatch):
    bench = _supervision_benchmark()
    monkeypatch.setattr("sys.argv", ["benchmarks/supervision.py", "--runs", "10", "--cache", "/tmp/c.json",
                                     "--cache=/tmp/d.json", "--out", "/tmp/o", "--readme"])
    assert bench.command_line().endswith("supervision.py --runs 10 --readme")


def test_the_supervision_benchmark_repairs_kmeans_clustering_to_judge_a_hard_pair(monkeypatch):
    """For a drop of COP-KMeans with a few pairs, the benchmark compares its objective with
    the best relabelling of the pairs' endpoints in KMeans' clustering that keeps every
    pair: three separated blobs and a cannot-link inside one (KMeans breaks it; the best
    repair moves one endpoint to the nearest other blob, which is also COP-KMeans'
    optimum), and a must-link inside one (kept by KMeans: the run is left out)."""
    from itertools import product

    bench = _supervision_benchmark()
    X, y = make_blobs(60, 2, centers=[[0, 0], [8, 0], [0, 8]], cluster_std=1.0, random_state=1)
    first = np.flatnonzero(y == 0)
    pairs = {1000: Constraints.from_pairs(cannot_link=[(first[0], first[1])], n=60),
             1001: Constraints.from_pairs(must_link=[(first[0], first[1])], n=60)}

    class _Pairs:  # the pairs of run r, drawn by the benchmark from default_rng(1000 + r)
        @staticmethod
        def sample_from_labels(labels, n_pairs, rng):
            return pairs[rng.bit_generator.seed_seq.entropy]

    monkeypatch.setattr(bench, "load", lambda ds: (X, y))
    monkeypatch.setattr(bench, "Constraints", _Pairs)
    ours, fixed, nmi_ours, nmi_fixed, not_above, broken = bench.repaired_objective("d", 1, 2)
    assert broken == 1 and not_above == 1
    assert ours == pytest.approx(fixed, rel=1e-9) and nmi_ours == pytest.approx(nmi_fixed)
    # the repair is the enumerated optimum of the hard pair given KMeans' other labels
    from sklearn.cluster import KMeans as SKKMeans

    base = SKKMeans(3, n_init=10, random_state=0).fit(X).labels_
    sse = lambda lab: sum(((X[lab == h] - X[lab == h].mean(axis=0)) ** 2).sum() for h in range(3))  # noqa: E731
    best = min(sse(np.where(np.arange(60) == first[0], a, np.where(np.arange(60) == first[1], b, base)))
               for a, b in product(range(3), repeat=2) if a != b)
    assert fixed == pytest.approx(best, rel=1e-9)


def test_the_model_resolves_emission_auto_from_its_data():
    from hmrf import HMRF
    from hmrf.emissions import data_emission, get_emission

    text = sp.csr_matrix(sp.random(12, 6, density=0.5, random_state=1) + sp.eye(12, 6))
    for X in (np.random.default_rng(0).normal(size=(12, 3)), text):
        assert HMRF(X, 2, emission="auto").emission.name == get_emission(data_emission(X)).name
    assert HMRF(text, 2, emission="auto").emission.name != HMRF(text.toarray(), 2, emission="auto").emission.name
