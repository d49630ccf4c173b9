"""``inference="auto"``: an engine per connected component, by its size and frustration.

* a **large component of soft must-links only** (at least ``LARGE_COMPONENT`` nodes) is
  solved by α-expansion (Boykov, Veksler & Zabih 2001): each move is an exact max-flow
  cut, and the result is within the factor-2 bound of Potts energies;
* **every other component** (frustrated: a cannot-link, a table or a hard factor; or
  small) gets belief propagation, then α-expansion moves started from BP's labelling,
  and keeps the lower energy: the moves never raise the energy (each is an exact or a
  QPBO-autarky minimisation, :class:`~hmrf.inference.AlphaExpansion`). The moves are
  skipped when BP's lower bound already proves its labelling optimal (TRW-S on the
  trees a sparse random graph leaves beside its giant component).

The measurements behind this rule and its threshold are in docs/inference.md ("The
automatic choice", ``benchmarks/inference.py --scale``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._optional import available
from .._params import Options, validate_params
from ..graph import COMPONENTS, CacheKey
from .base import InferenceEngine, Solution
from .bp import BeliefPropagation
from .bp.schedules import frustrated_components
from .expansion import AlphaExpansion

if TYPE_CHECKING:
    from typing import Literal

__all__ = ["AutoEngine", "graph_cuts_available", "LARGE_COMPONENT"]

#: the split of the graph by the rule (depends on which edges are hard)
PARTS = CacheKey("auto.parts")

#: Must-link-only components with at least this many (super-)nodes go to α-expansion alone.
LARGE_COMPONENT = 1000


def graph_cuts_available() -> bool:
    """Whether PyMaxflow (``pip install hmrf[graphcut]``), which α-expansion needs, imports."""
    return available("maxflow")


class AutoEngine(InferenceEngine):
    """An engine per connected component (``inference="auto"``; module docstring).

    Large must-link-only components: :class:`~hmrf.inference.AlphaExpansion` from the
    previous labels (``init``) or the unary argmin. Every other component:
    :class:`~hmrf.inference.BeliefPropagation` (default settings), then α-expansion
    moves started from BP's labelling, keeping in every connected component the
    labelling of lower energy ``E_c(y) = sum_{i in c} U[i, y_i] + sum_{e in c} cost_e(y)``.

    Parameters
    ----------
    expansion : {"auto", True, False}, default="auto"
        Whether to run the α-expansion moves. ``"auto"``: when PyMaxflow is installed
        (``pip install hmrf[graphcut]``); without it the engine is belief propagation.

    Notes
    -----
    The lower bound is BP's TRW-S bound when BP solved every component and each has
    one (α-expansion gives no bound). ``info`` holds BP's ``info`` (when BP ran) plus
    ``expansion_nodes`` (nodes solved by α-expansion alone), ``expansion_sweeps``
    (``None`` when no moves ran) and ``improved_components``, the components whose BP
    labelling the moves lowered. docs/inference.md has the measurements behind the rule.

    References
    ----------
    Boykov, Veksler & Zabih (2001), "Fast approximate energy minimization via graph
    cuts", IEEE TPAMI 23(11). Kolmogorov (2006), "Convergent tree-reweighted message
    passing for energy minimization", IEEE TPAMI 28(10).

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.inference.auto import AutoEngine
    >>> unary = np.array([[0.0, 1.0], [1.0, 0.2], [0.5, 0.0]])
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], n=3, weight=2.0)
    >>> AutoEngine().map(unary, c).labels.tolist()
    [0, 0, 1]
    """

    _parameter_constraints = {"expansion": [Options("auto", True, False)]}

    def __init__(self, expansion: Literal["auto"] = "auto") -> None:
        self.expansion = expansion

    def _solve(self, unary, graph, init, rng, notify):
        validate_params(self)
        use_moves = self.expansion is True or (self.expansion == "auto" and graph_cuts_available())
        if not use_moves:
            bp = BeliefPropagation().map(unary, graph, rng=rng, callback=lambda it, y, e, b: notify(it, y, b))
            info = dict(bp.info, expansion_nodes=0, expansion_sweeps=None, improved_components=0)
            return Solution(bp.labels, lower_bound=bp.lower_bound, n_iter=bp.n_iter,
                            converged=bp.converged, info=info)
        (cut_nodes, cut_graph), (bp_nodes, bp_graph) = _parts(graph)
        labels = np.empty(unary.shape[0], dtype=np.int64)
        info = dict(expansion_nodes=int(cut_nodes.size), expansion_sweeps=None, improved_components=0)
        bound, n_iter, converged = None, 0, True
        if cut_nodes.size:
            # the reduced problem's subgraph (no hard must-link, no isolated node): the
            # moves run on it directly, without a second validation and reduction
            whole = cut_nodes.size == unary.shape[0]
            sub_init = None if init is None else (init if whole else init[cut_nodes])
            res = AlphaExpansion()._solve(unary if whole else unary[cut_nodes], cut_graph, sub_init, rng,
                                          _ignore)
            labels[cut_nodes] = res.labels
            info["expansion_sweeps"] = res.n_iter
            n_iter, converged = res.n_iter, res.converged
        if bp_nodes.size:
            u = unary[bp_nodes]
            bp = BeliefPropagation().map(u, bp_graph, rng=rng)
            info.update({k: v for k, v in bp.info.items() if k not in info})
            if _proven_optimal(bp):
                # BP's bound meets its energy (TRW-S on trees and forests of must-links):
                # no move can lower it, so none is tried
                labels[bp_nodes] = bp.labels
            else:
                # moves from BP's labelling never raise its energy, whatever the tables: no
                # semi-metric requirement here (QPBO moves where a term is not submodular)
                moves = AlphaExpansion(tables="any").map(u, bp_graph, init=bp.labels, rng=rng)
                energies = bp_graph.component_energies(u, np.array([bp.labels, moves.labels]))  # (n_comp, 2)
                n_comp, comp = bp_graph.components()
                best = np.where(energies[comp, 1] < energies[comp, 0], moves.labels, bp.labels)
                labels[bp_nodes] = best
                info["expansion_sweeps"] = max(info["expansion_sweeps"] or 0, moves.n_iter)
                info["improved_components"] = int(np.count_nonzero(
                    energies.min(axis=1) < energies[:, 0] - 1e-12))
            bound = bp.lower_bound if not cut_nodes.size else None
            n_iter, converged = max(n_iter, bp.n_iter), converged and bp.converged
        notify(n_iter, labels, bound)
        return Solution(labels, lower_bound=bound, n_iter=n_iter, converged=converged, info=info)


#: BP's labelling is optimal when its energy exceeds its lower bound by at most this
#: (relative) amount: what any move could still gain is below it
_CERTIFIED_GAP = 1e-10


def _proven_optimal(result) -> bool:
    """Whether ``result``'s lower bound proves its labelling optimal (up to ``_CERTIFIED_GAP``)."""
    bound = result.lower_bound
    return bound is not None and result.energy - bound <= _CERTIFIED_GAP * (1.0 + abs(result.energy))


