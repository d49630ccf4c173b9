"""The picture of ``hmrf fit --plot``: clusters in 2-D with the violated constraints."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._optional import load


def project_2d(X) -> tuple[np.ndarray, list]:
    """Coordinates (n, 2) to draw and the axis labels.

    Two features are drawn as they are (one is padded with zeros); more are projected
    on their first two principal components (dense: SVD of the centred data; sparse:
    truncated SVD without centring, which would densify it, as latent semantic analysis
    does).
    """
    n, d = X.shape
    if d <= 2 and not sp.issparse(X):
        Z = np.zeros((n, 2))
        Z[:, :d] = X
        return Z, ["feature 0", "feature 1" if d == 2 else "(constant)"]
    if sp.issparse(X):
        from scipy.sparse.linalg import svds

        k = min(2, min(X.shape) - 1)
        if k < 1:
            Z = np.zeros((n, 2))
            Z[:, 0] = X.toarray()[:, 0]
            return Z, ["feature 0", "(constant)"]
        U, S, _ = svds(sp.csr_matrix(X, dtype=np.float64), k=k, random_state=0)
        order = np.argsort(S)[::-1]
        Z = np.zeros((n, 2))
        Z[:, :k] = U[:, order] * S[order]
        return Z, ["SVD component 1", "SVD component 2"]
    Xc = X - X.mean(axis=0)
    U, S, _ = np.linalg.svd(Xc, full_matrices=False)
    share = S**2 / max(float((S**2).sum()), np.finfo(float).tiny)
    Z = U[:, :2] * S[:2]
    return Z, [f"PC {i + 1} ({share[i]:.0%} of the variance)" for i in range(2)]


def plot_clusters(X, labels, constraints, path, title) -> None:
    """Points coloured by cluster; violated must-links solid red, violated cannot-links
    dashed black, kept constraints faint grey (drawn only when there are at most 2,000)."""
    Figure = load("matplotlib.figure", purpose="hmrf fit --plot").Figure
    from matplotlib.collections import LineCollection

    Z, axis = project_2d(X)
    fig = Figure(figsize=(7, 5.5), layout="constrained")
    ax = fig.add_subplot()
    k = int(labels.max()) + 1 if labels.size else 0
    cmap = "tab10" if k <= 10 else "tab20"
    sc = ax.scatter(Z[:, 0], Z[:, 1], c=labels, cmap=cmap, s=14, vmin=-0.5,
                    vmax=(10 if k <= 10 else 20) - 0.5, edgecolors="none", zorder=2)
    handles = []
    if constraints is not None and len(constraints):
        pairs = constraints.pairs
        bad = constraints.violations(labels)
        must = constraints.kind > 0
        kept = ~bad
        if kept.sum() <= 2000:
            ax.add_collection(LineCollection(Z[pairs[kept]], colors="0.6", linewidths=0.5,
                                             alpha=0.35, zorder=1))
        for mask, style, colour, name in ((bad & must, "-", "tab:red", "violated must-link"),
                                          (bad & ~must, "--", "black", "violated cannot-link")):
            if mask.any():
                ax.add_collection(LineCollection(Z[pairs[mask]], colors=colour, linestyles=style,
                                                 linewidths=1.2, zorder=3))
            from matplotlib.lines import Line2D

            handles.append(Line2D([], [], color=colour, ls=style, label=f"{name}: {int(mask.sum())}"))
    ax.set(xlabel=axis[0], ylabel=axis[1], title=title)
    if handles:
        ax.legend(handles=handles, loc="best", fontsize=8)
    if k <= 20:
        fig.colorbar(sc, ax=ax, ticks=range(k), label="cluster").ax.set_ylim(-0.5, k - 0.5)
    fig.savefig(path, dpi=110)
