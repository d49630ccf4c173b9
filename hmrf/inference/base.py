"""The one interface every E-step engine implements, and the problem reduction they share.

Before an engine runs, :meth:`InferenceEngine.map` shrinks the problem exactly: points
joined by hard must-links become one super-node (unary costs summed; a factor inside a
component becomes a constant or a unary term), and super-nodes with no remaining factor
take the argmin of their unary row. Only the constrained nodes reach the engine
(``_solve``), so its cost grows with the constraints, not with ``n``. The reported
energy is recomputed on the original problem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .._validation import check_random_state, validate_params
from ..exceptions import InfeasibleError
from ..graph import CacheKey, PairwiseGraph, as_graph, segment_sum
from .feasibility import raise_if_infeasible
from .posteriors import expand_posteriors

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import ArrayLike, NDArray

    from .._typing import RandomLike
    from ..constraints import Constraints

__all__ = ["InferenceResult", "Solution", "InferenceEngine", "ReducedProblem", "reduce_problem",
           "check_unary"]

#: the hard-must-link contraction: re-weights itself (``None`` when the hard edges changed)
REDUCTION = CacheKey("inference.reduction", lambda st, weight: st.reweighted(weight))


@dataclass
class InferenceResult:
    """Outcome of one E-step.

    Attributes
    ----------
    labels : ndarray of shape (n,)
    energy : float
        ``sum_i U[i, y_i] + sum_e cost_e`` on the original problem.
    lower_bound : float or None
        A proven lower bound on the optimal energy (LP value, MILP bound), if any.
    n_iter : int
    converged : bool
        Whether the engine met its own stopping criterion before its cap.
    info : dict
        Engine-specific extras (``time`` in seconds is always present).
    marginals : ndarray of shape (n, k) or None
        Posteriors ``q_i(h)`` from an engine that gives them (``gives_marginals``).
    free_energy : float or None
        Their variational free energy ``F(q) >= -log Z`` (:mod:`hmrf.inference.posteriors`).
    """

    labels: np.ndarray
    energy: float
    lower_bound: float | None = None
    n_iter: int = 0
    converged: bool = True
    info: dict = field(default_factory=dict)
    marginals: np.ndarray | None = None
    free_energy: float | None = None

    @property
    def gap(self) -> float | None:
        """``energy - lower_bound`` (``None`` without a bound); 0 means proven optimal."""
        if self.lower_bound is None:
            return None
        return float(self.energy - self.lower_bound)


@dataclass
class Solution:
    """What an engine's ``_solve`` returns: the fields of :class:`InferenceResult` but
    ``energy`` and ``free_energy``, on the constrained super-nodes it was given
    (:meth:`InferenceEngine.map` expands them)."""

    labels: np.ndarray
    lower_bound: float | None = None
    n_iter: int = 0
    converged: bool = True
    info: dict = field(default_factory=dict)
    marginals: np.ndarray | None = None


def check_unary(unary: NDArray[np.floating]) -> np.ndarray:
    """Validate unary costs: 2-D float, no NaN or -inf (+inf = forbidden label)."""
    u = np.asarray(unary, dtype=np.float64)
    if u.ndim != 2:
        raise ValueError(f"unary costs must have shape (n, k); got shape {u.shape}.")
    if u.shape[1] < 1:
        raise ValueError("unary costs need at least one label (k >= 1).")
    if np.isfinite(u).all():  # one pass in the common case
        return u
    bad = np.isnan(u) | (u == -np.inf)
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        what = "NaN" if np.isnan(u[r, c]) else "-inf"
        raise ValueError(f"unary cost [{r}, {c}] is {what}; costs must be finite or +inf.")
    return u


@dataclass
class ReducedProblem:
    """An E-step problem after hard-must-link contraction and isolation.

    Attributes
    ----------
    node_of : ndarray (n,)
        Super-node of every original node.
    fixed_labels : ndarray (n_super,)
        Labels of isolated super-nodes (``-1`` for the constrained ones).
    active : ndarray (n_active,)
        Super-node ids that carry factors, in the order of ``unary``.
    unary : ndarray (n_active, k)
        Unary costs of the active super-nodes.
    graph : PairwiseGraph
        Factors among the active super-nodes.
    offset : float
        Energy of everything outside the reduced problem: isolated super-nodes' unary
        minima plus constant factors inside contracted components.
    super_unary : ndarray (n_super, k)
        Unary costs of every super-node.
    constant : float
        Energy of the constant factors inside contracted components.
    """

    node_of: np.ndarray
    fixed_labels: np.ndarray
    active: np.ndarray
    unary: np.ndarray
    graph: PairwiseGraph
    offset: float
    super_unary: np.ndarray | None = None
    constant: float = 0.0

    def expand(self, active_labels: Any) -> np.ndarray:
        """Labels of the original nodes from labels of the active super-nodes."""
        sup = self.fixed_labels.copy()
        if self.active.size:
            sup[self.active] = active_labels
        return sup[self.node_of]

    def first_member(self, active_index: int) -> int:
        """Smallest original node index inside active super-node ``active_index``."""
        return int(np.flatnonzero(self.node_of == self.active[active_index])[0])

    def restrict(self, labels: NDArray[np.intp]) -> np.ndarray:
        """Labels of the active super-nodes from a labelling of the original nodes
        (the first member of each super-node decides)."""
        labels = np.asarray(labels)
        n_super = self.fixed_labels.shape[0]
        first = np.full(n_super, -1, dtype=np.int64)
        # reversed assignment leaves the smallest original index in each slot
        idx = np.arange(self.node_of.shape[0])[::-1]
        first[self.node_of[idx]] = idx
        return labels[first[self.active]]


@dataclass
class _Structure:
    """The unary-independent part of the reduction, cached on the (immutable) graph."""

    n_super: int
    node_of: np.ndarray
    contracted: bool
    const: float                 # cannot-links inside contracted components (always violated)
    tab_rows: np.ndarray         # super-node receiving each internal table edge's diagonal
    tab_diag: np.ndarray         # (t, k) weighted diagonals of internal table edges
    has_edge: np.ndarray
    active: np.ndarray
    sub: PairwiseGraph
    hard: np.ndarray             # which edges are hard (the contraction depends on them)
    cl_inside: np.ndarray        # cannot-links inside contracted components
    tab_inside: np.ndarray       # table edges inside contracted components
    tab_diag_raw: np.ndarray     # (t, k) their unweighted table diagonals
    kept: np.ndarray             # the edges of ``sub``, in order

    def reweighted(self, weight) -> _Structure | None:
        """The same reduction under new edge weights (the weight-update contract of
        :class:`~hmrf.graph.GraphCache`); ``None`` when the hard edges changed."""
        if not np.array_equal(np.isinf(weight), self.hard):
            return None
        const, tab_diag = _weighted_terms(weight, self.cl_inside, self.tab_inside, self.tab_diag_raw)
        return replace(self, const=const, tab_diag=tab_diag, sub=self.sub.with_weights(weight[self.kept]))


def _weighted_terms(w, cl_inside, tab_inside, tab_diag_raw):
    """``const`` and ``tab_diag`` of a reduction under the weights ``w``."""
    const = float(w[cl_inside].sum())
    tab_diag = np.empty((0, 0))
    if tab_inside.any():
        wt = w[tab_inside][:, None]
        with np.errstate(invalid="ignore"):
            tab_diag = np.where(wt == 0, 0.0, wt * tab_diag_raw)
    return const, tab_diag


def _contract(graph: PairwiseGraph) -> _Structure:
    n = graph.n_nodes
    e, kind, w = graph.edges, graph.kind, graph.weight
    cls = graph.edge_classes()
    hard_ml = cls.hard_must
    if hard_ml.any():
        adj = sp.coo_matrix((np.ones(int(hard_ml.sum())), (e[hard_ml, 0], e[hard_ml, 1])), shape=(n, n))
        n_super, node_of = csgraph.connected_components(adj, directed=False)
        node_of = node_of.astype(np.int64)
    else:
        n_super, node_of = n, np.arange(n, dtype=np.int64)
    a, b = node_of[e[:, 0]], node_of[e[:, 1]]
    inside = a == b
    bad = inside & cls.hard_cannot
    if bad.any():
        i, j = (int(v) for v in e[np.flatnonzero(bad)[0]])
        raise InfeasibleError(
            f"hard cannot-link ({i}, {j}) joins points that hard must-links force into "
            "the same cluster; no labelling satisfies both.",
            point=i,
        )
    # inside a contracted component must-links always hold and cannot-links always fail
    cl_in = inside & cls.cannot
    tab_in = inside & cls.table
    diag = np.empty((0, 0))
    if tab_in.any():
        k = graph.tables.shape[1]
        diag = graph.tables[graph.table_index[tab_in]][:, np.arange(k), np.arange(k)]
    const, tab_diag = _weighted_terms(w, cl_in, tab_in, diag)
    keep = ~inside
    ea, eb = a[keep], b[keep]
    has_edge = np.zeros(n_super, dtype=bool)
    has_edge[ea] = True
    has_edge[eb] = True
    active = np.flatnonzero(has_edge)
    pos = np.full(n_super, -1, dtype=np.int64)
    pos[active] = np.arange(active.shape[0])
    sub = PairwiseGraph(
        active.shape[0], np.column_stack([pos[ea], pos[eb]]), w[keep], kind[keep], graph.tables,
        None if graph.table_index is None else graph.table_index[keep],
    )
    st = _Structure(int(n_super), node_of, bool(hard_ml.any()), const, a[tab_in], tab_diag,
                    has_edge, active, sub, cls.hard, cl_in, tab_in, diag, np.flatnonzero(keep))
    return st


def reduce_problem(unary: np.ndarray, graph: PairwiseGraph) -> ReducedProblem:
    """Contract hard must-links and solve isolated nodes (see module docstring); the
    graph-only part is cached on the graph.

    Raises
    ------
    InfeasibleError
        A hard cannot-link inside a hard must-link component, or a (super-)node whose
        every label has infinite cost.
    """
    st = graph.cache.get(REDUCTION, lambda: _contract(graph))
    if st.contracted:
        sup_unary = segment_sum(st.node_of, unary, st.n_super)
        if st.tab_rows.size:
            sup_unary += segment_sum(st.tab_rows, st.tab_diag, st.n_super)
    else:
        sup_unary = unary  # read only below
    dead = np.all(np.isinf(sup_unary), axis=1)
    if dead.any():
        s = int(np.flatnonzero(dead)[0])
        point = int(np.flatnonzero(st.node_of == s)[0])
        raise InfeasibleError(
            f"point {point} has no allowed label: every cluster has infinite cost "
            "(clamped labels or hard constraints contradict each other).",
            point=point,
        )
    iso = ~st.has_edge
    fixed = np.full(st.n_super, -1, dtype=np.int64)
    fixed[iso] = np.argmin(sup_unary[iso], axis=1)
    offset = st.const + (float(sup_unary[iso, fixed[iso]].sum()) if iso.any() else 0.0)
    return ReducedProblem(st.node_of, fixed, st.active, sup_unary[st.active], st.sub, offset,
                          sup_unary, st.const)


class InferenceEngine:
    """Base class of E-step engines (ICM, belief propagation, LP, MILP, ...).

    :meth:`map` validates the inputs and the engine's ``_parameter_constraints``, then
    :meth:`solve_validated` reduces the problem, calls the subclass's
    ``_solve(unary, graph, init, rng, notify) -> Solution`` on the constrained
    super-nodes (``notify(iteration, labels, bound)`` reports progress), and recomputes
    the energy on the original problem. Engines see costs and a graph, never the data.

    The contract: the returned labelling honours every hard factor, or :meth:`map`
    raises :class:`~hmrf.InfeasibleError` naming a point
    (:func:`~hmrf.inference.feasibility.raise_if_infeasible` checks every result), or an
    exact engine stopped by its time limit raises :class:`~hmrf.ConstraintSearchError`.
    """

    #: Whether the energy of the returned labelling never exceeds that of ``init``.
    monotone_from_init = False
    #: Whether results carry posteriors and their free energy (``InferenceResult.marginals``,
    #: ``free_energy``), what soft EM needs; such an engine also takes posteriors (n, k)
    #: as ``init``.
    gives_marginals = False
    #: Whether the free energy of the returned posteriors never exceeds that of posteriors
    #: given as ``init`` (coordinate descent on ``F``, as mean-field).
    descends_free_energy = False

    def map(self, unary: ArrayLike, graph: PairwiseGraph | Constraints | None = None,
            init: ArrayLike | None = None, rng: RandomLike = None,
            callback: Callable[..., Any] | None = None) -> InferenceResult:
        """Find a low-energy labelling of ``E(y) = sum_i U[i, y_i] + sum_e cost_e``.

        Parameters
        ----------
        unary : array-like of shape (n, k)
            Unary costs (``+inf`` forbids a label).
        graph : PairwiseGraph or Constraints or None
            Pairwise factors (a :class:`~hmrf.Constraints` gives Potts edge costs).
        init : array-like of shape (n,), optional
            Starting labelling, or posteriors (n, k) for an engine that gives marginals.
        rng : int, numpy Generator or RandomState, optional
        callback : callable, optional
            ``callback(iteration, labels, energy, bound)`` each time the engine reports
            progress, on the full problem (OpenGM's visitor): after every iteration for
            the iterative engines, once at the end for ``AutoEngine``, after each batch
            HiGHS does not solve to optimality for ``ExactMILP``.

        Raises
        ------
        InfeasibleError
            No labelling honouring the hard factors was found; ``point`` names a point
            (exact engines raise only when none exists).
        ConstraintSearchError
            An exact engine's time limit ended with neither such a labelling nor a proof
            that none exists (:class:`~hmrf.inference.ExactMILP`).
        ValueError
            Bad costs, labels or engine parameters.
        """
        t0 = time.perf_counter()
        self.check_params()
        unary = check_unary(unary)
        n, k = unary.shape
        graph = as_graph(graph, n)
        graph.check_labels(k)
        if init is not None and self.gives_marginals and np.ndim(init) == 2:
            init = np.asarray(init, dtype=np.float64)
            if init.shape != (n, k) or not np.all(init >= 0) or not np.allclose(init.sum(axis=1), 1.0):
                raise ValueError(f"init posteriors must have shape ({n}, {k}) with rows summing to one.")
        elif init is not None:
            init = np.asarray(init)
            if init.shape != (n,):
                raise ValueError(f"init must have shape ({n},); got {init.shape}.")
            if init.dtype.kind not in "iu" or init.min() < 0 or init.max() >= k:
                raise ValueError(f"init must hold integer labels in [0, {k - 1}].")
        gen = check_random_state(rng, "rng")
        return self.solve_validated(unary, graph, init, gen, callback, started=t0)

    def solve_validated(self, unary: NDArray[np.float64], graph: PairwiseGraph,
                        init: NDArray[np.intp] | None = None, rng: np.random.Generator | None = None,
                        callback: Callable[..., Any] | None = None, *,
                        started: float | None = None) -> InferenceResult:
        """:meth:`~hmrf.inference.base.InferenceEngine.map` on inputs it would
        accept unchanged, without checking them again (the E-steps of a fit, checked at
        the estimator's entrance).

        Parameters are those of ``map``; ``started`` is ``time.perf_counter()`` when the
        call began. An engine that adds to the result of its E-step overrides this method
        (not ``map``), so that both ways in give the same result.
        """
        t0 = time.perf_counter() if started is None else started
        gen = rng
        if graph.n_edges == 0 and not self.gives_marginals:  # KMeans' E-step: every node is isolated
            return self._map_isolated(unary, t0)

        red = reduce_problem(unary, graph)
        sub_init = None if init is None or red.active.size == 0 else red.restrict(init)

        def notify(iteration, sub_labels, bound=None):
            if callback is None:
                return
            energy = red.graph.energy(sub_labels, red.unary) + red.offset
            full_bound = None if bound is None else float(bound) + red.offset
            callback(iteration, red.expand(sub_labels), float(energy), full_bound)

        if red.active.size == 0:
            out = Solution(np.empty(0, dtype=np.int64), lower_bound=0.0,
                           marginals=np.empty((0, unary.shape[1])) if self.gives_marginals else None)
        else:
            try:
                out = self._solve(red.unary, red.graph, sub_init, gen, notify)
            except InfeasibleError as exc:
                if exc.point is None:
                    raise
                point = red.first_member(exc.point)
                raise InfeasibleError(f"point {point}: {exc}", point=point) from None
            if not isinstance(out, Solution):
                raise TypeError(f"{type(self).__name__}._solve must return a hmrf.inference.base.Solution; "
                                f"got {type(out).__name__}.")
        labels = red.expand(np.asarray(out.labels, dtype=np.int64)).astype(np.int64)
        energy = graph.energy(labels, unary)
        if not np.isfinite(energy):  # the contract: hard constraints honoured, or an error
            raise_if_infeasible(unary, graph, labels, type(self).__name__)
        lb = out.lower_bound
        marginals = free = None
        if self.gives_marginals:
            if out.marginals is None:
                raise TypeError(f"{type(self).__name__} declares gives_marginals but its _solve returned "
                                "no marginals.")
            marginals, free = expand_posteriors(red, np.asarray(out.marginals, dtype=np.float64))
        info = dict(out.info)
        info.update(time=time.perf_counter() - t0, n_active=int(red.active.size))
        return InferenceResult(
            labels=labels,
            energy=float(energy),
            lower_bound=None if lb is None else float(lb) + red.offset,
            n_iter=int(out.n_iter),
            converged=bool(out.converged),
            info=info,
            marginals=marginals,
            free_energy=free,
        )

    def check_params(self) -> None:
        """Check the engine's parameters against its ``_parameter_constraints`` table."""
        if hasattr(type(self), "_parameter_constraints"):
            validate_params(self)

    @staticmethod
    def _map_isolated(unary, t0) -> InferenceResult:
        labels = np.argmin(unary, axis=1)
        best = unary.min(axis=1)
        if np.isinf(best).any():
            point = int(np.flatnonzero(np.isinf(best))[0])
            raise InfeasibleError(
                f"point {point} has no allowed label: every cluster has infinite cost.", point=point
            )
        return InferenceResult(labels=labels, energy=float(best.sum()), lower_bound=float(best.sum()),
                               n_iter=0, converged=True,
                               info={"time": time.perf_counter() - t0, "n_active": 0})

    def _solve(self, unary, graph, init, rng, notify) -> Solution:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"



def refuse_removed(owner: str, given: dict, hints: dict) -> None:
    """Raise a ``TypeError`` naming what to do instead of each parameter in ``given``
    (an engine's removed parameters, CHANGES.md)."""
    for name in given:
        if name in hints:
            raise TypeError(f"{owner}({name}=...) was removed: {hints[name]}")
        raise TypeError(f"{owner} got an unexpected keyword argument {name!r}.")
