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

On must-link-only graphs with at most ``SPECIALISED_K`` labels,
:func:`must_link_passes` gives the must-link passes compiled for that number of labels:
its label loops unrolled over registers, their scratch rows on the stack
(``stack_row``) where LLVM sees that they do not alias the messages, and the layout's
index arrays read as unsigned integers (no negative-index wraparound): the same numbers
as :func:`forward_pass_ml` and :func:`backward_pass_ml`, which serve any ``k``, in
much less time per iteration (``benchmarks/inference.py --grid``).

Numba is imported only when this module is (never by ``import hmrf``); the kernels are
cached on disk (``cache=True``; one file per number of labels for the specialised ones).
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ... import graph
from ..._numba_cache import refresh
from ...graph import POTTS_CL, POTTS_ML
from . import messages_numba
from .messages_numba import cannot_link_message, must_link_message, row_min

# the kernels compile in the message functions and the graph's Potts codes
refresh(__file__, messages_numba.__file__, graph.__file__)

__all__ = ["forward_pass", "backward_pass", "forward_pass_ml", "backward_pass_ml", "must_link_passes",
           "SPECIALISED_K"]

#: numbers of labels up to which :func:`must_link_passes` compiles passes for that ``k``
SPECIALISED_K = 16


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


@intrinsic
def stack_row(typingctx, size):
    """A pointer to ``size`` float64 on the stack of the calling kernel (``size`` a
    compile-time constant; wrap it with ``numba.carray(ptr, size)``).

    Scratch rows that ``np.empty`` would put on the heap: there LLVM cannot prove that
    they do not alias the message array, and every update of a label loop goes through
    memory instead of registers.
    """
    if not isinstance(size, types.IntegerLiteral):
        return None
    n = size.literal_value

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, context.get_value_type(types.float64), size=n)

    return types.CPointer(types.float64)(size), codegen


_PASSES = {}


def must_link_passes(k: int) -> tuple[Callable[..., None], Callable[..., None]] | None:
    """``(forward, backward)``: :func:`forward_pass_ml` and :func:`backward_pass_ml`
    compiled for ``k`` labels (the module docstring says why), the same numbers in the
    same order of operations; ``None`` unless ``2 <= k <= SPECIALISED_K``.

    Called with the layout's ``lo``, ``fptr``, ``bptr`` and ``be`` viewed as ``uint64``
    (``a.view(np.uint64)``, no copy); otherwise as :func:`forward_pass_ml` and
    :func:`backward_pass_ml`. Each ``k`` compiles once per machine (numba's disk cache
    keys the kernels on ``k``).
    """
    if not 2 <= k <= SPECIALISED_K:
        return None
    if k not in _PASSES:
        _PASSES[k] = _compile_must_link_passes(k)
    return _PASSES[k]


def _compile_must_link_passes(K):  # noqa: N803 - K is a compile-time constant of the kernels
    @numba.njit(cache=True, nogil=True)
    def forward(u, msg, lo, w, fptr, bptr, be, gamma, active, labels, node_e):
        th = numba.carray(stack_row(K), K)
        h = numba.carray(stack_row(K), K)
        for s in range(u.shape[0]):
            if not active[s]:
                continue
            for y in range(K):
                th[y] = u[s, y]
            for e in range(fptr[s], fptr[s + 1]):
                for y in range(K):
                    th[y] += msg[e, y]
            for y in range(K):
                h[y] = th[y]
            for p in range(bptr[s], bptr[s + 1]):  # w [x != y] towards the decoded earlier node
                e = be[p]
                x = labels[lo[e]]
                we = w[e]
                for y in range(K):
                    h[y] += 0.0 if y == x else we
            best, xb = h[0], 0
            for y in range(1, K):  # the first minimum, as _argmin
                v = h[y]
                xb = y if v < best else xb
                best = v if v < best else best
            labels[s] = xb
            ne = u[s, xb]
            for p in range(bptr[s], bptr[s + 1]):
                e = be[p]
                ne += 0.0 if labels[lo[e]] == xb else w[e]
                for y in range(K):
                    th[y] += msg[e, y]
            node_e[s] = ne
            g = gamma[s]
            for e in range(fptr[s], fptr[s + 1]):
                m1 = np.inf
                for y in range(K):
                    v = g * th[y] - msg[e, y]
                    h[y] = v
                    m1 = min(m1, v)
                we = w[e]
                for y in range(K):
                    msg[e, y] = min(h[y] - m1, we)

    @numba.njit(cache=True, nogil=True)
    def backward(u, msg, w, fptr, bptr, be, gamma, active, comp, lb):
        th = numba.carray(stack_row(K), K)
        h = numba.carray(stack_row(K), K)
        for s in range(u.shape[0] - 1, -1, -1):
            if not active[s]:
                continue
            for y in range(K):
                th[y] = u[s, y]
            for e in range(fptr[s], fptr[s + 1]):
                for y in range(K):
                    th[y] += msg[e, y]
            for p in range(bptr[s], bptr[s + 1]):
                e = be[p]
                for y in range(K):
                    th[y] += msg[e, y]
            mins = np.inf
            for y in range(K):
                mins = min(mins, th[y])
            c = comp[s]
            lb[c] += mins
            g = gamma[s]
            for p in range(bptr[s], bptr[s + 1]):
                e = be[p]
                m1 = np.inf
                for y in range(K):
                    v = g * (th[y] - mins) - msg[e, y]
                    h[y] = v
                    m1 = min(m1, v)
                lb[c] += m1
                we = w[e]
                for y in range(K):
                    msg[e, y] = min(h[y] - m1, we)

    return forward, backward
