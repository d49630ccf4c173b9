"""Active learning curves and the ``hmrf active`` command."""

import csv
import io

import numpy as np
import pytest

from hmrf import PCKMeans
from hmrf.active import NPU, ExploreConsolidate, MinMax, RandomPairs
from hmrf.cli import main
from hmrf.estimators import COPKMeans, HMRFKMeans, KMeans, SeededKMeans
from hmrf.experiments import active_curve


def data(k=3, per=15, sep=4.0, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(sep * c, 1.0, size=(per, 2)) for c in range(k)])
    return X, np.repeat(np.arange(k), per)


def test_curve_shapes_ranges_and_unqueried_points():
    X, y = data()
    cur = active_curve(ExploreConsolidate(3), PCKMeans(3), X, y, budgets=[0, 5, 10, 20], n_runs=3)
    assert cur.budgets.tolist() == [0, 5, 10, 20]
    for name in (
        "nmi",
        "ari",
        "pairwise_f",
        "nmi_unqueried",
        "ari_unqueried",
        "pairwise_f_unqueried",
    ):
        assert cur.scores[name].shape == (3, 4)
        assert np.all(cur.scores[name] <= 1.0 + 1e-12)
    assert np.all(cur.scores["n_constraints"][:, 0] == 0)
    # at budget 0 no point was queried: both evaluations coincide
    assert cur.scores["pairwise_f"][:, 0] == pytest.approx(cur.scores["pairwise_f_unqueried"][:, 0])
    assert cur.n_queries.tolist() == [20, 20, 20]
    assert cur.mean("pairwise_f").shape == (4,)
    assert "budget" in cur.table()
    # one spread everywhere: the sample std over runs, as CurveTable.summary gives it
    assert cur.std("nmi") == pytest.approx(np.std(cur.scores["nmi"], axis=0, ddof=1))
    rows = {r["point"]: r for r in cur.summary(["nmi"])}
    assert [rows[b]["nmi_std"] for b in cur.budgets] == pytest.approx(cur.std("nmi"))


def test_runs_differ_but_the_curve_is_reproducible():
    X, y = data()
    a = active_curve(RandomPairs(), PCKMeans(3), X, y, budgets=[0, 10], n_runs=2, random_state=3)
    b = active_curve(RandomPairs(), PCKMeans(3), X, y, budgets=[0, 10], n_runs=2, random_state=3)
    for m in a.scores:
        assert np.array_equal(a.scores[m], b.scores[m], equal_nan=True)


@pytest.mark.usefixtures("few_auto_runs")  # holds run by run
def test_every_estimator_and_selector_give_a_curve():
    X, y = data(per=10, sep=6.0)
    for clusterer in (PCKMeans(3), HMRFKMeans(3), COPKMeans(3), SeededKMeans(3), KMeans(3)):
        for selector in (RandomPairs(), MinMax(3), NPU(n_estimators=5)):
            cur = active_curve(selector, clusterer, X, y, budgets=[0, 6], n_runs=1)
            assert np.isfinite(cur.scores["pairwise_f"]).all() or cur.failures


def test_more_queries_help_on_separable_data():
    X, y = data(sep=3.0, per=20)
    cur = active_curve(ExploreConsolidate(3), PCKMeans(3, w=5.0), X, y, budgets=[0, 50], n_runs=2)
    f = cur.mean("pairwise_f")
    assert f[1] >= f[0]


