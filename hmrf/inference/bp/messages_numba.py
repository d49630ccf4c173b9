"""The O(k) Potts min-sum messages of :mod:`~hmrf.inference.bp.messages`, one message at a time, compiled.

The compiled twins of :func:`~hmrf.inference.bp.messages.must_link_messages` and
:func:`~hmrf.inference.bp.messages.potts_cannot_link_min` (max mode) for one message,
shared by the passes of belief propagation (:mod:`~hmrf.inference.bp.kernels_numba`)
and of TRW-S (:mod:`~hmrf.inference.bp.trws_numba`); ``tests/test_bp_compiled.py``
checks that they equal the NumPy forms. ``h`` is the sender's (reweighted) belief minus
the factor's message to the sender and ``m1 = min h``; the message is normalised to
``min = 0`` (Felzenszwalb & Huttenlocher 2006):

* must-link ``w [y_i != y_j]``: ``m(y) = min(h(y) - m1, w)``;
* cannot-link ``w [y_i == y_j]``: ``min(w, m2 - m1)`` at a unique argmin of ``h``
  (``m2`` its second-smallest entry), 0 elsewhere (and 0 everywhere under a tie or
  with one label).

Inlined into their callers (``inline="always"``): called inside the passes' node loop,
an ordinary call cost numba's compiled loop about half its speed.

Numba is imported only when this module is (never by ``import hmrf``).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["row_min", "must_link_message", "cannot_link_message"]


@numba.njit(cache=True, nogil=True, inline="always")
def row_min(h):
    """``min h`` of a (k,) array."""
    m1 = np.inf
    for y in range(h.shape[0]):
        if h[y] < m1:
            m1 = h[y]
    return m1


@numba.njit(cache=True, nogil=True, inline="always")
def must_link_message(h, m1, w, out):
    """``out[y] = min(h[y] - m1, w)``: the normalised must-link message (``m1 = min h``)."""
    for y in range(h.shape[0]):
        v = h[y] - m1
        out[y] = v if v < w else w


@numba.njit(cache=True, nogil=True, inline="always")
def cannot_link_message(h, m1, w, out):
    """The normalised cannot-link message into ``out`` (``m1 = min h``): ``min(w, m2 - m1)``
    at the argmin of ``h`` when it is unique, 0 elsewhere."""
    k = h.shape[0]
    ties, m2, a1 = 0, np.inf, 0
    for y in range(k):
        out[y] = 0.0
        if h[y] == m1:
            ties += 1
            a1 = y
        elif h[y] < m2:
            m2 = h[y]
    if ties == 1 and k > 1:
        v = m2 - m1
        out[a1] = v if v < w else w
