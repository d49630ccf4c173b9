"""``inference="auto"``: an engine per connected component, by its size and frustration.

* a **large component of soft must-links only** (at least ``LARGE_COMPONENT`` nodes) is
  solved by α-expansion (Boykov, Veksler & Zabih 2001): each move is an exact max-flow
  cut, and the result is within the factor-2 bound of Potts energies;
* **every other component** (frustrated: a cannot-link, a table or a hard factor; or
  small) gets belief propagation, then α-expansion moves started from BP's labelling,
  and keeps the lower energy: the moves never raise the energy (each is an exact or a
  QPBO-autarky minimisation, :class:`~hmrf.inference.AlphaExpansion`). The moves are
  skipped when BP's lower bound already proves its labelling optimal.

docs/inference.md ("The automatic choice") has the measurements behind the rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._lazy import lazy_module
from ..graph import COMPONENTS, CacheKey
from .base import InferenceEngine, Solution, refuse_removed
from .bp import BeliefPropagation
from .bp.schedules import frustrated_components
from .expansion import AlphaExpansion

# the compiled kernels load on first use: listing or building engines needs no numba
graphcut = lazy_module("hmrf.inference.graphcut_numba")

__all__ = ["AutoEngine", "LARGE_COMPONENT"]

#: the split of the graph by the rule (depends on which edges are hard)
PARTS = CacheKey("auto.parts")

#: Must-link-only components with at least this many (super-)nodes go to α-expansion alone.
LARGE_COMPONENT = 1000

#: BP's labelling is optimal when its energy exceeds its lower bound by at most this
#: (relative) amount: what any move could still gain is below it
_CERTIFIED_GAP = 1e-10


class AutoEngine(InferenceEngine):
    """An engine per connected component (``inference="auto"``; module docstring).

    Large must-link-only components: :class:`~hmrf.inference.AlphaExpansion` from the
    previous labels (``init``) or the unary argmin. Every other component:
    :class:`~hmrf.inference.BeliefPropagation` (default settings), then α-expansion
    moves (``AlphaExpansion(tables="any")``) started from BP's labelling, keeping in
    every connected component the labelling of lower energy
    ``E_c(y) = sum_{i in c} U[i, y_i] + sum_{e in c} cost_e(y)``. Both parts' solvers
    run on the problem this engine was given, already reduced (no second check or
    reduction).

    Notes
    -----
    The lower bound is BP's (TRW-S's where BP runs it) when BP solved every component
    (α-expansion gives no bound). ``info`` holds BP's ``info`` (when BP ran) plus
    ``expansion_nodes`` (nodes solved by α-expansion alone), ``expansion_sweeps``
    (``None`` when no moves ran) and ``improved_components``, the components whose BP
    labelling the moves lowered.

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

    def __init__(self, **removed: Any) -> None:
        refuse_removed("AutoEngine", removed, {
            "expansion": 'expansion=False is inference="bp"; the moves are always part of '
                         'auto, so drop expansion=True or "auto".'})

    def check_params(self) -> None:
        """Check the parts' parameters: belief propagation and the α-expansion moves."""
        self._engines = BeliefPropagation(), AlphaExpansion(tables="any")
        for engine in self._engines:
            engine.check_params()

    def _solve(self, unary, graph, init, rng, notify):
        if "_engines" not in vars(self):  # _solve reached without map or a fit's check
            self.check_params()
        bp, moves = self._engines
        (cut_nodes, cut_graph), (bp_nodes, bp_graph) = _parts(graph)
        n = unary.shape[0]
        labels = np.empty(n, dtype=np.int64)
        info = dict(expansion_nodes=int(cut_nodes.size), expansion_sweeps=None, improved_components=0)
        bound, n_iter, converged = None, 0, True
        if cut_nodes.size:  # its subgraph has no table: `tables="any"` checks nothing there
            whole = cut_nodes.size == n
            sub_init = None if init is None else (init if whole else init[cut_nodes])
            res = moves._solve(unary if whole else unary[cut_nodes], cut_graph, sub_init, rng, _ignore)
            labels[cut_nodes] = res.labels
            info["expansion_sweeps"] = n_iter = res.n_iter
            converged = res.converged
        if bp_nodes.size:
            u = unary if bp_nodes.size == n else unary[bp_nodes]
            out = bp._solve(u, bp_graph, None, rng, _ignore)
            info.update({k: v for k, v in out.info.items() if k not in info})
            energy, lb = bp_graph.energy(out.labels, u), out.lower_bound
            if lb is not None and energy - lb <= _CERTIFIED_GAP * (1.0 + abs(energy)):
                labels[bp_nodes] = out.labels  # BP's bound proves it optimal: no move can lower it
            else:
                mv = moves._solve(u, bp_graph, out.labels, rng, _ignore)
                energies = bp_graph.component_energies(u, np.array([out.labels, mv.labels]))  # (n_comp, 2)
                comp = bp_graph.components()[1]
                labels[bp_nodes] = np.where(energies[comp, 1] < energies[comp, 0], mv.labels, out.labels)
                info["expansion_sweeps"] = max(info["expansion_sweeps"] or 0, mv.n_iter)
                improved = energies.min(axis=1) < energies[:, 0] - 1e-12
                info["improved_components"] = int(np.count_nonzero(improved))
            bound = lb if not cut_nodes.size else None
            n_iter, converged = max(n_iter, out.n_iter), converged and out.converged
        notify(n_iter, labels, bound)
        return Solution(labels, lower_bound=bound, n_iter=n_iter, converged=converged, info=info)


def _ignore(*progress):
    """A ``notify`` for the parts' solvers: the whole problem's progress is reported once."""


def _parts(graph):
    """``((nodes, subgraph) for α-expansion alone, (nodes, subgraph) for BP + moves)``,
    cached on the graph (EM solves the same graph in every E-step). The components come
    from the compiled union–find (:func:`~hmrf.inference.graphcut_numba.components`,
    numbered as :meth:`~hmrf.PairwiseGraph.components` numbers them), stored in the
    graph's cache where every later caller finds them."""
    def build():
        def split():
            n_comp, comp = graphcut.components(graph.n_nodes, graph.edges[:, 0], graph.edges[:, 1])
            comp.flags.writeable = False
            return int(n_comp), comp

        n_comp, comp = graph.cache.get(COMPONENTS, split)
        size = np.bincount(comp, minlength=n_comp)
        alone = ~frustrated_components(graph) & (size >= LARGE_COMPONENT)
        cut = np.flatnonzero(alone[comp])
        rest = np.flatnonzero(~alone[comp])
        whole = cut.size == graph.n_nodes, rest.size == graph.n_nodes
        return ((cut, graph if whole[0] else graph.subgraph(cut)),
                (rest, graph if whole[1] else graph.subgraph(rest)))

    return graph.cache.get(PARTS, build)
