"""Pairwise constraint potentials: the MRF prior over labels (DESIGN.md, layer 3).

A potential turns supervision into the factors of the E-step problem, a
:class:`~hmrf.graph.PairwiseGraph`. :class:`PottsConstraints` is the generalised Potts
potential of Basu (2005), eq. 4.4. :class:`TablePotential` lets a user give any
(k, k) cost table per edge (or one table shared by many edges) — a new constraint
potential in a few lines. A potential whose costs depend on the data or the emission
parameters (MPCKMeans' distance-scaled penalties) sets ``depends_on_params = True`` so
the model rebuilds its graph after every M-step.
"""

from __future__ import annotations

import numpy as np

from .constraints import Constraints
from .graph import PairwiseGraph

__all__ = ["PairwisePotential", "PottsConstraints", "TablePotential"]


class PairwisePotential:
    """Base class: something that produces pairwise factors on ``n`` label variables.

    Subclasses implement :meth:`graph`. Set ``depends_on_params = True`` if the factor
    costs change with the emission parameters.
    """

    depends_on_params = False

    def graph(self, X=None, params=None, n_clusters=None) -> PairwiseGraph:  # pragma: no cover
        """The factors as a :class:`~hmrf.graph.PairwiseGraph`."""
        raise NotImplementedError

    @property
    def n_nodes(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError


class PottsConstraints(PairwisePotential):
    """Generalised Potts potential of must-link / cannot-link constraints.

    ``v(i, j) = w · w_ij · [y_i != y_j]`` for a must-link and ``w · w_ij · [y_i == y_j]``
    for a cannot-link (Basu 2005, eq. 4.4; Kleinberg & Tardos 1999), where ``w_ij`` is
    the constraint's own weight and ``w`` a global multiplier (the ``w`` of PCKMeans,
    Basu, Bilenko & Mooney 2004, eq. 1).

    Parameters
    ----------
    constraints : Constraints
    w : float, default=1.0
        Global weight of the constraints against the emission costs. ``np.inf`` makes
        every constraint hard.

    Examples
    --------
    >>> from hmrf import Constraints
    >>> from hmrf.potentials import PottsConstraints
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(1, 2)], n=3)
    >>> g = PottsConstraints(c, w=2.0).graph()
    >>> g.pairwise_energy([0, 1, 1])   # both violated: 2 + 2
    4.0
    """

    def __init__(self, constraints: Constraints, w: float = 1.0):
        if not isinstance(constraints, Constraints):
            raise TypeError(f"constraints must be an hmrf.Constraints; got {type(constraints).__name__}.")
        w = float(w)
        if np.isnan(w) or w < 0:
            raise ValueError(f"w must be >= 0 (np.inf = hard); got {w}.")
        self.constraints = constraints
        self.w = w
        self._graph = None

    @property
    def n_nodes(self) -> int:
        return self.constraints.n

    def edge_scale(self, X=None, params=None) -> np.ndarray | float:
        """Per-edge multiplier ``f_ij`` (1 for plain Potts; MPCKMeans overrides)."""
        return 1.0

    def graph(self, X=None, params=None, n_clusters=None) -> PairwiseGraph:
        if self.depends_on_params:
            return PairwiseGraph.from_constraints(self.constraints, self.w * np.asarray(self.edge_scale(X, params)))
        if self._graph is None:
            self._graph = PairwiseGraph.from_constraints(self.constraints, self.w)
        return self._graph

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.constraints!r}, w={self.w!r})"


class TablePotential(PairwisePotential):
    """Arbitrary pairwise cost tables: ``cost_e(a, b) = weight_e · T[t_e][a, b]``.

    Parameters
    ----------
    n : int
        Number of points.
    edges : array of shape (m, 2)
        Point pairs; the first point indexes the table's rows.
    tables : array of shape (k, k) or (T, k, k)
        One shared table or ``T`` tables (``inf`` forbids a label pair).
    table_index : array of shape (m,), optional
        Which table each edge uses (see :meth:`PairwiseGraph.from_tables`).
    weight : float or array of shape (m,), default=1.0

    Examples
    --------
    A "soft must-link with a preferred label": agreeing on label 0 is free, agreeing
    on another label costs 0.5, disagreeing costs 2.

    >>> import numpy as np
    >>> from hmrf.potentials import TablePotential
    >>> T = np.full((3, 3), 2.0); np.fill_diagonal(T, 0.5); T[0, 0] = 0.0
    >>> TablePotential(4, [(0, 1), (2, 3)], T).graph().pairwise_energy([0, 0, 1, 2])
    2.0
    """

    def __init__(self, n, edges, tables, table_index=None, weight=1.0):
        self._graph = PairwiseGraph.from_tables(n, edges, tables, table_index, weight)

    @property
    def n_nodes(self) -> int:
        return self._graph.n_nodes

    def graph(self, X=None, params=None, n_clusters=None) -> PairwiseGraph:
        if n_clusters is not None:
            self._graph.check_labels(n_clusters)
        return self._graph

    def __repr__(self) -> str:
        return f"TablePotential({self._graph!r})"
