"""Extending hmrf from outside the package: a family, a potential and an engine written in a
plug-in module (tests/plugin_example.py) are used by name from Python and from the command
line, pass the conformance checks; nothing falls back silently on what they return."""

import csv
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from plugin_example import (
    Bernoulli,
    NaiveBernoulli,
    OrdinalPotential,
    SimulatedAnnealing,
)

import hmrf
from hmrf import HMRF, Constraints, HMRFKMeans
from hmrf.cli import main
from hmrf.emissions import EMISSIONS, get_emission
from hmrf.inference import ENGINES, ICM, get_engine, register_engine
from hmrf.metrics import nmi
from hmrf.testing import check_emission, check_engine, check_potential

PLUGIN = Path(__file__).with_name("plugin_example.py")


def binary_clusters(n_per=60, seed=0):
    """Three clusters of binary rows, each with its own block of rare features, 20 common
    noisy features and one feature that is 0 in every row (the issue's data)."""
    rng = np.random.default_rng(seed)
    k = 3
    P = np.full((k, 60), 0.02)
    for h in range(k):
        P[h, 20 * h:20 * h + 20] = 0.25
    P = np.hstack([P, np.tile(rng.uniform(0.3, 0.7, 20), (k, 1)), np.zeros((k, 1))])
    y = np.repeat(np.arange(k), n_per)
    return (rng.random((k * n_per, P.shape[1])) < P[y]).astype(float), y


X_BIN, Y_BIN = binary_clusters()


# ------------------------------------------------------------ registration
def test_the_plugin_names_resolve_everywhere_a_name_does():
    assert isinstance(get_engine("sa"), SimulatedAnnealing)
    assert get_engine("SA(n_sweeps=5)").n_sweeps == 5
    assert isinstance(get_emission("bernoulli"), Bernoulli) and get_emission("bernoulli(eps=0.01)").eps == 0.01
    assert "sa" in ENGINES and "bernoulli" in EMISSIONS
    assert ENGINES["sa"].description.startswith("Simulated annealing from the previous labels")
    assert hmrf.register_engine is register_engine and hmrf.register_emission is not None


def test_the_plugin_objects_pass_the_conformance_checks():
    check_engine(SimulatedAnnealing())
    check_emission(Bernoulli(), X=X_BIN[::6], bad_X=[[0.5, 1.5]])
    check_potential(OrdinalPotential(8, [(0, 1), (1, 2), (3, 4), (5, 6), (2, 7)]))


def test_registering_refuses_a_taken_or_malformed_name():
    with pytest.raises(ValueError, match="'icm' is an existing engine name; pass replace=True"):
        register_engine("icm", SimulatedAnnealing)
    with pytest.raises(ValueError, match="'bp-trw' is a renamed engine name"):
        register_engine("bp-trw", SimulatedAnnealing)
    for bad in ("two words", "a,b", "sa(x)", ""):
        with pytest.raises(ValueError, match="lower-case letters, digits"):
            register_engine(bad, SimulatedAnnealing)
    with pytest.raises(TypeError, match="must be callable"):
        register_engine("not-callable", SimulatedAnnealing())
    with pytest.raises(ValueError, match="chosen from the data"):
        hmrf.register_emission("auto", Bernoulli)


def test_a_factory_that_builds_no_engine_or_family_is_refused(monkeypatch):
    monkeypatch.setattr(ENGINES, "_rows", dict(ENGINES._rows))
    monkeypatch.setattr(EMISSIONS, "_rows", dict(EMISSIONS._rows))
    register_engine("nothing", lambda: 42, "returns a number")
    hmrf.register_emission("engine-not-family", ICM)
    with pytest.raises(TypeError, match="no .map"):
        get_engine("nothing")
    with pytest.raises(TypeError, match="not an hmrf.emissions.EmissionFamily"):
        get_emission("engine-not-family")


def fake_distribution(folder, entry_points):
    """An installed distribution with only entry points, as pip would leave it."""
    info = folder / "fake_hmrf_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-hmrf-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


