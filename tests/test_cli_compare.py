"""``hmrf compare``: the engine study on the §4.5.2 protocol (thesis Fig. 4.13)."""

import csv
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import hmrf.experiments.engines as study
from hmrf.cli import main
from hmrf.inference import ENGINES, ICM, TRWS, BeliefPropagation, EngineSpec, ExactMILP, LPRelaxation
from hmrf.inference import get_engine as make_engine


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_compare_writes_one_row_per_fit_and_a_summary(tmp_path, capsys):
    out = tmp_path / "cmp"
    code = main(["compare", "--engines", "icm,bp,lp", "--constraints", "0,20", "--runs", "1",
                 "--out", str(out), "--no-progress"])
    assert code == 0
    fits = read_csv(out / "compare.csv")
    # 1 run x 2 folds x 2 constraint counts x 3 engines
    assert len(fits) == 12
    assert {r["estimator"] for r in fits} == {"icm", "bp", "lp"}
    # every engine saw the same split and the same constraints (paired comparison)
    key = lambda r: (r["run"], r["fold"], r["point"])  # noqa: E731
    by_key = {}
    for r in fits:
        by_key.setdefault(key(r), set()).add((r["n_train"], r["n_test"], r["n_must_link"],
                                              r["n_cannot_link"]))
    assert all(len(v) == 1 for v in by_key.values())
    # 2-fold: the held-out half is scored; all NMIs are valid numbers
    assert all(int(r["n_test"]) == 75 and int(r["n_train"]) == 75 for r in fits)
    assert all(0.0 <= float(r["nmi"]) <= 1.0 for r in fits)
    summary = read_csv(out / "compare-summary.csv")
    assert len(summary) == 6
    for s in summary:
        nmis = [float(r["nmi"]) for r in fits
                if r["estimator"] == s["engine"] and int(r["point"]) == int(s["constraints"])]
        assert float(s["nmi_mean"]) == pytest.approx(np.mean(nmis))
        assert float(s["nmi_sem"]) == pytest.approx(np.std(nmis, ddof=1) / np.sqrt(len(nmis)))
        for column, value in s.items():  # every number reads back as a number
            if column != "engine":
                float(value)
    printed = capsys.readouterr().out
    for column in ("engine", "NMI", "J excess", "E gap", "E-step s", "fit s", "compile time"):
        assert column in printed
    pytest.importorskip("matplotlib")
    assert os.path.getsize(out / "compare.png") > 0


def test_summary_columns_recomputed_from_the_fits(tmp_path):
    out = tmp_path / "cmp"
    assert main(["compare", "--engines", "icm,exact", "--constraints", "0,30", "--runs", "2",
                 "--out", str(out), "--no-progress"]) == 0
    fits, summary = read_csv(out / "compare.csv"), read_csv(out / "compare-summary.csv")
    assert list(summary[0]) == list(study.SUMMARY_COLUMNS)
    best = {}
    for r in fits:
        k = (r["run"], r["fold"], r["point"])
        best[k] = min(best.get(k, np.inf), float(r["objective"]))
    for s in summary:
        mine = [r for r in fits if r["estimator"] == s["engine"] and r["point"] == s["constraints"]]
        excess = [(float(r["objective"]) - best[(r["run"], r["fold"], r["point"])])
                  / abs(best[(r["run"], r["fold"], r["point"])]) for r in mine]
        assert float(s["objective_excess"]) == pytest.approx(np.mean(excess), abs=1e-12)
        assert float(s["best_share"]) == pytest.approx(np.mean(np.asarray(excess) <= 1e-9))
        assert float(s["n_iter_mean"]) == pytest.approx(np.mean([float(r["n_iter"]) for r in mine]))
        assert float(s["fit_time_mean"]) == pytest.approx(np.mean([float(r["fit_time"]) for r in mine]))
        if s["constraints"] == "30":
            # E-step time is part of the fit; the exact engine proves every E-step optimal
            assert 0 < float(s["estep_time_mean"]) <= float(s["fit_time_mean"])
            if s["engine"] == "exact":
                assert float(s["estep_optimal"]) == 1.0 and float(s["estep_gap"]) == pytest.approx(0.0, abs=1e-12)
            else:
                assert float(s["estep_gap"]) >= 0.0
    # the MILP's E-step optimum is a lower bound of ICM's E-step on the same problem:
    # ICM's recorded gaps are measured against it and are never negative
    icm = [r for r in fits if r["estimator"] == "icm" and r["point"] == "30"]
    assert all(float(r["estep_gap"]) >= 0 and 0 <= float(r["estep_optimal"]) <= 1 for r in icm)


