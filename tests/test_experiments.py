"""The learning-curve driver: protocol correctness (thesis §3.5.2, §4.5.2, §5.5.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from hmrf import Constraints, HMRFKMeans, KMeans
from hmrf.datasets import load_dataset
from hmrf.experiments import CurveTable, learning_curve, make_splits
from hmrf.metrics import nmi


class Spy(BaseEstimator):
    """Records the supervision it is given; predicts the truth except on ``scramble``.

    A foreign estimator: it declares the supervision it takes (hmrf.estimators.fit_supervised).
    """

    hmrf_supervision = "constraints"

    def __init__(self, log=None, truth=None, scramble=None, fail=False, random_state=None):
        self.log = log
        self.truth = truth
        self.scramble = scramble
        self.fail = fail
        self.random_state = random_state

    def fit(self, X, y=None, constraints=None):
        if self.fail:
            raise RuntimeError("no feasible assignment")
        self.log.append(dict(y=None if y is None else np.array(y), constraints=constraints,
                             random_state=self.random_state))
        lab = np.array(self.truth)
        if self.scramble is not None:
            lab[self.scramble] = 0
        self.labels_ = lab
        self.objective_ = 1.5
        self.n_iter_ = 3
        return self


def _spy(log, **kw):
    def make(point, run):
        return Spy(log=log, **kw)

    make.__name__ = "spy"
    return make


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 20)
    X = rng.normal(size=(60, 2)) + 4.0 * y[:, None]
    return X, y


def test_splits_partition_the_data():
    s = make_splits(23, runs=3, folds=4, random_state=1)
    assert len(s) == 12
    for r in range(3):
        tests = np.concatenate([te for rr, _, _, te in s if rr == r])
        assert np.array_equal(np.sort(tests), np.arange(23))  # each point held out once per run
    for _, _, tr, te in s:
        assert np.intersect1d(tr, te).size == 0 and tr.size + te.size == 23
    one = make_splits(20, runs=2, test_fraction=0.25, random_state=0)
    assert [te.size for *_, te in one] == [5, 5] and not np.array_equal(one[0][3], one[1][3])
    with pytest.raises(ValueError, match="exactly one of folds"):
        make_splits(10, 1, folds=2, test_fraction=0.5)


def test_constraints_come_from_training_part_only_and_are_nested(blobs):
    X, y = blobs
    log = []
    points = [0, 10, 40, 150]
    t = learning_curve(_spy(log, truth=y), X, y, points=points, runs=2, folds=2, progress=False,
                       random_state=5)
    splits = make_splits(60, 2, 2, random_state=5)
    assert len(log) == len(t) == 2 * 2 * len(points)
    it = iter(log)
    for _, _, train, test in splits:
        prev = set()
        for p in points:
            c = next(it)["constraints"]
            assert isinstance(c, Constraints) and len(c) == p
            assert np.isin(c.constrained_points, train).all()
            assert not np.isin(c.constrained_points, test).any()
            # kinds agree with the classes (no noise)
            same = y[c.pairs[:, 0]] == y[c.pairs[:, 1]]
            assert np.array_equal(same, c.kind > 0)
            pairs = {tuple(q) for q in c.pairs.tolist()}
            assert prev <= pairs  # nested along the curve
            prev = pairs
    assert {(r["n_must_link"] + r["n_cannot_link"]) for r in t if r["point"] == 40} == {40}


def test_scores_use_only_the_held_out_part(blobs):
    X, y = blobs
    splits = make_splits(60, 1, 2, random_state=3)
    train0 = splits[0][2]  # fold 0 trains on these, fold 1 tests on them
    t = learning_curve(_spy([], truth=y, scramble=train0), X, y, points=[0, 5], folds=2,
                       metrics=("nmi", "ari", "pairwise_f", "objective", "n_iter"), random_state=3,
                       progress=False)
    for r in t:
        if r["fold"] == 0:  # held-out part untouched by the scrambling: perfect
            assert r["nmi"] == pytest.approx(1.0) and r["pairwise_f"] == pytest.approx(1.0)
        else:  # held-out part all in one cluster
            assert r["nmi"] == pytest.approx(0.0) and r["ari"] == pytest.approx(0.0)
        assert r["objective"] == 1.5 and r["n_iter"] == 3 and r["n_test"] == 30
    # the scores over all points would be neither 0 nor 1
    lab = y.copy()
    lab[train0] = 0
    assert 0.05 < nmi(y, lab) < 0.95


def test_seed_labels_protocol_and_exact_noise(blobs):
    X, y = blobs
    log = []
    fracs, noise = [0.0, 0.45, 1.0], [0.0, 0.3, 0.7]
    t = learning_curve(_spy(log, truth=y), X, y, supervision="labels", points=fracs, folds=3,
                       noise=noise, random_state=2, progress=False)
    splits = make_splits(60, 1, 3, random_state=2)
    it = iter(log)
    for _, _, train, _ in splits:
        for f in fracs:
            seeds_by_noise = []
            for v in noise:
                ys = next(it)["y"]
                seeds = np.flatnonzero(ys >= 0)
                assert np.isin(seeds, train).all() and seeds.size == round(f * train.size)
                wrong = np.flatnonzero(ys[seeds] != y[seeds])
                assert wrong.size == round(v * seeds.size)  # exactly the requested fraction
                assert np.isin(ys[seeds], [0, 1, 2]).all()
                seeds_by_noise.append((set(seeds.tolist()), set(seeds[wrong].tolist())))
            assert all(s == seeds_by_noise[0][0] for s, _ in seeds_by_noise)  # same seeds
            assert seeds_by_noise[1][1] <= seeds_by_noise[2][1]  # noisy ones nested
    r = [r for r in t if r["point"] == 0.45 and r["noise"] == 0.7]
    assert r and all(q["supervision"] == "labels" for q in r)
    assert all(q["n_noisy"] == round(0.7 * q["n_seeds"]) for q in r)


def test_constraint_noise_flips_exact_fraction(blobs):
    X, y = blobs
    log = []
    t = learning_curve(_spy(log, truth=y), X, y, points=[40], folds=2, noise=[0.0, 0.25],
                       progress=False)
    for entry, rec in zip(log, t, strict=True):
        c = entry["constraints"]
        flipped = (y[c.pairs[:, 0]] == y[c.pairs[:, 1]]) != (c.kind > 0)
        assert flipped.sum() == round(rec["noise"] * 40) == rec["n_noisy"]


def test_deterministic_and_independent_of_n_jobs():
    X, y = load_dataset("iris")
    models = {"hmrf": HMRFKMeans(3, init="neighborhoods"), "kmeans": KMeans(3, init="neighborhoods")}
    kw = dict(points=[0, 30], runs=1, folds=2, progress=False)

    def strip(t):
        return [{k: v for k, v in r.items() if k != "fit_time"} for r in t]

    a = learning_curve(models, X, y, random_state=4, **kw)
    b = learning_curve(models, X, y, random_state=4, n_jobs=2, **kw)
    c = learning_curve(models, X, y, random_state=5, **kw)
    assert strip(a) == strip(b)
    assert strip(a) != strip(c)
    # common random numbers: with no constraints HMRF-KMeans is KMeans from the same start
    za = [r["nmi"] for r in a if r["point"] == 0]
    assert za[:2] == za[2:]


def test_estimator_seed_shared_and_user_seed_kept(blobs):
    X, y = blobs
    log = []
    learning_curve({"a": _spy(log, truth=y), "b": _spy(log, truth=y, random_state=11)}, X, y,
                   points=[0, 3], runs=2, folds=2, progress=False)
    seeds_a = [e["random_state"] for e in log[:8]]
    assert all(s is not None for s in seeds_a)
    assert seeds_a[0] == seeds_a[1] and len(set(seeds_a)) == 4  # one per (run, fold)
    assert {e["random_state"] for e in log[8:]} == {11}


def test_failures_recorded_or_raised(blobs):
    X, y = blobs
    t = learning_curve(_spy([], truth=y, fail=True), X, y, points=[1], folds=2, progress=False,
                       errors="record")
    assert all(math.isnan(r["nmi"]) and "no feasible" in r["error"] for r in t)
    s = t.summary()
    assert s[0]["n"] == 0 and s[0]["n_failed"] == 2
    with pytest.raises(RuntimeError, match="no feasible"):
        learning_curve(_spy([], truth=y, fail=True), X, y, points=[1], folds=2, progress=False)


def test_bad_input_messages(blobs):
    X, y = blobs
    with pytest.raises(ValueError, match="unknown metrics"):
        learning_curve(HMRFKMeans(3), X, y, metrics=("accuracy",), progress=False)
    with pytest.raises(ValueError, match="seed fractions"):
        learning_curve(HMRFKMeans(3), X, y, supervision="labels", points=[2], folds=2,
                       progress=False)
    with pytest.raises(ValueError, match="numbers of pairs"):
        learning_curve(HMRFKMeans(3), X, y, points=[0.5], folds=2, progress=False)
    with pytest.raises(ValueError, match="has 59 rows"):
        learning_curve(HMRFKMeans(3), X[:-1], y, progress=False)
    with pytest.raises(TypeError, match="make_estimator"):
        learning_curve(42, X, y, progress=False)

    def cheat(X, y, train, point, rng):
        return Constraints.from_pairs(must_link=[(0, 1)], n=y.shape[0])

    with pytest.raises(ValueError, match="outside the training part"):
        learning_curve(HMRFKMeans(3), X, y, supervision=cheat, points=[1], folds=2, progress=False)
    with pytest.raises(ValueError, match="noise applies to the built-in supervision only"):
        learning_curve(HMRFKMeans(3), X, y, supervision=cheat, points=[1], folds=2, noise=0.1,
                       progress=False)


def test_callable_supervision(blobs):
    X, y = blobs
    log = []

    def first_pairs(X, y, train, point, rng):
        a = train[: 2 * point]
        return Constraints(y.shape[0], a.reshape(-1, 2), np.where(y[a[::2]] == y[a[1::2]], 1, -1))

    t = learning_curve(_spy(log, truth=y), X, y, supervision=first_pairs, points=[2, 4], folds=2,
                       progress=False)
    assert [len(e["constraints"]) for e in log] == [2, 4, 2, 4]
    assert {r["supervision"] for r in t} == {"first_pairs"}


def test_csv_round_trip_summary_compare_plot(tmp_path):
    X, y = load_dataset("iris")
    # KMeans from HMRFKMeans' starts: the two are the same fit without supervision
    t = learning_curve({"hmrf": HMRFKMeans(3), "kmeans": KMeans(3, init="pckmeans++")}, X, y,
                       points=[0, 20], runs=2, folds=2, progress=False)
    t.records[0]["nmi"] = float("nan")
    t.records[1]["error"] = "ValueError: x, with a comma"
    path = tmp_path / "c.csv"
    t.to_csv(path)
    back = CurveTable.from_csv(path)
    assert back.columns == t.columns and len(back) == len(t)
    for r, s in zip(t, back, strict=True):
        for k, v in r.items():
            if isinstance(v, float) and math.isnan(v):
                assert math.isnan(s[k])
            else:
                assert s[k] == v
    good = CurveTable(r for r in t.records[2:])
    rows = {(r["estimator"], r["point"]): r for r in good.summary(["nmi"])}
    v = [r["nmi"] for r in good if r["estimator"] == "hmrf" and r["point"] == 20]
    assert rows["hmrf", 20]["nmi_mean"] == pytest.approx(np.mean(v))
    assert rows["hmrf", 20]["nmi_std"] == pytest.approx(np.std(v, ddof=1))
    cmp = {r["point"]: r for r in good.compare("hmrf", "kmeans")}
    assert cmp[0]["ties"] == cmp[0]["n"] and cmp[0]["p_value"] == 1.0  # identical at 0
    by = {(r["estimator"], r["run"], r["fold"]): r["nmi"] for r in good if r["point"] == 20}
    d = [v - by["kmeans", r, f] for (e, r, f), v in by.items() if e == "hmrf"]
    assert len(d) == 3 and np.ptp(d) > 0
    assert cmp[20]["mean_diff"] == pytest.approx(np.mean(d))
    assert "hmrf" in good.format_summary(["nmi"]) and "±" in good.format_summary(["nmi"])
    import matplotlib

    matplotlib.use("Agg")
    ax = good.plot("nmi")
    assert len(ax.get_lines()) == 2 and ax.get_xlabel() == "number of constraints"
    import matplotlib.pyplot as plt

    plt.close("all")
