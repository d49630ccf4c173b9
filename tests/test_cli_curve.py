"""``hmrf curve``: the learning-curve command."""

from __future__ import annotations

import csv

import pytest
from test_datasets import needs_text

from hmrf.cli import main
from hmrf.commands.curve import parse_range


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_constraint_curve_writes_csv_png_and_summary(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["curve", "--dataset", "iris", "--estimator", "hmrf-kmeans,kmeans", "--estimator",
               "hmrf-kmeans-i", "--constraints", "0:60:30", "--runs", "2", "--folds", "2",
               "--out", str(out), "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "iris (n=150, d=4, dense, 3 classes)" in text and "hmrf-kmeans-i" in text and "±" in text
    rows = _rows(out / "curve.csv")
    assert len(rows) == 3 * 3 * 2 * 2  # estimators x points x runs x folds
    assert {r["estimator"] for r in rows} == {"hmrf-kmeans", "kmeans", "hmrf-kmeans-i"}
    assert {int(r["point"]) for r in rows} == {0, 30, 60}
    at30 = [r for r in rows if r["point"] == "30"]
    assert {int(r["n_must_link"]) + int(r["n_cannot_link"]) for r in at30} == {30}
    assert all(int(r["n_test"]) == 75 and r["error"] == "" for r in rows)
    for m in ("nmi", "pairwise_f", "objective"):
        png = out / f"curve-{m}.png"
        assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"


def test_seed_curve_with_noise(tmp_path):
    out = tmp_path / "seeds"
    rc = main(["curve", "--dataset", "wine", "--estimator", "seeded-kmeans,constrained-kmeans",
               "--seeds", "0:1:0.5", "--noise", "0,0.5", "--folds", "3", "--metrics", "nmi",
               "--out", str(out), "--no-progress"])
    assert rc == 0
    rows = _rows(out / "curve.csv")
    assert len(rows) == 2 * 3 * 2 * 3
    full = [r for r in rows if r["point"] == "1.0" and r["noise"] == "0.5"]
    assert full and all(int(r["n_noisy"]) == round(0.5 * int(r["n_seeds"])) for r in full)
    assert (out / "curve-nmi.png").exists() and not (out / "curve-objective.png").exists()


@pytest.mark.parametrize("argv, message", [
    (["--estimator", "seeded-kmeans", "--constraints", "0:10:5"], "use --seeds"),
    (["--estimator", "nope"], "unknown estimator"),
    (["--constraints", "10:0:5"], "cannot read '10:0:5'"),
    (["--dataset", "nope"], "unknown data set"),
])
def test_errors_exit_2_with_a_message(argv, message, capsys):
    assert main(["curve", "--no-progress", "--folds", "2", *argv]) == 2
    assert message in capsys.readouterr().err


def test_parse_range():
    assert parse_range("0:1000:100", integer=True) == list(range(0, 1001, 100))
    assert parse_range("0:1:0.1", integer=False) == [round(0.1 * i, 10) for i in range(11)]
    assert parse_range("5, 10,20", integer=True) == [5, 10, 20]
    with pytest.raises(ValueError):
        parse_range("0:10:2.5", integer=True)
    with pytest.raises(ValueError):
        parse_range("0:10:0", integer=True)


@needs_text
def test_text_curve_on_real_corpus(tmp_path, capsys):
    rc = main(["curve", "--dataset", "3-news-different", "--estimator", "hmrf-kmeans", "--emission",
               "cosine", "--constraints", "0,100", "--folds", "2", "--metrics", "nmi",
               "--out", str(tmp_path), "--no-progress"])
    assert rc == 0
    assert "3-news-different (n=300" in capsys.readouterr().out
    assert len(_rows(tmp_path / "curve.csv")) == 4
