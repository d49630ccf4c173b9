"""Seeded-KMeans and Constrained-KMeans (Basu 2005, ch. 3): the paper's algorithm one
argument away, the defaults' k-means++ fill and runs, seeds from constraints."""

from itertools import permutations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans as SKKMeans
from sklearn.datasets import make_blobs

from hmrf import HMRF, ConstrainedKMeans, Constraints, SeededKMeans
from hmrf._validation import check_random_state
from hmrf.estimators import fit_supervised
from hmrf.estimators.supervision import _seeds
from hmrf.initialization import seeded_centers
from hmrf.metrics import nmi

PAPER = dict(emission="sqeuclidean", init="perturbed", n_init=1)


def _partial(y, per_class, classes, seed=0):
    """``per_class`` labelled points of each class in ``classes``, -1 elsewhere."""
    rng = np.random.default_rng(seed)
    out = np.full(y.shape[0], -1)
    for c in classes:
        pick = rng.choice(np.flatnonzero(y == c), per_class, replace=False)
        out[pick] = c
    return out


@pytest.mark.parametrize("classes", [[0, 1, 2, 3], [1, 3]])
def test_the_papers_seeded_kmeans_is_lloyd_from_the_seed_means(classes):
    """Fig. 3.1 with the thesis's fill (§3.5.4): the seed means and perturbed global
    centroids, then Lloyd's iterations; scikit-learn's KMeans from the same centres
    gives the same labels."""
    X, y = make_blobs(400, 5, centers=4, cluster_std=2.5, random_state=3)
    seeds = _partial(y, 3, classes)
    est = SeededKMeans(4, random_state=7, tol=0.0, **PAPER).fit(X, seeds)
    which = np.full(y.shape[0], -1)
    lab = seeds >= 0
    which[lab] = np.searchsorted(np.unique(seeds[lab]), seeds[lab])
    C = seeded_centers(X, which, 4, check_random_state(7))
    ref = SKKMeans(4, init=C, n_init=1, tol=0.0).fit(X)
    assert nmi(ref.labels_, est.labels_) == pytest.approx(1.0)
    np.testing.assert_allclose(est.objective_, ref.inertia_, rtol=1e-9)


def test_runs_never_end_above_the_first_run():
    """``n_init="auto"``: the first run is the one-run fit (same generator), and the
    lowest objective wins, so the default never ends above ``n_init=1``."""
    X, y = make_blobs(600, 4, centers=6, cluster_std=2.0, random_state=0)
    seeds = _partial(y, 2, [0, 1])
    for state in range(4):
        one = SeededKMeans(6, n_init=1, random_state=state).fit(X, seeds)
        many = SeededKMeans(6, random_state=state).fit(X, seeds)
        assert many.n_runs_ > 1
        assert many.objective_ <= one.objective_ + 1e-9 * abs(one.objective_)


def _record_starts(monkeypatch):
    """The centres every EM run of a fit starts from, in order."""
    from hmrf.estimators import base

    starts, real = [], base.run_em

    def spy(model, params, *a, **kw):
        starts.append(np.array(params.centers))
        return real(model, params, *a, **kw)

    monkeypatch.setattr(base, "run_em", spy)
    return starts


def test_every_run_starts_the_seeded_clusters_at_their_seed_means(monkeypatch):
    X, y = make_blobs(300, 3, centers=5, random_state=1)
    seeds = _partial(y, 4, [0, 2])
    starts = _record_starts(monkeypatch)
    est = SeededKMeans(5, n_init=4, random_state=0).fit(X, seeds)
    means = np.vstack([X[seeds == c].mean(axis=0) for c in (0, 2)])
    assert len(starts) == est.n_runs_ > 1
    for C in starts:
        np.testing.assert_allclose(C[:2], means)
    assert len({C[2:].tobytes() for C in starts}) == len(starts)  # the fill varies


