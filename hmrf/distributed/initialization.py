"""Initial centres of a :class:`~hmrf.distributed.DaskHMRF` without gathering ``X``.

The methods of :mod:`hmrf.initialization`, with the same random draws in the same order,
so that for the same generator the centres equal those of the in-memory model:

* neighbourhood centroids (``"neighborhoods"``, ``"pckmeans"``, the first centres of
  ``"k-means++"``; seeded centres) from the rows of the constrained or labelled points
  alone, gathered to the client (m x d);
* the global centroid of the perturbed centres from the summary pass
  (:class:`~hmrf.distributed.ColumnSummary`), and the few random rows they move toward;
* k-means++ (Arthur & Vassilvitskii 2007, with ``2 + log k`` candidates per step as in
  scikit-learn and :mod:`hmrf.initialization`) exactly, by passes over the chunks: the
  distance of every point to its nearest centre stays on the workers between steps, and
  the client receives it once per step (n floats) to draw the candidates from its
  cumulative sum as the in-memory code does; each step costs one pass that scores every
  candidate on each chunk and one that updates the distances for the chosen one.

Totals that the in-memory code sums in one array (the candidates' potentials) are sums
of per-chunk sums here, equal to round-off.
"""

from __future__ import annotations

import dask
import numpy as np

from .._blocks import row_blocks
from .._validation import check_random_state
from ..constraints import Constraints
from ..initialization import (
    _group_centroids,
    _in_domain,
    _rows,
    centers_from_constraints,
    distinct_representatives,
    initial_centers,
    kmeanspp_candidates,
    seeded_centers,
)
from .data import tree_reduce

__all__ = ["initial_centers_dask", "seeded_centers_dask", "kmeanspp_dask"]


def _centroids(X, members, which, n_groups):
    """Means of the rows ``members`` grouped by ``which`` and group sizes, from the
    gathered member rows (the in-memory ``_group_centroids`` on them, re-indexed)."""
    if n_groups == 0:
        return np.empty((0, X.shape[1])), np.empty(0)
    uniq, local = np.unique(members, return_inverse=True)
    return _group_centroids(X[uniq], local.ravel(), which, n_groups)


def initial_centers_dask(model, n_clusters: int, family, constraints: Constraints | None = None,
                         method="neighborhoods", rng=None) -> np.ndarray:
    """:func:`hmrf.initialization.initial_centers` for a
    :class:`~hmrf.distributed.DaskHMRF` (module docstring): the same centres for the same
    generator, by the same steps.

    Parameters
    ----------
    model : DaskHMRF
    n_clusters : int
    family : EmissionFamily
    constraints : Constraints, optional
    method : {"pckmeans++", "neighborhoods", "pckmeans", "k-means++", "random"} or array (k, d)
    rng : numpy Generator

    Returns
    -------
    ndarray of shape (k, d)
    """
    rng = check_random_state(rng)
    X, k = model.X, n_clusters
    if not isinstance(method, str) or method not in ("pckmeans++", "neighborhoods", "pckmeans", "k-means++"):
        return initial_centers(X, k, family, constraints, method, rng)  # rows by index only
    return centers_from_constraints(X, k, family, constraints, method, rng, _centroids,
                                    lambda X, m, centers, family, rng, represent=None: kmeanspp_dask(
                                        model, m, centers, family, rng, represent))


def seeded_centers_dask(model, seeds, n_clusters: int, rng=None, *, fill="perturbed",
                        family=None) -> np.ndarray:
    """:func:`hmrf.initialization.seeded_centers` for a :class:`~hmrf.distributed.DaskHMRF`:
    seed-class means from the gathered seed rows; the other clusters by ``fill``
    (perturbed global centroids, or k-means++ passes over the chunks)."""
    return seeded_centers(model.X, seeds, n_clusters, check_random_state(rng), group_centroids=_centroids,
                          fill=fill, family=family,
                          kmeanspp=lambda X, m, centers, family, rng: kmeanspp_dask(model, m, centers, family,
                                                                                     rng))


# ------------------------------------------------------------------ k-means++
def _chunk_min_divergence(family, X, data, centers) -> np.ndarray:
    """``min_h D(x_i, c_h)`` for the rows of one chunk, in blocks of rows."""
    out = np.empty(X.shape[0])
    for rows in row_blocks(X.shape[0], max(centers.shape[0], X.shape[1])):  # blocks of rows
        out[rows] = family.divergence(X[rows], centers, data=None if data is None else data[rows]).min(axis=1)
    return out


def _chunk_potentials(family, X, data, closest, candidates) -> np.ndarray:
    """For each candidate centre: the chunk's summed distance to the nearest centre if the
    candidate joined the centres (T,)."""
    return np.array([np.minimum(closest, _chunk_min_divergence(family, X, data, candidates[t:t + 1])).sum()
                     for t in range(candidates.shape[0])])  # a few candidates


def _chunk_update(family, X, data, closest, center) -> np.ndarray:
    return np.minimum(closest, _chunk_min_divergence(family, X, data, center))


def _persisted_closest(parts):
    parts = list(dask.persist(*parts))
    return parts, np.concatenate(dask.compute(*parts))


def kmeanspp_dask(model, m: int, centers, family, rng, represent=None) -> np.ndarray:
    """``m`` more centres by greedy k-means++ seeding given ``centers``, exactly as the
    in-memory code draws them (module docstring).

    Parameters
    ----------
    model : DaskHMRF
    m : int
    centers : ndarray (c, d)
    family : EmissionFamily
    rng : numpy Generator
    represent : callable, optional
        ``represent(rows) -> (len(rows), d)``: the centre a drawn row seeds (default: the
        row itself), as in the in-memory code.

    Returns
    -------
    ndarray (c + m, d)
    """
    X, data, n = model.X, model.data, model.n_samples
    terms = data.data_terms or [None] * data.n_chunks
    represent = (lambda rows: _rows(X, rows)) if represent is None else represent
    if centers.shape[0] == 0:
        centers = represent([int(rng.integers(n))])
        m -= 1
    current = _in_domain(X, centers, family)
    parts, closest = _persisted_closest(
        [dask.delayed(_chunk_min_divergence, pure=False)(data.family_key, x, t, current)
         for x, t in zip(data.chunks, terms)])
    trials = 2 + int(np.log(m + centers.shape[0]))
    picked = []
    for _ in range(m):  # one centre per step; each step is two passes
        cand = kmeanspp_candidates(closest, trials, rng)
        cand_rows = distinct_representatives(X, cand, represent(cand), [centers, *picked])
        cand_centers = _in_domain(X, cand_rows, family)
        pots = dask.compute(tree_reduce(
            [dask.delayed(_chunk_potentials, pure=False)(data.family_key, x, t, c, cand_centers)
             for x, t, c in zip(data.chunks, terms, parts)]))[0]
        best, best_pot = None, np.inf
        for t in range(trials):  # the in-memory rule: the first strictly best candidate
            if pots[t] < best_pot:
                best, best_pot = t, pots[t]
        if best is not None:
            chosen = cand_centers[best:best + 1]
            parts, closest = _persisted_closest(
                [dask.delayed(_chunk_update, pure=False)(data.family_key, x, t, c, chosen)
                 for x, t, c in zip(data.chunks, terms, parts)])
        picked.append(cand_rows[0 if best is None else best][None, :])
    return np.vstack([centers, *picked])