def test_without_constraints_every_engine_gives_the_same_clustering(tmp_path):
    out = tmp_path / "cmp0"
    main(["compare", "--engines", "icm,exact", "--constraints", "0", "--runs", "1",
          "--out", str(out), "--no-progress"])
    fits = read_csv(out / "compare.csv")
    for fold in ("0", "1"):
        a = [r for r in fits if r["fold"] == fold]
        assert a[0]["nmi"] == a[1]["nmi"] and a[0]["objective"] == a[1]["objective"]


def test_unknown_engine_is_a_clear_error(tmp_path, capsys):
    code = main(["compare", "--engines", "icm,annealing", "--out", str(tmp_path), "--no-progress"])
    assert code == 2
    assert "unknown engine 'annealing'" in capsys.readouterr().err


def test_engine_names_map_to_engines():
    assert set(ENGINES) >= {"icm", "bp", "trws", "lp", "expansion", "exact", "auto", "greedy"}
    assert isinstance(make_engine("icm"), ICM)
    assert isinstance(make_engine("trws"), TRWS)
    assert isinstance(make_engine("lp"), LPRelaxation) and make_engine("lp").polish is None
    assert isinstance(make_engine("exact"), ExactMILP)
    assert isinstance(make_engine("bp"), BeliefPropagation)
    assert isinstance(make_engine("LP"), LPRelaxation)  # names are case-insensitive
    # settings are parameters, in Python and in the name
    assert make_engine("bp(polish=icm)").polish == "icm"
    lp = make_engine("LP(polish='icm', n_rounds=3, solver=highs)")
    assert (lp.polish, lp.n_rounds, lp.solver) == ("icm", 3, "highs")


@pytest.mark.parametrize("old, new", [("bp+icm", "bp(polish=icm)"), ("lp+icm", "lp(polish=icm)"),
                                      ("bp-trw", "TRWS()"), ("lp-cvxpy", 'LPRelaxation(solver="cvxpy")')])
