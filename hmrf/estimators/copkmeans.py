"""COP-KMeans (Wagstaff, Cardie, Rogers & Schroedl 2001; Basu 2005, §2.3.3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .._validation import Check, Options
from ..exceptions import InconsistentConstraintsError
from ..inference.greedy import METHODS, GreedyFeasible
from ..initialization import initial_centers
from .base import HMRFClusterMixin, moved_parameters

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .._typing import RandomLike
    from ..emissions.base import EmissionFamily

__all__ = ["COPKMeans"]


class COPKMeans(HMRFClusterMixin):
    """KMeans in which every constraint is hard.

    Assignment: each point goes to its closest cluster that breaks no constraint with
    the points already assigned; if there is none the algorithm aborts with
    :class:`~hmrf.InfeasibleError` naming the point (Wagstaff et al. 2001, Table 1).
    The paper's algorithm is ``COPKMeans(emission="sqeuclidean", init="random",
    n_init=1)``.

    Parameters
    ----------
    init : {"k-means++", "random"} or array of shape (k, d), default="k-means++"
        ``"k-means++"``: greedy k-means++ in which drawing a point of a must-link
        component seeds the component's centroid (``"pckmeans++"`` of
        :func:`~hmrf.initialization.initial_centers`). ``"random"``: the paper's, random
        data points from distinct must-link components (thesis §3.5.3).
    emission, max_iter, tol, random_state :
        As :class:`~hmrf.HMRFKMeans`.
    inference : "greedy" or GreedyFeasible, default="greedy"
        The assignment step, ``"greedy"`` being ``GreedyFeasible()``, the paper's (abort
        at the first dead end); ``GreedyFeasible(n_restarts=10, repair="milp")`` retries
        dead ends in other point orders, then solves them exactly (aborting only when
        the constraints cannot all hold; :class:`~hmrf.inference.greedy.GreedyFeasible`).
    n_init : int or "auto", default="auto"
        As :class:`~hmrf.HMRFKMeans`, among the runs that find a labelling;
        :class:`~hmrf.InfeasibleError` only when every run hits a dead end.

    Attributes
    ----------
    assignment_ : {"greedy", "restarts", "milp"}
        What produced the labels: every assignment step in its first point order (the
        paper's algorithm), one in another order, or one by the exact repair.
    labels_, cluster_centers_, objective_, history_, n_iter_, converged_, constraints_ :
        As :class:`~hmrf.HMRFKMeans`.

    Notes
    -----
    Every weight becomes ``inf`` (contradictions raise
    :class:`~hmrf.InconsistentConstraintsError`). Must-link components are assigned as a
    unit, most constrained first (:class:`~hmrf.inference.greedy.GreedyFeasible`); EM
    keeps the previous labelling when an assignment would raise the SSE.

    References
    ----------
    Wagstaff, Cardie, Rogers & Schroedl (2001), "Constrained k-means clustering with
    background knowledge", ICML. Basu (2005), §2.3.3.

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import COPKMeans
    >>> X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1]])
    >>> est = COPKMeans(2, random_state=0).fit(X, must_link=[(2, 3)], cannot_link=[(0, 2)])
    >>> est.labels_.tolist(), est.assignment_
    ([0, 0, 1, 1, 1], 'greedy')
    """

    _parameter_constraints = {
        "init": [Options("k-means++", "random"),
                 Check(lambda v: not isinstance(v, str) and np.ndim(v) == 2,
                       "an array of initial centres (k, d)")],
        "inference": [Options("greedy"), GreedyFeasible],
    }

    def __init__(self, n_clusters: int = 8, *, emission: str | EmissionFamily = "auto",
                 init: str | ArrayLike = "k-means++", max_iter: int = 100, tol: float = 1e-4,
                 inference: str | GreedyFeasible = "greedy", n_init: int | str = "auto",
                 random_state: RandomLike = None) -> None:
        self.n_clusters = n_clusters
        self.emission = emission
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.inference = inference
        self.n_init = n_init
        self.random_state = random_state

    def _set_fitted(self, best, model, constraints, labels):
        super()._set_fitted(best, model, constraints, labels)
        self.assignment_ = max(_methods(best), key=METHODS.index, default="greedy")
        return self

    _moved = ("n_restarts", "repair", "time_limit")

    @classmethod
    def _moved_error(cls, given):
        args = ", ".join(f"{k}={v!r}" for k, v in given.items())
        return moved_parameters("COPKMeans", given, f"inference=GreedyFeasible({args})")

    def _spec_inference(self):
        return GreedyFeasible() if isinstance(self.inference, str) else self.inference

    def _model(self, X, constraints, y, potentials=None):
        model = super()._model(X, constraints, y, potentials)
        for pot in model.potentials:  # the greedy assignment reads hard costs only: refuse soft ones
            if pot.depends_on_params or _has_soft_costs(pot.graph(model.X, None, model.n_clusters)):
                raise ValueError(
                    f"COPKMeans keeps every factor hard and its assignment reads only hard (infinite) "
                    f"costs, but the potential {type(pot).__name__} has finite non-zero costs or costs "
                    "that depend on the parameters; use costs of 0 or infinity (forbidden pairs of "
                    "labels), or fit with HMRFKMeans, which weighs them.")
        return model

    def _supervision(self, n, y, must_link, cannot_link, constraints):
        c = super()._supervision(n, y, must_link, cannot_link, constraints)
        try:
            return c.with_weight(np.inf)
        except InconsistentConstraintsError as exc:  # the given weights were finite: say why they are not
            chain = " - ".join(map(str, exc.path)) if exc.path is not None else ""
            raise InconsistentConstraintsError(
                f"COPKMeans keeps every constraint hard, and the cannot-link {exc.pair} contradicts the "
                f"must-links that join the same points (chain {chain}); remove one of them, or use an "
                "estimator that weighs a violated constraint (HMRFKMeans, PCKMeans, MPCKMeans).",
                pair=exc.pair, path=exc.path) from None

    def _initial_params(self, model, constraints, y, rng):
        if not (isinstance(self.init, str) and self.init == "random"):
            init = "pckmeans++" if isinstance(self.init, str) else self.init
            centers = initial_centers(model.X, model.n_clusters, model.emission, constraints, init, rng)
            return model.emission.init_params(model.X, centers)
        comp = constraints.component_labels(hard_only=True)
        order = rng.permutation(model.n_samples)
        # first point of each must-link component in a random order: distinct components
        _, first = np.unique(comp[order], return_index=True)
        picks = order[np.sort(first)][: model.n_clusters]
        X = model.X[picks]
        centers = X.toarray() if sp.issparse(X) else np.asarray(X)
        if centers.shape[0] < model.n_clusters:
            raise ValueError(
                f"only {centers.shape[0]} must-link components for n_clusters={model.n_clusters}; "
                "COP-KMeans needs a distinct component per initial centre."
            )
        return model.emission.init_params(model.X, centers)


def _methods(result) -> list[str]:
    """What produced the labels of every E-step of an EM run (``GreedyFeasible``'s
    ``info["method"]``, carried by the EM trace), the last pass's included."""
    infos = [t["engine"] for t in result.trace] + [result.final_engine_info]
    return [info.get("method", "greedy") for info in infos if info is not None]


def _has_soft_costs(graph) -> bool:
    """Whether a factor of ``graph`` has a finite non-zero cost (a soft Potts edge, or a
    table entry that is neither 0 nor infinite)."""
    classes = graph.edge_classes()
    if (classes.soft_must | classes.soft_cannot).any():
        return True
    if graph.tables is None or not classes.table.any():
        return False
    return bool(np.any(np.isfinite(graph.tables) & (graph.tables != 0)))
