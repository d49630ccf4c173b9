"""Initial cluster centres from constraints and unlabelled data.

* ``"neighborhoods"`` — Basu (2005), §4.4.3: neighbourhoods are the components of the
  must-link closure (points that only appear in cannot-links count as one-point
  neighbourhoods, so the skeletons built by active learning, ch. 5, are used).
  λ = k: their centroids; λ < k: their centroids plus ``k - λ`` random perturbations of
  the global centroid (Dhillon et al. 2001); λ > k: weighted farthest-first traversal
  over the neighbourhood centroids, weight = neighbourhood size.
* ``"pckmeans"`` — Basu, Bilenko & Mooney (2004), §3.1: must-link neighbourhoods
  (two or more points); λ ≥ k: centroids of the k largest; λ < k: their centroids,
  then a point cannot-linked to every neighbourhood if one exists, then perturbations
  of the global centroid.
* ``"pckmeans++"`` — k-means++ seeding of the data (Arthur & Vassilvitskii 2007) in which
  drawing a point of a must-link neighbourhood (two or more points, as ``"pckmeans"``)
  seeds the centroid of the whole neighbourhood (size-weighted k-means++ over the
  centroids where the neighbourhoods cover the data). A neighbourhood seeds at most one
  centre (a further draw from it seeds the point drawn). No neighbourhood is a seed
  because it exists (two neighbourhoods of one class would lock EM into a poor
  optimum), and the draws differ between runs, so that ``n_init`` runs let the
  objective choose.
* ``"k-means++"`` — neighbourhood centroids as above, remaining centres by k-means++
  seeding (Arthur & Vassilvitskii 2007) under the family's divergence.
* ``"buckshot"`` — Buckshot (Cutting et al. 1992): group-average HAC on a random sample
  of ``√(k n)`` points, the centroids of its k clusters
  (:func:`hmrf.classic.buckshot_centers`, under the family's divergence); the
  constraints are not used.
* ``"random"`` — k distinct data points.

Distances are the emission family's ``divergence``. Memory is linear in the number of
points and constraints whatever the number of neighbourhoods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ._validation import check_random_state
from .backend import first_lowest, kmeanspp_candidates, rows_of
from .emissions.base import EmissionFamily

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import NDArray
    from scipy import sparse

    from ._typing import MatrixLike, RandomLike
    from .constraints import Constraints

__all__ = ["initial_centers", "weighted_farthest_first", "INIT_METHODS",
           "centers_from_constraints", "kmeanspp_candidates", "neighborhood_representatives",
           "distinct_representatives", "seeded_centers"]

INIT_METHODS = ("pckmeans++", "neighborhoods", "pckmeans", "k-means++", "buckshot", "random")

#: Size of the perturbation of the global centroid, as a fraction of the way to a
#: random data point (convex combinations stay inside every family's domain).
PERTURBATION = 0.1


def _rows(X, idx) -> np.ndarray:
    sub = X[idx]
    return sub.toarray() if sp.issparse(sub) else np.asarray(sub, dtype=np.float64)


def _global_mean(X) -> np.ndarray:
    return np.asarray(X.mean(axis=0), dtype=np.float64).ravel()


def _group_centroids(X, members, which, n_groups):
    """Means of the rows ``members`` grouped by ``which`` (n_groups, d) and group sizes
    (:meth:`hmrf.backend.RowBackend.group_centroids`)."""
    if n_groups == 0:
        return np.empty((0, X.shape[1])), np.empty(0)
    return rows_of(X).group_centroids(members, which, n_groups)


def _neighbourhood_groups(constraints: Constraints | None, include_singletons: bool):
    """Neighbourhoods as ``(members, group of each member, number of groups)``
    (:meth:`~hmrf.Constraints.neighborhood_layout`; none without constraints)."""
    if constraints is None:
        none = np.empty(0, dtype=np.int64)
        return none, none, 0
    members, _, sizes = constraints.neighborhood_layout(include_singletons=include_singletons)
    return members, np.repeat(np.arange(sizes.size), sizes), int(sizes.size)


def _generator(rng) -> np.random.Generator:
    """``rng`` itself when it is a Generator (a fit's, passed down as is); else a Generator
    seeded from it as the estimators' ``random_state`` is."""
    return rng if isinstance(rng, np.random.Generator) else check_random_state(rng, "rng")


def weighted_farthest_first(centroids: NDArray[Any], sizes: NDArray[Any], k: int, family: EmissionFamily,
                            rng: np.random.Generator | None = None) -> np.ndarray:
    """Indices of ``k`` neighbourhoods by weighted farthest-first traversal.

    Starts from the largest neighbourhood; each next pick maximises
    ``size_p · min_{q chosen} D(c_p, c_q)`` (Basu 2005, §4.4.3; Hochbaum & Shmoys 1985).
    Ties go to the lower index, so the result is deterministic.
    """
    lam = centroids.shape[0]
    chosen = [int(np.argmax(sizes))]
    mind = family.divergence(centroids, centroids[chosen])[:, 0]
    for _ in range(1, k):
        score = sizes * mind
        score[chosen] = -np.inf
        nxt = int(np.argmax(score))
        chosen.append(nxt)
        mind = np.minimum(mind, family.divergence(centroids, centroids[[nxt]])[:, 0])
        if len(chosen) == lam:
            break
    return np.asarray(chosen)


def _perturbed_global(X, m, rng) -> np.ndarray:
    picks = rng.choice(X.shape[0], size=m, replace=m > X.shape[0])
    g = _global_mean(X)
    return (1.0 - PERTURBATION) * g[None, :] + PERTURBATION * _rows(X, picks)


def _in_domain(X, centers, family) -> np.ndarray:
    """Centres as the family uses them (unit norm for cosine, smoothed for KL, ...)."""
    return family.init_params(X, centers).centers


def _kmeanspp(X, m, centers, family, rng, represent=None) -> np.ndarray:
    """``m`` more centres by greedy k-means++ seeding given existing ``centers``
    (Arthur & Vassilvitskii 2007, with ``2 + log k`` candidates per step as
    scikit-learn does), on the rows wherever they are (:mod:`hmrf.backend`).
    ``represent(rows) -> (len(rows), d)`` gives the centre a drawn row seeds (default:
    the row itself)."""
    n = X.shape[0]
    represent = (lambda rows: _rows(X, rows)) if represent is None else represent
    if centers.shape[0] == 0:
        centers = represent([int(rng.integers(n))])
        m -= 1
    closest = rows_of(X).min_divergence(family, _in_domain(X, centers, family))
    trials = 2 + int(np.log(m + centers.shape[0]))
    picked = []
    for _ in range(m):  # one centre per step
        cand = closest.draw(trials, rng)
        cand_rows = distinct_representatives(X, cand, represent(cand), [centers, *picked])
        cand_centers = _in_domain(X, cand_rows, family)
        best = first_lowest(closest.potentials(cand_centers))
        if best is not None:
            closest = closest.with_centre(cand_centers, best)
        picked.append(cand_rows[0 if best is None else best][None, :])
    return np.vstack([centers, *picked])


def distinct_representatives(X: MatrixLike, rows: NDArray[np.intp], represented: Any,
                             chosen: Any) -> np.ndarray:
    """``represented`` (the centres ``rows`` seed), with the rows themselves where the
    centre repeats one already ``chosen`` (a list of (c, d) arrays): a neighbourhood
    seeds at most one centre, and a further draw from it seeds the point drawn."""
    taken = np.vstack(chosen)
    dup = np.array([bool(np.any(np.all(taken == r, axis=1))) for r in represented])  # a few trials
    if dup.any():
        represented = represented.copy()
        represented[dup] = _rows(X, np.asarray(rows)[dup])
    return represented


def neighborhood_representatives(X: MatrixLike, members: NDArray[np.intp], group: NDArray[np.intp],
                                 centroids: NDArray[np.floating],
                                 ) -> Callable[[NDArray[np.intp]], NDArray[np.floating]]:
    """``represent(rows) -> (len(rows), d)``: each row itself, or for a member of a
    neighbourhood (``members`` with their ``group``) that neighbourhood's centroid."""
    order = np.argsort(members, kind="stable")
    sorted_members, sorted_group = members[order], group[order]

    def represent(rows):
        rows = np.asarray(rows, dtype=np.int64)
        out = _rows(X, rows)
        if sorted_members.size:
            pos = np.minimum(np.searchsorted(sorted_members, rows), sorted_members.size - 1)
            inside = sorted_members[pos] == rows
            out[inside] = centroids[sorted_group[pos[inside]]]
        return out

    return represent


def _cannot_linked_to_all(constraints: Constraints, members, group, n_groups) -> int | None:
    """A point (outside the neighbourhoods) with a cannot-link into every neighbourhood."""
    if n_groups == 0:
        return None
    which = np.full(constraints.n, -1, dtype=np.int64)
    which[members] = group
    cl = constraints.cannot_link
    if cl.shape[0] == 0:
        return None
    pts = np.r_[cl[:, 0], cl[:, 1]]
    other = which[np.r_[cl[:, 1], cl[:, 0]]]
    ok = (other >= 0) & (which[pts] < 0)
    if not ok.any():
        return None
    pairs = np.unique(np.column_stack([pts[ok], other[ok]]), axis=0)
    cand, counts = np.unique(pairs[:, 0], return_counts=True)
    full = cand[counts == n_groups]
    return int(full[0]) if full.size else None


def initial_centers(X: NDArray[Any] | sparse.csr_matrix, n_clusters: int, family: EmissionFamily,
                    constraints: Constraints | None = None, method: str = "neighborhoods",
                    rng: RandomLike = None) -> np.ndarray:
    """Initial centre vectors (k, d) by ``method`` (module docstring) or given as an
    array, before the family projects them into its domain.

    ``X`` is the prepared data or a model's rows kept elsewhere
    (:class:`hmrf.distributed.GatheredRows`); a Generator ``rng`` is drawn on as is,
    anything else seeds one.
    """
    rng = _generator(rng)
    k, n = n_clusters, X.shape[0]
    if not isinstance(method, str):
        C = np.array(method, dtype=np.float64)
        if C.shape != (k, X.shape[1]):
            raise ValueError(f"init array must have shape ({k}, {X.shape[1]}); got {C.shape}.")
        if not np.all(np.isfinite(C)):
            raise ValueError("init array contains NaN or infinite values.")
        return C
    if method not in INIT_METHODS:
        raise ValueError(f"init must be one of {INIT_METHODS} or an array of shape (k, d); got {method!r}.")
    if method == "random":
        return _rows(X, rng.choice(n, size=k, replace=False))
    if method == "buckshot":
        # NumPy/SciPy only: hmrf.classic.buckshot imports nothing above the emissions
        from .classic.buckshot import buckshot_centers

        return buckshot_centers(X, k, rng, family)
    return centers_from_constraints(X, k, family, constraints, method, rng)


def centers_from_constraints(X: MatrixLike, k: int, family: EmissionFamily, constraints: Constraints | None,
                             method: str, rng: np.random.Generator) -> NDArray[np.floating]:
    """The neighbourhood-based rules of :func:`initial_centers` (module docstring); the
    steps that read the data go through the backend of ``X`` (:mod:`hmrf.backend`), so
    data held elsewhere (a Dask array) gives the same centres."""
    members, group, lam = _neighbourhood_groups(constraints, include_singletons=method not in ("pckmeans",
                                                                                               "pckmeans++"))
    cents, sizes = _group_centroids(X, members, group, lam)
    if method == "pckmeans++":
        represent = neighborhood_representatives(X, members, group, cents)
        return _kmeanspp(X, k, np.empty((0, X.shape[1])), family, rng, represent=represent)
    if method == "pckmeans":
        if lam >= k:
            return cents[:k]  # neighbourhoods are sorted largest first
        parts = [cents]
        x = _cannot_linked_to_all(constraints, members, group, lam)
        if x is not None:
            parts.append(_rows(X, [x]))
        filled = sum(p.shape[0] for p in parts)
        parts.append(_perturbed_global(X, k - filled, rng))
        return np.vstack(parts)
    if lam > k:
        proj = _in_domain(X, cents, family)
        return cents[weighted_farthest_first(proj, sizes, k, family, rng)]
    if lam == k:
        return cents
    if method == "neighborhoods":
        return np.vstack([cents, _perturbed_global(X, k - lam, rng)])
    return _kmeanspp(X, k - lam, cents, family, rng)


def seeded_centers(X: NDArray[Any] | sparse.csr_matrix, seeds: NDArray[Any], n_clusters: int,
                   rng: RandomLike = None, *, fill: str = "perturbed",
                   family: EmissionFamily | None = None) -> np.ndarray:
    """Centres from labelled seeds (Basu 2005, Figs. 3.1-3.2): the seed-class means, then
    the centres of the clusters without seeds.

    Parameters
    ----------
    seeds : ndarray (n,)
        Cluster index ``0..k-1`` of each seed, ``-1`` for unlabelled points; the seeded
        clusters are ``0..c-1``.
    fill : {"perturbed", "k-means++"}, default="perturbed"
        Centres of the clusters without seeds (§3.5.4): random perturbations of the
        global centroid (Dhillon et al. 2001), or greedy k-means++ given the seed means
        under ``family``'s divergence.
    """
    rng = _generator(rng)
    lab = np.flatnonzero(seeds >= 0)
    if fill == "k-means++":
        means = np.empty((0, X.shape[1]))
        if lab.size:
            means, counts = _group_centroids(X, lab, seeds[lab], n_clusters)
            means = means[: int(np.count_nonzero(counts))]
        if means.shape[0] >= n_clusters:
            return means
        return _kmeanspp(X, n_clusters - means.shape[0], means, family, rng)
    centers = _perturbed_global(X, n_clusters, rng)
    if lab.size:
        means, counts = _group_centroids(X, lab, seeds[lab], n_clusters)
        has = counts > 0
        centers[has] = means[has]
    return centers
