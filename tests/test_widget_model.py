"""The oracle widget without a browser: its model, the warm re-fit, the projection, the
traits the browser reads and the messages it sends (hmrf.widgets)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from hmrf import ConstrainedKMeans, Constraints, COPKMeans, HMRFKMeans, SeededKMeans
from hmrf.active import LabelOracle, RandomPairs
from hmrf.metrics import ari, nmi
from hmrf.widgets.oracle_model import OracleModel
from hmrf.widgets.projection import project_2d
from hmrf.widgets.refit import Reclusterer, align_labels

ROOT = Path(__file__).resolve().parent.parent


def blobs(per=20, seed=0, spread=1.2):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(c, spread, size=(per, 3)) for c in [(0, 0, 0), (4, 0, 1), (2, 4, -1)]])
    return X, np.repeat(np.arange(3), per)


def same_partition(a, b):
    return ari(a, b) == pytest.approx(1.0)


# ------------------------------------------------------------------- align_labels
def test_align_labels_undoes_a_renaming():
    rng = np.random.default_rng(0)
    ref = rng.integers(0, 5, size=200)
    perm = rng.permutation(5)
    assert align_labels(perm[ref], ref).tolist() == ref.tolist()


def test_align_labels_keeps_the_partition_and_maximises_agreement():
    ref = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    lab = np.array([2, 2, 1, 0, 0, 1, 1, 3])
    out = align_labels(lab, ref)
    assert same_partition(out, lab)
    # enumerate every renaming of the 4 names: none agrees with ref on more points
    from itertools import permutations

    best = max(int((np.asarray(p)[lab] == ref).sum()) for p in permutations(range(4)))
    assert int((out == ref).sum()) == best == 6
    assert out[-1] == 3  # the cluster with no partner gets the unused name


def test_align_labels_bad_input():
    with pytest.raises(ValueError, match="1-D of one length"):
        align_labels([0, 1], [0, 1, 1])


# ------------------------------------------------------------------- project_2d
def test_projection_is_the_data_in_2d_or_scikit_learns_pca_beyond():
    from sklearn.decomposition import PCA

    X, _ = blobs()
    assert np.array_equal(project_2d(X[:, :2]), X[:, :2])
    assert project_2d(X[:, :1]).tolist() == np.column_stack([X[:, 0], np.zeros(len(X))]).tolist()
    np.testing.assert_allclose(project_2d(X), PCA(n_components=2, svd_solver="full").fit_transform(X))
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1, X, 0.0))
    dense = PCA(n_components=2, svd_solver="full").fit_transform(Xs.toarray())
    np.testing.assert_allclose(np.abs(project_2d(Xs)), np.abs(dense), atol=1e-8)
    own = np.arange(2 * len(X), dtype=float).reshape(-1, 2)
    assert np.array_equal(project_2d(X, own), own)
    with pytest.raises(ValueError, match=r"projection must have shape \(60, 2\)"):
        project_2d(X, own[:5])
    with pytest.raises(ValueError, match="NaN or infinite"):
        project_2d(X, np.full((len(X), 2), np.nan))


# ------------------------------------------------------------------- Reclusterer
def test_reclusterer_warm_starts_from_the_previous_centres():
    X, y = blobs()
    rc = Reclusterer(HMRFKMeans(n_clusters=3, random_state=0), X, max_iter=7)
    first = rc.fit(Constraints.empty(len(X)))
    assert not rc.warm_
    centres = rc.estimator_.cluster_centers_.copy()
    c = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(0, 25)], n=len(X))
    rc.fit(c)
    params = rc.estimator_.get_params()
    assert rc.warm_ and params["max_iter"] == 7 and params["n_init"] == 1
    np.testing.assert_array_equal(params["init"], centres)
    # the re-fit is the estimator's own fit from those centres, labels renamed only
    ref = HMRFKMeans(n_clusters=3, random_state=0, init=centres, max_iter=7).fit(X, constraints=c)
    assert same_partition(rc.labels_, ref.labels_)
    assert int((rc.labels_ == first).sum()) >= int((ref.labels_ == first).sum())


def test_reclusterer_from_converged_centres_is_a_fixed_point():
    X, _ = blobs(seed=1)
    rc = Reclusterer(HMRFKMeans(n_clusters=3, random_state=0, max_iter=300, tol=0), X)
    c = Constraints.from_pairs(must_link=[(0, 2)], n=len(X))
    a = rc.fit(c)
    b = rc.fit(c)
    assert rc.warm_ and np.array_equal(a, b)


class COPKMeansWithoutInit(COPKMeans):
    """COPKMeans whose constructor takes no ``init`` (its start is fixed), as an
    estimator the reclusterer cannot warm-start."""

    init = "k-means++"

    def __init__(self, n_clusters=8, *, random_state=None):
        super().__init__(n_clusters, random_state=random_state)
        del self.init  # the class's fixed start, not a parameter


def test_reclusterer_without_init_refits_cold():
    X, _ = blobs()
    rc = Reclusterer(COPKMeansWithoutInit(n_clusters=3, random_state=0), X)
    rc.fit(Constraints.empty(len(X)))
    c = Constraints.from_pairs(cannot_link=[(0, 1)], n=len(X))
    labels = rc.fit(c)
    assert not rc.warm_
    assert same_partition(labels, COPKMeans(n_clusters=3, random_state=0).fit(X, constraints=c).labels_)


def test_reclusterer_bad_input():
    X, _ = blobs()
    with pytest.raises(TypeError, match="fit method"):
        Reclusterer(object(), X)
    with pytest.raises(ValueError, match="max_iter"):
        Reclusterer(HMRFKMeans(), X, max_iter=0)


# ------------------------------------------------------------------- OracleModel
def test_each_answer_grows_the_constraints_refits_and_records_the_curve():
    X, y = blobs()
    m = OracleModel(X, y, random_state=0)
    assert len(m.history) == 1 and m.history[0].n_answers == 0
    oracle = LabelOracle(y)
    for t in range(1, 9):
        i, j = m.query
        answer = oracle.query(i, j)
        before = len(m.constraints)
        m.answer(answer)
        assert len(m.constraints) == before + 1  # ExploreConsolidate infers nothing mid-run
        assert m.history[-1].n_answers == t == m.n_answers
    assert m.query is not None
    assert len(m.history) == len(m.label_history) == 9
    for point, labels in zip(m.history, m.label_history):
        assert point.nmi == nmi(y, labels) and point.ari == ari(y, labels)
    assert np.array_equal(m.label_history[-1], m.labels)
    m.close()


def test_dont_know_adds_no_constraint_and_refits_nothing():
    X, y = blobs()
    m = OracleModel(X, y, random_state=0)
    m.answer(True)
    before, labels = m.constraints, m.labels.copy()
    m.answer(None)
    assert m.constraints == before and np.array_equal(m.labels, labels)
    assert m.history[-1].seconds == 0.0 and m.history[-1].n_answers == 2
    m.close()


def test_own_pair_joins_the_constraints_and_moves_the_labels():
    X, y = blobs()
    est = HMRFKMeans(n_clusters=3, w=1e3, random_state=0)
    m = OracleModel(X, y, estimator=est, random_state=0)
    i, j = 0, 59  # different classes, different clusters
    assert m.labels[i] != m.labels[j]
    m.add_pair(i, j, "must")
    assert m.session.own_pairs == [(0, 59, 1)]
    assert m.labels[i] == m.labels[j] and not m.violated.any()
    m.add_pair(1, 2, "cannot")
    assert m.labels[1] != m.labels[2]
    assert m.n_answers == 2 and m.history[-1].n_constraints == 2
    m.close()


def test_violations_are_those_of_the_labels():
    X, y = blobs(seed=3, spread=2.5)
    # w=0: the clusterer ignores the (noisy) answers, so some of them are violated
    m = OracleModel(X, y, selector=RandomPairs(random_state=0),
                    estimator=HMRFKMeans(n_clusters=3, w=0.0, random_state=0), random_state=0)
    m.play(LabelOracle(y, noise=0.3, random_state=0), 25)
    c, labels = m.constraints, m.labels
    expected = [(labels[i] != labels[j]) if k == 1 else (labels[i] == labels[j]) for i, j, k, _ in c]
    assert m.violated.tolist() == expected
    assert m.history[-1].n_violated == sum(expected)
    assert any(expected), "noisy answers should leave some constraint violated"


def test_cold_refits_equal_the_estimators_own_fit():
    X, y = blobs(seed=4)
    m = OracleModel(X, y, warm_start=False, random_state=0)
    m.play(LabelOracle(y), 6)
    ref = HMRFKMeans(n_clusters=3, random_state=0).fit(X, constraints=m.constraints)
    assert same_partition(m.labels, ref.labels_)
    m.close()


def test_play_stops_at_the_oracles_budget_and_the_sessions():
    X, y = blobs()
    m = OracleModel(X, y, random_state=0)
    assert m.play(LabelOracle(y, budget=4)) == 4
    m2 = OracleModel(X, y, budget=3, random_state=0)
    assert m2.play(LabelOracle(y)) == 3 and m2.query is None
    m.close()


def test_model_bad_input():
    X, y = blobs()
    with pytest.raises(ValueError, match="n_clusters is needed"):
        OracleModel(X)
    with pytest.raises(ValueError, match=r"y must have one label per point, shape \(60,\)"):
        OracleModel(X, y[:5])
    m = OracleModel(X, n_clusters=3, random_state=0)
    assert m.history[0].nmi is None
    Xc = X.copy()
    m.play(LabelOracle(y), 3)
    assert np.array_equal(X, Xc)
    m.close()


def test_plot_draws_every_constraint_dashed_where_violated():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.collections import LineCollection

    from hmrf.widgets.plot import plot_oracle

    X, y = blobs(seed=3, spread=2.5)
    # w=0: the clusterer ignores the (noisy) answers, so some of them are violated
    m = OracleModel(X, y, selector=RandomPairs(random_state=0),
                    estimator=HMRFKMeans(n_clusters=3, w=0.0, random_state=0), random_state=0)
    m.play(LabelOracle(y, noise=0.3, random_state=0), 20)
    fig = plot_oracle(m)
    ax, cax = fig.axes
    segments = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert sum(len(c.get_segments()) for c in segments) == len(m.constraints)
    dashed = sum(len(c.get_segments()) for c in segments if c.get_linestyle()[0][1] is not None)
    assert dashed == int(m.violated.sum()) > 0
    assert [len(line.get_xdata()) for line in cax.lines] == [21, 21]
    import matplotlib.pyplot as plt

    plt.close(fig)


# ------------------------------------------------------------------- OracleWidget
def test_widget_traits_follow_the_model_and_the_browsers_messages():
    pytest.importorskip("anywidget")
    from hmrf.widgets import OracleWidget

    X, y = blobs()
    w = OracleWidget(X, y, random_state=0)
    m = w.model
    assert w.points == np.round(m.xy, 6).tolist() and w.labels == m.labels.tolist()
    assert w.query == list(m.query) and w.constraints == [] and w.n_clusters == 3
    v = w.version
    # an answer from the browser
    i, j = w.query
    w._on_message(w, {"type": "answer", "value": "cannot", "query": [i, j]}, [])
    assert w.version == v + 1 and w.n_answers == 1 and w.error == ""
    assert m.session.queries[-1].answer is False
    rows = [[int(a), int(b), int(k), int(bad)] for (a, b, k, _), bad in zip(m.constraints, m.violated)]
    assert w.constraints == rows == [[i, j, -1, int(m.labels[i] == m.labels[j])]]
    # a second click on the answered query is ignored
    w._on_message(w, {"type": "answer", "value": "must", "query": [i, j]}, [])
    assert w.version == v + 2 and w.n_answers == 1 and "already answered" in w.status
    # a pair of one's own
    w._on_message(w, {"type": "pair", "i": 5, "j": 7, "kind": "must"}, [])
    assert m.session.own_pairs == [(5, 7, 1)] and w.n_answers == 2 and len(w.constraints) == 2
    # the curve the browser draws is the model's history
    assert w.curve == [[p.n_answers, p.nmi, p.ari] for p in m.history]
    assert w.curve[-1][1] == nmi(y, m.label_history[-1])
    # bad messages: shown, never raised into the kernel
    w._on_message(w, {"type": "pair", "i": 3, "j": 3, "kind": "must"}, [])
    assert "two different points" in w.error and w.version == v + 4
    w._on_message(w, {"type": "nonsense"}, [])
    assert "unknown message" in w.error and w.version == v + 5
    w.answer(True)  # from Python: the same path
    assert w.error == "" and w.n_answers == 3
    thread = m.session._thread
    w.close()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_widget_play_redraws_after_every_answer():
    pytest.importorskip("anywidget")
    from hmrf.widgets import OracleWidget

    X, y = blobs()
    w = OracleWidget(X, y, random_state=0)
    seen = []
    w.observe(lambda change: seen.append(change["new"]), names="n_answers")
    assert w.play(LabelOracle(y), 5) == 5
    assert seen == [1, 2, 3, 4, 5]
    w.close()


def test_front_end_files_ship_with_the_package():
    tomllib = pytest.importorskip("tomllib")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = data["tool"]["setuptools"]["package-data"]["hmrf.widgets"]
    here = ROOT / "hmrf" / "widgets"
    for name in ("oracle_widget.js", "oracle_widget.css"):
        assert (here / name).is_file() and any(Path(name).match(p) for p in patterns)
    assert "export default { render }" in (here / "oracle_widget.js").read_text(encoding="utf-8")


def test_import_hmrf_does_not_import_the_widgets():
    code = "import sys, hmrf; print([m for m in ('hmrf.widgets', 'anywidget') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_without_anywidget_the_model_works_and_the_widget_says_what_to_install():
    code = ("import sys; sys.modules['anywidget'] = None\n"
            "import numpy as np, hmrf.widgets as w\n"
            "m = w.OracleModel(np.arange(12.0).reshape(6, 2), n_clusters=2, random_state=0); m.close()\n"
            "try:\n    w.OracleWidget\nexcept ModuleNotFoundError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hmrf.widgets.OracleWidget needs anywidget: pip install 'hmrf[widgets]'"


@pytest.mark.parametrize("make", [lambda: SeededKMeans(3, random_state=0),
                                  lambda: ConstrainedKMeans(3, random_state=0)])
def test_reclusterer_refits_an_estimator_whose_init_takes_no_centres(make):
    """SeededKMeans' init names a method only: later fits start from its own
    initialisation instead of being handed the previous centres."""
    X, y = blobs()
    rc = Reclusterer(make(), X)
    rc.fit(Constraints.empty(len(X)))
    rc.fit(Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(0, 25)], n=len(X)))
    assert not rc.warm_ and rc.labels_.shape == (len(X),)
