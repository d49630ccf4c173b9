"""The E-step problem as flat arrays: what inference engines see.

An E-step of HMRF-KMeans (Basu 2005, §4.4.4 and Appendix A) is a discrete MAP
problem over hidden labels ``y in {0..k-1}^n``::

    E(y) = sum_i U[i, y_i] + sum_e cost_e(y_{a_e}, y_{b_e})

with unary costs ``U`` (n, k) from the emission family and one pairwise factor per
edge ``e = (a_e, b_e)``, stored as flat arrays by :class:`PairwiseGraph`:

* **Potts edges** (``kind = +1`` must-link, ``-1`` cannot-link): the generalised
  Potts potential of eq. 4.4, ``w_e [y_a != y_b]`` or ``w_e [y_a == y_b]``;
  ``w_e = inf`` makes the edge hard.
* **Table edges** (``kind = 0``): ``w_e * T[t_e][y_a, y_b]`` with tables that edges may
  share; ``w_e`` is finite, a table may hold ``inf`` for forbidden label pairs, and
  ``0 * inf`` is 0.

Engines never see the data ``X`` or the emission parameters: only ``U`` and this graph.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .constraints import CANNOT_LINK, MUST_LINK, Constraints

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, NDArray

__all__ = ["PairwiseGraph", "GraphCache", "CacheKey", "EdgeClasses", "as_graph", "segment_sum",
           "independent_sets", "best_per_component"]

POTTS_ML = MUST_LINK
POTTS_CL = CANNOT_LINK
TABLE = 0

T = TypeVar("T")


def segment_matrix(rows: np.ndarray, n_rows: int) -> sp.csr_matrix:
    """The (n_rows, e) 0/1 matrix whose product with values (e,) or (e, k) sums them into
    the buckets ``rows``; kept by callers that sum over the same buckets repeatedly."""
    e = rows.shape[0]
    return sp.csr_matrix((np.ones(e), (rows, np.arange(e))), shape=(n_rows, e))


def segment_sum(rows: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """Sum ``values`` (e,) or (e, k) into ``n_rows`` buckets given by ``rows`` (a sparse
    product: much faster than ``np.add.at`` for 2-D values)."""
    return np.asarray(segment_matrix(rows, n_rows) @ values)


def independent_sets(n_nodes: int, edges: np.ndarray,
                     rng: np.random.Generator | None = None) -> list[np.ndarray]:
    """Partition nodes into independent sets (a proper colouring), Luby-style.

    Every round selects the remaining nodes whose priority beats all their remaining
    neighbours' (Luby 1986, SIAM J. Computing 15(4)). Without ``rng`` the priorities are
    fixed (higher degree first, ties in a fixed pseudo-random order: index order would
    take one anti-diagonal of a grid per round), so the colouring is a function of the
    graph alone; with ``rng`` they are a random permutation. Returns the sets in the
    order the rounds selected them.
    """
    src = np.r_[edges[:, 0], edges[:, 1]]
    dst = np.r_[edges[:, 1], edges[:, 0]]
    if rng is None:
        degree = np.bincount(src, minlength=n_nodes)
        ties = np.random.default_rng(0).permutation(n_nodes)  # fixed: a function of n alone
        prio = np.empty(n_nodes, dtype=np.int64)
        prio[np.lexsort((ties, degree))] = np.arange(n_nodes)
    else:
        prio = rng.permutation(n_nodes)
    remaining = np.ones(n_nodes, dtype=bool)
    sets = []
    while remaining.any():
        live = remaining[src] & remaining[dst]
        best_neighbor = np.full(n_nodes, -1, dtype=np.int64)
        np.maximum.at(best_neighbor, src[live], prio[dst[live]])
        chosen = remaining & (prio > best_neighbor)
        sets.append(np.flatnonzero(chosen))
        remaining &= ~chosen
        keep = remaining[src] & remaining[dst]  # drop edges that can no longer matter
        src, dst = src[keep], dst[keep]
    return sets


def best_per_component(unary: NDArray[Any], graph: PairwiseGraph, candidates: NDArray[Any],
                       comp: NDArray[Any] | None = None,
                       n_comp: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Combine candidate labellings (R, n) component by component, keeping the cheapest
    part: ``(labels (n,), choice (n_comp,))``.

    The E-step energy is a sum over connected components of
    ``E_c(y) = sum_{i in c} U[i, y_i] + sum_{e in c} cost_e(y)``, so the result is no
    worse than the best single candidate. ``comp``, ``n_comp``: the components, by
    default ``graph.components()``.
    """
    if comp is None:
        n_comp, comp = graph.components()
    cand = np.asarray(candidates, dtype=np.int64)
    n = cand.shape[1]
    cost = _component_energies(unary, graph, cand, comp, n_comp)  # (n_comp, R)
    choice = np.argmin(cost, axis=1)
    return cand[choice[comp], np.arange(n)], choice