def test_auto_adds_the_seed_means_to_the_runs_of_the_fit_without_seeds(monkeypatch):
    """``n_init="auto"`` with every cluster seeded: the seed means start one run, first
    (the others would repeat it); then come the runs of the fit without seeds, from
    the same starts and as many, so that the seeds take no start away."""
    from hmrf.estimators import base

    X, y = make_blobs(200, 3, centers=3, random_state=2)
    seeds = _partial(y, 5, [0, 1, 2])
    starts = _record_starts(monkeypatch)
    est = SeededKMeans(3, random_state=0).fit(X, seeds)
    np.testing.assert_array_equal(est.seed_classes_, [0, 1, 2])
    means = np.vstack([X[seeds == c].mean(axis=0) for c in (0, 1, 2)])
    assert np.allclose(starts[0], means) and not any(np.allclose(C, means) for C in starts[1:])
    with_seeds = starts[1:]
    starts.clear()
    plain = SeededKMeans(3, random_state=0).fit(X)
    assert est.n_runs_ == 1 + plain.n_runs_ and len(starts) == plain.n_runs_ == len(with_seeds)
    for a, b in zip(with_seeds, starts):
        np.testing.assert_array_equal(a, b)
    # without the stopping rule the fit without seeds makes its AUTO_MAX_RUNS runs, from
    # distinct starts, and the fit with seeds one more
    monkeypatch.setattr(base, "AUTO_AGREE", base.AUTO_MAX_RUNS + 1)
    starts.clear()
    assert SeededKMeans(3, random_state=0).fit(X).n_runs_ == base.AUTO_MAX_RUNS
    assert len(starts) == base.AUTO_MAX_RUNS and len({C.tobytes() for C in starts}) == len(starts)
    assert SeededKMeans(3, random_state=0).fit(X, seeds).n_runs_ == 1 + base.AUTO_MAX_RUNS


def test_seeds_never_end_above_the_fit_without_them():
    """The runs of the fit without seeds are among the default's runs, so its
    ``J_kmeans + Σ min(w, cost of moving a missed seed)`` is never above the fit
    without seeds' under the same seeds; a few seeds that the fit without seeds
    keeps leave its partition as it is, unless a start from them ends lower."""
    X, y = make_blobs(300, 2, centers=6, cluster_std=1.8, random_state=3)
    for state in range(6):
        seeds = _partial(y, 1, [state % 6], seed=state)
        seeds[np.flatnonzero(y == state % 6)[1]] = state % 6
        alone = SeededKMeans(6, random_state=state).fit(X)
        est = SeededKMeans(6, random_state=state).fit(X, seeds)
        assert _penalised(est, X, seeds, 6) <= _penalised(alone, X, seeds, 6) * (1 + 1e-9)
        if _seeds_missed(alone.labels_, seeds, 6) == 0:
            assert nmi(alone.labels_, est.labels_) == pytest.approx(1.0) or est.objective_ < alone.objective_


#: Nine points, three classes of three; ``TRAP`` seeds each class with one point, of
#: which the first is its class's outlier towards the third class. The classes are the
#: partition of least ``J_kmeans`` (enumerated in the test).
TRAP_X = np.array([[6.9, 4.9], [5.0, 5.0], [3.8, 6.7], [0.7, 5.6], [1.8, 5.3], [1.4, 3.7],
                   [9.8, 0.2], [8.9, 0.8], [11.0, 0.4]])
TRAP_Y = np.repeat([0, 1, 2], 3)
TRAP = np.array([0, -1, -1, 1, -1, -1, 2, -1, -1])


def _least_j_partition(X, k):
    """The ``k``-partition of least ``J_kmeans`` (eq. 3.3), by enumeration."""
    from itertools import product

    best, arg = np.inf, None
    for tail in product(range(k), repeat=X.shape[0] - 1):
        lab = np.array((0, *tail))
        if np.unique(lab).size < k:
            continue
        J = sum(((X[lab == h] - X[lab == h].mean(axis=0)) ** 2).sum() for h in range(k))
        if J < best:
            best, arg = J, lab
    return best, arg


