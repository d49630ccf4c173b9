"""COP-KMeans (Wagstaff, Cardie, Rogers & Schroedl 2001; Basu 2005, §2.3.3)."""

from __future__ import annotations

import numpy as np

from ..inference.greedy import GreedyFeasible
from .base import HMRFClusterMixin

__all__ = ["COPKMeans"]


class COPKMeans(HMRFClusterMixin):
    """KMeans in which every constraint is hard.

    Assignment: each point in random order goes to its closest cluster that breaks no
    constraint with the points already assigned; if there is none the algorithm aborts
    with :class:`~hmrf.InfeasibleError` naming the point (Wagstaff et al. 2001).
    Initialisation: random data points as centres, never two from the same must-link
    component (as each centre is chosen, its must-links are enforced; thesis §3.5.3).

    Parameters
    ----------
    n_clusters : int, default=8
    emission : str or EmissionFamily, default="sqeuclidean"
    max_iter : int, default=100
    tol : float, default=1e-4
    random_state : int, RandomState or None, default=None

    Notes
    -----
    All given weights are replaced by ``inf``; contradictory constraints raise
    :class:`~hmrf.InconsistentConstraintsError` when the set is built. Must-link
    components are assigned as a unit by their summed distance (see
    :class:`~hmrf.inference.greedy.GreedyFeasible`). EM keeps the previous labelling when
    a greedy pass would increase the objective, so the SSE never rises.
    """

    def __init__(self, n_clusters=8, *, emission="sqeuclidean", max_iter=100, tol=1e-4,
                 random_state=None):
        self.n_clusters = n_clusters
        self.emission = emission
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _spec_inference(self):
        return GreedyFeasible()

    def _supervision(self, n, y, must_link, cannot_link, constraints):
        c = super()._supervision(n, y, must_link, cannot_link, constraints)
        return c.with_weight(np.inf)

    def _initial_params(self, model, constraints, y, rng):
        comp = constraints.component_labels(hard_only=True)
        order = rng.permutation(model.n_samples)
        # first point of each must-link component in a random order: distinct components
        _, first = np.unique(comp[order], return_index=True)
        picks = order[np.sort(first)][: model.n_clusters]
        X = model.X[picks]
        centers = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
        if centers.shape[0] < model.n_clusters:
            raise ValueError(
                f"only {centers.shape[0]} must-link components for n_clusters={model.n_clusters}; "
                "COP-KMeans needs a distinct component per initial centre."
            )
        return model.emission.init_params(model.X, centers)
