"""The passes of sequential tree-reweighted message passing (TRW-S, Kolmogorov 2006) in NumPy.

The NumPy oracle of the compiled passes :func:`hmrf.inference.bp.kernels.trws_forward` and
:func:`~hmrf.inference.bp.kernels.trws_backward` (and the must-link passes compiled per
number of labels), on the same :class:`~hmrf.inference.bp.trws.ChainLayout`.

**Order and messages.** The nodes are visited in a fixed order (``perm[new] = old``);
every edge ``e`` joins an earlier end ``lo`` and a later end ``hi``. Node ``s`` has
``n_s^-`` edges to earlier and ``n_s^+`` to later nodes, and
``gamma_s = 1 / max(n_s^-, n_s^+, 1)``: the weight of monotonic chains covering the
graph, each edge in one chain (Kolmogorov 2006, §4.1, uniform chain probabilities).
Each edge stores one message ``msg[e]`` (Kolmogorov 2006, §4.1, "memory"): after the
backward pass it holds ``m_{hi->lo}``, and the forward pass overwrites it with
``m_{lo->hi}`` once ``lo`` has read it. With the belief
``θ̂_s = θ_s + sum_{e ∋ s} m_{e->s}``, node ``s`` sends along each edge towards the
pass's direction::

    m_{s->t}(x_t) = min_{x_s} [ gamma_s θ̂_s(x_s) - m_{t->s}(x_s) + θ_st(x_s, x_t) ]

normalised to ``min = 0`` (the O(k) Potts forms of :mod:`~hmrf.inference.bp.messages`).

**Bound.** In the backward pass, with ``θ̃_s = θ̂_s - min θ̂_s``, the sum over the nodes of
``min θ̂_s`` and over the messages sent of their minimum before normalisation,
``min_{x_t} min_{x_s} [gamma_s θ̃_s(x_s) - m_{t->s}(x_s) + θ_st(x_s, x_t)]``, is the
lower bound of the current reparametrisation (Kolmogorov 2006, §4.2, as his
implementation computes it); it never decreases from one iteration to the next
(Theorem 3.2 of the paper: TRW-S is monotone).

**Decoding** (Kolmogorov 2006, §5.1). In the forward pass node ``s`` takes the label
minimising ``θ_s + sum_{t < s} θ_st(x_t, ·) + sum_{t > s} m_{t->s}``: the true costs
towards the earlier nodes, already decoded, and the messages from the later ones.

**Levels.** Node ``s`` depends, in a forward pass, only on its earlier neighbours; its
*level* is one more than the largest level among them (0 without one). The nodes of
one level share no edge, so a pass over the levels in order, each level vectorised,
computes exactly what the node-by-node pass computes (and the backward pass, the
levels in reverse order). On an image grid in raster order the levels are its
anti-diagonals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from oracles.bp_numpy import cannot_link_messages, must_link_messages

from hmrf.graph import POTTS_CL, POTTS_ML, TABLE

__all__ = ["levels", "forward_pass", "backward_pass"]


def _ranges(starts, stops):
    """Concatenated ``arange(starts[i], stops[i])`` (vectorised)."""
    cnt = stops - starts
    total = int(cnt.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    return np.repeat(starts - np.cumsum(cnt) + cnt, cnt) + np.arange(total)


def levels(layout):
    """Per level (a node's level is one more than its earlier neighbours'), what the
    vectorised passes need: its nodes, its edges to later (``fwd``) and earlier (``bwd``)
    nodes with their node's row, and the 0/1 matrices summing each node's messages."""
    n, m = layout.perm.shape[0], layout.lo.shape[0]
    indeg = np.diff(layout.bptr).copy()
    frontier = np.flatnonzero(indeg == 0)
    out = []
    while frontier.size:
        out.append(_level(layout, frontier, m))
        ids = _ranges(layout.fptr[frontier], layout.fptr[frontier + 1])
        targets, cnt = np.unique(layout.hi[ids], return_counts=True)
        indeg[targets] -= cnt
        frontier = targets[indeg[targets] == 0]
    assert sum(lv["nodes"].size for lv in out) == n
    return out


def _level(layout, nodes, m):
    fwd = _ranges(layout.fptr[nodes], layout.fptr[nodes + 1])
    f_row = np.repeat(np.arange(nodes.size), np.diff(layout.fptr)[nodes])
    bwd = layout.be[_ranges(layout.bptr[nodes], layout.bptr[nodes + 1])]
    b_row = np.repeat(np.arange(nodes.size), np.diff(layout.bptr)[nodes])
    F = sp.csr_matrix((np.ones(fwd.size), (f_row, fwd)), shape=(nodes.size, m))
    B = sp.csr_matrix((np.ones(bwd.size), (b_row, bwd)), shape=(nodes.size, m))
    rows = sp.csr_matrix((np.ones(bwd.size), (b_row, np.arange(bwd.size))), shape=(nodes.size, bwd.size))
    return {"nodes": nodes, "fwd": fwd, "f_row": f_row, "bwd": bwd, "b_row": b_row, "F": F, "B": B,
            "b_sum": rows}


def _messages(h, ids, layout, costs, towards_hi):
    """Normalised messages of the edges ``ids`` from ``h`` (len, k), and each one's minimum
    before normalisation (its bound term)."""
    kind = layout.kind[ids]
    new = np.empty_like(h)
    term = np.empty(ids.size)
    ht = np.ascontiguousarray(h.T)
    for code in (POTTS_ML, POTTS_CL, TABLE):
        sel = np.flatnonzero(kind == code)
        if not sel.size:
            continue
        hp, d = ht[:, sel], ids[sel]
        term[sel] = hp.min(axis=0)
        if code == POTTS_ML:
            out = must_link_messages(hp, costs[6][d], "max", np.empty_like(hp))
        elif code == POTTS_CL:
            out = cannot_link_messages(hp, costs[6][d], "max", np.empty_like(hp))
            if h.shape[1] == 1:  # the only label pair costs w
                term[sel] += costs[6][d]
        else:
            tc = costs[8][costs[7][d]]  # (c, x_lo, x_hi)
            if not towards_hi:
                tc = tc.transpose(0, 2, 1)  # (c, x_sender, x_receiver)
            full = (hp.T[:, :, None] + tc).min(axis=1)  # (c, k): min over the sender's label
            term[sel] = full.min(axis=1)
            out = (full - term[sel][:, None]).T
        new[sel] = out.T
    return new, term


def _costs_to(labels_lo, y, ids, layout, costs):
    """Costs of the edges ``ids`` with their earlier ends at ``labels_lo`` and later ends at
    ``y`` (broadcast over a trailing label axis when ``y`` is ``(1, k)``)."""
    kind = layout.kind[ids][:, None]
    x = labels_lo[:, None]
    w = costs[6][ids][:, None]
    cl = np.where(kind == POTTS_CL, np.where(x == y, w, 0.0), 0.0)
    out = np.where(kind == POTTS_ML, np.where(x != y, w, 0.0), cl)
    tab = np.flatnonzero(layout.kind[ids] == TABLE)
    if tab.size:
        t = costs[7][ids[tab]]
        yy = np.broadcast_to(y, out.shape)[tab]
        out[tab] = costs[8][t[:, None], x[tab], yy]
    return out


def forward_pass(u: NDArray[Any], msg: NDArray[Any], layout: Any, costs: tuple,
                 active: NDArray[Any], labels: NDArray[np.intp], node_e: Any, gamma: Any = None) -> None:
    """Forward pass over the levels (:func:`hmrf.inference.bp.kernels.trws_forward`)."""
    k = u.shape[1]
    ks = np.arange(k)[None, :]
    for lv in levels(layout):
        nodes, fwd, f_row, bwd, b_row = lv["nodes"], lv["fwd"], lv["f_row"], lv["bwd"], lv["b_row"]
        on = active[nodes]
        if not on.any():
            continue
        th = u[nodes] + lv["F"] @ msg
        h = th.copy()
        if bwd.size:
            c = _costs_to(labels[layout.lo[bwd]], ks, bwd, layout, costs)
            h += lv["b_sum"] @ c
        x = np.argmin(h, axis=1)
        ne = u[nodes, x]
        if bwd.size:
            c = _costs_to(labels[layout.lo[bwd]], x[b_row][:, None], bwd, layout, costs)[:, 0]
            ne = ne + np.bincount(b_row, weights=c, minlength=nodes.size)
            th += lv["B"] @ msg
        labels[nodes[on]] = x[on]
        node_e[nodes[on]] = ne[on]
        sel = np.flatnonzero(on[f_row])
        if sel.size:
            ids, rows = fwd[sel], f_row[sel]
            hh = (layout.gamma if gamma is None else gamma)[nodes[rows], None] * th[rows] - msg[ids]
            msg[ids] = _messages(hh, ids, layout, costs, True)[0]


def backward_pass(u: NDArray[Any], msg: NDArray[Any], layout: Any, costs: tuple,
                  active: NDArray[Any], lb: Any, gamma: Any = None) -> None:
    """Backward pass over the levels in reverse order, adding the bound to ``lb`` per
    component (:func:`hmrf.inference.bp.kernels.trws_backward`)."""
    comp = layout.comp
    for lv in reversed(levels(layout)):
        nodes, bwd, b_row = lv["nodes"], lv["bwd"], lv["b_row"]
        on = active[nodes]
        if not on.any():
            continue
        th = u[nodes] + lv["F"] @ msg + lv["B"] @ msg
        mins = th.min(axis=1)
        lb += np.bincount(comp[nodes[on]], weights=mins[on], minlength=lb.size)
        sel = np.flatnonzero(on[b_row])
        if sel.size:
            ids, rows = bwd[sel], b_row[sel]
            hh = (layout.gamma if gamma is None else gamma)[nodes[rows], None] * (th[rows] - mins[rows, None]) - msg[ids]
            msg[ids], term = _messages(hh, ids, layout, costs, False)
            lb += np.bincount(comp[nodes[rows]], weights=term, minlength=lb.size)