def test_a_poor_seed_mean_loses_to_a_start_without_seeds():
    """Correct seeds, one per class, one of them atypical: from the seed means
    (the thesis's one run) Lloyd's iterations end in a worse minimum than the
    partition of least ``J_kmeans``, which is the classes and which the fit without
    seeds finds, so more supervision gave a worse partition. The default's starts
    without seeds find it with the seeds too."""
    J, best = _least_j_partition(TRAP_X, 3)
    assert nmi(TRAP_Y, best) == pytest.approx(1.0)
    paper = SeededKMeans(3, n_init=1, random_state=0).fit(TRAP_X, TRAP)
    assert paper.objective_ > J + 0.5 and nmi(TRAP_Y, paper.labels_) < 0.9
    for state in range(5):
        assert SeededKMeans(3, random_state=state).fit(TRAP_X).objective_ == pytest.approx(J)
        est = SeededKMeans(3, random_state=state).fit(TRAP_X, TRAP)
        assert est.objective_ == pytest.approx(J)
        assert nmi(TRAP_Y, est.labels_) == pytest.approx(1.0)


def _seeds_missed(labels, seeds, k):
    """Seeds outside the cluster matched to their class, the best matching found by
    trying every one-to-one map of classes to clusters."""
    mask = seeds >= 0
    return min(int(np.sum(np.asarray(perm)[seeds[mask]] != labels[mask]))
               for perm in permutations(range(k)))


def _penalised(est, X, seeds, k):
    """``J_kmeans`` plus, for every seed outside the cluster matched to its class, the
    lesser of ``w="auto"``'s weight and what moving it there costs at the fitted
    centres; the matching of least total, by trying every one-to-one map."""
    w = HMRF(X, k).auto_w()
    mask = seeds >= 0
    D = ((X[mask][:, None, :] - est.cluster_centers_[None]) ** 2).sum(axis=2)
    own = D[np.arange(mask.sum()), est.labels_[mask]]
    move = np.minimum(D - own[:, None], w)
    return est.objective_ + min(move[np.arange(mask.sum()), np.asarray(perm)[seeds[mask]]].sum()
                                for perm in permutations(range(k)))


def test_the_default_never_ends_above_the_paper_in_j_plus_missed_seeds():
    """With every cluster seeded, the default's first run is the thesis's run (same
    start, same generator), so its ``J_kmeans + Σ min(w, cost of moving a missed seed)``
    is never above the thesis's run's."""
    X, y = make_blobs(500, 4, centers=5, cluster_std=3.0, random_state=6)
    for state in range(4):
        seeds = _partial(y, 2, range(5), seed=state)
        one = SeededKMeans(5, n_init=1, random_state=state).fit(X, seeds)
        auto = SeededKMeans(5, random_state=state).fit(X, seeds)
        assert _penalised(auto, X, seeds, 5) <= _penalised(one, X, seeds, 5) * (1 + 1e-9)


def test_seeds_that_pay_for_a_higher_objective_win():
    """Two short parallel classes that k-means cuts across: the partition of least
    ``J_kmeans`` splits both classes, the seeded start keeps them at a higher
    ``J_kmeans``, and half of the points are seeds, so the split would leave more seeds
    outside their clusters than its lower ``J_kmeans`` pays for. The default returns
    the classes; with few seeds a split as the data alone's wins."""
    rng = np.random.default_rng(0)
    a = np.column_stack([rng.uniform(0, 6, 60), rng.normal(0, 0.3, 60)])
    X, y = np.vstack([a, a + [0, 2.0]]), np.repeat([0, 1], 60)
    alone = SeededKMeans(2, random_state=0).fit(X)
    assert nmi(y, alone.labels_) < 0.5  # the data alone cut the classes
    many, few = np.full(120, -1), np.full(120, -1)
    many[::2], few[:2], few[60:62] = y[::2], y[:2], y[60:62]
    paper = SeededKMeans(2, n_init=1, random_state=0).fit(X, many)
    assert _seeds_missed(paper.labels_, many, 2) == 0 and paper.objective_ > alone.objective_
    for state in range(3):
        est = SeededKMeans(2, random_state=state).fit(X, many)
        assert est.n_runs_ > 1
        assert nmi(y, est.labels_) == pytest.approx(1.0)
        est = SeededKMeans(2, random_state=state).fit(X, few)
        assert nmi(y, est.labels_) < 0.5
        assert est.objective_ == pytest.approx(alone.objective_, rel=1e-3)
        # selection="objective": the seeds only start runs, the lowest J_kmeans wins
        est = SeededKMeans(2, selection="objective", random_state=state).fit(X, many)
        assert nmi(y, est.labels_) < 0.5
        assert est.objective_ == pytest.approx(alone.objective_, rel=1e-3)