def test_names_of_combinations_and_back_ends_give_the_new_spelling(old, new, tmp_path, capsys):
    with pytest.raises(ValueError, match=re.escape(new)):
        make_engine(old)
    assert main(["compare", "--engines", f"icm,{old}", "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    assert new in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_engine_settings_in_a_name_are_checked_before_any_fit(tmp_path, capsys):
    assert main(["compare", "--engines", "icm,lp(n_rounds=0)", "--out", str(tmp_path / "x"),
                 "--no-progress"]) == 2
    assert "n_rounds" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unexpected keyword argument 'rounds'"):
        make_engine("lp(rounds=3)")


def test_lp_solver_is_a_parameter_and_backend_names_it():
    with pytest.raises(TypeError, match=re.escape("LPRelaxation(solver=...)")):
        LPRelaxation(backend="cvxpy")


def test_compare_accepts_every_registry_name(tmp_path, monkeypatch):
    from hmrf.commands import _common

    names = _common.names(",".join(ENGINES), ENGINES, "engine", "--engines")
    assert names == list(ENGINES)
    # the estimators take the same names (inference="..."), built by the same table
    from hmrf.estimators import make_estimator

    for name in ENGINES:
        assert make_estimator("hmrf-kmeans", 3, engine=name).inference == name


def test_unwritable_out_fails_before_any_fit(tmp_path, capsys, monkeypatch):
    from hmrf.estimators.base import HMRFClusterMixin

    calls = []
    original = HMRFClusterMixin.fit

    def counting_fit(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(HMRFClusterMixin, "fit", counting_fit)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    code = main(["compare", "--engines", "icm", "--constraints", "0,10", "--runs", "1",
                 "--out", str(blocker / "results"), "--no-progress"])
    assert code == 2
    assert "cannot write to --out" in capsys.readouterr().err
    assert calls == []  # nothing was fitted
    assert blocker.read_text() == "not a directory"


def test_every_engine_runs_em_once_from_the_same_initial_state(monkeypatch):
    from hmrf.datasets import load_dataset

    def stats(estimator, bound):  # the study's statistics, and the fit's start and runs
        first_unary = estimator.inference.calls[0][0]
        return {**study.estep_stats(estimator, bound), "n_runs": estimator.n_runs_,
                "start": hash(first_unary.tobytes())}

    monkeypatch.setattr(study, "_fit_stats", stats)
    X, y = load_dataset("iris")
    for n_init in (1, "auto"):
        table = study.compare_engines(X, y, ["icm", "bp", "lp"], points=[30], runs=1,
                                      bound="none", n_init=n_init, progress=False)
        starts = {}
        for r in table:
            starts.setdefault((r["run"], r["fold"]), set()).add(r["start"])
        assert len(table) == 6 and all(len(s) == 1 for s in starts.values())
        runs = {r["n_runs"] for r in table}
        assert runs == {1} if n_init == 1 else max(runs) > 1
    assert [r["estimator"] for r in table] == ["icm"] * 2 + ["bp"] * 2 + ["lp"] * 2


def test_the_reference_bound_is_solved_once_per_problem(monkeypatch):
    from hmrf import Constraints, HMRFKMeans
    from hmrf.datasets import load_dataset

    solved = []
    relax = LPRelaxation.relax
    monkeypatch.setattr(LPRelaxation, "relax", lambda self, u, g: solved.append(1) or relax(self, u, g))
    monkeypatch.setattr(study, "_BOUNDS", type(study._BOUNDS)())
    X, y = load_dataset("iris")
    c = Constraints.sample_from_labels(y, 60, np.random.default_rng(0))
    fits = {}
    for name in ("lp", "bp"):
        est = HMRFKMeans(3, inference=study.RecordingEngine(make_engine(name)), n_init=1, random_state=0)
        fits[name] = est.fit(X, constraints=c)
    problems = [(u, g) for u, g, _, _ in fits["bp"].inference.calls]
    distinct = len({study._problem_key(u, g) for u, g in problems})
    bounds = [study._lp_bound(u, g) for u, g in problems]
    assert len(solved) == distinct  # each distinct problem solved once ...
    assert [study._lp_bound(u, g) for u, g in problems] == bounds and len(solved) == distinct
    # ... and one whose LP the LP engine solved is not solved again: its bound is the LP's
    solved.clear()
    study.estep_stats(fits["lp"])
    lp_steps = fits["lp"].inference.calls
    assert [study._lp_bound(u, g) for u, g, _, _ in lp_steps] == [r.lower_bound for _, _, r, _ in lp_steps]
    assert solved == []


class FirstCallCompiles(ICM):
    """ICM whose first solve in a process takes 2 s longer, as a numba compilation does
    (long enough that the timing noise of a loaded machine cannot hide it)."""

    compiled = []

    def _solve(self, unary, graph, init, rng, notify):
        if not FirstCallCompiles.compiled:
            time.sleep(2.0)
            FirstCallCompiles.compiled.append(True)
        return super()._solve(unary, graph, init, rng, notify)


def test_compile_time_never_lands_in_a_timed_fit(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(ENGINES, "compiling", EngineSpec(FirstCallCompiles, "test engine"))
    monkeypatch.setattr(study, "_WARMED", {})
    monkeypatch.setattr(FirstCallCompiles, "compiled", [])
    out = tmp_path / "cmp"
    assert main(["compare", "--engines", "icm,compiling", "--constraints", "0,30", "--runs", "2",
                 "--bound", "none", "--out", str(out), "--no-progress"]) == 0
    fits = [r for r in read_csv(out / "compare.csv") if r["estimator"] == "compiling"]
    assert len(fits) == 8 and FirstCallCompiles.compiled == [True]
    assert max(float(r["fit_time"]) for r in fits) < 2.0  # the slow first call was untimed
    summary = {(s["engine"], s["constraints"]): s for s in read_csv(out / "compare-summary.csv")}
    assert float(summary["compiling", "30"]["compile_time"]) >= 1.0  # ...and reported apart
    printed = re.search(r"compiling (\d+\.\d+) s", capsys.readouterr().out)
    assert printed and float(printed.group(1)) >= 1.0


def test_numba_compilation_is_not_timed(tmp_path):
    """A fresh numba cache: BP compiles its kernels (seconds) in the warm-up, not in a fit."""
    pytest.importorskip("numba")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    out = tmp_path / "cmp"
    proc = subprocess.run([sys.executable, "-m", "hmrf", "compare", "--engines", "bp",
                           "--constraints", "25", "--runs", "1", "--bound", "none", "--out", str(out),
                           "--no-progress"], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    fits = read_csv(out / "compare.csv")
    compile_time = float(read_csv(out / "compare-summary.csv")[0]["compile_time"])
    slowest = max(float(r["fit_time"]) for r in fits)
    assert compile_time > 1.0  # the kernels were compiled in this process...
    assert slowest < compile_time / 5  # ...outside every timed fit


class NeedsAPackage(ICM):
    def _solve(self, unary, graph, init, rng, notify):
        raise ImportError("this engine needs the package 'nothing'; pip install nothing")


def test_a_missing_optional_package_is_one_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(ENGINES, "needs-a-package", EngineSpec(NeedsAPackage, "test engine"))
    monkeypatch.setattr(study, "_WARMED", {})
    out = tmp_path / "cmp"
    assert main(["compare", "--engines", "icm,needs-a-package", "--constraints", "0,10", "--runs", "1",
                 "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install nothing" in err
    assert not out.exists()
