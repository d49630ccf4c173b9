"""``hmrf fit --data rows.zarr|parquet --scheduler local|ADDRESS``: the command on a Dask cluster.

The labels are written to ``labels.zarr`` or ``labels.parquet`` by the workers, chunk by
chunk; they equal the labels of the same estimator fit in memory on the same rows (the
Dask path's guarantee). Parquet data are a directory of files read in the natural order
of their names; bad Parquet input stops the command before a cluster starts, with a
message naming the file and the columns.
"""

import json
import os

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("dask.dataframe")

from hmrf import Constraints  # noqa: E402
from hmrf.cli import main  # noqa: E402
from hmrf.datasets import DataFileError, read_parquet_rows  # noqa: E402
from hmrf.estimators import make_estimator  # noqa: E402

#: the command's fit equals the in-memory fit run by run: ``n_init="auto"`` capped
#: (fixture ``few_auto_runs``, ``tests/conftest.py``)
pytestmark = pytest.mark.usefixtures("few_auto_runs")


def _write_pairs(path, c):
    with open(path, "w") as f:
        f.write("i,j,kind\n")
        for (i, j), kind in zip(c.pairs, c.kind):
            f.write(f"{i},{j},{'must' if kind > 0 else 'cannot'}\n")


def test_fit_a_zarr_store_on_a_local_cluster_writes_labels_chunk_by_chunk(tmp_path, capsys):
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 3000)
    X = rng.normal(size=(3000, 4)) + 3.0 * np.eye(3, 4)[y]
    da.to_zarr(da.from_array(X, chunks=(700, 4)), str(tmp_path / "rows.zarr"))
    c = Constraints.sample_from_labels(y, 80, rng=1)
    with open(tmp_path / "pairs.csv", "w") as f:
        f.write("i,j,kind\n")
        for (i, j), kind in zip(c.pairs, c.kind):
            f.write(f"{i},{j},{'must' if kind > 0 else 'cannot'}\n")
    out = tmp_path / "out"
    code = main(["fit", "--data", str(tmp_path / "rows.zarr"), "--k", "3", "--pairs", str(tmp_path / "pairs.csv"),
                 "--scheduler", "local", "--out", str(out)])
    assert code == 0
    labels = zarr.open_array(str(out / "labels.zarr"), mode="r")
    assert labels.shape == (3000,) and labels.chunks == (700,)
    expected = make_estimator("hmrf-kmeans", 3, random_state=0).fit(X, constraints=c)
    np.testing.assert_array_equal(labels[:], expected.labels_)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_constraints"] == len(c) and summary["objective"] == pytest.approx(expected.objective_)
    assert "labels.zarr" in capsys.readouterr().out


def test_scheduler_without_a_zarr_store_or_parquet_is_refused(tmp_path, capsys):
    np.savetxt(tmp_path / "x.csv", np.zeros((4, 2)), delimiter=",")
    assert main(["fit", "--data", str(tmp_path / "x.csv"), "--k", "2", "--scheduler", "local"]) == 2
    err = capsys.readouterr().err
    assert "x.csv: on a cluster (--scheduler) the rows come from a Zarr array" in err and "Parquet" in err


# ---------------------------------------------------------------- Parquet
def _parquet_dir(path, sizes=(900, 1300, 800), seed=5):
    """Files ``part.<i>`` of the given sizes (natural order: part.2 before part.10), with a
    text id column and float32 features; returns the rows in that order and the classes."""
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    y = rng.integers(0, 3, n)
    X = (rng.normal(size=(n, 4)) + 3.0 * np.eye(3, 4)[y]).astype(np.float32)
    os.makedirs(path)
    start = 0
    for name, size in zip((2, 10, 11), sizes):  # lexicographic order would put part.10 first
        rows = slice(start, start + size)
        frame = pd.DataFrame({"id": [f"p{r}" for r in range(rows.start, rows.stop)]})
        for j in range(4):
            frame[f"x{j}"] = X[rows, j]
        frame.to_parquet(os.path.join(path, f"part.{name}.parquet"))
        start += size
    return X, y


