"""A static picture of an oracle session (matplotlib): for printed notes and built docs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._optional import load
from ..constraints import MUST_LINK

if TYPE_CHECKING:

    from collections.abc import Sequence

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .oracle_model import OracleModel
    from .oracle_widget import OracleWidget

__all__ = ["plot_oracle", "MUST_LINK_COLOR", "CANNOT_LINK_COLOR", "CLUSTER_COLORS"]

#: Colours shared with the browser view (``oracle_widget.js``): matplotlib's tab10.
CLUSTER_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
MUST_LINK_COLOR = "#1a9850"
CANNOT_LINK_COLOR = "#d73027"


def plot_oracle(model: OracleModel | OracleWidget, axes: Axes | Sequence[Axes] | None = None) -> Figure:
    """Draw the clustering, the constraints and the learning curve of an oracle session.

    Must-links are green and cannot-links red, dashed where violated; the pending query
    is circled. With true labels a second panel shows NMI and ARI against the answers.

    ``axes``: a new figure by default (the curve needs a second Axes).
    """
    plt = load("matplotlib.pyplot", purpose="plot_oracle")
    from matplotlib.collections import LineCollection

    model = getattr(model, "model", model)
    curve = model.y is not None
    if axes is None:
        fig, axes = plt.subplots(1, 2 if curve else 1, figsize=(10 if curve else 5.5, 4.2),
                                 gridspec_kw={"width_ratios": [1.3, 1]} if curve else None)
    axes = np.atleast_1d(axes)
    ax = axes[0]
    xy, labels = model.xy, model.labels
    colors = np.asarray(CLUSTER_COLORS)[labels % len(CLUSTER_COLORS)]
    c = model.constraints
    bad = c.violations(labels)
    for kind, color in ((MUST_LINK, MUST_LINK_COLOR), (-MUST_LINK, CANNOT_LINK_COLOR)):
        for violated, style, width in ((False, "solid", 1.0), (True, (0, (4, 3)), 2.0)):
            sel = (c.kind == kind) & (bad == violated)
            if sel.any():
                ax.add_collection(LineCollection(xy[c.pairs[sel]], colors=color, linestyles=style,
                                                 linewidths=width, alpha=0.9 if violated else 0.6, zorder=1))
    ax.scatter(xy[:, 0], xy[:, 1], c=colors, s=14, linewidths=0, zorder=2)
    q = model.query
    if q is not None:
        ax.plot(xy[list(q), 0], xy[list(q), 1], ":", color="black", lw=1.5, zorder=3)
        ax.scatter(xy[list(q), 0], xy[list(q), 1], s=110, facecolors="none", edgecolors="black",
                   linewidths=2, zorder=4)
    ax.set_title(f"{model.n_answers} answers, {len(c)} constraints, {int(bad.sum())} violated", fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    if curve and len(axes) > 1:
        cax = axes[1]
        n = [p.n_answers for p in model.history]
        cax.plot(n, [p.nmi for p in model.history], "-o", ms=3, label="NMI")
        cax.plot(n, [p.ari for p in model.history], "-s", ms=3, label="ARI")
        cax.set_xlabel("answers")
        cax.set_ylim(min(0.0, min(p.ari for p in model.history)) - 0.02, 1.02)
        cax.grid(alpha=0.3)
        cax.legend(loc="lower right")
        cax.set_title("learning curve", fontsize=10)
    return ax.figure
