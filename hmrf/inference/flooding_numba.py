"""The flooding schedule compiled with numba (max-product, ordinary updates).

Used by :class:`~hmrf.inference.BeliefPropagation` in max mode when numba is installed
(``kernel="auto"`` or ``"numba"``): by ``schedule="flooding"`` without reweighting and by
the flooding run of ``schedule="auto"`` on frustrated components. The same rounds as
:func:`~hmrf.inference.flooding.flooding` (every message recomputed from the previous
round's beliefs and messages, damping, the per-node argmin as anytime labelling, a
consistent decoding at the end), on the message layout and update of
:mod:`hmrf.inference.schedule_numba`, whose ``_send`` reads the factors' messages to the
sender from last round's copy here. The final decoding is that module's forward pass
without sending: node by node in its order, true costs towards decoded nodes and
messages from the others (libDAI's consistent decoding).
"""

from __future__ import annotations

import numba
import numpy as np

from ..graph import POTTS_CL, POTTS_ML
from .schedule_numba import CompiledSequentialMessages, _send

__all__ = ["compiled_flooding"]


@numba.njit(cache=True, nogil=True)
def _round(u, msgs, old, into_f, into_b, beliefs, labels, in_ptr, in_ids, out_ptr, out_mid, out_ids, src, dst,
           rev, kind, w, tab_of, tcost, undamped, wake, woke, scratch, frozen, damping, tol, comp):
    """One flooding round; writes the per-node argmin into ``labels`` and returns
    (whether a message moved by more than ``tol``, the energy of ``labels``).

    Lazy, as the sequential passes: only the nodes flagged in ``wake`` send (one of
    their incoming messages moved by more than ``tol`` in the previous round, or, with
    damping, one of their own messages is still moving); the flags of the next round
    are set in ``woke``. ``frozen`` is all False; ``scratch`` takes flags not used here.
    """
    n, k = u.shape
    m = src.shape[0] // 2
    bel, h, new, lb = np.empty(k), np.empty(k), np.empty(k), np.zeros(1)
    for i in range(n):  # what the senders read: last round's beliefs and incoming messages
        if wake[i]:
            for y in range(k):
                beliefs[i, y] = u[i, y] + into_f[i, y] + into_b[i, y]
            for p in range(in_ptr[i], in_ptr[i + 1]):
                e = in_ids[p]
                for y in range(k):
                    old[e, y] = msgs[e, y]
    moved = False
    for i in range(n):
        if not wake[i]:
            continue
        for y in range(k):
            bel[y] = beliefs[i, y]
        sent = _send(i, out_ptr[i], out_mid[i], out_ids, bel, h, new, msgs, old, into_f, dst, rev, kind,
                     w, tab_of, tcost, undamped, woke, scratch, scratch, frozen, False, False, damping,
                     tol, np.inf, lb, comp)
        sent |= _send(i, out_mid[i], out_ptr[i + 1], out_ids, bel, h, new, msgs, old, into_b, dst, rev,
                      kind, w, tab_of, tcost, undamped, woke, scratch, scratch, frozen, False, True,
                      damping, tol, np.inf, lb, comp)
        if sent and damping > 0.0:  # a damped message has not reached its update yet
            woke[i] = True
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
    for e in range(m):  # every factor once, through its forward message
        a, b = labels[src[e]], labels[dst[e]]
        if kind[e] == POTTS_ML:
            energy += w[e] if a != b else 0.0
        elif kind[e] == POTTS_CL:
            energy += w[e] if a == b else 0.0
        else:
            energy += tcost[tab_of[e], a, b]
    return moved, energy


def compiled_flooding(graph, u0, big, max_iter, damping, tol, patience, auto_switch, notify,
                      order="bfs") -> dict:
    """Flooding max-product rounds, compiled; the arguments and result of
    :func:`~hmrf.inference.flooding.flooding` in max mode without reweighting.

    ``u0`` is the (n, k) BIG-capped unary cost with its row minima removed; the anytime
    labelling is compared on it (the same order as the true energy: they differ by a
    constant). ``order`` is the node order of the final decoding.
    """
    n, k = u0.shape
    sm = CompiledSequentialMessages(graph, k, big, tol, order)
    lay = sm.layout
    u_p = np.ascontiguousarray(u0[sm.perm])
    msgs = sm.new_messages()
    old, beliefs = np.empty_like(msgs), np.empty((n, k))
    labels, best = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    wake, woke, scratch = np.ones(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    frozen, undamped = np.zeros(n, dtype=bool), np.zeros(2 * graph.n_edges, dtype=bool)
    lam = 0.0 if damping is None else float(damping)
    best_e, stale, stopped, converged, it = np.inf, 0, "max_iter", False, 0

    def unpermute(y):
        out = np.empty(n, dtype=np.int64)
        out[sm.perm] = y
        return out

    for it in range(1, int(max_iter) + 1):
        if damping is None and it == auto_switch + 1:
            lam = 0.5  # undamped updates did not settle: damp from now on
        moved, energy = _round(u_p, msgs, old, sm.into_f, sm.into_b, beliefs, labels, lay.node_in[0],
                               lay.node_in[2], *lay.node_out, lay.src,
                               lay.dst, lay.rev, lay.kind, sm.w, sm.tab_of, sm.tcost, undamped, wake, woke,
                               scratch, frozen, lam, float(tol), lay.comp)
        wake, woke = woke, wake
        woke[:] = False
        if energy < best_e:
            best[:], best_e, stale = labels, energy, 0
        else:
            stale += 1
        notify(it, unpermute(labels))
        if not moved:
            converged, stopped = True, "tol"
            break
        if patience is not None and stale >= patience:
            stopped = "patience"
            break
    decoded = np.zeros(n, dtype=np.int64)
    sm.stale_label[:] = True
    sm.forward(u_p, msgs, decoded, send=False)
    info = {"damping": lam, "big": big, "reweighted": False, "stopped": stopped, "schedule": "flooding"}
    return {"labels": [unpermute(decoded), unpermute(best)], "n_iter": it, "converged": converged,
            "info": info}
