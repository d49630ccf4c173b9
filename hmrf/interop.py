"""E-step problems as pgmpy models, for cross-checks and for pgmpy's own algorithms.

An E-step problem ``E(y) = sum_i U[i, y_i] + sum_e cost_e(y_a, y_b)`` is the Gibbs
distribution ``p(y) ∝ exp(-E(y))`` of a discrete Markov network with factors
``exp(-U[i, :])`` and ``exp(-cost_e)`` (Basu 2005, Fig. A.1, Appendix A.1); infinite
costs become 0 entries. Each factor is divided by its largest entry against underflow,
which changes neither the MAP labelling nor the normalised marginals. pgmpy's exact
algorithms are exponential in the tree-width: keep them to small cross-checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._optional import load
from .graph import PairwiseGraph, as_graph

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from pgmpy.models import DiscreteMarkovNetwork, FactorGraph

    from .constraints import Constraints

__all__ = ["to_pgmpy", "variable_name", "labels_from_assignment"]


def variable_name(i: int) -> str:
    """pgmpy name of the hidden label of point ``i`` (``"y0"``, ``"y1"``, ...)."""
    return f"y{i}"


def _potentials(cost: np.ndarray) -> np.ndarray:
    """``exp(-(cost - min finite cost))`` with ``inf -> 0``."""
    fin = cost[np.isfinite(cost)]
    shift = fin.min() if fin.size else 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.exp(-(cost - shift))
    return np.where(np.isinf(cost), 0.0, out)


def _pair_tables(graph: PairwiseGraph, k: int) -> np.ndarray:
    """(m, k, k) cost table of every factor, rows indexed by the first endpoint."""
    m = graph.n_edges
    out = np.zeros((m, k, k))
    eye = np.eye(k, dtype=bool)
    cls = graph.edge_classes()
    for sel, mask in ((cls.must, ~eye), (cls.cannot, eye)):
        w = graph.weight[sel][:, None, None]
        out[sel] = np.where(mask[None], w, 0.0)
    tab = cls.table
    if tab.any():
        out[tab] = graph.table_costs()
    return out


def to_pgmpy(unary: ArrayLike, graph: PairwiseGraph | Constraints | None = None,
             factor_graph: bool = False) -> DiscreteMarkovNetwork | FactorGraph:
    """Export an E-step problem as a pgmpy model with factors ``exp(-cost)``.

    Parameters
    ----------
    unary : array-like of shape (n, k)
        Unary costs (``inf`` forbids a label).
    graph : PairwiseGraph or Constraints or None
        Pairwise factors.
    factor_graph : bool, default=False
        ``False``: a ``pgmpy.models.DiscreteMarkovNetwork`` (one factor per point and
        per pairwise factor; parallel factors on one pair stay separate).
        ``True``: a ``pgmpy.models.FactorGraph`` (Basu 2005, Fig. A.1).

    Returns
    -------
    DiscreteMarkovNetwork or FactorGraph
        Variables are named by :func:`variable_name`; states are cluster indices.

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.interop import to_pgmpy
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], n=2, weight=2.0)
    >>> mn = to_pgmpy(np.array([[0.0, 1.0], [1.0, 0.2]]), c)
    >>> sorted(mn.nodes()), len(mn.factors)
    (['y0', 'y1'], 3)
    """
    DiscreteFactor = load("pgmpy.factors.discrete", purpose="to_pgmpy").DiscreteFactor
    from pgmpy.models import DiscreteMarkovNetwork, FactorGraph

    u = np.asarray(unary, dtype=np.float64)
    if u.ndim != 2:
        raise ValueError(f"unary costs must have shape (n, k); got {u.shape}.")
    n, k = u.shape
    g = as_graph(graph, n)
    g.check_labels(k)
    names = [variable_name(i) for i in range(n)]
    factors = [DiscreteFactor([names[i]], [k], _potentials(u[i])) for i in range(n)]
    tables = _pair_tables(g, k)
    for (a, b), t in zip(g.edges.tolist(), tables):
        factors.append(DiscreteFactor([names[a], names[b]], [k, k], _potentials(t)))
    if factor_graph:
        model = FactorGraph()
        model.add_nodes_from(names)
        model.add_factors(*factors)
        model.add_edges_from((v, f) for f in factors for v in f.scope())
    else:
        model = DiscreteMarkovNetwork()
        model.add_nodes_from(names)
        model.add_edges_from((names[a], names[b]) for a, b in g.edges.tolist())
        model.add_factors(*factors)
    model.check_model()
    return model


def labels_from_assignment(assignment: dict, n: int) -> np.ndarray:
    """Labels (n,) from a pgmpy assignment ``{"y0": h0, "y1": h1, ...}``."""
    return np.array([int(assignment[variable_name(i)]) for i in range(n)], dtype=np.int64)