def test_entry_points_are_read_once_and_on_first_need(tmp_path, monkeypatch):
    import importlib.metadata

    fake_distribution(tmp_path, "[hmrf.engines]\nannealing = plugin_example:SimulatedAnnealing\n"
                                "broken = no_such_module:Engine\n"
                                "[hmrf.emissions]\ncoins = plugin_example:Bernoulli\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for table in (ENGINES, EMISSIONS):
        monkeypatch.setattr(table, "_rows", dict(table._rows))
        monkeypatch.setattr(table, "_loaded", False)
    reads = []
    original = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: reads.append(kw) or original(**kw))
    get_engine("icm"), get_emission("kl")  # known names: the installed packages are not read
    assert reads == []
    assert isinstance(get_engine("annealing(n_sweeps=4)"), SimulatedAnnealing)
    assert "annealing" in list(ENGINES) and "coins" in list(EMISSIONS)
    assert isinstance(get_emission("coins"), Bernoulli)
    assert reads == [{"group": "hmrf.engines"}, {"group": "hmrf.emissions"}]  # once per group
    assert "fake-hmrf-plugin" in ENGINES["annealing"].description
    with pytest.raises(ImportError, match="entry point broken = no_such_module:Engine"):
        get_engine("broken")  # listed without importing it; built only on use
    with pytest.raises(ValueError, match="unknown inference engine 'missing'"):
        get_engine("missing")
    assert len(reads) == 2


def test_an_entry_point_cannot_take_a_name_of_the_library(tmp_path, monkeypatch):
    fake_distribution(tmp_path, "[hmrf.engines]\nicm = plugin_example:SimulatedAnnealing\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(ENGINES, "_rows", dict(ENGINES._rows))
    monkeypatch.setattr(ENGINES, "_loaded", False)
    with pytest.warns(RuntimeWarning, match="is ignored: 'icm' is one of hmrf's own engine names"):
        list(ENGINES)
    assert isinstance(get_engine("icm"), ICM)


# ------------------------------------------------------- used by name from Python
def test_a_fit_by_plugin_names_uses_the_plugin_objects():
    c = Constraints.sample_from_labels(Y_BIN, n_pairs=100, rng=1)
    est = HMRFKMeans(3, emission="bernoulli", inference="sa(n_sweeps=10)", random_state=0).fit(X_BIN, constraints=c)
    assert isinstance(est.emission_, str) and est.emission_ == "bernoulli"
    assert np.isfinite(est.w_) and est.w_ > 0  # the scale is the plug-in family's, finite
    assert np.all(np.diff(est.history_) <= 1e-9 * np.abs(est.history_[:-1]))
    assert nmi(Y_BIN, est.labels_) > 0.8
    # the engine of every E-step was the annealer (its info in the EM trace)
    assert all("temperature" in t["engine"] for t in est.em_result_.trace if t["engine"] is not None)


def test_an_ordinal_potential_in_a_fit_with_the_label_order_fixed_by_init():
    # one feature, three ordered groups; pairs of neighbours in the order are soft
    # must-links whose cost grows with the number of clusters between their labels
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 0.4, 20), rng.normal(2, 0.4, 20), rng.normal(4, 0.4, 20)][:, None]
    pairs = np.array([(i, i + 20) for i in range(0, 20, 4)] + [(i + 20, i + 40) for i in range(0, 20, 4)])
    pot = OrdinalPotential(60, pairs, weight=0.5)
    init = np.array([[0.0], [2.0], [4.0]])  # centres in the order of the table: 0 < 1 < 2
    est = HMRFKMeans(3, init=init, n_init=1, inference="exact", w=1.0, random_state=0).fit(X, potentials=pot)
    assert np.all(np.diff(est.cluster_centers_[:, 0]) > 0)  # the order held
    model = HMRF(X, 3, potentials=[pot])
    g = model.graph(est.params_)
    assert est.objective_ == pytest.approx(g.energy(est.labels_, model.unary(est.params_)))
    assert np.isnan(est.w_)  # w weighs constraints, and there were none


