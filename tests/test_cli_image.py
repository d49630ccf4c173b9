"""``hmrf fit --image``: the segmented image, the labels and the summary, and its errors."""

import json

import numpy as np
import pytest

from hmrf.cli import main

pytest.importorskip("PIL")

from hmrf.datasets import read_image, write_image  # noqa: E402


@pytest.fixture
def photo(tmp_path):
    """A 12 x 16 RGB image: two colour blocks with noise, written as PNG."""
    rng = np.random.default_rng(0)
    image = np.zeros((12, 16, 3))
    image[:, :8] = [0.2, 0.5, 0.3]
    image[:, 8:] = [0.9, 0.4, 0.1]
    image = np.clip(image + rng.normal(scale=0.15, size=image.shape), 0, 1)
    return write_image(tmp_path / "photo.png", image)


def run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_writes_segmented_image_labels_and_summary(photo, tmp_path, capsys):
    out = tmp_path / "seg"
    code, stdout, _ = run(["fit", "--image", photo, "--k", "2", "--engine", "bp", "--out", str(out)], capsys)
    assert code == 0
    assert "12 x 16 pixels" in stdout and "wrote" in stdout
    summary = json.loads((out / "summary.json").read_text())
    labels = np.load(out / "labels.npy")
    seg = read_image(out / "segmented.png")
    assert labels.shape == (12, 16) and set(np.unique(labels)) <= {0, 1}
    assert seg.shape == (12, 16, 3) and seg.dtype == np.uint8
    # each pixel has the colour of its cluster's centre (in 0-255)
    centers = np.round(np.clip(np.array(summary["cluster_centers"]), 0, 1) * 255)
    np.testing.assert_array_equal(seg, centers[labels].astype(np.uint8))
    # the two blocks, as the summary reports them
    assert len(np.unique(labels[:, :8])) == 1 and len(np.unique(labels[:, 8:])) == 1
    assert summary["cluster_sizes"] == np.bincount(labels.ravel(), minlength=2).tolist()
    assert summary["grid"] == {"connectivity": 4, "contrast": False, "n_edges": 12 * 15 + 11 * 16,
                               "w": 0.05}
    assert summary["engine"] == "bp" and summary["image"]["height"] == 12
    assert summary["boundary_edges"] == int(np.sum(labels[:, 1:] != labels[:, :-1])
                                            + np.sum(labels[1:] != labels[:-1]))
    assert np.isfinite(summary["objective"]) and summary["n_iter"] >= 1


def test_options_weight_connectivity_contrast(photo, tmp_path, capsys):
    out = tmp_path / "seg8"
    code, stdout, _ = run(["fit", "--image", photo, "--k", "3", "--w", "0.2", "--connectivity", "8",
                           "--contrast", "--engine", "icm", "--out", str(out)], capsys)
    assert code == 0 and "8-connected, contrast-sensitive" in stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["grid"] == {"connectivity": 8, "contrast": True,
                               "n_edges": 12 * 15 + 11 * 16 + 2 * 11 * 15, "w": 0.2}
    assert summary["parameters"]["w"] == 0.2 and summary["parameters"]["inference"] == "icm"


def test_grey_image_and_default_engine(tmp_path, capsys):
    grey = np.zeros((6, 9), dtype=np.uint8)
    grey[:, 4:] = 200
    path = write_image(tmp_path / "grey.png", grey)
    code, _, _ = run(["fit", "--image", path, "--k", "2", "--out", str(tmp_path / "g")], capsys)
    assert code == 0
    summary = json.loads((tmp_path / "g" / "summary.json").read_text())
    assert summary["image"]["channels"] == 1 and summary["engine"] == "auto"
    assert read_image(tmp_path / "g" / "segmented.png").shape == (6, 9)
    labels = np.load(tmp_path / "g" / "labels.npy")
    assert (labels[:, :4] != labels[0, 5]).all() and (labels[:, 4:] == labels[0, 5]).all()


@pytest.mark.parametrize("name, content", [("missing.jpg", None), ("notes.png", "hello")])
def test_bad_image_file_names_it(name, content, tmp_path, capsys):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    out = tmp_path / "never"
    code, _, err = run(["fit", "--image", str(path), "--k", "2", "--out", str(out)], capsys)
    assert code == 2 and str(path) in err and err.count("\n") == 1
    assert ("no such file" if content is None else "not an image file") in err
    assert not out.exists()


@pytest.mark.parametrize("extra, message", [
    (["--data", "x.csv"], "--image takes no --data"),
    (["--dataset", "iris"], "--image takes no --dataset"),
    (["--constraints", "10"], "--image takes no --constraints"),
    (["--plot"], "drop --plot"),
    (["--standardize"], "no --standardize"),
    (["--estimator", "pckmeans"], "transitive closure"),
    (["--estimator", "seeded-kmeans"], "takes no pairwise constraints"),
    (["--engine", "nope"], "unknown inference engine 'nope'"),
])
def test_options_that_do_not_go_with_an_image(photo, extra, message, tmp_path, capsys):
    code, _, err = run(["fit", "--image", photo, "--k", "2", "--out", str(tmp_path / "o"), *extra], capsys)
    assert code == 2 and message in err, err
    assert not (tmp_path / "o").exists()


def test_image_needs_k_and_image_options_need_an_image(photo, tmp_path, capsys):
    code, _, err = run(["fit", "--image", photo, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "--image needs --k" in err
    code, _, err = run(["fit", "--dataset", "iris", "--contrast", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "--contrast goes with --image" in err
    code, _, err = run(["fit", "--dataset", "iris", "--connectivity", "8", "--out", str(tmp_path / "o")],
                       capsys)
    assert code == 2 and "--connectivity goes with --image" in err
    code, _, err = run(["fit", "--image", photo, "--k", "2", "--connectivity", "6"], capsys)
    assert code == 2 and "invalid choice: 6" in err
    code, _, err = run(["fit", "--image", photo, "--k", "999", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "more than the 192 pixels" in err
