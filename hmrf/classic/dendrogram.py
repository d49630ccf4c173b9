"""A dendrogram of a fitted :class:`~hmrf.HAC`, for notebooks (matplotlib imported on use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._optional import load

if TYPE_CHECKING:
    from typing import Any

    from matplotlib.axes import Axes

    from .hac import HAC

__all__ = ["plot_dendrogram"]


def _complete_forest(Z, n_leaves):
    """Join the roots of a forest at one height above every merge, for drawing only:
    ``(Z, height)``, ``height`` ``None`` if ``Z`` is a tree."""
    r = Z.shape[0]
    if r >= n_leaves - 1:
        return Z, None
    used = np.zeros(n_leaves + r, dtype=bool)
    used[Z[:, :2].astype(np.int64)] = True
    roots = list(np.flatnonzero(~used))
    counts = np.r_[np.ones(n_leaves), Z[:, 3]]
    top = float(Z[:, 2].max()) * 1.15 if r else 1.0
    top = top if top > 0 else 1.0
    rows = [Z]
    current, size = roots[0], counts[roots[0]]
    for t, other in enumerate(roots[1:]):
        size = size + counts[other]
        rows.append(np.array([[min(current, other), max(current, other), top, size]]))
        current = n_leaves + r + t
    return np.vstack(rows), top


def plot_dendrogram(hac: HAC, ax: Axes | None = None, *, show_cut: bool = True, **kwargs: Any) -> Axes:
    """Draw the merge tree of a fitted :class:`~hmrf.HAC` with SciPy's ``dendrogram``
    (``kwargs``, e.g. ``truncate_mode="lastp", p=30`` for large trees) into ``ax`` (a new
    figure when omitted), with the height of the cut into ``labels_`` dashed
    (``show_cut``).

    With must-links the leaves are the must-link components, labelled ``"{point}+{m}"``
    (the component's first point and its ``m`` further members). When cannot-links stop
    the merging early the tree is a forest: its roots are joined for drawing at a
    height above every real merge, marked by a dotted line ("no merge allowed").
    """
    plt = load("matplotlib.pyplot", purpose="plot_dendrogram")
    from scipy.cluster.hierarchy import dendrogram
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(hac, "linkage_matrix_")
    n_leaves = hac.n_leaves_
    if n_leaves < 2:
        raise ValueError("the fitted tree has a single leaf; there is nothing to draw.")
    Z, top = _complete_forest(hac.linkage_matrix_, n_leaves)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    if "labels" not in kwargs and "truncate_mode" not in kwargs:
        _, first = np.unique(hac.leaves_, return_index=True)  # the first point of every leaf
        sizes = hac.leaf_sizes_.astype(np.int64)
        kwargs["labels"] = [str(p) if s == 1 else f"{p}+{s - 1}" for p, s in zip(first, sizes)]
    dendrogram(Z, ax=ax, **kwargs)
    if top is not None:
        ax.axhline(top, color="grey", linestyle=":", linewidth=1)
        ax.annotate("no merge allowed (cannot-links)", (0.01, top), xycoords=("axes fraction", "data"),
                    va="bottom", fontsize="small", color="grey")
    heights = hac.linkage_matrix_[:, 2]
    m = hac.n_merges_
    if show_cut and heights.size and 0 < m:
        above = heights[m] if m < heights.size else (top if top is not None else heights[-1] * 1.05)
        ax.axhline(0.5 * (heights[m - 1] + above), color="tab:red", linestyle="--", linewidth=1)
    ax.set_ylabel(f"{hac.linkage}-link distance ({hac.metric})")
    return ax