# --------------------------------------------------------- no silent fallback
def test_a_non_finite_data_scale_is_an_error_naming_family_and_method():
    c = Constraints.sample_from_labels(Y_BIN, n_pairs=200, rng=1)
    model = HMRF(X_BIN, 3, emission=NaiveBernoulli(), constraints=c, w="auto")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the family's own 0 * inf
        with pytest.raises(ValueError) as info:
            model.data_scale()
        with pytest.raises(ValueError, match="NaiveBernoulli.divergence_to"):
            HMRFKMeans(3, emission=NaiveBernoulli(), random_state=0).fit(X_BIN, constraints=c)
    text = str(info.value)
    assert "NaiveBernoulli ('bernoulli')" in text and "NaiveBernoulli.divergence_to" in text
    assert "give w a number" in text and "0 in every row" in text
    # the same data with the family that is finite on the boundary: a scale, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scale = HMRF(X_BIN, 3, emission=Bernoulli(), constraints=c, w="auto").data_scale()
    rows = X_BIN.mean(axis=0)
    mu = np.clip(rows, 1e-3, 1 - 1e-3)  # the family's M-step of one cluster
    from scipy.special import xlogy
    by_hand = np.mean([(xlogy(x, x) - xlogy(x, mu) + xlogy(1 - x, 1 - x) - xlogy(1 - x, 1 - mu)).sum()
                       for x in X_BIN])
    assert scale == pytest.approx(by_hand, rel=1e-6)


class Unclipped(Bernoulli):
    """Centres on the boundary: ∇φ is infinite there and the costs of a zero feature NaN."""

    def _clip(self, centers):
        return np.asarray(centers, dtype=np.float64)


def test_a_non_finite_objective_stops_the_fit_naming_the_family():
    c = Constraints.sample_from_labels(Y_BIN, n_pairs=50, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for engine, em in (("icm", "hard"), ("bp", "hard"), ("mean_field", "soft")):
            est = HMRFKMeans(3, emission=Unclipped(), inference=engine, em=em, w=1.0, random_state=0)
            with pytest.raises(ValueError, match=r"EM objective is not finite at iteration 0 .*"
                                                 r"Unclipped.unary gave non-finite costs"):
                est.fit(X_BIN, constraints=c)


def test_warnings_from_a_plugin_reach_the_user():
    c = Constraints.sample_from_labels(Y_BIN, n_pairs=50, rng=1)
    with pytest.warns(RuntimeWarning, match="invalid value"):
        with pytest.raises(ValueError):
            HMRFKMeans(3, emission=NaiveBernoulli(), random_state=0).fit(X_BIN, constraints=c)


def test_w_weighs_the_constraints_and_not_the_potentials():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2))
    T = np.full((3, 3), 1.0)
    np.fill_diagonal(T, 0.0)
    from hmrf.potentials import TablePotential

    pot = TablePotential(30, [(0, 1), (2, 3), (4, 5)], T, weight=2.0)
    fits = [HMRFKMeans(3, w=w, inference="icm", n_init=1, random_state=0).fit(X, potentials=pot)
            for w in (1.0, 100.0, "auto")]
    assert all(np.array_equal(f.labels_, fits[0].labels_) for f in fits)
    assert all(f.objective_ == fits[0].objective_ for f in fits)
    assert all(np.isnan(f.w_) for f in fits)  # no constraint: no weight to report
    c = Constraints.from_pairs(must_link=[(6, 7)], n=30)
    both = HMRFKMeans(3, w=100.0, inference="icm", n_init=1, random_state=0).fit(X, constraints=c, potentials=pot)
    g = HMRF(X, 3, constraints=c, w=100.0, potentials=[pot]).graph(both.params_)
    assert both.w_ == 100.0 and sorted(g.weight.tolist()) == [2.0, 2.0, 2.0, 100.0]