def test_fit_a_parquet_directory_on_a_cluster_writes_labels_by_chunk(tmp_path, dask_client, capsys):
    X, y = _parquet_dir(tmp_path / "rows")
    c = Constraints.sample_from_labels(y, 100, rng=2)
    _write_pairs(tmp_path / "pairs.csv", c)
    out = tmp_path / "out"
    code = main(["fit", "--data", str(tmp_path / "rows"), "--columns", "x0,x1,x2,x3", "--k", "3",
                 "--pairs", str(tmp_path / "pairs.csv"), "--scheduler", dask_client.scheduler.address,
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    parts = sorted(os.listdir(out / "labels.parquet"))
    chunks = read_parquet_rows(tmp_path / "rows", ["x0", "x1", "x2", "x3"]).chunks[0]
    summary = json.loads((out / "summary.json").read_text())
    assert len(parts) == len(chunks) == summary["data"]["chunks"]  # one file a chunk of rows
    frames = [pd.read_parquet(out / "labels.parquet" / p) for p in parts]
    assert sorted(len(f) for f in frames) == sorted(chunks)
    table = pd.concat(frames).sort_values("row")
    np.testing.assert_array_equal(table["row"].to_numpy(), np.arange(X.shape[0]))
    expected = make_estimator("hmrf-kmeans", 3, random_state=0).fit(X, constraints=c)
    np.testing.assert_array_equal(table["label"].to_numpy(), expected.labels_)
    assert summary["data"]["format"] == "parquet" and summary["data"]["n"] == X.shape[0]
    assert summary["objective"] == pytest.approx(expected.objective_, rel=1e-5)  # float32 rows
    assert "labels.parquet" in capsys.readouterr().out


def test_one_parquet_file_with_a_scheduler_can_write_zarr_labels(tmp_path, dask_client):
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 1500)
    X = rng.normal(size=(1500, 3)) + 4.0 * y[:, None]
    pd.DataFrame(X, columns=["a", "b", "c"]).to_parquet(tmp_path / "x.parquet")
    out = tmp_path / "out"
    assert main(["fit", "--data", str(tmp_path / "x.parquet"), "--k", "2", "--labels-format", "zarr",
                 "--scheduler", dask_client.scheduler.address, "--out", str(out)]) == 0
    expected = make_estimator("hmrf-kmeans", 2, random_state=0).fit(X)
    np.testing.assert_array_equal(zarr.open_array(str(out / "labels.zarr"), mode="r")[:], expected.labels_)


def test_a_missing_value_in_parquet_is_reported_with_its_row_of_all_files(tmp_path, dask_client, capsys):
    _parquet_dir(tmp_path / "rows", sizes=(500, 400, 300))
    frame = pd.read_parquet(tmp_path / "rows" / "part.10.parquet")
    frame.loc[7, "x2"] = np.nan  # row 500 + 7 of the data
    frame.to_parquet(tmp_path / "rows" / "part.10.parquet")
    assert main(["fit", "--data", str(tmp_path / "rows"), "--columns", "x0,x1,x2,x3", "--k", "3",
                 "--scheduler", dask_client.scheduler.address, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "507" in err and "NaN" in err
    assert not (tmp_path / "out" / "labels.parquet").exists()


def test_parquet_rows_keep_float32_and_read_the_files_in_natural_order(tmp_path):
    X, _ = _parquet_dir(tmp_path / "rows")
    rows = read_parquet_rows(tmp_path / "rows", ["x0", "x1", "x2", "x3"], chunk_sizes=False)
    assert rows.dtype == np.float32
    np.testing.assert_array_equal(rows.compute(scheduler="sync"), X)
    swapped = read_parquet_rows(tmp_path / "rows", ["x1", "x0"], chunk_sizes=False)
    np.testing.assert_array_equal(swapped.compute(scheduler="sync"), X[:, [1, 0]])


def test_parquet_files_without_the_same_columns_are_named(tmp_path):
    folder = tmp_path / "rows"
    folder.mkdir()
    pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}).to_parquet(folder / "part.0.parquet")
    pd.DataFrame({"a": [5.0, 6.0]}).to_parquet(folder / "part.1.parquet")
    with pytest.raises(DataFileError, match="not every file has the columns"):
        read_parquet_rows(folder)
    assert read_parquet_rows(folder, columns=["a"]).compute().ravel().tolist() == [1.0, 2.0, 5.0, 6.0]


@pytest.mark.parametrize("case, message", [
    ("text column", "is not numeric; choose the feature columns (hmrf fit --columns"),
    ("unknown column", "no column named 'x9'; the columns are ['id', 'x0', 'x1', 'x2', 'x3']"),
    ("missing", "rows: no such file or directory"),
    ("no parquet", "no Parquet file (.parquet, .parq, .pq) in this directory"),
    ("not parquet", "rows: not a readable Parquet data set ("),  # pyarrow's reason names the file
    ("columns on zarr", "--columns goes with Parquet --data"),
    ("columns in memory", "--columns goes with data read on a cluster"),
])
def test_bad_parquet_input_is_refused_before_a_cluster_starts(tmp_path, capsys, case, message):
    data = tmp_path / "rows"
    extra = []
    if case in ("text column", "unknown column", "columns in memory"):
        _parquet_dir(data, sizes=(20, 20, 20))
        extra = {"unknown column": ["--columns", "x0,x9"], "text column": []}.get(case, [])
    elif case == "no parquet":
        os.makedirs(data)
        (data / "notes.txt").write_text("x")
    elif case == "not parquet":
        os.makedirs(data)
        (data / "part.2.parquet").write_text("not a table")
    elif case == "columns on zarr":
        data = tmp_path / "rows.zarr"
        da.to_zarr(da.zeros((10, 2), chunks=5), str(data))
        extra = ["--columns", "a"]
    if case == "columns in memory":
        data = data / "part.2.parquet"
        extra = ["--columns", "x0"]
    scheduler = [] if case == "columns in memory" else ["--scheduler", "tcp://127.0.0.1:1"]  # never reached
    code = main(["fit", "--data", str(data), "--k", "2", *extra, *scheduler, "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert case != "not parquet" or "part.2.parquet" in err
    assert not (tmp_path / "out").exists()


def test_every_non_numeric_column_is_named_by_read_parquet_rows(tmp_path):
    frame = pd.DataFrame({"a": [1.0, 2.0], "when": pd.to_datetime(["2024-01-01", "2024-01-02"]),
                          "name": ["u", "v"], "b": [1, 2]})
    frame.to_parquet(tmp_path / "x.parquet")
    with pytest.raises(DataFileError, match=r"columns 'when' \(datetime64.*\), 'name' \(.*\) are not numeric"):
        read_parquet_rows(tmp_path / "x.parquet", chunk_sizes=False)
    rows = read_parquet_rows(tmp_path / "x.parquet", ["b", "a"], chunk_sizes=False)
    assert rows.dtype == np.float64  # integers with floats: float64
    np.testing.assert_array_equal(rows.compute(scheduler="sync"), [[1.0, 1.0], [2.0, 2.0]])
