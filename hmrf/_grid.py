"""Pixel-grid neighbourhoods behind :meth:`hmrf.Constraints.grid`.

Private: the edge list of a 4- or 8-connected image grid and its contrast-sensitive
weights, each built with whole-array operations (no loop over pixels), in memory linear
in the number of pixels.
"""

from __future__ import annotations

import numbers

import numpy as np

#: Neighbour offsets ``(d_row, d_col)`` of the two connectivities, each undirected edge once.
_OFFSETS = {4: ((0, 1), (1, 0)), 8: ((0, 1), (1, 0), (1, 1), (1, -1))}


def check_shape(shape) -> tuple[int, int]:
    """``(h, w)`` of an image grid, or a ``ValueError`` naming what is wrong."""
    try:
        dims = tuple(shape)
    except TypeError:
        raise ValueError(f"shape must be (height, width) of the image; got {shape!r}.") from None
    if len(dims) != 2:
        raise ValueError(f"shape must be 2-D, (height, width); got {len(dims)} dimension(s) "
                         f"{dims!r} (for a colour image pass image.shape[:2]).")
    for name, v in zip(("height", "width"), dims):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"shape {dims!r}: the {name} must be an integer >= 1; got {v!r}.")
    return int(dims[0]), int(dims[1])


def check_connectivity(connectivity) -> int:
    if isinstance(connectivity, (bool, np.bool_)) or connectivity not in _OFFSETS:
        raise ValueError(f"connectivity must be 4 or 8; got {connectivity!r}.")
    return int(connectivity)


def grid_edges(h: int, w: int, connectivity: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges ``(p, q)`` of the pixel grid, ``p < q`` in row-major order (``p = r * w + c``),
    sorted by ``(p, q)``, and each edge's length ``|p - q|`` in pixels (1 or √2).

    One block of edges per neighbour offset, each an index arithmetic on a 2-D range;
    then one stable sort by ``p * n + q``.
    """
    idx = np.arange(h * w, dtype=np.int64).reshape(h, w)
    firsts, seconds, lengths = [], [], []
    for dr, dc in _OFFSETS[connectivity]:  # two or four offsets
        lo, hi = max(0, -dc), w - max(0, dc)  # columns of the first pixel of a pair
        a = idx[:h - dr, lo:hi]
        b = idx[dr:, lo + dc:hi + dc]
        firsts.append(a.ravel())
        seconds.append(b.ravel())
        lengths.append(np.full(a.size, np.hypot(dr, dc)))
    p, q, length = np.concatenate(firsts), np.concatenate(seconds), np.concatenate(lengths)
    order = np.argsort(p * (h * w) + q, kind="stable")
    return np.column_stack([p[order], q[order]]), length[order]


def check_image(image, h: int, w: int) -> np.ndarray:
    """The image as float64 ``(h * w, channels)`` rows, or a ``ValueError``."""
    arr = np.asarray(image)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"image must hold numbers (grey levels or colour channels); got dtype {arr.dtype}.")
    if arr.ndim not in (2, 3) or arr.shape[:2] != (h, w):
        raise ValueError(f"image has shape {arr.shape} but the grid is {(h, w)}; pass an (h, w) grey or "
                         "(h, w, channels) colour image of the grid's size.")
    rows = arr.reshape(h * w, -1).astype(np.float64)
    if not np.all(np.isfinite(rows)):
        r = int(np.flatnonzero(~np.isfinite(rows).all(axis=1))[0])
        raise ValueError(f"image pixel (row {r // w}, column {r % w}) is NaN or infinite.")
    return rows


def contrast_weights(rows: np.ndarray, edges: np.ndarray, beta=None) -> tuple[np.ndarray, float]:
    """``exp(-β ||I_p - I_q||²)`` for every edge and the ``β`` used (see
    :meth:`hmrf.Constraints.grid`); ``β = 1 / (2 ⟨||I_p - I_q||²⟩)`` when ``beta`` is
    ``None``, and 0 when every neighbour pair has the same colour."""
    diff = rows[edges[:, 0]] - rows[edges[:, 1]]
    sq = np.einsum("ij,ij->i", diff, diff)
    if beta is None:
        mean = float(sq.mean()) if sq.size else 0.0
        beta = 1.0 / (2.0 * mean) if mean > 0 else 0.0
    else:
        if isinstance(beta, (bool, np.bool_)) or not isinstance(beta, numbers.Real) \
                or not np.isfinite(beta) or beta < 0:
            raise ValueError(f"beta must be a finite number >= 0 or None (automatic); got {beta!r}.")
        beta = float(beta)
    return np.exp(-beta * sq), beta
