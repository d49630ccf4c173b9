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

__all__ = ["forward_pass", "backward_pass", "forward_pass_ml", "backward_pass_ml"]


@numba.njit(cache=True, nogil=True, inline="always")
def _send(h, e, kind, w, tab_of, tcost, towards_hi, new):
    """Normalised min-sum message of edge ``e`` from ``h`` (the sender's reweighted belief
    minus the edge's message to it) into ``new``; returns the minimum before
    normalisation (the edge's TRW-S bound term)."""
    k = h.shape[0]
    m1 = np.inf
    for y in range(k):
        if h[y] < m1:
            m1 = h[y]
    ke = kind[e]
    if ke == POTTS_ML:
        we = w[e]
        for y in range(k):
            v = h[y] - m1
            new[y] = v if v < we else we
        return m1
    if ke == POTTS_CL:
        ties, m2, a1 = 0, np.inf, 0
        for y in range(k):
            new[y] = 0.0
            if h[y] == m1:
                ties += 1
                a1 = y
            elif h[y] < m2:
                m2 = h[y]
        if k == 1:  # the only label pair costs w
            return m1 + w[e]
        if ties == 1:
            v = m2 - m1
            new[a1] = v if v < w[e] else w[e]
        return m1
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
        for y in range(k):
            th[y] = u[s, y]
        for e in range(fptr[s], fptr[s + 1]):  # from later nodes (previous backward pass)
            for y in range(k):
                th[y] += msg[e, y]
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
        best, xb = np.inf, 0
        for y in range(k):
            if h[y] < best:
                best, xb = h[y], y
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
        for y in range(k):
            th[y] = u[s, y]
        for e in range(fptr[s], fptr[s + 1]):
            for y in range(k):
                th[y] += msg[e, y]
        for p in range(bptr[s], bptr[s + 1]):
            e = be[p]
            for y in range(k):
                th[y] += msg[e, y]
        mins = np.inf
        for y in range(k):
            if th[y] < mins:
                mins = th[y]
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
        for y in range(k):
            th[y] = u[s, y]
        for e in range(fptr[s], fptr[s + 1]):
            for y in range(k):
                th[y] += msg[e, y]
        for y in range(k):
            h[y] = th[y]
        for p in range(bptr[s], bptr[s + 1]):
            e = be[p]
            x = labels[lo[e]]
            we, hx = w[e], h[x]
            for y in range(k):
                h[y] += we
            h[x] = hx
        best, xb = np.inf, 0
        for y in range(k):
            if h[y] < best:
                best, xb = h[y], y
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
            m1 = np.inf
            for y in range(k):
                h[y] = g * th[y] - msg[e, y]
                if h[y] < m1:
                    m1 = h[y]
            we = w[e]
            for y in range(k):
                v = h[y] - m1
                msg[e, y] = v if v < we else we


@numba.njit(cache=True, nogil=True)
def backward_pass_ml(u, msg, w, fptr, bptr, be, gamma, active, comp, lb):
    """:func:`backward_pass` for graphs of must-links only (see :func:`forward_pass_ml`)."""
    n, k = u.shape
    th, h = np.empty(k), np.empty(k)
    for s in range(n - 1, -1, -1):
        if not active[s]:
            continue
        for y in range(k):
            th[y] = u[s, y]
        for e in range(fptr[s], fptr[s + 1]):
            for y in range(k):
                th[y] += msg[e, y]
        for p in range(bptr[s], bptr[s + 1]):
            e = be[p]
            for y in range(k):
                th[y] += msg[e, y]
        mins = np.inf
        for y in range(k):
            if th[y] < mins:
                mins = th[y]
        c = comp[s]
        lb[c] += mins
        g = gamma[s]
        for p in range(bptr[s], bptr[s + 1]):
            e = be[p]
            m1 = np.inf
            for y in range(k):
                h[y] = g * (th[y] - mins) - msg[e, y]
                if h[y] < m1:
                    m1 = h[y]
            lb[c] += m1
            we = w[e]
            for y in range(k):
                v = h[y] - m1
                msg[e, y] = v if v < we else we