def test_the_k_means_plus_plus_fill_finds_unseeded_classes_the_perturbed_fill_merges():
    """Six well-separated classes, seeds in two: the thesis's perturbed global centroids
    start the four unseeded clusters together; the k-means++ fill given the seed means
    (and its runs) recovers all six."""
    X, y = make_blobs(1200, 8, centers=6, cluster_std=0.5, random_state=4)
    seeds = _partial(y, 3, [0, 1])
    paper = [nmi(y, SeededKMeans(6, random_state=s, **PAPER).fit(X, seeds).labels_) for s in range(3)]
    ours = [nmi(y, SeededKMeans(6, random_state=s).fit(X, seeds).labels_) for s in range(3)]
    assert min(ours) == pytest.approx(1.0)
    assert min(paper) < 0.99


def test_text_gets_the_cosine_model_and_explicit_settings_are_kept():
    rng = np.random.default_rng(0)
    X = sp.random(60, 40, density=0.2, format="csr", random_state=1)
    X = X + sp.csr_matrix((np.ones(60), (np.arange(60), rng.integers(0, 40, 60))), shape=(60, 40))
    seeds = np.full(60, -1)
    seeds[:3], seeds[3:6] = 0, 1
    for Est in (SeededKMeans, ConstrainedKMeans):
        auto = Est(3, random_state=0).fit(X, seeds)
        cos = Est(3, emission="cosine", random_state=0).fit(X, seeds)
        assert auto.emission_ == "cosine"
        np.testing.assert_array_equal(auto.labels_, cos.labels_)
        assert Est(3, emission="sqeuclidean", random_state=0).fit(X, seeds).emission_ == "sqeuclidean"
        assert Est(3, random_state=0).fit(X.toarray(), seeds).emission_ == "sqeuclidean"


def test_constrained_kmeans_keeps_its_seeds_with_the_defaults():
    X, y = make_blobs(300, 2, centers=3, cluster_std=3.0, random_state=5)
    seeds = _partial(y, 10, [0, 1, 2])
    seeds[np.flatnonzero(seeds == 0)[:2]] = 1  # noisy seeds stay where they were put
    est = ConstrainedKMeans(3, random_state=0).fit(X, seeds)
    lab = seeds >= 0
    np.testing.assert_array_equal(est.labels_[lab], seeds[lab])


def test_bad_init_is_named():
    X, y = make_blobs(50, 2, centers=2, random_state=0)
    with pytest.raises(ValueError, match="init"):
        SeededKMeans(2, init="pckmeans").fit(X, _partial(y, 2, [0]))


# ------------------------------------------------------------ seeds from constraints
def _hand_made():
    """Neighbourhoods {0,1}, {2,3}, {4,5}, pairwise cannot-linked; point 6 cannot-linked
    to the first two; point 7 to point 6 and the first; point 8 to the first only."""
    ml = [(0, 1), (2, 3), (4, 5)]
    cl = [(0, 2), (0, 4), (2, 4), (6, 0), (6, 3), (7, 6), (7, 1), (8, 1)]
    return Constraints.from_pairs(ml, cl, n=10)


