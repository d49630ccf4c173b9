"""The command line on the user's own files: every format, every bad-file case.

A good file gives the same clustering as the Python API on the same array; a bad file
gives exit code 2, a one-line message naming the file, the row and the column, and no
output directory.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from hmrf import Constraints, HMRFKMeans
from hmrf.cli import main

RNG = np.random.default_rng(0)
Y = np.repeat([0, 1, 2], 12)
X = RNG.normal(size=(36, 2)) + 4.0 * Y[:, None]
PAIRS = [(0, 1, "must"), (0, 20, "cannot"), (13, 30, "cannot"), (25, 26, "must")]


def write_csv(path, rows, header=None, delimiter=","):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, delimiter=delimiter)
        if header:
            w.writerow(header)
        w.writerows(rows)
    return path


def read_labels(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def expected_labels(Xarr, pairs=PAIRS, k=3, seed=0, **params):
    """The Python API on the same array and constraints: the independent answer."""
    ml = [(i, j) for i, j, kind in pairs if kind == "must"]
    cl = [(i, j) for i, j, kind in pairs if kind == "cannot"]
    c = Constraints.from_pairs(ml, cl, n=Xarr.shape[0])
    return HMRFKMeans(k, random_state=seed, **params).fit(Xarr, constraints=c).labels_.tolist()


@pytest.fixture
def pairs_csv(tmp_path):
    return write_csv(tmp_path / "pairs.csv", PAIRS, header=["i", "j", "kind"])


def fit(tmp_path, *args):
    out = tmp_path / "out"
    return main(["fit", *map(str, args), "--k", "3", "--out", str(out)]), out


# ------------------------------------------------------------------ formats
def test_csv_with_header_and_id_column(tmp_path, pairs_csv, capsys):
    ids = [f"pt{i}" for i in range(36)]
    data = write_csv(tmp_path / "points.csv", [[i, *x] for i, x in zip(ids, X.tolist())],
                     header=["name", "x", "y"])
    rc, out = fit(tmp_path, "--data", data, "--id-column", "name", "--pairs", pairs_csv, "--plot")
    assert rc == 0, capsys.readouterr().err
    rows = read_labels(out / "labels.csv")
    assert [r["name"] for r in rows] == ids and [int(r["row"]) for r in rows] == list(range(36))
    assert [int(r["label"]) for r in rows] == expected_labels(X)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_clusters"] == 3 and summary["data"]["n"] == 36 and summary["data"]["d"] == 2
    assert summary["supervision"]["n_must_link"] == 2 and summary["supervision"]["n_cannot_link"] == 2
    assert summary["engine"] == "auto" and summary["hmrf_version"]
    assert len(summary["history"]) >= 1 and summary["objective"] == pytest.approx(summary["history"][-1])
    pytest.importorskip("matplotlib")
    assert (out / "clusters.png").read_bytes()[:4] == b"\x89PNG"


def test_tsv_without_header(tmp_path, pairs_csv):
    data = write_csv(tmp_path / "points.tsv", X.tolist(), delimiter="\t")
    rc, out = fit(tmp_path, "--data", data, "--pairs", pairs_csv)
    assert rc == 0
    assert [int(r["label"]) for r in read_labels(out / "labels.csv")] == expected_labels(X)


@pytest.mark.parametrize("kind", ["npy", "npz", "sparse-npz", "parquet"])
def test_binary_formats(tmp_path, pairs_csv, kind):
    if kind == "npy":
        path = tmp_path / "points.npy"
        np.save(path, X)
    elif kind == "npz":
        path = tmp_path / "points.npz"
        np.savez(path, X=X, other=np.arange(3))
    elif kind == "sparse-npz":
        path = tmp_path / "points.npz"
        sp.save_npz(path, sp.csr_matrix(np.abs(X)))
    else:
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        path = tmp_path / "points.parquet"
        pq.write_table(pa.table({"id": [f"p{i}" for i in range(36)], "a": X[:, 0], "b": X[:, 1]}),
                       path)
    extra = ["--id-column", "id"] if kind == "parquet" else []
    rc, out = fit(tmp_path, "--data", path, "--pairs", pairs_csv, *extra)
    assert rc == 0
    if kind == "sparse-npz":  # sparse non-negative rows are read as text: cosine by default
        expected = expected_labels(sp.csr_matrix(np.abs(X)), emission="cosine")
    else:
        expected = expected_labels(X)
    assert [int(r["label"]) for r in read_labels(out / "labels.csv")] == expected


def test_text_documents_and_labels_file(tmp_path):
    from hmrf.datasets.text import thesis_tfidf

    words = {0: "apple banana cherry fruit", 1: "engine wheel brake road", 2: "goal match team ball"}
    docs = [" ".join(RNG.permutation(words[c].split())) + f" common{c}" for c in Y]
    data = tmp_path / "docs.txt"
    data.write_text("\n".join(docs) + "\n")
    labels = write_csv(tmp_path / "labels.csv", [[c] for c in Y], header=["topic"])
    out = tmp_path / "out"
    rc = main(["fit", "--data", str(data), "--labels", str(labels), "--constraints", "30",
               "--estimator", "spherical-kmeans", "--out", str(out)])
    assert rc == 0
    Xt, _ = thesis_tfidf(docs)
    rng = np.random.default_rng(0)
    c = Constraints.sample_from_labels(Y, 30, rng, among=np.arange(36))
    from hmrf import SphericalKMeans

    ref = SphericalKMeans(3, random_state=0).fit(Xt, constraints=c).labels_.tolist()
    assert [int(r["label"]) for r in read_labels(out / "labels.csv")] == ref
    summary = json.loads((out / "summary.json").read_text())
    assert summary["data"]["sparse"] is True and summary["scores"]["all"]["nmi"] > 0.9


def test_labels_with_unknowns_are_seeds(tmp_path):
    data = write_csv(tmp_path / "points.csv", X.tolist())
    partial = np.where(np.arange(36) % 4 == 0, Y, -1)
    labels = write_csv(tmp_path / "labels.csv", [[v if v >= 0 else ""] for v in partial])
    out = tmp_path / "out"
    assert main(["fit", "--data", str(data), "--labels", str(labels), "--estimator",
                 "seeded-kmeans", "--out", str(out)]) == 0
    from hmrf import SeededKMeans

    ref = SeededKMeans(3, random_state=0).fit(X, partial).labels_.tolist()
    assert [int(r["label"]) for r in read_labels(out / "labels.csv")] == ref


def test_labels_matched_by_id(tmp_path):
    ids = [f"pt{i}" for i in range(36)]
    data = write_csv(tmp_path / "points.csv", [[i, *x] for i, x in zip(ids, X.tolist())],
                     header=["name", "x", "y"])
    order = RNG.permutation(36)  # the labels file lists the points in another order
    labels = write_csv(tmp_path / "labels.csv", [[ids[r], f"class-{Y[r]}"] for r in order],
                       header=["name", "class"])
    from hmrf.datasets import read_data
    from hmrf.datasets import read_labels as read_y

    _, got_ids = read_data(data, id_column="name")
    y, classes = read_y(labels, 36, got_ids)
    assert classes.tolist() == ["class-0", "class-1", "class-2"] and y.tolist() == Y.tolist()


def test_standardize(tmp_path, pairs_csv):
    scaled = X * [1.0, 1000.0]
    data = write_csv(tmp_path / "points.csv", scaled.tolist())
    rc, out = fit(tmp_path, "--data", data, "--pairs", pairs_csv, "--standardize")
    assert rc == 0
    z = (scaled - scaled.mean(0)) / scaled.std(0)
    assert [int(r["label"]) for r in read_labels(out / "labels.csv")] == expected_labels(z)


# ----------------------------------------------------------------- bad files
BAD_POINTS = {
    "text": ("x,y\n1,2\n3,abc\n", "points.csv, row 1 (line 3), column 'y': 'abc' is not a number"),
    "nan": ("x,y\n1,2\nnan,4\n", "points.csv, row 1 (line 3), column 'x': 'nan' is not a finite number"),
    "empty": ("1,2\n,4\n", "points.csv, row 1 (line 2), column 0: an empty cell is not a number"),
    "ragged": ("x,y\n1,2\n3,4,5\n", "points.csv, row 1 (line 3): 3 fields, expected 2"),
    "header only": ("x,y\n", "points.csv: the file has a header but no data rows"),
}


@pytest.mark.parametrize("case", BAD_POINTS)
def test_bad_points_file(tmp_path, pairs_csv, capsys, case):
    content, message = BAD_POINTS[case]
    data = tmp_path / "points.csv"
    data.write_text(content)
    rc, out = fit(tmp_path, "--data", data, "--pairs", pairs_csv)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1, err
    assert not out.exists()


BAD_PAIRS = {
    "past the end": ("i,j,kind\n0,1,must\n2,36,cannot\n",
                     "pairs.csv, row 1 (line 3), column 'j': row index 36 is past the last row of the data (35)"),
    "negative": ("0,-1,must\n", "pairs.csv, row 0 (line 1), column 'j': row index -1 is negative"),
    "text index": ("i,j,kind\nfirst,1,must\n", "column 'i': 'first' is not a row index"),
    "kind": ("i,j,kind\n0,1,must\n2,3,maybe\n", "row 1 (line 3), column 'kind': kind 'maybe' is neither"),
    "weight": ("i,j,kind,weight\n0,1,must,-2\n", "column 'weight': weight '-2' is not a number >= 0"),
    "nan weight": ("i,j,kind,weight\n0,1,must,nan\n", "column 'weight': weight 'nan' is not a number"),
    "self": ("i,j,kind\n4,4,must\n", "row 0 (line 2), column 'j': a point cannot be paired with itself"),
    "columns": ("a,b,c\n0,1,must\n", "the columns must be i, j, kind and optionally weight"),
    "contradiction": ("i,j,kind,weight\n0,1,must,inf\n1,2,must,inf\n0,2,cannot,inf\n",
                      "pairs.csv, row 2 (line 4), column 'kind': the hard cannot-link (0, 2) contradicts "
                      "the hard must-links that join the same points (chain 0 - 1 - 2); give one of these "
                      "pairs a finite weight in the weight column"),
}


@pytest.mark.parametrize("case", BAD_PAIRS)
def test_bad_pairs_file(tmp_path, capsys, case):
    content, message = BAD_PAIRS[case]
    data = write_csv(tmp_path / "points.csv", X.tolist())
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(content)
    rc, out = fit(tmp_path, "--data", data, "--pairs", pairs)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_bad_labels_and_other_files(tmp_path, capsys):
    data = write_csv(tmp_path / "points.csv", X.tolist())
    short = write_csv(tmp_path / "short.csv", [[v] for v in Y[:-1]])
    nan = tmp_path / "nan.csv"
    nan.write_text("\n".join(["1"] * 35 + ["nan"]) + "\n")
    flat = tmp_path / "flat.npy"
    np.save(flat, X.ravel())
    several = tmp_path / "several.npz"
    np.savez(several, a=X, b=X)
    cases = [
        (["--data", data, "--labels", short, "--constraints", "5"], "short.csv: 35 labels for 36 data rows"),
        (["--data", data, "--labels", nan, "--constraints", "5"], "nan.csv, row 35 (line 36): 'nan' is not a label"),
        (["--data", flat], "flat.npy: the array has 1 dimension(s)"),
        (["--data", several], "several.npz: the archive holds ['a', 'b']; name the array 'X'"),
        (["--data", tmp_path / "missing.csv"], "missing.csv: no such file"),
        (["--data", tmp_path / "points.xlsx"], "cannot read points from a .xlsx file"),
        (["--data", data, "--id-column", "name"], "is a column name, but the file has no header row"),
        (["--data", data, "--constraints", "5"], "--constraints draws from labels: give --labels"),
        (["--data", data], "--k is needed"),
    ]
    (tmp_path / "points.xlsx").write_text("x")
    for argv, message in cases:
        out = tmp_path / "out"
        argv = ["fit", *map(str, argv), "--out", str(out)]
        if "--k is needed" not in message:
            argv += ["--k", "3"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (argv, err)
        assert not out.exists()


def test_duplicate_ids_and_parquet_nulls(tmp_path, capsys):
    data = write_csv(tmp_path / "points.csv", [["a", 1, 2], ["b", 3, 4], ["a", 5, 6]],
                     header=["id", "x", "y"])
    assert main(["fit", "--data", str(data), "--id-column", "id", "--k", "2", "--out",
                 str(tmp_path / "out")]) == 2
    assert "points.csv, row 2 (line 4): id 'a' appears again (first at row 0)" in capsys.readouterr().err
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"x": [1.0, None, 3.0], "y": [1.0, 2.0, 3.0]}), path)
    assert main(["fit", "--data", str(path), "--k", "2", "--out", str(tmp_path / "out")]) == 2
    assert "p.parquet, row 1, column 'x': missing value" in capsys.readouterr().err
    pq.write_table(pa.table({"x": ["1", "b"], "y": [1.0, 2.0]}), path)
    assert main(["fit", "--data", str(path), "--k", "2", "--out", str(tmp_path / "out")]) == 2
    assert "p.parquet, row 1, column 'x': 'b' is not a number" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ----------------------------------------------- the other commands, own data
def test_compare_curve_active_on_own_files(tmp_path):
    data = write_csv(tmp_path / "points.csv", X.tolist(), header=["x", "y"])
    labels = write_csv(tmp_path / "labels.csv", [[v] for v in Y], header=["class"])
    common = ["--data", str(data), "--labels", str(labels), "--no-progress"]
    assert main(["compare", *common, "--engines", "icm,lp", "--constraints", "0,10", "--runs", "1",
                 "--out", str(tmp_path / "c")]) == 0
    assert len(list(csv.DictReader(open(tmp_path / "c" / "compare.csv")))) == 8
    assert main(["curve", *common, "--constraints", "0,10", "--folds", "2",
                 "--out", str(tmp_path / "u")]) == 0
    assert len(list(csv.DictReader(open(tmp_path / "u" / "curve.csv")))) == 4
    assert main(["active", *common, "--selector", "ec", "--estimator", "pckmeans", "--budget", "6",
                 "--step", "3", "--runs", "1",
                 "--out", str(tmp_path / "a")]) == 0
    assert len(list(csv.DictReader(open(tmp_path / "a" / "active-points-ec-pckmeans.csv")))) == 3


def test_learning_curves_need_every_true_label(tmp_path, capsys):
    data = write_csv(tmp_path / "points.csv", X.tolist())
    labels = write_csv(tmp_path / "labels.csv", [[v if i else -1] for i, v in enumerate(Y)])
    for cmd in ("compare", "curve", "active"):
        assert main([cmd, "--data", str(data), "--labels", str(labels), "--out",
                     str(tmp_path / cmd), "--no-progress"]) == 2
        assert "row 0 has no label (-1)" in capsys.readouterr().err
        assert main([cmd, "--data", str(data), "--out", str(tmp_path / cmd)]) == 2
        assert "--data needs --labels" in capsys.readouterr().err
        assert not (tmp_path / cmd).exists()


def test_readme_own_data_command_runs(tmp_path):
    """The own-data command the README shows, on files made here."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    command = next(c for c in re.findall(r"```bash\n(.*?)\n```", readme, flags=re.S)
                   if "--data" in c and c.startswith("hmrf fit"))
    write_csv(tmp_path / "points.csv", X.tolist(), header=["x", "y"])
    write_csv(tmp_path / "pairs.csv", PAIRS, header=["i", "j", "kind"])
    argv = command.split()[1:]
    proc = subprocess.run([sys.executable, "-m", "hmrf", *argv], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / argv[argv.index("--out") + 1] if "--out" in argv else tmp_path / "results" / "fit"
    assert len(read_labels(out / "labels.csv")) == 36