# ----------------------------------------------------------- the command line
def binary_files(folder):
    np.save(folder / "bits.npy", X_BIN[::3])
    np.save(folder / "classes.npy", Y_BIN[::3])
    return ["--data", str(folder / "bits.npy"), "--labels", str(folder / "classes.npy")]


def test_compare_with_a_plugin_module(tmp_path, capsys):
    # a module not imported yet, which registers a name of its own
    (tmp_path / "my_annealing.py").write_text(
        "import hmrf\nfrom plugin_example import SimulatedAnnealing\n"
        "class Quick(SimulatedAnnealing):\n    '''Five sweeps of annealing.'''\n"
        "    def __init__(self, n_sweeps=5):\n        super().__init__(n_sweeps)\n"
        "hmrf.register_engine('quick-sa', Quick, replace=True)\n")
    out = tmp_path / "cmp"
    try:
        code = main(["compare", "--plugin", str(tmp_path / "my_annealing.py"), "--plugin", str(PLUGIN),
                     "--engines", "icm,quick-sa,sa(n_sweeps=8)", "--emission", "bernoulli",
                     *binary_files(tmp_path), "--constraints", "0,20", "--runs", "1", "--bound", "none",
                     "--out", str(out), "--no-progress"])
    finally:
        ENGINES.pop("quick-sa", None)
    assert code == 0, capsys.readouterr().err
    text = (out / "compare.csv").read_text()
    for name in ("icm", "quick-sa", "sa(n_sweeps=8)"):
        assert f"\n{name}," in text or f",{name}," in text
    assert "bernoulli" in capsys.readouterr().out


def test_compare_workers_import_the_plugin_modules(tmp_path, capsys):
    # a family name registered only by a --plugin module: the --n-jobs worker processes
    # must import the module before they resolve the name (an engine object would
    # import it as a side effect of unpickling; a name does not)
    from hmrf.emissions import EMISSIONS

    (tmp_path / "my_coins.py").write_text(
        "import hmrf\nfrom plugin_example import Bernoulli\n"
        "hmrf.register_emission('coins-in-workers', Bernoulli, replace=True)\n")
    out = tmp_path / "cmp"
    try:
        code = main(["compare", "--plugin", str(PLUGIN), "--plugin", str(tmp_path / "my_coins.py"),
                     "--engines", "icm", "--emission", "coins-in-workers", *binary_files(tmp_path),
                     "--constraints", "0,20", "--runs", "2", "--bound", "none", "--n-jobs", "2",
                     "--out", str(out), "--no-progress"])
    finally:
        EMISSIONS.pop("coins-in-workers", None)
    assert code == 0, capsys.readouterr().err
    rows = list(csv.DictReader((out / "compare.csv").open()))
    assert len(rows) == 2 * 2 * 2 and not any(r["error"] for r in rows), [r["error"] for r in rows]


def test_help_lists_what_the_plugins_register(capsys):
    assert main(["compare", "--plugin", str(PLUGIN), "--help"]) == 0
    text = capsys.readouterr().out
    assert "\n  sa  " in text and "\n  bernoulli  " in text and "--plugin MODULE" in text
    assert main(["fit", "--plugin", "no_such_plugin_module", "--help"]) == 2
    assert "--plugin no_such_plugin_module" in capsys.readouterr().err


def test_the_hmrf_command_imports_a_plugin(tmp_path):
    """The installed command in a process of its own (no test module imported)."""
    out = tmp_path / "cmp"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(hmrf.__file__).parents[1]),
                                                        os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "hmrf", "compare", "--plugin", str(PLUGIN),
                           "--engines", "icm,sa(n_sweeps=5)", "--emission", "bernoulli", *binary_files(tmp_path),
                           "--constraints", "20", "--runs", "1", "--bound", "none", "--out", str(out),
                           "--no-progress"], capture_output=True, text=True, timeout=600, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = (out / "compare.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 2 and sum(r.startswith('"sa(n_sweeps=5)",') or r.startswith("sa(n_sweeps=5),")
                                          for r in rows) == 2