def test_seeds_are_the_neighbourhoods_without_a_cluster_count():
    y = _seeds(_hand_made())
    assert sorted(map(tuple, [np.flatnonzero(y == p) for p in range(3)])) == [(0, 1), (2, 3), (4, 5)]
    assert np.all(y[6:] == -1)


def test_seeds_complete_the_classes_when_the_neighbourhoods_are_one_per_cluster():
    c = _hand_made()
    y = _seeds(c, 3)
    a, b, d = y[0], y[2], y[4]
    assert len({a, b, d}) == 3
    assert y[6] == d  # cannot-linked to the two others
    assert y[7] == b  # then cannot-linked to a and to 6's class
    assert y[8] == -1 and y[9] == -1  # one cannot-link among three classes says nothing
    # the seeds keep every constraint
    assert not np.any(c.violations(np.where(y >= 0, y, np.arange(10) + 10)))
    # with another number of clusters nothing is inferred
    np.testing.assert_array_equal(_seeds(c, 4), _seeds(c))


def test_fit_supervised_gives_seeded_kmeans_the_completed_seeds(monkeypatch):
    X, y = make_blobs(10, 2, centers=3, random_state=0)
    got = {}
    real = SeededKMeans.fit

    def spy(self, X, y=None, **kw):
        got["y"] = np.asarray(y)
        return real(self, X, y, **kw)

    monkeypatch.setattr(SeededKMeans, "fit", spy)
    fit_supervised(SeededKMeans(3, random_state=0), X, _hand_made())
    np.testing.assert_array_equal(got["y"], _seeds(_hand_made(), 3))


#: Three groups of three points; the seeds are points 3 and 5 of the second group, and
#: point 5 lies just across the border of the partition of least ``J_kmeans``.
BORDER_X = np.array([[-0.9, 0.2], [1.3, 0.3], [-0.2, -1.3], [3.8, 0.0], [5.5, 0.6], [2.6, 1.8],
                     [1.6, 2.6], [3.3, 3.4], [1.7, 3.6]])
BORDER = np.array([-1, -1, -1, 0, -1, 0, -1, -1, -1])


def test_a_seed_just_across_a_border_costs_its_move_not_a_seed_label():
    """The partition of least ``J_kmeans`` leaves one seed outside the cluster of the
    other; moving it there costs far less than ``w``. Charging the run the full ``w``
    per missed seed made a start that keeps both seeds together win at a ``J_kmeans``
    higher by more than the move costs; each missed seed pays the lesser of ``w`` and
    its move, so the least-``J_kmeans`` partition wins."""
    J, best = _least_j_partition(BORDER_X, 3)
    assert best[3] != best[5]
    w = HMRF(BORDER_X, 3).auto_w()
    centres = np.vstack([BORDER_X[best == h].mean(axis=0) for h in range(3)])
    move = ((BORDER_X[5] - centres[best[3]]) ** 2).sum() - ((BORDER_X[5] - centres[best[5]]) ** 2).sum()
    assert 0 < move < w / 2
    for state in range(3):
        est = SeededKMeans(3, random_state=state).fit(BORDER_X, BORDER)
        assert est.objective_ == pytest.approx(J)
        assert _penalised(est, BORDER_X, BORDER, 3) == pytest.approx(J + move)


