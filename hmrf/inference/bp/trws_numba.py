"""The passes of :class:`~hmrf.inference.bp.trws.TRWS`, compiled with numba (``pip install hmrf[fast]``).

The compiled twin of :func:`~hmrf.inference.bp.trws_numpy.forward_pass` and
:func:`~hmrf.inference.bp.trws_numpy.backward_pass` (the mathematics is in
:mod:`~hmrf.inference.bp.trws_numpy`): node by node in the layout's order, one message
per edge (Kolmogorov 2006, §4.1: a forward message overwrites the backward message of
its edge, which the receiver has already read). ``tests/test_trws.py`` checks that both
compute the same messages, labels, energies and bound.

Written by hand because these loops are TRW-S: each pass reads every message once and
writes half of them. Vectorised, a pass is a Python step per level of the order (about
a thousand on an image grid) with a dozen array operations each.

Numba is imported only when this module is (never by ``import hmrf``); the kernels are
cached on disk (``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np

from ...graph import POTTS_CL, POTTS_ML
from .messages_numba import cannot_link_message, must_link_message, row_min

__all__ = ["forward_pass", "backward_pass", "forward_pass_ml", "backward_pass_ml"]


@numba.njit(cache=True, nogil=True, inline="always")
def _send(h, e, kind, w, tab_of, tcost, towards_hi, new):
    """Normalised min-sum message of edge ``e`` from ``h`` (the sender's reweighted belief
    minus the edge's message to it) into ``new``; returns the minimum before
    normalisation (the edge's TRW-S bound term)."""
    k = h.shape[0]
    ke = kind[e]
    if ke == POTTS_ML:
        m1 = row_min(h)
        must_link_message(h, m1, w[e], new)
        return m1
    if ke == POTTS_CL:
        m1 = row_min(h)
        cannot_link_message(h, m1, w[e], new)
        return m1 + w[e] if k == 1 else m1  # one label: the only pair costs w
    t, low = tab_of[e], np.inf
    for y in range(k):
        best = np.inf
        for x in range(k):
            v = h[x] + (tcost[t, x, y] if towards_hi else tcost[t, y, x])
            best = v if v < best else best
        new[y] = best
        low = best if best < low else low
    for y in range(k):
        new[y] -= low
    return low


@numba.njit(cache=True, nogil=True, inline="always")
def _cost(e, x_lo, y_hi, kind, w, tab_of, tcost):
    """Cost of edge ``e`` with its earlier end at ``x_lo`` and its later end at ``y_hi``."""
    ke = kind[e]
    if ke == POTTS_ML:
        return w[e] if x_lo != y_hi else 0.0
    if ke == POTTS_CL:
        return w[e] if x_lo == y_hi else 0.0
    return tcost[tab_of[e], x_lo, y_hi]


@numba.njit(cache=True, nogil=True, inline="always")
def _from_later(u, msg, s, fptr, th):
    """``th = u_s + sum_{t > s} m_{t->s}``: the unary cost and the messages of the edges to
    later nodes (from the last backward pass)."""
    k = th.shape[0]
    for y in range(k):
        th[y] = u[s, y]
    for e in range(fptr[s], fptr[s + 1]):
        for y in range(k):
            th[y] += msg[e, y]


@numba.njit(cache=True, nogil=True, inline="always")
def _belief(u, msg, s, fptr, bptr, be, th):
    """``th = θ̂_s``, the unary cost plus every message into ``s``; returns ``min θ̂_s``."""
    k = th.shape[0]
    _from_later(u, msg, s, fptr, th)
    for p in range(bptr[s], bptr[s + 1]):
        e = be[p]
        for y in range(k):
            th[y] += msg[e, y]
    return row_min(th)


@numba.njit(cache=True, nogil=True, inline="always")
def _argmin(h):
    best, xb = np.inf, 0
    for y in range(h.shape[0]):
        if h[y] < best:
            best, xb = h[y], y
    return xb


@numba.njit(cache=True, nogil=True)
def forward_pass(u, msg, lo, kind, w, tab_of, tcost, fptr, bptr, be, gamma, active, labels, node_e):
    """Forward pass: decode every active node, then send its messages to later nodes.

    ``labels[s]`` minimises ``u_s + sum_{t < s} cost(x_t, ·) + sum_{t > s} m_{t->s}``
    (Kolmogorov 2006, §5.1) and ``node_e[s]`` is that label's unary cost plus its costs
    towards earlier nodes (so that the energy is ``sum node_e``).
    """
    n, k = u.shape
    th, h, new = np.empty(k), np.empty(k), np.empty(k)
    for s in range(n):
        if not active[s]:
            continue
        _from_later(u, msg, s, fptr, th)
        for y in range(k):
            h[y] = th[y]
        for p in range(bptr[s], bptr[s + 1]):  # true costs towards decoded earlier nodes
            e = be[p]
            x = labels[lo[e]]
            ke = kind[e]
            if ke == POTTS_ML:  # w [x != y]: w everywhere but at x
                we, hx = w[e], h[x]
                for y in range(k):
                    h[y] += we
                h[x] = hx
            elif ke == POTTS_CL:
                h[x] += w[e]
            else:
                t = tab_of[e]
                for y in range(k):
                    h[y] += tcost[t, x, y]
        xb = _argmin(h)
        labels[s] = xb
        ne = u[s, xb]
        for p in range(bptr[s], bptr[s + 1]):
            e = be[p]
            ne += _cost(e, labels[lo[e]], xb, kind, w, tab_of, tcost)
            for y in range(k):  # from earlier nodes (this forward pass)
                th[y] += msg[e, y]
        node_e[s] = ne
        g = gamma[s]
        for e in range(fptr[s], fptr[s + 1]):
            for y in range(k):
                h[y] = g * th[y] - msg[e, y]
            _send(h, e, kind, w, tab_of, tcost, True, new)
            for y in range(k):
                msg[e, y] = new[y]


@numba.njit(cache=True, nogil=True)
def backward_pass(u, msg, kind, w, tab_of, tcost, fptr, bptr, be, gamma, active, comp, lb):
    """Backward pass: every active node, in reverse order, sends its messages to earlier
    nodes; ``lb[comp[s]]`` accumulates the TRW-S bound ``min θ̂_s`` plus each message's
    minimum before normalisation (Kolmogorov 2006, §4.2)."""
    n, k = u.shape
    th, h, new = np.empty(k), np.empty(k), np.empty(k)
    for s in range(n - 1, -1, -1):
        if not active[s]:
            continue
        mins = _belief(u, msg, s, fptr, bptr, be, th)
        c = comp[s]
        lb[c] += mins
        g = gamma[s]
        for p in range(bptr[s], bptr[s + 1]):
            e = be[p]
            for y in range(k):
                h[y] = g * (th[y] - mins) - msg[e, y]
            lb[c] += _send(h, e, kind, w, tab_of, tcost, False, new)
            for y in range(k):
                msg[e, y] = new[y]


@numba.njit(cache=True, nogil=True)
def forward_pass_ml(u, msg, lo, w, fptr, bptr, be, gamma, active, labels, node_e):
    """:func:`forward_pass` for graphs of must-links only, the updates written out: the
    general pass's dispatch on the factor kind made the loop three times slower."""
    n, k = u.shape
    th, h = np.empty(k), np.empty(k)
    for s in range(n):
        if not active[s]:
            continue
        _from_later(u, msg, s, fptr, th)
        for y in range(k):
            h[y] = th[y]
        for p in range(bptr[s], bptr[s + 1]):
            e = be[p]
            x = labels[lo[e]]
            we, hx = w[e], h[x]
            for y in range(k):
                h[y] += we
            h[x] = hx
        xb = _argmin(h)
        labels[s] = xb
        ne = u[s, xb]
        for p in range(bptr[s], bptr[s + 1]):
            e = be[p]
            if labels[lo[e]] != xb:
                ne += w[e]
            for y in range(k):
                th[y] += msg[e, y]
        node_e[s] = ne
        g = gamma[s]
        for e in range(fptr[s], fptr[s + 1]):
            for y in range(k):
                h[y] = g * th[y] - msg[e, y]
            must_link_message(h, row_min(h), w[e], msg[e])


@numba.njit(cache=True, nogil=True)
def backward_pass_ml(u, msg, w, fptr, bptr, be, gamma, active, comp, lb):
    """:func:`backward_pass` for graphs of must-links only (see :func:`forward_pass_ml`)."""
    n, k = u.shape
    th, h = np.empty(k), np.empty(k)
    for s in range(n - 1, -1, -1):
        if not active[s]:
            continue
        mins = _belief(u, msg, s, fptr, bptr, be, th)
        c = comp[s]
        lb[c] += mins
        g = gamma[s]
        for p in range(bptr[s], bptr[s + 1]):
            e = be[p]
            for y in range(k):
                h[y] = g * (th[y] - mins) - msg[e, y]
            m1 = row_min(h)
            lb[c] += m1
            must_link_message(h, m1, w[e], msg[e])
