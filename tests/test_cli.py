"""The ``hmrf`` command: the README's main job and its errors."""

import subprocess
import sys

from hmrf.cli import main


def test_fit_command_prints_scores(capsys):
    assert main(["fit", "--dataset", "iris", "--constraints", "100", "--engine", "icm", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    for key in ("NMI", "pairwise F", "objective", "100 (", "iris"):
        assert key in out


def test_fit_command_reports_bad_dataset(capsys):
    assert main(["fit", "--dataset", "nope"]) == 2
    assert "unknown data set 'nope'" in capsys.readouterr().err


def test_console_script_entry_point():
    proc = subprocess.run([sys.executable, "-m", "hmrf.cli", "fit", "--constraints", "20"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "NMI" in proc.stdout


def test_import_is_light():
    code = ("import hmrf, hmrf.inference, sys; print(sorted(m for m in ('pgmpy', 'cvxpy', 'matplotlib', 'sklearn', 'numba')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == "[]"


def test_engine_defaults_to_the_estimators_own():
    from hmrf import MPCKMeans, PCKMeans
    from hmrf.commands.curve import make_estimator

    # without --engine every estimator keeps its documented default E-step engine
    assert make_estimator("mpckmeans", 3, "sqeuclidean", 1.0, None).inference == MPCKMeans().inference
    assert make_estimator("pckmeans", 3, "sqeuclidean", 1.0, None).inference == PCKMeans().inference
    assert make_estimator("mpckmeans", 3, "sqeuclidean", 1.0, "lp").inference == "lp"


def test_fit_command_reports_the_engine_it_used(capsys):
    assert main(["fit", "--dataset", "iris", "--estimator", "mpckmeans", "--constraints", "20", "--seed", "0"]) == 0
    assert f"engine={__import__('hmrf').MPCKMeans().inference}" in capsys.readouterr().out
