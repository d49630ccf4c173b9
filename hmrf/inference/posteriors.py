"""Posteriors of an E-step problem and their variational free energy.

An engine that gives posteriors (``InferenceEngine.gives_marginals``) approximates
``p(y) ∝ exp(-E(y))``, ``E(y) = Σ_i U[i, y_i] + Σ_e cost_e(y_a, y_b)``, by a factorised
``q(y) = Π_i q_i(y_i)``, whose variational free energy (Jordan et al. 1999; Wainwright &
Jordan 2008, §5) is

    F(q) = Σ_i Σ_h q_ih U_ih + Σ_e E_q[cost_e] + Σ_i Σ_h q_ih log q_ih  >=  -log Z.

It is evaluated on the reduced problem (:func:`~hmrf.inference.base.reduce_problem`);
an isolated super-node has the exact posterior ``q_ih ∝ exp(-U_ih)``. An infinite
pairwise cost counts as ``HARD`` times the largest finite cost of the problem, so that
mass on a violation pays for it in ``F``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..graph import PairwiseGraph
    from .base import ReducedProblem

__all__ = ["softmax_free_energy", "free_energy", "expected_pairwise_cost", "hard_cost", "expand_posteriors",
           "HARD"]

#: factor of the largest finite cost that stands for an infinite one (:func:`hard_cost`)
HARD = 1e3


def softmax_free_energy(unary: NDArray[np.floating]) -> tuple[np.ndarray, np.ndarray]:
    """Exact posteriors ``q_ih ∝ exp(-U_ih)`` of independent nodes and their free
    energies ``-log Σ_h exp(-U_ih)`` (n,), computed stably (rows may hold ``+inf``)."""
    U = np.asarray(unary, dtype=np.float64)
    m = U.min(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(-(U - m))
    z = e.sum(axis=1, keepdims=True)
    return e / z, (m - np.log(z)).ravel()


def hard_cost(unary: NDArray[np.floating], graph: PairwiseGraph) -> float:
    """The finite cost an infinite pairwise cost counts as: ``HARD`` times the largest
    finite ``|U_ih|`` or edge weight (at least ``HARD``)."""
    u, w = unary[np.isfinite(unary)], graph.weight[np.isfinite(graph.weight)]
    return HARD * max(float(np.abs(u).max(initial=1.0)), float(np.abs(w).max(initial=1.0)))


def expected_pairwise_cost(graph: PairwiseGraph, q: NDArray[np.floating], big: float) -> float:
    """``Σ_e E_q[cost_e]`` for factorised posteriors ``q`` (n, k): ``w (1 - q_a·q_b)`` for
    a must-link, ``w q_a·q_b`` for a cannot-link, ``q_aᵀ T q_b`` for a table; an infinite
    cost counts as ``big``."""
    if graph.n_edges == 0:
        return 0.0
    a, b = graph.edges[:, 0], graph.edges[:, 1]
    w = np.where(np.isinf(graph.weight), big, graph.weight)
    same = np.einsum("eh,eh->e", q[a], q[b])
    cls = graph.edge_classes()
    out = np.where(cls.must, w * (1.0 - same), 0.0)
    out = np.where(cls.cannot, w * same, out)
    tab = np.flatnonzero(cls.table)
    if tab.size:
        T = graph.table_costs()
        T = np.where(np.isinf(T), big, T)
        out[tab] = np.einsum("ta,tab,tb->t", q[a[tab]], T, q[b[tab]])
    return float(out.sum())


def free_energy(unary: NDArray[np.floating], graph: PairwiseGraph, q: NDArray[np.floating]) -> float:
    """``F(q)`` (module docstring) of the problem ``(unary, graph)`` for factorised
    posteriors ``q`` (n, k), infinite pairwise costs counted as :func:`hard_cost`."""
    with np.errstate(invalid="ignore", divide="ignore"):
        pos = q > 0
        entropy = np.where(pos, q * np.log(np.where(pos, q, 1.0)), 0.0).sum()
        energy = np.where(pos, q * unary, 0.0).sum()
    return float(energy + entropy + expected_pairwise_cost(graph, q, hard_cost(unary, graph)))


def expand_posteriors(red: ReducedProblem, active: NDArray[np.floating]) -> tuple[np.ndarray, float]:
    """Posteriors of every original node (n, k) and ``F`` of the whole problem, from the
    posteriors ``active`` (n_active, k) of the constrained super-nodes of ``red``: the
    isolated super-nodes' are exact, and the members of a super-node share its posterior."""
    iso = red.fixed_labels >= 0
    q_iso, f_iso = softmax_free_energy(red.super_unary[iso])
    q = np.empty(red.super_unary.shape)
    q[iso] = q_iso
    q[red.active] = active
    free = red.constant + float(f_iso.sum())
    if red.active.size:
        free += free_energy(red.unary, red.graph, active)
    return q[red.node_of], free