def test_a_run_beaten_in_both_objective_and_seeds_kept_never_wins():
    """Iris with every point a seed: from the seed means Lloyd's iterations end in a
    minimum of ``J_kmeans`` a hair above the least one that the fit without seeds finds,
    and one more seed outside its class's cluster; its ``J_kmeans + Σ min(w, Δ_i)`` is
    lower all the same (its missed seeds sit closer to the border). A run that both
    fits the data worse and keeps fewer seeds than another is not chosen."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    paper = SeededKMeans(3, n_init=1, random_state=0).fit(X, y)
    alone = SeededKMeans(3, random_state=0).fit(X)
    assert paper.objective_ > alone.objective_
    assert _seeds_missed(paper.labels_, y, 3) > _seeds_missed(alone.labels_, y, 3)
    assert _penalised(paper, X, y, 3) < _penalised(alone, X, y, 3)
    for state in range(3):
        est = SeededKMeans(3, random_state=state).fit(X, y)
        assert est.n_runs_ > 1
        assert est.objective_ == pytest.approx(alone.objective_)
        assert _seeds_missed(est.labels_, y, 3) == _seeds_missed(alone.labels_, y, 3)


def _seeds_kept(precision=np.float64):
    """Seeded-KMeans' rule (``selection="seeds"``) for runs given as ``(result, score,
    missed)``: only the working precision of the model is read."""
    from types import SimpleNamespace

    from hmrf.estimators.seeded import SeedsKept

    return SeedsKept(SimpleNamespace(X=np.zeros((1, 1), dtype=precision)),
                     (np.array([-1]), np.empty(0, dtype=np.int64)), 2)


def _winner(rows, precision=np.float64):
    from types import SimpleNamespace

    rule = _seeds_kept(precision)
    for i, (J, score, missed) in enumerate(rows):
        rule.offer((SimpleNamespace(objective=J, name=i), score, missed))
    return rule.best.name


def test_the_pareto_rule_keeps_the_lowest_score_among_unbeaten_runs():
    """``selection="seeds"`` on made-up runs: the lowest score wins unless another run is
    no worse in both ``J`` and missed seeds and better in one; ties go to the first run."""
    # the lowest score is beaten in both J and missed by run 1: run 1 (next score) wins
    assert _winner([(10.0, 11.0, 5), (9.0, 12.0, 4), (8.0, 13.0, 6)]) == 1
    # lower J but more missed seeds: not beaten, its lower score wins
    assert _winner([(10.0, 11.0, 3), (9.0, 12.0, 4)]) == 0
    # equal J and equal missed: a tie, the first run
    assert _winner([(10.0, 11.0, 3), (10.0, 11.0, 3)]) == 0
    # equal missed, lower J beats a lower score
    assert _winner([(10.0, 11.0, 3), (9.0, 12.0, 3)]) == 1
    # J within round-off of float32 and fewer missed seeds: beaten
    assert _winner([(10.0 * (1 + 1e-6), 11.0, 4), (10.0, 12.0, 3)], np.float32) == 1
    # without supervision (missed all 0) the lowest J wins, as the lowest score
    assert _winner([(10.0, 10.0, 0), (9.0, 9.0, 0), (9.5, 9.5, 0)]) == 1


def test_a_fit_keeps_the_labels_of_the_runs_that_can_still_win_only():
    """Of runs equal in ``J`` and missed seeds only the one the rule would take is kept,
    beaten runs are dropped, and the winner is the same as over all runs at once (the
    Pareto front of all runs, the lowest score on it, the first on a tie); without
    supervision (missed all 0) one run is left."""
    from types import SimpleNamespace

    def at_once(runs):
        front = [r for r in runs if not any(q[0].objective <= r[0].objective and q[2] <= r[2] and
                                            (q[0].objective < r[0].objective or q[2] < r[2]) for q in runs)]
        return min(front, key=lambda r: (r[1], r[0].name))[0].name

    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(1, 12))
        J = rng.choice([9.0, 10.0, 11.0], n)
        missed = rng.integers(0, 3, n) if trial % 2 else np.zeros(n, dtype=int)
        score = J + (rng.choice([0.0, 0.5, 1.0], n) if trial % 2 else 0.0)
        runs = [(SimpleNamespace(objective=float(J[i]), name=i), float(score[i]), int(missed[i]))
                for i in range(n)]
        rule = _seeds_kept()
        for run in runs:  # as a fit offers them, one run at a time
            rule.offer(run)
        assert rule.best.name == at_once(runs)
        assert len({(r[0].objective, r[2]) for r in rule.front}) == len(rule.front)
        if trial % 2 == 0:
            assert len(rule.front) == 1
