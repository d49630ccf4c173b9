"""``hmrf fit --data rows.zarr --scheduler local``: the command on a Dask cluster.

The labels are written to ``labels.zarr`` by the workers, chunk by chunk; they equal the
labels of the same estimator fit in memory on the same rows (the Dask path's guarantee).
"""

import json

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")

from hmrf import Constraints  # noqa: E402
from hmrf.cli import main  # noqa: E402
from hmrf.estimators import make_estimator  # noqa: E402


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


def test_scheduler_without_a_zarr_store_is_refused(tmp_path, capsys):
    np.savetxt(tmp_path / "x.csv", np.zeros((4, 2)), delimiter=",")
    assert main(["fit", "--data", str(tmp_path / "x.csv"), "--k", "2", "--scheduler", "local"]) == 2
    assert "--scheduler goes with --data ROWS.zarr" in capsys.readouterr().err