def _component_energies(unary, graph, cand, comp, n_comp) -> np.ndarray:
    """``E_c`` of every candidate (R, n) in every component: shape (n_comp, R)."""
    n = cand.shape[1]
    node_cost = unary[np.arange(n)[None, :], cand]  # (R, n)
    cost = segment_sum(comp, node_cost.T, n_comp)  # (n_comp, R)
    if graph.n_edges:
        edge_cost = np.stack([graph.edge_costs(c) for c in cand], axis=1)  # (m, R)
        cost = cost + segment_sum(comp[graph.edges[:, 0]], edge_cost, n_comp)
    return cost


class EdgeClasses(NamedTuple):
    """The classes of a graph's factors, as read-only (m,) masks
    (:meth:`PairwiseGraph.edge_classes`).

    A Potts edge is *hard* when its weight is ``inf`` and *soft* when it is finite and
    positive; a zero-weight Potts edge is neither (it costs nothing).
    """

    must: np.ndarray         #: Potts must-links (kind +1), any weight
    cannot: np.ndarray       #: Potts cannot-links (kind -1), any weight
    table: np.ndarray        #: table edges (kind 0)
    hard: np.ndarray         #: Potts edges of weight inf
    soft_must: np.ndarray    #: must-links of finite positive weight
    soft_cannot: np.ndarray  #: cannot-links of finite positive weight
    hard_must: np.ndarray    #: must-links of weight inf
    hard_cannot: np.ndarray  #: cannot-links of weight inf

    def split(self) -> tuple[np.ndarray, ...]:
        """``(soft_must, soft_cannot, hard_must, hard_cannot, table)``: every factor with
        a cost in exactly one class (the terms of the Kleinberg-Tardos program, Basu
        2005, Appendix A.2), zero-weight Potts edges in none."""
        return self.soft_must, self.soft_cannot, self.hard_must, self.hard_cannot, self.table

    @classmethod
    def of(cls, kind: np.ndarray, weight: np.ndarray) -> EdgeClasses:
        must, cannot = kind == POTTS_ML, kind == POTTS_CL
        inf = np.isinf(weight)
        soft = ~inf & (weight > 0)
        out = cls(must, cannot, kind == TABLE, inf & (must | cannot), must & soft, cannot & soft,
                  must & inf, cannot & inf)
        for a in out:
            a.flags.writeable = False
        return out


#: What happens to a cache entry when its graph is re-weighted
#: (:meth:`PairwiseGraph.with_weights`): ``"keep"`` it (a function of the edges and their
#: kinds alone), ``"drop"`` it (it holds weights, or which edges are hard), or a function
#: ``(entry, weight) -> entry | None`` that re-weights it (``None``: build anew).
Reweight = Literal["keep", "drop"] | Callable[[Any, np.ndarray], Any]


@dataclass(frozen=True, eq=False)
class CacheKey:
    """The key of one kind of entry in a :class:`GraphCache`, with its re-weighting rule.

    A module declares its keys at module level and reads its entry with
    ``graph.cache.get(KEY, build)``; keys compare by identity, so two modules never
    share an entry by accident.

    Parameters
    ----------
    name : str
        What the entry is (``"icm.blocks"``), for ``repr`` and error messages.
    on_reweight : {"keep", "drop"} or callable, default="drop"
        The entry under new weights (see ``Reweight``). ``"keep"`` only if no weight,
        not even which edges are hard, enters the entry.
    """

    name: str
    on_reweight: Reweight = "drop"

    def __post_init__(self):
        if not (self.on_reweight in ("keep", "drop") or callable(self.on_reweight)):
            raise ValueError(f"on_reweight must be 'keep', 'drop' or a callable; got {self.on_reweight!r}.")

    def __repr__(self) -> str:
        return f"CacheKey({self.name!r})"


