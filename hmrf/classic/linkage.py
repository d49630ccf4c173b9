"""Agglomerative merging on condensed distance matrices (SciPy's ``pdist`` order):
pairwise distances, cutting a dendrogram, and the constrained merge loop of Davidson &
Ravi (2005)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import pdist

from ..exceptions import ConstraintSearchError, InconsistentConstraintsError, InfeasibleError

if TYPE_CHECKING:
    from typing import Any, Literal

    from numpy.typing import ArrayLike, NDArray

    from .._typing import MatrixLike

__all__ = ["LINKAGES", "METRICS", "condensed_distances", "cut_linkage", "contiguous_labels",
           "constrained_linkage", "repair_dead_end"]

LINKAGES = ("single", "complete", "average")
METRICS = ("euclidean", "sqeuclidean", "cosine", "cityblock")


# ------------------------------------------------------------------ distances
def _row_norms_sq(X) -> np.ndarray:
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def _upper(M) -> np.ndarray:
    """The condensed form (strict upper triangle, row by row) of a square matrix."""
    return M[np.triu_indices(M.shape[0], k=1)]


def condensed_distances(X: MatrixLike, metric: str = "euclidean") -> np.ndarray:
    """Pairwise distances between the rows of ``X`` in condensed form (``"cosine"`` is
    ``1 - cos(x, y)``).

    Dense input goes to :func:`scipy.spatial.distance.pdist`; sparse input is never
    densified (Gram products, or scikit-learn's sparse ``manhattan_distances``).

    Raises
    ------
    ValueError
        A zero row with ``metric="cosine"``.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}; got {metric!r}.")
    n = X.shape[0]
    if metric == "cosine":
        norms = np.sqrt(_row_norms_sq(X))
        if np.any(norms <= 0):
            r = int(np.flatnonzero(norms <= 0)[0])
            raise ValueError(f"row {r} of X is all zeros; cosine distance is undefined for a zero vector.")
    if not sp.issparse(X):
        with np.errstate(invalid="ignore"):
            D = pdist(X, metric=metric)
        return np.maximum(D, 0.0, out=D)
    if metric == "cityblock":
        from sklearn.metrics.pairwise import manhattan_distances

        return _upper(manhattan_distances(X))
    G = X @ X.T
    G = G.toarray() if sp.issparse(G) else np.asarray(G)
    if metric == "cosine":
        inv = 1.0 / norms
        D = 1.0 - _upper(G * inv[:, None] * inv[None, :])
        return np.clip(D, 0.0, 2.0, out=D)
    sq = np.diag(G).copy()
    D = np.maximum(_upper(sq[:, None] + sq[None, :] - 2.0 * G), 0.0)
    del G
    if n and metric == "euclidean":
        np.sqrt(D, out=D)
    return D


# ----------------------------------------------------------- cutting a tree
def contiguous_labels(groups: ArrayLike | None) -> np.ndarray:
    """Relabel ``groups`` to ``0..m-1`` in order of first appearance."""
    groups = np.asarray(groups)
    _, first, inverse = np.unique(groups, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse].astype(np.int64)


def cut_linkage(Z: NDArray[Any], n_leaves: int, n_merges: int) -> np.ndarray:
    """Cluster of every leaf after the first ``n_merges`` rows of the SciPy linkage
    matrix ``Z`` (possibly a forest): the connected components of the applied merges,
    as contiguous labels in order of first leaf."""
    t = np.arange(n_merges)
    kids = np.asarray(Z[:n_merges, :2], dtype=np.int64)
    m = n_leaves + n_merges
    rows = np.r_[kids[:, 0], kids[:, 1]]
    cols = np.r_[n_leaves + t, n_leaves + t]
    graph = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(m, m))
    _, comp = connected_components(graph, directed=False)
    return contiguous_labels(comp[:n_leaves])


# --------------------------------------------------- the constrained merge loop
class _Condensed:
    """Row access to a condensed distance matrix (gather and scatter one row)."""

    def __init__(self, D, n):
        self.D, self.n = D, n
        i = np.arange(n, dtype=np.int64)
        self.start = n * i - i * (i + 1) // 2 - i - 1  # D[start[i] + j] = d(i, j), i < j

    def row(self, r) -> np.ndarray:
        out = np.empty(self.n)
        out[:r] = self.D[self.start[:r] + r]
        out[r] = np.inf
        out[r + 1:] = self.D[self.start[r] + r + 1:self.start[r] + self.n]
        return out

    def set_row(self, r, values) -> None:
        self.D[self.start[:r] + r] = values[:r]
        self.D[self.start[r] + r + 1:self.start[r] + self.n] = values[r + 1:]

    def index(self, i, j) -> np.ndarray:
        i, j = np.minimum(i, j), np.maximum(i, j)
        return self.start[i] + j


