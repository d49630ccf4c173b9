"""The E-step problem as flat arrays: what inference engines see.

An E-step of HMRF-KMeans (Basu 2005, §4.4.4 and Appendix A) is a discrete MAP
problem over hidden labels ``y in {0..k-1}^n``::

    E(y) = sum_i U[i, y_i] + sum_e cost_e(y_{a_e}, y_{b_e})

with unary costs ``U`` (n, k) from the emission family and one pairwise factor per
edge ``e = (a_e, b_e)``. :class:`PairwiseGraph` stores the factors as flat arrays
(the layout that makes PGMax-style vectorised inference fast) in two flavours that
may be mixed in one graph:

* **Potts edges** (``kind = +1`` must-link, ``-1`` cannot-link): the generalised
  Potts potential of eq. 4.4, ``w_e [y_a != y_b]`` or ``w_e [y_a == y_b]``.
  ``w_e = inf`` makes the edge hard. Engines use O(k) updates for these.
* **Table edges** (``kind = 0``): ``w_e * T[t_e][y_a, y_b]`` with one (k, k) table
  per edge or one table shared by many edges (OpenGM stores function objects once,
  not per factor). ``w_e`` must be finite; a table may hold ``inf`` for forbidden
  label pairs. ``0 * inf`` is taken as 0 (a zero-weight edge costs nothing).

Engines never see the data ``X`` or the emission parameters: only ``U`` and this graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .constraints import CANNOT_LINK, MUST_LINK, Constraints

__all__ = ["PairwiseGraph", "GraphCache", "STRUCTURAL_FIELDS", "as_graph", "segment_sum"]

POTTS_ML = MUST_LINK
POTTS_CL = CANNOT_LINK
TABLE = 0


def segment_sum(rows: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """Sum ``values`` (e,) or (e, k) into ``n_rows`` buckets given by ``rows``.

    A sparse-matrix product, which is much faster than ``np.add.at`` for 2-D values.
    """
    e = rows.shape[0]
    agg = sp.csr_matrix((np.ones(e), (rows, np.arange(e))), shape=(n_rows, e))
    out = agg @ values
    return np.asarray(out)


#: GraphCache fields that depend on the edges and their kinds only, never on the weights:
#: :meth:`PairwiseGraph.with_weights` hands them to the re-weighted graph. Every other
#: field may hold weights (or which edges are hard) and is built anew for new weights.
STRUCTURAL_FIELDS = ("adjacency", "components", "bp_colours", "bp_bfs", "bp_node_orders")


@dataclass(eq=False)
class GraphCache:
    """Structures derived from one (immutable) :class:`PairwiseGraph`, built on first use.

    A graph is solved many times during EM (one E-step per iteration, the factors
    unchanged), so what depends on the graph alone is computed once and kept here, each
    structure in the field named after it and filled by the module that uses it.

    The weight-update contract: a potential whose weights change between E-steps
    (MPCKMeans' distance-scaled penalties) re-weights its graph with
    :meth:`PairwiseGraph.with_weights`, which keeps the fields of
    ``STRUCTURAL_FIELDS`` (functions of the edges and kinds alone), the constrained
    part (re-weighted likewise, with its own caches) and the ``reduction``, whose object
    re-weights itself (``reduction.reweighted(weight)``: the same contraction with the
    new weights, or ``None`` when the hard edges changed), and leaves every other field
    empty.
    A module that caches a structure here puts it in a structural field only if no
    weight (not even which edges are hard) enters it; it reads the weights from the
    graph it is given at every solve.

    Attributes
    ----------
    adjacency : csr_matrix or None
        Symmetric (n, n) adjacency, multi-edges counted (:meth:`PairwiseGraph.neighbors`).
    components : tuple (int, ndarray) or None
        Connected components (:meth:`PairwiseGraph.components`).
    constrained : tuple (ndarray, PairwiseGraph) or None
        The nodes with a factor and the graph among them
        (:meth:`PairwiseGraph.constrained_part`).
    reduction : object or None
        Hard must-link contraction and the active sub-graph
        (:func:`hmrf.inference.base.reduce_problem`).
    icm_blocks : list or None
        Independent sets with their incident factors (:mod:`hmrf.inference.icm`).
    mean_field : object or None
        Colour classes with their factors for mean-field sweeps
        (:mod:`hmrf.inference.meanfield`).
    bp_layout, bp_colours, bp_bfs, bp_dense : object or None
        Belief propagation's message layout, colour classes, breadth-first order and
        dense frustrated part (:mod:`hmrf.inference.bp`).
    bp_node_orders : dict
        Belief propagation's compiled node-order layouts, by order name.
    auto_parts : tuple or None
        The split of the graph by :class:`~hmrf.inference.auto.AutoEngine`'s rule (its
        nodes and sub-graphs per engine).
    """

    adjacency: sp.csr_matrix | None = None
    components: tuple | None = None
    constrained: tuple | None = None
    reduction: object | None = None
    icm_blocks: list | None = None
    mean_field: object | None = None
    bp_layout: object | None = None
    bp_colours: list | None = None
    bp_bfs: np.ndarray | None = None
    bp_dense: tuple | None = None
    bp_node_orders: dict = field(default_factory=dict)
    auto_parts: tuple | None = None

    def reweighted(self, weight) -> GraphCache:
        """The cache of the same edges under the weights ``weight`` (the contract above)."""
        out = GraphCache(**{name: getattr(self, name) for name in STRUCTURAL_FIELDS
                            if name != "bp_node_orders"})
        out.bp_node_orders = dict(self.bp_node_orders)
        if self.constrained is not None:
            nodes, sub = self.constrained
            out.constrained = (nodes, sub.with_weights(weight))  # the part keeps every edge, in order
        if self.reduction is not None:  # an engine's structure that re-weights itself, or None
            out.reduction = self.reduction.reweighted(weight)
        return out


@dataclass(frozen=True, eq=False)
class PairwiseGraph:
    """Pairwise factors of an E-step problem, as flat arrays.

    Parameters
    ----------
    n_nodes : int
        Number of label variables.
    edges : ndarray of shape (m, 2)
        Endpoints ``(a, b)`` of each factor. Potts edges are symmetric; for table
        edges the first endpoint indexes the table's rows.
    weight : ndarray of shape (m,)
        Non-negative edge weights (``inf`` = hard, Potts edges only).
    kind : ndarray of shape (m,)
        ``+1`` Potts must-link, ``-1`` Potts cannot-link, ``0`` table edge.
    tables : ndarray of shape (T, k, k), optional
        Cost tables for table edges.
    table_index : ndarray of shape (m,), optional
        Which table each edge uses (``-1`` for Potts edges).

    Notes
    -----
    Build one with :meth:`from_constraints`, :meth:`potts` or :meth:`from_tables`, or
    combine several with :meth:`concatenate`.
    """

    n_nodes: int
    edges: np.ndarray
    weight: np.ndarray
    kind: np.ndarray
    tables: np.ndarray | None = None
    table_index: np.ndarray | None = None
    cache: GraphCache = field(default_factory=GraphCache, repr=False, compare=False)

    def __post_init__(self):
        n = int(self.n_nodes)
        edges = np.asarray(self.edges, dtype=np.int64).reshape(-1, 2)
        m = edges.shape[0]
        weight = np.asarray(self.weight, dtype=np.float64).reshape(-1)
        kind = np.asarray(self.kind, dtype=np.int8).reshape(-1)
        if weight.shape != (m,) or kind.shape != (m,):
            raise ValueError(f"weight and kind must have shape ({m},); got {weight.shape} and {kind.shape}.")
        if m:
            if edges.min() < 0 or edges.max() >= n:
                b = int(np.flatnonzero((edges < 0).any(1) | (edges >= n).any(1))[0])
                raise ValueError(f"edge #{b} {tuple(edges[b])} has an endpoint outside [0, {n - 1}].")
            if np.any(edges[:, 0] == edges[:, 1]):
                b = int(np.flatnonzero(edges[:, 0] == edges[:, 1])[0])
                raise ValueError(f"edge #{b} joins node {edges[b, 0]} to itself.")
            if np.any(np.isnan(weight)) or np.any(weight < 0):
                b = int(np.flatnonzero(np.isnan(weight) | (weight < 0))[0])
                raise ValueError(f"edge weight #{b} is {weight[b]}; weights must be >= 0.")
            if not np.all(np.isin(kind, (POTTS_ML, POTTS_CL, TABLE))):
                raise ValueError("kind entries must be +1 (must-link), -1 (cannot-link) or 0 (table).")
        tables, tindex = self.tables, self.table_index
        is_table = kind == TABLE
        if is_table.any():
            if tables is None or tindex is None:
                raise ValueError("table edges (kind 0) need tables and table_index.")
            tables = np.asarray(tables, dtype=np.float64)
            if tables.ndim != 3 or tables.shape[1] != tables.shape[2]:
                raise ValueError(f"tables must have shape (T, k, k); got {tables.shape}.")
            if np.any(np.isnan(tables)) or np.any(tables == -np.inf):
                raise ValueError("tables must not contain NaN or -inf.")
            tindex = np.asarray(tindex, dtype=np.int64).reshape(-1)
            if tindex.shape != (m,):
                raise ValueError(f"table_index must have shape ({m},); got {tindex.shape}.")
            ti = tindex[is_table]
            if ti.min() < 0 or ti.max() >= tables.shape[0]:
                raise ValueError("table_index refers to a table that does not exist.")
            if np.any(np.isinf(weight[is_table])):
                raise ValueError("table edges need finite weights; put inf inside the table instead.")
        else:
            tables, tindex = None, None
        for a in (edges, weight, kind) + ((tables, tindex) if tables is not None else ()):
            a.flags.writeable = False
        object.__setattr__(self, "n_nodes", n)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "weight", weight)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "tables", tables)
        object.__setattr__(self, "table_index", tindex)

    # ------------------------------------------------------------- constructors
    @classmethod
    def potts(cls, n_nodes, edges, weight, kind) -> PairwiseGraph:
        """Potts-only graph (kind +1 / -1 per edge)."""
        return cls(n_nodes, edges, weight, kind)

    @classmethod
    def from_constraints(cls, constraints: Constraints, scale=1.0) -> PairwiseGraph:
        """Potts graph of a :class:`~hmrf.Constraints`; edge weight = ``scale * w_ij``.

        ``scale`` is a scalar (the ``w`` of PCKMeans) or one factor per constraint
        (MPCKMeans' distance scaling ``f_ij``).
        """
        with np.errstate(invalid="ignore"):  # 0 * inf: a hard constraint stays hard
            w = np.asarray(scale, dtype=np.float64) * constraints.weight
            w = np.where(np.isinf(constraints.weight), np.inf, w)
        return cls(constraints.n, constraints.pairs, w, constraints.kind)

    @classmethod
    def from_tables(cls, n_nodes, edges, tables, table_index=None, weight=1.0) -> PairwiseGraph:
        """Graph of general (k, k) cost tables.

        Parameters
        ----------
        tables : array of shape (k, k) or (T, k, k)
            One table shared by every edge, or ``T`` tables.
        table_index : array of shape (m,), optional
            Table of each edge; required when ``T > 1`` and ``T != m``; when ``T == m``
            defaults to one table per edge.
        weight : float or array of shape (m,)
        """
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        m = edges.shape[0]
        tables = np.asarray(tables, dtype=np.float64)
        if tables.ndim == 2:
            tables = tables[None]
        if table_index is None:
            if tables.shape[0] == 1:
                table_index = np.zeros(m, dtype=np.int64)
            elif tables.shape[0] == m:
                table_index = np.arange(m)
            else:
                raise ValueError(f"{tables.shape[0]} tables for {m} edges: pass table_index.")
        w = np.broadcast_to(np.asarray(weight, dtype=np.float64), (m,)).copy()
        return cls(n_nodes, edges, w, np.zeros(m, dtype=np.int8), tables, table_index)

    def with_weights(self, weight) -> PairwiseGraph:
        """The same factors with the edge weights ``weight`` (m,), sharing the edges, kinds,
        tables and the structural caches of this graph (:class:`GraphCache`): what a
        potential whose penalties change after every M-step hands the engines, so that
        their layouts are built once per fit. The weights are checked as in the
        constructor; the edges are not checked again."""
        w = np.array(weight, dtype=np.float64).reshape(-1)
        m = self.n_edges
        if w.shape != (m,):
            raise ValueError(f"weight must have shape ({m},); got {w.shape}.")
        if m and (np.any(np.isnan(w)) or np.any(w < 0)):
            b = int(np.flatnonzero(np.isnan(w) | (w < 0))[0])
            raise ValueError(f"edge weight #{b} is {w[b]}; weights must be >= 0.")
        if self.tables is not None and np.any(np.isinf(w[self.kind == TABLE])):
            raise ValueError("table edges need finite weights; put inf inside the table instead.")
        w.flags.writeable = False
        g = object.__new__(PairwiseGraph)
        for name, value in (("n_nodes", self.n_nodes), ("edges", self.edges), ("weight", w),
                            ("kind", self.kind), ("tables", self.tables),
                            ("table_index", self.table_index), ("cache", self.cache.reweighted(w))):
            object.__setattr__(g, name, value)
        return g

    @classmethod
    def empty(cls, n_nodes) -> PairwiseGraph:
        return cls(n_nodes, np.empty((0, 2), dtype=np.int64), np.empty(0), np.empty(0, dtype=np.int8))

    @staticmethod
    def concatenate(graphs) -> PairwiseGraph:
        """Union of the factors of several graphs on the same nodes."""
        graphs = list(graphs)
        n = graphs[0].n_nodes
        if any(g.n_nodes != n for g in graphs):
            raise ValueError("graphs must have the same number of nodes.")
        tabs, tidx, offset = [], [], 0
        for g in graphs:
            if g.tables is not None:
                tabs.append(g.tables)
                tidx.append(np.where(g.kind == TABLE, g.table_index + offset, -1))
                offset += g.tables.shape[0]
            else:
                tidx.append(np.full(g.n_edges, -1))
        return PairwiseGraph(
            n,
            np.vstack([g.edges for g in graphs]),
            np.concatenate([g.weight for g in graphs]),
            np.concatenate([g.kind for g in graphs]),
            np.concatenate(tabs) if tabs else None,
            np.concatenate(tidx) if tabs else None,
        )

    # ---------------------------------------------------------------- properties
    @property
    def n_edges(self) -> int:
        return int(self.edges.shape[0])

    @property
    def is_potts(self) -> bool:
        """True when every factor is a Potts factor (engines' O(k) fast path)."""
        return self.tables is None

    @property
    def n_labels(self) -> int | None:
        """k implied by the tables, or None for a Potts-only graph."""
        return None if self.tables is None else int(self.tables.shape[1])

    @property
    def hard(self) -> np.ndarray:
        """(m,) mask of hard Potts edges."""
        return np.isinf(self.weight)

    def check_labels(self, n_labels: int) -> None:
        """Raise if the tables do not match ``n_labels``."""
        if self.tables is not None and self.tables.shape[1] != n_labels:
            raise ValueError(
                f"the graph's cost tables are {self.tables.shape[1]}x{self.tables.shape[2]} "
                f"but the unary costs have {n_labels} labels."
            )

    def table_costs(self) -> np.ndarray:
        """Per-edge scaled tables ``w_e * T[t_e]`` for table edges, shape (m_table, k, k)."""
        sel = self.kind == TABLE
        w = self.weight[sel][:, None, None]
        t = self.tables[self.table_index[sel]]
        with np.errstate(invalid="ignore"):
            out = w * t
        out[(w == 0) & np.isinf(t)] = 0.0
        return out

    # ------------------------------------------------------------------- energies
    def edge_costs(self, labels) -> np.ndarray:
        """Cost of every factor under ``labels``, shape (m,)."""
        labels = np.asarray(labels)
        a, b = labels[self.edges[:, 0]], labels[self.edges[:, 1]]
        same = a == b
        cost = np.zeros(self.n_edges)
        ml, cl = self.kind == POTTS_ML, self.kind == POTTS_CL
        cost[ml & ~same] = self.weight[ml & ~same]
        cost[cl & same] = self.weight[cl & same]
        tab = self.kind == TABLE
        if tab.any():
            t = self.tables[self.table_index[tab], a[tab], b[tab]]
            w = self.weight[tab]
            with np.errstate(invalid="ignore"):
                cost[tab] = np.where(w == 0, 0.0, w * t)
        return cost

    def pairwise_energy(self, labels) -> float:
        """Sum of the pairwise factors under ``labels``."""
        return float(self.edge_costs(labels).sum()) if self.n_edges else 0.0

    def energy(self, labels, unary) -> float:
        """Total E-step energy ``sum_i U[i, y_i] + sum_e cost_e`` (summed in float64)."""
        labels = np.asarray(labels)
        unary = np.asarray(unary)
        u = float(unary[np.arange(unary.shape[0]), labels].sum(dtype=np.float64))
        return u + self.pairwise_energy(labels)

    def neighbors(self) -> sp.csr_matrix:
        """Unweighted symmetric (n, n) adjacency (multi-edges counted)."""
        if self.cache.adjacency is None:
            e = self.edges
            a = sp.coo_matrix(
                (np.ones(2 * self.n_edges), (np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]])),
                shape=(self.n_nodes, self.n_nodes),
            ).tocsr()
            self.cache.adjacency = a
        return self.cache.adjacency

    def components(self) -> tuple[int, np.ndarray]:
        """Connected components ``(n_components, component of every node)``, cached
        (``scipy.sparse.csgraph.connected_components``; the array is read-only)."""
        if self.cache.components is None:
            n_comp, comp = csgraph.connected_components(self.neighbors(), directed=False)
            comp = comp.astype(np.int64)
            comp.flags.writeable = False
            self.cache.components = (int(n_comp), comp)
        return self.cache.components

    def constrained_part(self) -> tuple[np.ndarray, PairwiseGraph]:
        """The nodes that have at least one factor (sorted) and the graph among them,
        re-indexed; cached. Every other node's label is the argmin of its own costs, so
        this is all an engine needs to see (the EM loop never hands it the rest)."""
        if self.cache.constrained is None:
            if self.n_nodes <= _DENSE_INDEX * self.edges.size:  # a mask of the nodes is cheap
                has = np.zeros(self.n_nodes, dtype=bool)
                has[self.edges.ravel()] = True
                nodes = np.flatnonzero(has)
            else:  # few factors among many nodes (a Dask fit's n): memory in the factors only
                nodes = np.unique(self.edges.ravel()).astype(np.int64)
            nodes.flags.writeable = False
            self.cache.constrained = (nodes, self.subgraph(nodes))
        return self.cache.constrained

    def subgraph(self, nodes) -> PairwiseGraph:
        """Factors among ``nodes`` only, re-indexed to ``0..len(nodes)-1``."""
        nodes = np.asarray(nodes, dtype=np.int64)
        if self.n_nodes <= _DENSE_INDEX * self.edges.size:  # a table of positions is cheap
            pos = np.full(self.n_nodes, -1, dtype=np.int64)
            pos[nodes] = np.arange(nodes.shape[0])
            a, b = pos[self.edges[:, 0]], pos[self.edges[:, 1]]
        else:  # few factors among many nodes: positions by binary search in the sorted nodes
            order = np.argsort(nodes, kind="stable")
            a, b = (_position(nodes, order, self.edges[:, j]) for j in (0, 1))
        keep = (a >= 0) & (b >= 0)
        return PairwiseGraph(
            nodes.shape[0], np.column_stack([a[keep], b[keep]]), self.weight[keep], self.kind[keep],
            self.tables, None if self.table_index is None else self.table_index[keep],
        )

    def __repr__(self) -> str:
        ml = int(np.count_nonzero(self.kind == POTTS_ML))
        cl = int(np.count_nonzero(self.kind == POTTS_CL))
        tb = int(np.count_nonzero(self.kind == TABLE))
        return f"PairwiseGraph(n_nodes={self.n_nodes}, must_link={ml}, cannot_link={cl}, table={tb})"


