"""The compiled passes of belief propagation and TRW-S (numba), called directly.

Every pass walks the nodes of a chain layout (:class:`~hmrf.inference.bp.trws.ChainLayout`)
one at a time: node ``s``'s edges to later nodes are ``fptr[s]:fptr[s + 1]``, those to
earlier nodes ``be[bptr[s]:bptr[s + 1]]``; edge ``e`` joins ``lo[e] < hi[e]``, its
table is ``tcost[tab_of[e], x_lo, x_hi]`` and its Potts weight ``w[e]``.

**Messages** (``_message``). With ``h`` the sender's (reweighted) belief minus the
factor's message to the sender, normalised to ``min = 0`` (Felzenszwalb & Huttenlocher
2006 for the O(k) Potts forms)::

    max-product  must-link    m(y) = min(h(y) - min h, w)
                 cannot-link  min(w, m2 - m1) at a unique argmin of h, 0 elsewhere
                 table        min_x h(x) + cost(x, y)                       (O(k²))
    sum-product  must-link    -log(e^{-w} sum_y' e^{-h(y')} + (1 - e^{-w}) e^{-h(y)})
                 cannot-link  -log(sum_{y' != y} e^{-h(y')} + e^{-w} e^{-h(y)})
                 table        -log sum_x e^{-h(x) - cost(x, y)}

the sum over the other labels formed directly where ``y`` is the dominant term (no
cancellation). Belief propagation keeps two messages per edge (``msgs[e]`` towards
``hi``, ``msgs[m + e]`` towards ``lo``) and the sums of each node's incoming forward
and backward messages (``into_f``, ``into_b``, weighted by ``rho`` in flooding); TRW-S
keeps one message per edge (Kolmogorov 2006, §4.1).

**Decoding** (Kolmogorov 2006, §5.1; libDAI's consistent decoding): in a forward pass
node ``s`` takes the label minimising its unary cost, the true costs of its edges
towards the earlier nodes (already decoded) and the messages from the later ones.

The NumPy forms of these passes live in ``tests/oracles/bp_numpy.py`` (belief
propagation) and ``tests/oracles/trws_numpy.py`` (TRW-S); ``tests/test_bp_compiled.py``
and ``tests/test_trws.py`` check the kernels against them message by message.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ... import graph
from ..._numba_cache import refresh
from ...graph import POTTS_CL, POTTS_ML

# the kernels compile in the graph's Potts codes
refresh(__file__, graph.__file__)

__all__ = ["bp_forward", "bp_backward", "bp_flood", "bp_sums", "trws_forward", "trws_backward",
           "compile_must_link_passes"]


@intrinsic
def _runtime(typingctx, flag):
    """``flag`` typed as a run-time ``bool``, not a literal ``True`` / ``False``: BP's passes
    share one compiled form of :func:`_message` for both directions (LLVM inlines it at
    each call). TRW-S's passes call it with literal flags: a form per direction,
    specialised to max-product."""
    if not isinstance(flag, (types.Boolean, types.BooleanLiteral)):
        return None

    def codegen(context, builder, signature, args):
        return context.cast(builder, args[0], signature.args[0], signature.return_type)

    return types.boolean(flag), codegen


@numba.njit(cache=True, nogil=True, inline="always")
def _logaddexp(a, b):
    if a < b:
        a, b = b, a
    if b == -np.inf:
        return a
    return a + math.log1p(math.exp(b - a))


@numba.njit(cache=True, nogil=True)
def _message(h, ke, we, tcost, t, scale, towards_hi, sum_mode, out):
    """The normalised message of one factor from ``h`` into ``out`` (module docstring).

    ``we`` is the Potts weight and ``scale`` multiplies the table (both already divided by
    ``rho`` in reweighted flooding); ``towards_hi``: the sender is the edge's ``lo`` end.
    Returns, in max mode, the minimum before normalisation (the edge's TRW-S bound term).
    """
    k = h.shape[0]
    m1 = np.inf
    for y in range(k):
        m1 = min(m1, h[y])
    if ke == POTTS_ML and not sum_mode:
        for y in range(k):
            v = h[y] - m1
            out[y] = v if v < we else we
        return m1
    if ke == POTTS_CL and not sum_mode:
        ties, m2, a1 = 0, np.inf, 0
        for y in range(k):
            out[y] = 0.0
            if h[y] == m1:
                ties += 1
                a1 = y
            elif h[y] < m2:
                m2 = h[y]
        if ties == 1 and k > 1:
            out[a1] = min(m2 - m1, we)
        return m1 + we if k == 1 else m1  # one label: the only pair costs w
    if ke != POTTS_ML and ke != POTTS_CL:  # a table, O(k²)
        for y in range(k):
            best = np.inf
            for x in range(k):
                v = h[x] + scale * (tcost[t, x, y] if towards_hi else tcost[t, y, x])
                best = min(best, v)
            if sum_mode:
                acc = 0.0
                for x in range(k):
                    v = h[x] + scale * (tcost[t, x, y] if towards_hi else tcost[t, y, x])
                    acc += math.exp(best - v)
                best -= math.log(acc)
            out[y] = best
    else:  # sum-product Potts, O(k)
        s, a1 = 0.0, -1
        for y in range(k):
            s += math.exp(m1 - h[y])
            if a1 < 0 and h[y] == m1:
                a1 = y  # the dominant term
        lse = math.log(s) - m1  # log sum_y exp(-h(y))
        if ke == POTTS_ML:
            lw = math.log(-math.expm1(-we)) if we > 0 else -np.inf
            for y in range(k):
                out[y] = -_logaddexp(lse - we, lw - h[y])
        else:
            others = 0.0  # sum over the labels other than the dominant one a1, directly
            for y in range(k):
                if y != a1:
                    others += math.exp(m1 - h[y])
            for y in range(k):
                if k == 1:
                    excl = -np.inf
                elif y == a1:
                    excl = math.log(others) - m1 if others > 0 else -np.inf
                else:
                    excl = math.log(s - math.exp(m1 - h[y])) - m1
                out[y] = -_logaddexp(excl, -we - h[y])
    low = np.inf
    for y in range(k):
        low = min(low, out[y])
    for y in range(k):
        out[y] -= low
    return low


@numba.njit(cache=True, nogil=True, inline="always")
def _update(e, j, new, msgs, into, rho, damping, tol, dirty_f, dirty_b, stale, frozen, backward):
    """``msgs[e] <- (1 - damping) new + damping msgs[e]`` (log domain), keeping ``into[j]``
    (weighted by ``rho``) up to date; a change above ``tol`` wakes receiver ``j`` for both
    passes (and its decoding, for backward messages, which the decoding reads)."""
    change = 0.0
    for y in range(new.shape[0]):
        d = new[y] - msgs[e, y]
        change = max(change, abs(d))
        d *= 1.0 - damping
        msgs[e, y] += d
        into[j, y] += rho * d
    if change <= tol:
        return False
    if not frozen[j]:
        dirty_f[j] = True
        dirty_b[j] = True
        if backward:
            stale[j] = True
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _decode(i, u, into_b, labels, lo, hi, fptr, bptr, be, kind, w, tab_of, tcost, stale, cond):
    """Decode node ``i`` (module docstring); a changed label makes its later neighbours
    decode again. Returns the label's unary cost plus its costs towards earlier nodes."""
    k = u.shape[1]
    for y in range(k):
        cond[y] = u[i, y]
    for p in range(bptr[i], bptr[i + 1]):
        e = be[p]
        x = labels[lo[e]]
        if kind[e] == POTTS_ML:
            for y in range(k):
                if y != x:
                    cond[y] += w[e]
        elif kind[e] == POTTS_CL:
            cond[x] += w[e]
        else:
            for y in range(k):
                cond[y] += tcost[tab_of[e], x, y]
    best, xb = np.inf, 0
    for y in range(k):
        if cond[y] + into_b[i, y] < best:
            best, xb = cond[y] + into_b[i, y], y
    if xb != labels[i]:
        for e in range(fptr[i], fptr[i + 1]):
            stale[hi[e]] = True
    labels[i] = xb
    stale[i] = False
    return cond[xb]


@numba.njit(cache=True, nogil=True)
def bp_forward(u, msgs, into_f, into_b, labels, node_e, fac, flags, damping, tol, send, sum_mode):
    """Forward pass of sequential BP: every node flagged ``stale`` is decoded (max mode),
    then every node flagged ``dirty_f`` sends its messages to later nodes. Returns whether
    a message moved by more than ``tol``."""
    lo, hi, fptr, bptr, be, kind, w, tab_of, tcost = fac
    dirty_f, dirty_b, stale, frozen = flags
    n, k = u.shape
    m = lo.shape[0]
    bel, cond, h, new = np.empty(k), np.empty(k), np.empty(k), np.empty(k)
    moved = False
    for i in range(n):
        if stale[i] and not sum_mode:
            node_e[i] = _decode(i, u, into_b, labels, lo, hi, fptr, bptr, be, kind, w, tab_of, tcost, stale,
                                cond)
        if not (send and dirty_f[i]):
            continue
        for y in range(k):
            bel[y] = u[i, y] + into_f[i, y] + into_b[i, y]
        for e in range(fptr[i], fptr[i + 1]):
            for y in range(k):
                h[y] = bel[y] - msgs[m + e, y]
            _message(h, kind[e], w[e], tcost, tab_of[e], 1.0, _runtime(True), sum_mode, new)
            moved |= _update(e, hi[e], new, msgs, into_f, 1.0, damping, tol, dirty_f, dirty_b, stale, frozen,
                             False)
        dirty_f[i] = False
    return moved


@numba.njit(cache=True, nogil=True)
def bp_backward(u, msgs, into_f, into_b, fac, flags, damping, tol, sum_mode):
    """Backward pass of sequential BP: in reverse order, every node flagged ``dirty_b``
    sends its messages to earlier nodes. Returns whether a message moved by more than ``tol``."""
    lo, hi, fptr, bptr, be, kind, w, tab_of, tcost = fac
    dirty_f, dirty_b, stale, frozen = flags
    n, k = u.shape
    m = lo.shape[0]
    bel, h, new = np.empty(k), np.empty(k), np.empty(k)
    moved = False
    for i in range(n - 1, -1, -1):
        if not dirty_b[i]:
            continue
        for y in range(k):
            bel[y] = u[i, y] + into_f[i, y] + into_b[i, y]
        for p in range(bptr[i], bptr[i + 1]):
            e = be[p]
            for y in range(k):
                h[y] = bel[y] - msgs[e, y]
            _message(h, kind[e], w[e], tcost, tab_of[e], 1.0, _runtime(False), sum_mode, new)
            moved |= _update(m + e, lo[e], new, msgs, into_b, 1.0, damping, tol, dirty_f, dirty_b, stale,
                             frozen, True)
        dirty_b[i] = False
    return moved


@numba.njit(cache=True, nogil=True)
def bp_sums(msgs, fac, rho, into_f, into_b):
    """``into_f[j]`` / ``into_b[j]``: the ``rho``-weighted sums of the forward / backward
    messages into ``j``."""
    lo, hi = fac[0], fac[1]
    m = lo.shape[0]
    into_f[:] = 0.0
    into_b[:] = 0.0
    for e in range(m):
        for y in range(msgs.shape[1]):
            into_f[hi[e], y] += rho[e] * msgs[e, y]
            into_b[lo[e], y] += rho[e] * msgs[m + e, y]


@numba.njit(cache=True, nogil=True)
def bp_flood(u, msgs, old, into_f, into_b, beliefs, labels, fac, rho, wake, flags, damping, tol, sum_mode):
    """One flooding round (Basu 2005, App. A.1): every node flagged in ``wake`` sends all
    its messages, computed from last round's beliefs ``B_i = U_i + sum rho_f m_{f->i}``
    and messages (copied into ``beliefs`` and ``old`` first), with costs ``cost / rho``
    (the tree-reweighted updates of Wainwright, Jaakkola & Willsky 2005; ``rho = 1``:
    ordinary BP). The next round's senders are flagged in ``flags.dirty_f`` (a damped
    sender stays awake). ``labels`` gets the per-node argmin of the beliefs; returns
    (whether a message moved by more than ``tol``, the energy of ``labels``, true costs).
    """
    lo, hi, fptr, bptr, be, kind, w, tab_of, tcost = fac
    dirty_f, dirty_b, stale, frozen = flags
    n, k = u.shape
    m = lo.shape[0]
    h, new = np.empty(k), np.empty(k)
    for i in range(n):
        if wake[i]:
            for y in range(k):
                beliefs[i, y] = u[i, y] + into_f[i, y] + into_b[i, y]
            for e in range(fptr[i], fptr[i + 1]):
                for y in range(k):
                    old[m + e, y] = msgs[m + e, y]
            for p in range(bptr[i], bptr[i + 1]):
                e = be[p]
                for y in range(k):
                    old[e, y] = msgs[e, y]
    moved = False
    for i in range(n):
        if not wake[i]:
            continue
        sent = False
        for e in range(fptr[i], fptr[i + 1]):
            for y in range(k):
                h[y] = beliefs[i, y] - old[m + e, y]
            _message(h, kind[e], w[e] / rho[e], tcost, tab_of[e], 1.0 / rho[e], _runtime(True), sum_mode, new)
            sent |= _update(e, hi[e], new, msgs, into_f, rho[e], damping, tol, dirty_f, dirty_b, stale,
                            frozen, False)
        for p in range(bptr[i], bptr[i + 1]):
            e = be[p]
            for y in range(k):
                h[y] = beliefs[i, y] - old[e, y]
            _message(h, kind[e], w[e] / rho[e], tcost, tab_of[e], 1.0 / rho[e], _runtime(False), sum_mode,
                     new)
            sent |= _update(m + e, lo[e], new, msgs, into_b, rho[e], damping, tol, dirty_f, dirty_b, stale,
                            frozen, True)
        if sent and damping > 0.0:  # a damped message has not reached its update yet
            dirty_f[i] = True
        moved |= sent
    energy = 0.0
    for i in range(n):
        best, xb = np.inf, 0
        for y in range(k):
            v = u[i, y] + into_f[i, y] + into_b[i, y]
            if v < best:
                best, xb = v, y
        labels[i] = xb
        energy += u[i, xb]
    for e in range(m):
        a, b = labels[lo[e]], labels[hi[e]]
        if kind[e] == POTTS_ML:
            energy += w[e] if a != b else 0.0
        elif kind[e] == POTTS_CL:
            energy += w[e] if a == b else 0.0
        else:
            energy += tcost[tab_of[e], a, b]
    return moved, energy


# ------------------------------------------------------------------- TRW-S
# Kolmogorov (2006), §4-5: one message per edge; after the backward pass msg[e] holds
# m_{hi->lo}, which the forward pass overwrites with m_{lo->hi} once lo has read it.
# Node s sends m_{s->t} = min_{x_s} [gamma_s θ̂_s - m_{t->s} + θ_st] with θ̂_s its belief;
# the backward pass sums min θ̂_s and every message's minimum before normalisation: the
# lower bound, which never decreases (gamma = 1: ordinary sequential max-product).


@numba.njit(cache=True, nogil=True, inline="always")
def _trws_belief(u, msg, s, fptr, bptr, be, th, with_earlier):
    """``th = u_s + sum_{t > s} m_{t->s}`` (+ the messages from earlier nodes)."""
    k = th.shape[0]
    for y in range(k):
        th[y] = u[s, y]
    for e in range(fptr[s], fptr[s + 1]):
        for y in range(k):
            th[y] += msg[e, y]
    if with_earlier:
        for p in range(bptr[s], bptr[s + 1]):
            for y in range(k):
                th[y] += msg[be[p], y]


@numba.njit(cache=True, nogil=True)
def trws_forward(u, msg, lo, kind, w, tab_of, tcost, fptr, bptr, be, gamma, active, labels, node_e):
    """Forward pass: decode every active node (``node_e[s]``: its unary cost plus its costs
    towards earlier nodes, so that the energy is ``sum node_e``), then send to later nodes."""
    n, k = u.shape
    th, h, new = np.empty(k), np.empty(k), np.empty(k)
    for s in range(n):
        if not active[s]:
            continue
        _trws_belief(u, msg, s, fptr, bptr, be, th, False)
        for y in range(k):
            h[y] = th[y]
        for p in range(bptr[s], bptr[s + 1]):  # true costs towards the decoded earlier nodes
            e = be[p]
            x = labels[lo[e]]
            if kind[e] == POTTS_ML:
                we, hx = w[e], h[x]
                for y in range(k):
                    h[y] += we
                h[x] = hx
            elif kind[e] == POTTS_CL:
                h[x] += w[e]
            else:
                for y in range(k):
                    h[y] += tcost[tab_of[e], x, y]
        best, xb = np.inf, 0
        for y in range(k):
            if h[y] < best:
                best, xb = h[y], y
        labels[s] = xb
        ne = u[s, xb]
        for p in range(bptr[s], bptr[s + 1]):
            e = be[p]
            x = labels[lo[e]]
            if kind[e] == POTTS_ML:
                ne += w[e] if x != xb else 0.0
            elif kind[e] == POTTS_CL:
                ne += w[e] if x == xb else 0.0
            else:
                ne += tcost[tab_of[e], x, xb]
            for y in range(k):
                th[y] += msg[e, y]
        node_e[s] = ne
        g = gamma[s]
        for e in range(fptr[s], fptr[s + 1]):
            for y in range(k):
                h[y] = g * th[y] - msg[e, y]
            _message(h, kind[e], w[e], tcost, tab_of[e], 1.0, True, False, new)
            for y in range(k):
                msg[e, y] = new[y]


@numba.njit(cache=True, nogil=True)
def trws_backward(u, msg, kind, w, tab_of, tcost, fptr, bptr, be, gamma, active, comp, lb):
    """Backward pass: every active node, in reverse order, sends to earlier nodes;
    ``lb[comp[s]]`` accumulates the TRW-S bound (Kolmogorov 2006, §4.2)."""
    n, k = u.shape
    th, h, new = np.empty(k), np.empty(k), np.empty(k)
    for s in range(n - 1, -1, -1):
        if not active[s]:
            continue
        _trws_belief(u, msg, s, fptr, bptr, be, th, True)
        mins = np.inf
        for y in range(k):
            mins = min(mins, th[y])
        c = comp[s]
        lb[c] += mins
        g = gamma[s]
        for p in range(bptr[s], bptr[s + 1]):
            e = be[p]
            for y in range(k):
                h[y] = g * (th[y] - mins) - msg[e, y]
            lb[c] += _message(h, kind[e], w[e], tcost, tab_of[e], 1.0, False, False, new)
            for y in range(k):
                msg[e, y] = new[y]


@intrinsic
def _stack_row(typingctx, size):
    """A pointer to ``size`` float64 on the calling kernel's stack (``size`` a compile-time
    constant): scratch rows LLVM can keep in registers, as it cannot prove that heap rows
    do not alias the messages."""
    if not isinstance(size, types.IntegerLiteral):
        return None
    n = size.literal_value

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, context.get_value_type(types.float64), size=n)

    return types.CPointer(types.float64)(size), codegen


def compile_must_link_passes(K: int) -> tuple[Callable[..., None], Callable[..., None]]:  # noqa: N803 - a constant
    """``(forward, backward)``: :func:`trws_forward` and :func:`trws_backward` for graphs
    of must-links only, compiled for ``K`` labels (no dispatch on the factor kind; the
    label loops unrolled over registers). The same numbers in the same order of
    operations; called with the layout's ``lo``, ``fptr``, ``bptr`` and ``be`` viewed as
    ``uint64`` (no negative-index wraparound); numba's disk cache keeps one file per ``K``."""

    @numba.njit(cache=True, nogil=True)
    def forward(u, msg, lo, w, fptr, bptr, be, gamma, active, labels, node_e):
        th = numba.carray(_stack_row(K), K)
        h = numba.carray(_stack_row(K), K)
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
            for y in range(1, K):  # the first minimum
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
        th = numba.carray(_stack_row(K), K)
        h = numba.carray(_stack_row(K), K)
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
