"""``hmrf compare``: engines on the §4.5.2 protocol (thesis Fig. 4.13)."""

import csv
import os

import numpy as np
import pytest

from hmrf.cli import main
from hmrf.commands.compare import ENGINES, make_engine
from hmrf.inference import ICM, BeliefPropagation, ExactMILP, LPRelaxation


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
    printed = capsys.readouterr().out
    assert "icm NMI" in printed and "lp time" in printed
    pytest.importorskip("matplotlib")
    assert os.path.getsize(out / "compare.png") > 0


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
    assert set(ENGINES) == {"icm", "bp", "bp+icm", "bp-trw", "lp", "lp+icm", "exact"}
    assert isinstance(make_engine("icm"), ICM)
    assert make_engine("bp+icm").polish == "icm"
    assert make_engine("bp-trw").reweight == "trw"
    assert isinstance(make_engine("lp"), LPRelaxation) and make_engine("lp+icm").polish == "icm"
    assert isinstance(make_engine("exact"), ExactMILP)
    assert isinstance(make_engine("bp"), BeliefPropagation)