def _components(graph):
    """``graph.components()``, computed by the compiled union–find when numba is installed
    (:func:`~hmrf.inference.graphcut_numba.components`: the same numbering, without
    SciPy's sparse-matrix build) and stored
    in the graph's cache, where every later caller finds it."""
    def build():
        from .graphcut_numba import components

        n_comp, comp = components(graph.n_nodes, graph.edges[:, 0], graph.edges[:, 1])
        comp.flags.writeable = False
        return int(n_comp), comp

    if graph.cache.peek(COMPONENTS) is None and available("numba"):
        graph.cache.get(COMPONENTS, build)
    return graph.components()


def _ignore(*progress):
    """A ``notify`` for the parts' engines: the whole problem's progress is reported once."""


def _parts(graph):
    """``((nodes, subgraph) for α-expansion alone, (nodes, subgraph) for BP + moves)``,
    cached on the graph (EM solves the same graph in every E-step)."""
    def build():
        n_comp, comp = _components(graph)
        size = np.bincount(comp, minlength=n_comp)
        alone = ~frustrated_components(graph) & (size >= LARGE_COMPONENT)
        cut = np.flatnonzero(alone[comp])
        rest = np.flatnonzero(~alone[comp])
        whole = cut.size == graph.n_nodes, rest.size == graph.n_nodes
        return ((cut, graph if whole[0] else graph.subgraph(cut)),
                (rest, graph if whole[1] else graph.subgraph(rest)))

    return graph.cache.get(PARTS, build)