def _lance_williams(method, a, b, na, nb) -> np.ndarray:
    """Distance from every cluster to ``A ∪ B`` given its distances ``a`` to A, ``b`` to B.

    Lance & Williams (1967): single ``min``, complete ``max``, average (UPGMA)
    ``(n_A a + n_B b) / (n_A + n_B)``. A forbidden merge is ``+inf`` and stays forbidden
    after any merge: ``max`` and the weighted mean keep ``inf`` by themselves; single
    link is ``min`` unless either side is ``inf``.
    """
    if method == "single":
        out = np.minimum(a, b)
        out[np.isinf(a) | np.isinf(b)] = np.inf
        return out
    if method == "complete":
        return np.maximum(a, b)
    return (na * a + nb * b) / (na + nb)


def _leaf_distances(D, n, method, components, n_leaves):
    """Merge the points of every must-link component first (Lance-Williams updates on
    ``D``, in place); return the condensed matrix between components and their sizes."""
    cd = _Condensed(D, n)
    order = np.argsort(components, kind="stable")
    first = np.r_[0, np.flatnonzero(np.diff(components[order])) + 1]
    rep = order[first]  # smallest point of each component, by component label
    size = np.ones(n)
    is_first = np.zeros(n, dtype=bool)
    is_first[first] = True
    owner = rep[components[order]]
    for p, r in zip(order[~is_first], owner[~is_first]):  # one merge per must-linked point
        merged = _lance_williams(method, cd.row(r), cd.row(p), size[r], size[p])
        cd.set_row(r, merged)
        size[r] += size[p]
    if n_leaves == n and np.array_equal(rep, np.arange(n)):
        return D, size
    leaf = np.empty(n_leaves * (n_leaves - 1) // 2)
    out = _Condensed(leaf, n_leaves)
    for a in range(n_leaves - 1):  # gather one row of representatives at a time
        leaf[out.start[a] + a + 1:out.start[a] + n_leaves] = cd.row(rep[a])[rep[a + 1:]]
    return leaf, size[rep]


def constrained_linkage(D: NDArray[Any], n: int, method: Literal["single", "complete", "average"],
                        components: NDArray[Any] | None = None,
                        cannot_link: NDArray[Any] | None = None) -> tuple[NDArray[Any], NDArray[Any]]:
    """Agglomerative clustering under must-link and cannot-link constraints.

    Davidson & Ravi (2005): the must-link closure components are merged first and
    are the leaves of the hierarchy; then the two closest clusters are merged
    repeatedly, never two clusters joined by a cannot-link, until one cluster remains
    or every remaining pair is joined by a cannot-link (a dead end).

    Parameters
    ----------
    D : ndarray (n(n-1)/2,)
        Condensed distances between the points (overwritten: pass a copy to keep it).
    components : ndarray (n,), optional
        Must-link component ``0..L-1`` of every point (:meth:`hmrf.Constraints.component_labels`).
    cannot_link : ndarray (m, 2), optional

    Returns
    -------
    Z : ndarray (r, 4)
        The merges between the ``L`` components in SciPy's linkage format, sorted by
        height; ``r < L - 1`` when cannot-links end the merging early.
    leaf_sizes : ndarray (L,)

    Raises
    ------
    InconsistentConstraintsError
        A cannot-link joins two points of one must-link component.

    Notes
    -----
    Forbidden merges are ``+inf`` entries, kept ``+inf`` by the Lance-Williams updates,
    so the three linkages stay *reducible* and the nearest-neighbour chain (Murtagh
    1983; Müllner 2011) finds the greedy closest-pair merges in O(L²) time (SciPy's
    ``linkage`` refuses non-finite distances).

    References
    ----------
    Davidson & Ravi (2005), "Agglomerative hierarchical clustering with constraints:
    theoretical and empirical results", PKDD. Müllner (2011), "Modern hierarchical,
    agglomerative clustering algorithms", arXiv:1109.2378 (the NN-chain algorithm).
    """
    if components is None:
        components = np.arange(n)
    components = np.asarray(components, dtype=np.int64)
    n_leaves = int(components.max()) + 1 if n else 0
    cl = np.empty((0, 2), dtype=np.int64) if cannot_link is None else np.asarray(cannot_link, np.int64)
    same = components[cl[:, 0]] == components[cl[:, 1]] if cl.size else np.zeros(0, bool)
    if same.any():
        i, j = (int(v) for v in cl[np.flatnonzero(same)[0]])
        raise InconsistentConstraintsError(
            f"cannot-link ({i}, {j}) joins two points that the must-links put in one group; "
            "no clustering satisfies both.", pair=(i, j))
    leaf, size = _leaf_distances(D, n, method, components, n_leaves)
    cd = _Condensed(leaf, n_leaves)
    if cl.size:
        leaf[cd.index(components[cl[:, 0]], components[cl[:, 1]])] = np.inf
    merges = _nn_chain(cd, method, size.astype(np.float64))
    return _linkage_matrix(merges, n_leaves), size


def _nn_chain(cd, method, size):
    """Nearest-neighbour-chain merging; returns ``[(a, b, height), ...]`` in the order found."""
    L = cd.n
    alive = np.ones(L, dtype=bool)  # not merged away and still mergeable
    n_alive, start = L, 0
    chain, merges = [], []
    while n_alive > 1:
        if not chain:
            while not alive[start]:
                start += 1
            chain.append(start)
        while True:
            x = chain[-1]
            row = cd.row(x)
            row[~alive] = np.inf
            y = int(np.argmin(row))
            dist = row[y]
            if len(chain) > 1 and row[chain[-2]] <= dist:  # prefer the previous link: no cycles
                y, dist = chain[-2], row[chain[-2]]
            if np.isinf(dist):  # x can never merge again (every merge of it is forbidden)
                alive[x] = False
                n_alive -= 1
                chain.clear()
                break
            if len(chain) > 1 and y == chain[-2]:
                del chain[-2:]
                a, b = min(x, y), max(x, y)
                merged = _lance_williams(method, cd.row(a), cd.row(b), size[a], size[b])
                cd.set_row(b, merged)  # the union lives on at b
                size[b] += size[a]
                alive[a] = False
                n_alive -= 1
                merges.append((a, b, float(dist)))
                break
            chain.append(y)
    return merges


def _linkage_matrix(merges, n_leaves) -> np.ndarray:
    """SciPy linkage rows from merges of slot indices, sorted by height (stable), with
    SciPy's cluster numbering (union-find over the sorted merges, as ``scipy``'s
    ``label`` does)."""
    Z = np.empty((len(merges), 4))
    if not merges:
        return Z
    arr = np.asarray(merges, dtype=np.float64)
    arr = arr[np.argsort(arr[:, 2], kind="mergesort")]
    parent = np.arange(2 * n_leaves - 1)
    count = np.ones(2 * n_leaves - 1)

    def find(v):
        root = v
        while parent[root] != root:
            root = parent[root]
        while parent[v] != root:  # path compression
            parent[v], v = root, parent[v]
        return root

    for t, (a, b, h) in enumerate(arr):
        ra, rb = find(int(a)), find(int(b))
        new = n_leaves + t
        parent[ra] = parent[rb] = new
        count[new] = count[ra] + count[rb]
        Z[t] = (min(ra, rb), max(ra, rb), h, count[new])
    return Z


# --------------------------------------------------------------- dead ends
def repair_dead_end(clusters: NDArray[Any], sizes: NDArray[Any], cannot_link: NDArray[Any], n_clusters: int,
                    time_limit: float = 60.0) -> tuple[NDArray[Any], int]:
    """Labels ``0..k-1`` of the leaves that break no cannot-link, moving as few points as
    possible out of the clusters at which greedy merging stopped.

    A mixed-integer program (HiGHS, :func:`scipy.optimize.milp`): every dead-end cluster
    ``C`` takes one label (``y_Cg``), every leaf in a cannot-link one (``x_vg``),
    cannot-linked leaves differ (``x_ug + x_vg <= 1``), every label is used, and the
    points of the leaves that keep their cluster's label (``z_vg <= x_vg, z_vg <=
    y_Cg``) are maximised; other leaves stay with their cluster. Cluster ``C`` takes one
    of the labels ``0..C`` (no relabelling symmetry). Deciding feasibility is graph
    colouring, NP-complete (Davidson & Ravi 2005).

    Parameters
    ----------
    clusters : ndarray (L,)
        Dead-end cluster ``0..s-1`` of every leaf (``s > k``).
    sizes : ndarray (L,)
        Points in every leaf.
    cannot_link : ndarray (m, 2)
        Cannot-linked leaf pairs (distinct leaves).

    Returns
    -------
    labels : ndarray (L,)
    moved : int
        Points whose leaf left its cluster's label.

    Raises
    ------
    InfeasibleError
        HiGHS proved the cannot-link graph of the leaves is not ``k``-colourable.
    ConstraintSearchError
        The time limit passed before a labelling was found or infeasibility proved.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    clusters = np.asarray(clusters, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.float64)
    cl = np.unique(np.sort(np.asarray(cannot_link, dtype=np.int64), axis=1), axis=0)
    k, s = int(n_clusters), int(clusters.max()) + 1
    V, local = np.unique(cl, return_inverse=True)  # the leaves in a cannot-link
    local = local.reshape(cl.shape)
    nv, m = V.size, cl.shape[0]
    # variables: x (nv, k) | y (s, k) | z (nv, k), row-major blocks
    x0, y0, z0 = 0, nv * k, nv * k + s * k
    n_var = z0 + nv * k
    g = np.arange(k)
    rows, cols, vals, lo, hi = [], [], [], [], []

    def add(r_idx, c_idx, v, low, high):
        rows.append(np.asarray(r_idx).ravel())
        cols.append(np.asarray(c_idx).ravel())
        vals.append(np.broadcast_to(v, np.shape(r_idx)).ravel().astype(float))
        lo.append(low)
        hi.append(high)

    r = 0
    # one label per constrained leaf and per cluster
    add(np.repeat(np.arange(nv) + r, k), x0 + np.arange(nv * k), 1.0, np.ones(nv), np.ones(nv))
    r += nv
    add(np.repeat(np.arange(s) + r, k), y0 + np.arange(s * k), 1.0, np.ones(s), np.ones(s))
    r += s
    # every label used by some cluster
    add(np.tile(np.arange(k) + r, s), y0 + np.arange(s * k), 1.0, np.ones(k), np.full(k, np.inf))
    r += k
    # cannot-linked leaves differ, label by label
    ci = r + np.arange(m)[:, None] * k + g[None, :]
    xu, xv = x0 + local[:, 0, None] * k + g, x0 + local[:, 1, None] * k + g
    add(np.stack([ci, ci], axis=-1), np.stack([xu, xv], axis=-1), 1.0, np.full(m * k, -np.inf),
        np.ones(m * k))
    r += m * k
    # z <= x and z <= y of the leaf's cluster
    zi = z0 + np.arange(nv * k)
    xi = x0 + np.arange(nv * k)
    yi = (y0 + clusters[V][:, None] * k + g[None, :]).ravel()
    for other in (xi, yi):
        ri = r + np.arange(nv * k)
        add(np.stack([ri, ri], axis=-1), np.stack([zi, other], axis=-1), np.array([1.0, -1.0]),
            np.full(nv * k, -np.inf), np.zeros(nv * k))
        r += nv * k
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, n_var))
    cost = np.zeros(n_var)
    cost[z0:] = -np.repeat(sizes[V], k)
    upper = np.ones(n_var)
    yb = upper[y0:z0].reshape(s, k)
    yb[np.arange(s)[:, None] < g[None, :]] = 0.0  # cluster C takes one of the labels 0..C
    integrality = np.r_[np.ones(z0), np.zeros(nv * k)]
    res = milp(cost, integrality=integrality, bounds=Bounds(np.zeros(n_var), upper),
               constraints=LinearConstraint(A, np.concatenate(lo), np.concatenate(hi)),
               options={"time_limit": float(time_limit), "disp": False})
    if res.status == 2:
        raise InfeasibleError(
            f"no {k} clusters keep every cannot-link: the cannot-links join the must-link groups "
            f"into a graph that cannot be coloured with {k} colours (proved by HiGHS). Use more "
            "clusters or drop cannot-links.")
    if res.x is None:
        raise ConstraintSearchError(
            f"constrained HAC stopped at {s} clusters, above n_clusters={k}, and the exact repair "
            f"found no {k}-cluster labelling that keeps every cannot-link within time_limit="
            f"{time_limit:g} s, nor proved there is none: the constraints may be satisfiable. "
            "Raise time_limit, or cluster with fewer cannot-links or more clusters.")
    sol = np.round(res.x).astype(np.int64)
    cluster_label = sol[y0:z0].reshape(s, k).argmax(axis=1)
    labels = cluster_label[clusters]
    leaf_label = sol[x0:y0].reshape(nv, k).argmax(axis=1)
    moved = float(sizes[V][leaf_label != labels[V]].sum())
    labels[V] = leaf_label
    return labels, int(round(moved))