def as_graph(graph, n_nodes: int | None = None) -> PairwiseGraph:
    """Accept a :class:`PairwiseGraph`, a :class:`~hmrf.Constraints` or ``None``."""
    if graph is None:
        if n_nodes is None:
            raise ValueError("n_nodes is required when graph is None.")
        return PairwiseGraph.empty(n_nodes)
    if isinstance(graph, Constraints):
        g = PairwiseGraph.from_constraints(graph)
    elif isinstance(graph, PairwiseGraph):
        g = graph
    else:
        raise TypeError(
            f"graph must be an hmrf.PairwiseGraph or hmrf.Constraints; got {type(graph).__name__}."
        )
    if n_nodes is not None and g.n_nodes != n_nodes:
        raise ValueError(f"the graph has {g.n_nodes} nodes but the unary costs have {n_nodes} rows.")
    return g


#: ``constrained_part`` and ``subgraph`` index the nodes by an (n_nodes,) table when
#: n_nodes is at most this many times the edge endpoints, else by sorting the endpoints
#: (the same result; memory in the factors, not in n).
_DENSE_INDEX = 8


def _position(nodes, order, points) -> np.ndarray:
    """Position of each of ``points`` in ``nodes`` (``order`` sorts ``nodes``), -1 where
    absent."""
    sorted_nodes = nodes[order]
    at = np.minimum(np.searchsorted(sorted_nodes, points), max(sorted_nodes.shape[0] - 1, 0))
    found = sorted_nodes[at] == points if sorted_nodes.shape[0] else np.zeros(points.shape[0], dtype=bool)
    return np.where(found, order[at] if order.shape[0] else -1, -1).astype(np.int64)

