"""``inference="auto"``: belief propagation, then α-expansion moves from its labelling.

The rule comes from ``benchmarks/inference.py --scale`` (docs/inference.md, "An
automatic choice"): on every size measured (50 to 200,000 constrained points) and both
kinds of component, belief propagation's labelling was the best or within 0.03 % of
the best found, except on some must-link components of 5,000 points where it stopped
0.5 % above the α-expansion optimum; α-expansion (Boykov, Veksler & Zabih 2001) from
the unary argmin was 3–4 % worse on frustrated (mixed) components. Started *from BP's
labelling*, α-expansion moves never raise the energy (each move is an exact or a
QPBO-autarky minimisation, :class:`~hmrf.inference.AlphaExpansion`), take one sweep
where BP's labelling is already expansion-optimal and repaired both misses. So, per
connected component, the result is the lower of BP's labelling and the expansion
moves' from it: never worse than either engine's labelling from that start.
"""

from __future__ import annotations

import numpy as np

from .._params import Options, validate_params
from .base import InferenceEngine
from .bp import BeliefPropagation
from .expansion import AlphaExpansion
from .qpbo import load_maxflow
from .rounding import best_per_component

__all__ = ["AutoEngine", "graph_cuts_available"]


def graph_cuts_available() -> bool:
    """Whether PyMaxflow (``pip install hmrf[graphcut]``), which α-expansion needs, imports."""
    try:
        load_maxflow()
    except ImportError:
        return False
    return True


class AutoEngine(InferenceEngine):
    """Belief propagation, then α-expansion moves from its labelling (``inference="auto"``).

    Runs :class:`~hmrf.inference.BeliefPropagation` (default settings) on the E-step,
    then :class:`~hmrf.inference.AlphaExpansion` started from BP's labelling, and keeps
    in every connected component the labelling of lower energy
    ``E_c(y) = sum_{i in c} U[i, y_i] + sum_{e in c} cost_e(y)``.

    Parameters
    ----------
    expansion : {"auto", True, False}, default="auto"
        Whether to run the α-expansion moves. ``"auto"``: when PyMaxflow is installed
        (``pip install hmrf[graphcut]``); without it the engine is belief propagation.

    Notes
    -----
    The lower bound is BP's TRW-S bound when every component has one. ``info`` holds
    BP's ``info`` plus ``expansion_sweeps`` (``None`` when no moves ran) and
    ``improved_components``, the components whose labelling the moves lowered.
    docs/inference.md has the measurements behind the rule.

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

    def __init__(self, expansion="auto"):
        self.expansion = expansion

    def _solve(self, unary, graph, init, rng, notify):
        validate_params(self)
        use_moves = self.expansion is True or (self.expansion == "auto" and graph_cuts_available())
        bp = BeliefPropagation().map(unary, graph, rng=rng,
                                     callback=lambda it, y, e, b: notify(it, y, b))
        info = dict(bp.info)
        info.update(expansion_sweeps=None, improved_components=0)
        labels = bp.labels
        if use_moves:
            moves = AlphaExpansion().map(unary, graph, init=bp.labels, rng=rng)
            n_comp, comp = graph.components()
            labels, _ = best_per_component(unary, graph, np.array([bp.labels, moves.labels]), comp, n_comp)
            info["expansion_sweeps"] = moves.n_iter
            info["improved_components"] = int(np.count_nonzero(
                _component_energy(unary, graph, labels) < _component_energy(unary, graph, bp.labels) - 1e-12))
        return {"labels": labels, "lower_bound": bp.lower_bound, "n_iter": bp.n_iter,
                "converged": bp.converged, "info": info}


def _component_energy(unary, graph, labels) -> np.ndarray:
    """``E_c(labels)`` of every connected component of ``graph``."""
    n_comp, comp = graph.components()
    node = unary[np.arange(unary.shape[0]), labels]
    e = np.bincount(comp, weights=node, minlength=n_comp)
    return e + np.bincount(comp[graph.edges[:, 0]], weights=graph.edge_costs(labels), minlength=n_comp)