def test_dataset_by_name_csv_and_plot(tmp_path):
    cur = active_curve(RandomPairs(), PCKMeans(3), "iris", budgets=[0, 10], n_runs=2)
    assert cur.dataset == "iris"
    cur.to_csv(tmp_path / "c.csv")
    rows = list(csv.DictReader(open(tmp_path / "c.csv")))
    assert len(rows) == 4 and rows[0]["selector"] == "RandomPairs"
    pytest.importorskip("matplotlib")
    cur.plot(path=tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 0


def test_bad_arguments():
    X, y = data()
    with pytest.raises(ValueError, match="budgets"):
        active_curve(RandomPairs(), PCKMeans(3), X, y, budgets=[-1, 3])
    with pytest.raises(ValueError, match="labels"):
        active_curve(RandomPairs(), PCKMeans(3), X)
    with pytest.raises(ValueError, match="n_runs"):
        active_curve(RandomPairs(), PCKMeans(3), X, y, n_runs=0)


def test_cli_prints_the_curve_and_writes_files(tmp_path, capsys):
    rc = main(["active", "--dataset", "iris", "--selector", "ec", "--estimator", "pckmeans", "--budget", "20",
               "--runs", "2", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "budget" in out and "selector   ec" in out
    assert (tmp_path / "active-iris-ec-pckmeans.csv").exists()
    lines = [ln for ln in out.splitlines() if ln.strip().startswith(("0 ", "10 ", "20 "))]
    assert len(lines) == 3


def test_cli_interactive_session(tmp_path, capsys, monkeypatch):
    from hmrf.datasets import load_dataset

    _, y = load_dataset("iris")
    answers = io.StringIO("".join("y\n" if i % 2 else "n\n" for i in range(20)))
    monkeypatch.setattr("sys.stdin", answers)
    rc = main(["active", "--dataset", "iris", "--selector", "random", "--estimator", "pckmeans", "--budget",
               "4", "--step", "2", "--interactive", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "same cluster?" in out and out.count("Query ") == 4


def test_cli_reports_bad_budget(capsys):
    assert main(["active", "--budget", "-1"]) == 2
    assert "--budget" in capsys.readouterr().err


def test_explore_consolidate_curve_rises_on_data_in_large_units():
    # scikit-learn's anisotropic blobs (where k-means splits the classes) in units of
    # 100: squared distances ~1e5. With w = 1 a violated constraint costs nothing next
    # to them, PCKMeans ignores the answers and the curve is flat whatever the budget
    # (pendigits-389, raw pixel coordinates 0-100, stayed at one ARI); the default
    # scale-aware w makes the answers count and the curve rise.
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=240, centers=3, random_state=170)
    X = X @ np.array([[0.6, -0.6], [-0.4, 0.8]]) * 100
    budgets = [10, 20, 40, 80]
    flat = active_curve(ExploreConsolidate(3), PCKMeans(3, w=1.0), X, y, budgets=budgets, n_runs=3)
    ari = flat.scores["ari"]
    assert np.all(ari == ari[:, :1])  # the same clustering at every budget
    rising = active_curve(ExploreConsolidate(3), PCKMeans(3), X, y, budgets=budgets, n_runs=3)
    ari = rising.scores["ari"]
    assert np.all(ari[:, -1] > ari[:, 0] + 0.05)
    assert np.all(ari[:, -1] > flat.scores["ari"][:, -1] + 0.05)


def test_cli_default_is_cobras_with_mpckmeans_and_own_is_cobras_alone(tmp_path, capsys):
    common = ["--dataset", "iris", "--budget", "10", "--step", "5", "--runs", "1", "--out", str(tmp_path),
              "--no-progress"]
    assert main(["active", *common]) == 0
    out = capsys.readouterr().out
    assert "selector   cobras" in out and "estimator  mpckmeans" in out
    assert (tmp_path / "active-iris-cobras-mpckmeans.csv").exists()
    assert main(["active", *common, "--estimator", "own"]) == 0
    rows = list(csv.DictReader(open(tmp_path / "active-iris-cobras-own.csv")))
    assert [r["estimator"] for r in rows] == ["COBRAS"] * 3
    assert main(["active", *common, "--estimator", "own", "--selector", "npu"]) == 2
    assert "--selector cobras" in capsys.readouterr().err
    assert main(["active", *common, "--estimator", "own", "--w", "2"]) == 2
    assert "no constraint weight" in capsys.readouterr().err