class GraphCache:
    """Structures derived from one (immutable) :class:`PairwiseGraph`, built on first use.

    A graph is solved once per EM iteration with its factors unchanged, so what depends
    on it alone is kept here, each entry under the :class:`CacheKey` of the module that
    builds it. A graph re-weighted by :meth:`PairwiseGraph.with_weights` gets the
    :meth:`reweighted` cache: every entry as its key's ``on_reweight`` says.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[CacheKey, object] = {}

    def get(self, key: CacheKey, build: Callable[[], T]) -> T:
        """The entry under ``key``, built by ``build()`` and stored on first use."""
        try:
            return self._entries[key]
        except KeyError:
            value = self._entries[key] = build()
            return value

    def peek(self, key: CacheKey) -> object | None:
        """The entry under ``key`` if it was built, else ``None`` (nothing is built)."""
        return self._entries.get(key)

    def keys(self) -> list[CacheKey]:
        """The keys of the entries built so far."""
        return list(self._entries)

    def reweighted(self, weight: float | NDArray[np.floating]) -> GraphCache:
        """The cache of the same edges under the weights ``weight`` (the contract above)."""
        out = GraphCache()
        for key, value in self._entries.items():
            rule = key.on_reweight
            if rule == "keep":
                out._entries[key] = value
            elif rule != "drop":
                new = rule(value, weight)
                if new is not None:
                    out._entries[key] = new
        return out

    def __repr__(self) -> str:
        return f"GraphCache({', '.join(k.name for k in self._entries)})"


ADJACENCY = CacheKey("graph.adjacency", "keep")
COMPONENTS = CacheKey("graph.components", "keep")
INDEPENDENT_SETS = CacheKey("graph.independent_sets", "keep")
EDGE_CLASSES = CacheKey("graph.edge_classes")
#: the part keeps every edge, in order: it is re-weighted with the same weights
CONSTRAINED = CacheKey("graph.constrained", lambda part, weight: (part[0], part[1].with_weights(weight)))


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
    combine several with :meth:`concatenate`. What engines derive from the graph is
    computed here once and cached (:class:`GraphCache`).
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
        else:
            tables, tindex = None, None
        _check_weights(weight, is_table)
        for a in (edges, kind) + ((tables, tindex) if tables is not None else ()):
            a.flags.writeable = False
        for name, value in (("n_nodes", n), ("edges", edges), ("weight", weight), ("kind", kind),
                            ("tables", tables), ("table_index", tindex)):
            object.__setattr__(self, name, value)

    # ------------------------------------------------------------- constructors
    @classmethod
    def potts(cls, n_nodes: int, edges: ArrayLike, weight: float | ArrayLike,
              kind: int | ArrayLike) -> PairwiseGraph:
        """Potts-only graph: ``weight`` and ``kind`` (+1 must-link, -1 cannot-link) are one
        value per edge, or one value for every edge.

        Examples
        --------
        >>> from hmrf import PairwiseGraph
        >>> PairwiseGraph.potts(3, [(0, 1), (1, 2)], 1.0, 1).pairwise_energy([0, 0, 1])
        1.0
        """
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        m = edges.shape[0]
        weight = np.asarray(weight, dtype=np.float64)
        kind = np.asarray(kind, dtype=np.int8)
        return cls(n_nodes, edges, np.full(m, weight) if weight.ndim == 0 else weight,
                   np.full(m, kind) if kind.ndim == 0 else kind)

    @classmethod
    def from_constraints(cls, constraints: Constraints,
                         scale: float | NDArray[np.floating] = 1.0) -> PairwiseGraph:
        """Potts graph of a :class:`~hmrf.Constraints`; edge weight = ``scale * w_ij``,
        ``scale`` a scalar or one factor per constraint."""
        with np.errstate(invalid="ignore"):  # 0 * inf: a hard constraint stays hard,
            w = np.asarray(scale, dtype=np.float64) * constraints.weight  # a free one free
            w = np.where(np.isinf(constraints.weight), np.inf, np.where(constraints.weight == 0, 0.0, w))
        return cls(constraints.n, constraints.pairs, w, constraints.kind)

    @classmethod
    def from_tables(cls, n_nodes: int, edges: NDArray[np.intp], tables: ArrayLike,
                    table_index: NDArray[Any] | None = None,
                    weight: float | ArrayLike = 1.0) -> PairwiseGraph:
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

    def with_weights(self, weight: NDArray[np.float64]) -> PairwiseGraph:
        """The same factors with the edge weights ``weight`` (m,), sharing the edges, kinds,
        tables and the structural caches of this graph (:class:`GraphCache`), so that a
        potential re-weighted after every M-step has the engines' layouts built once per
        fit. Only the weights are checked."""
        w = np.array(weight, dtype=np.float64).reshape(-1)
        m = self.n_edges
        if w.shape != (m,):
            raise ValueError(f"weight must have shape ({m},); got {w.shape}.")
        _check_weights(w, self.kind == TABLE)
        g = object.__new__(PairwiseGraph)
        for name, value in (("n_nodes", self.n_nodes), ("edges", self.edges), ("weight", w),
                            ("kind", self.kind), ("tables", self.tables),
                            ("table_index", self.table_index), ("cache", self.cache.reweighted(w))):
            object.__setattr__(g, name, value)
        return g

    @classmethod
    def empty(cls, n_nodes: int) -> PairwiseGraph:
        return cls(n_nodes, np.empty((0, 2), dtype=np.int64), np.empty(0), np.empty(0, dtype=np.int8))

    @staticmethod
    def concatenate(graphs: Sequence[PairwiseGraph]) -> PairwiseGraph:
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
        """(m,) mask of hard Potts edges (read-only; :meth:`edge_classes`)."""
        return self.edge_classes().hard

    def edge_classes(self) -> EdgeClasses:
        """The classes of the factors (must / cannot / table, hard / soft), cached: every
        engine reads them here, so that "hard" and "soft" mean one thing everywhere."""
        return self.cache.get(EDGE_CLASSES, lambda: EdgeClasses.of(self.kind, self.weight))

    def independent_sets(self) -> list[np.ndarray]:
        """The nodes in independent sets (:func:`independent_sets`, fixed priorities),
        cached: a proper colouring, each set a class of nodes updated together by ICM
        and mean-field."""
        return self.cache.get(INDEPENDENT_SETS, lambda: independent_sets(self.n_nodes, self.edges))

    def check_labels(self, n_labels: int) -> None:
        """Raise if the tables do not match ``n_labels``."""
        if self.tables is not None and self.tables.shape[1] != n_labels:
            raise ValueError(
                f"the graph's cost tables are {self.tables.shape[1]}x{self.tables.shape[2]} "
                f"but the unary costs have {n_labels} labels."
            )

    def table_costs(self) -> np.ndarray:
        """Per-edge scaled tables ``w_e * T[t_e]`` for table edges, shape (m_table, k, k);
        shape (0, 0, 0) for a Potts-only graph, which has none (and no k of its own)."""
        if self.tables is None:
            return np.empty((0, 0, 0))
        sel = self.edge_classes().table
        w = self.weight[sel][:, None, None]
        t = self.tables[self.table_index[sel]]
        with np.errstate(invalid="ignore"):
            out = w * t
        out[(w == 0) & np.isinf(t)] = 0.0
        return out

    # ------------------------------------------------------------------- energies
    def edge_costs(self, labels: NDArray[np.intp]) -> np.ndarray:
        """Cost of every factor under ``labels``, shape (m,)."""
        labels = np.asarray(labels)
        a, b = labels[self.edges[:, 0]], labels[self.edges[:, 1]]
        same = a == b
        cost = np.zeros(self.n_edges)
        cls = self.edge_classes()
        cost[cls.must & ~same] = self.weight[cls.must & ~same]
        cost[cls.cannot & same] = self.weight[cls.cannot & same]
        tab = cls.table
        if tab.any():
            t = self.tables[self.table_index[tab], a[tab], b[tab]]
            w = self.weight[tab]
            with np.errstate(invalid="ignore"):
                cost[tab] = np.where(w == 0, 0.0, w * t)
        return cost

    def pairwise_energy(self, labels: NDArray[np.intp]) -> float:
        """Sum of the pairwise factors under ``labels``."""
        return float(self.edge_costs(labels).sum()) if self.n_edges else 0.0

    def energy(self, labels: NDArray[np.intp], unary: NDArray[np.floating]) -> float:
        """Total E-step energy ``sum_i U[i, y_i] + sum_e cost_e`` (summed in float64)."""
        labels = np.asarray(labels)
        unary = np.asarray(unary)
        u = float(unary[np.arange(unary.shape[0]), labels].sum(dtype=np.float64))
        return u + self.pairwise_energy(labels)

    def component_energies(self, unary: NDArray[np.floating], labels: NDArray[np.intp]) -> np.ndarray:
        """``E_c(y) = sum_{i in c} U[i, y_i] + sum_{e in c} cost_e(y)`` of every connected
        component ``c`` (:meth:`components`): shape (n_comp,) for one labelling (n,),
        (n_comp, R) for R labellings (R, n). Their sum is :meth:`energy`."""
        n_comp, comp = self.components()
        labels = np.asarray(labels, dtype=np.int64)
        cost = _component_energies(np.asarray(unary), self, np.atleast_2d(labels), comp, n_comp)
        return cost[:, 0] if labels.ndim == 1 else cost

    def best_per_component(self, unary: NDArray[np.floating],
                           candidates: Sequence[NDArray[np.intp]]) -> tuple[np.ndarray, np.ndarray]:
        """In every connected component, the candidate labelling of lowest energy there
        (:func:`best_per_component`): ``(labels (n,), choice (n_comp,))``."""
        return best_per_component(unary, self, candidates)

    def neighbors(self) -> sp.csr_matrix:
        """Unweighted symmetric (n, n) adjacency (multi-edges counted)."""
        e = self.edges
        return self.cache.get(ADJACENCY, lambda: sp.coo_matrix(
            (np.ones(2 * self.n_edges), (np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]])),
            shape=(self.n_nodes, self.n_nodes),
        ).tocsr())

    def components(self) -> tuple[int, np.ndarray]:
        """Connected components ``(n_components, component of every node)``, cached
        (``scipy.sparse.csgraph.connected_components``; the array is read-only)."""
        def build():
            n_comp, comp = csgraph.connected_components(self.neighbors(), directed=False)
            comp = comp.astype(np.int64)
            comp.flags.writeable = False
            return int(n_comp), comp

        return self.cache.get(COMPONENTS, build)

    def constrained_part(self) -> tuple[np.ndarray, PairwiseGraph]:
        """The nodes that have at least one factor (sorted) and the graph among them,
        re-indexed; cached. Every other node's label is the argmin of its own costs, so
        this is all an engine needs to see (the EM loop never hands it the rest)."""
        def build():
            if self.n_nodes <= _DENSE_INDEX * self.edges.size:  # a mask of the nodes is cheap
                has = np.zeros(self.n_nodes, dtype=bool)
                has[self.edges.ravel()] = True
                nodes = np.flatnonzero(has)
            else:  # few factors among many nodes (a Dask fit's n): memory in the factors only
                nodes = np.unique(self.edges.ravel()).astype(np.int64)
            nodes.flags.writeable = False
            return nodes, self.subgraph(nodes)

        return self.cache.get(CONSTRAINED, build)

    def subgraph(self, nodes: NDArray[np.intp]) -> PairwiseGraph:
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
        ml, cl, tb = (int(np.count_nonzero(c)) for c in self.edge_classes()[:3])
        return f"PairwiseGraph(n_nodes={self.n_nodes}, must_link={ml}, cannot_link={cl}, table={tb})"


def as_graph(graph: PairwiseGraph, n_nodes: int | None = None) -> PairwiseGraph:
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


def _check_weights(weight, is_table) -> None:
    """Edge weights are ``>= 0``, finite on table edges; read-only once checked."""
    if weight.size and (np.any(np.isnan(weight)) or np.any(weight < 0)):
        b = int(np.flatnonzero(np.isnan(weight) | (weight < 0))[0])
        raise ValueError(f"edge weight #{b} is {weight[b]}; weights must be >= 0.")
    if np.any(np.isinf(weight[is_table])):
        raise ValueError("table edges need finite weights; put inf inside the table instead.")
    weight.flags.writeable = False


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

