"""Data sets used in the papers, behind one entry point.

``load_dataset(name, random_state=0) -> (X, y)`` and ``available()``. The data sets
bundled with scikit-learn need nothing else; optional corpora are loaded from packages
that ``.ci/run`` installs, and a missing package raises an error with the exact
install command.
"""

from __future__ import annotations

import numpy as np

__all__ = ["load_dataset", "available", "DATASETS"]


def _iris(random_state):
    from sklearn.datasets import load_iris

    return load_iris(return_X_y=True)


def _wine(random_state):
    from sklearn.datasets import load_wine

    return load_wine(return_X_y=True)


def _breast_cancer(random_state):
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=True)


def _digits389(random_state):
    """Digits {3, 8, 9} (Basu 2005, §4.5.1 uses these hard-to-separate classes)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, (3, 8, 9))
    return X[keep], y[keep]


#: name -> (loader, n_samples, n_features, n_classes, description)
DATASETS = {
    "iris": (_iris, 150, 4, 3, "Iris flowers (UCI), bundled with scikit-learn"),
    "wine": (_wine, 178, 13, 3, "Wine cultivars (UCI), bundled with scikit-learn"),
    "breast_cancer": (_breast_cancer, 569, 30, 2, "Wisconsin breast cancer, bundled with scikit-learn"),
    "digits389": (_digits389, 537, 64, 3, "scikit-learn 8x8 digits, classes 3, 8 and 9"),
}


def available() -> dict:
    """Names of the loadable data sets with ``(n_samples, n_features, n_classes, description)``."""
    return {name: spec[1:] for name, spec in DATASETS.items()}


def load_dataset(name: str, random_state=0):
    """Load a data set by name.

    Parameters
    ----------
    name : str
        One of :func:`available`.
    random_state : int, default=0
        Seed for data sets that are subsampled.

    Returns
    -------
    X : ndarray or csr_matrix (n, d)
    y : ndarray (n,) of int class labels
    """
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; available: {sorted(DATASETS)}.")
    X, y = DATASETS[name][0](random_state)
    _, y = np.unique(y, return_inverse=True)
    return X, y.astype(np.int64)
