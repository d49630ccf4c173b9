"""Two coordinates per point for drawing: the data itself, or its principal components."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .._validation import check_data

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .._typing import MatrixLike

__all__ = ["project_2d"]


def project_2d(X: MatrixLike, projection: ArrayLike | None = None, *, random_state: int = 0) -> np.ndarray:
    """Coordinates of shape (n, 2) to draw the points of ``X`` at: ``projection`` (e.g.
    a t-SNE or UMAP embedding, checked), ``X`` itself when it has two columns, one
    column drawn against zeros, else the scores on the first two principal components
    (scikit-learn's ``PCA``; ``random_state`` seeds ARPACK's start for sparse data).

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf.widgets.projection import project_2d
    >>> project_2d(np.array([[1.0], [2.0]])).tolist()
    [[1.0, 0.0], [2.0, 0.0]]
    """
    X = check_data(X)
    n, d = X.shape
    if projection is not None:
        xy = np.asarray(projection, dtype=np.float64)
        if xy.shape != (n, 2):
            raise ValueError(f"projection must have shape ({n}, 2), one row per point; got {xy.shape}.")
        if not np.all(np.isfinite(xy)):
            raise ValueError("projection has NaN or infinite coordinates.")
        return xy.copy()
    if d <= 2:
        cols = (X.toarray() if sp.issparse(X) else np.asarray(X)).astype(np.float64)
        return np.hstack([cols, np.zeros((n, 2 - d))])
    if n < 2:
        return np.zeros((n, 2))
    from sklearn.decomposition import PCA

    solver = "arpack" if sp.issparse(X) else "full"
    k = 2 if min(n, d) > 2 or solver == "full" else 1
    xy = PCA(n_components=k, svd_solver=solver, random_state=random_state).fit_transform(X)
    return np.hstack([xy, np.zeros((n, 2 - k))]) if k < 2 else np.asarray(xy, dtype=np.float64)
