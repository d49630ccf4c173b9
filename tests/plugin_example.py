"""A plug-in module written outside the package, as a researcher would: an emission
family for binary data, an ordinal pairwise potential and a simulated-annealing E-step
engine, each with a deliberately broken twin for the conformance checks to catch.

Importing it registers ``emission="bernoulli"`` and ``inference="sa"``; the command line
imports it with ``hmrf compare --plugin tests/plugin_example.py --engines icm,sa``.
Nothing here imports a private module of hmrf.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logit, xlogy

import hmrf
from hmrf import PairwiseGraph
from hmrf.emissions import BregmanFamily, EmissionParams
from hmrf.inference import InferenceEngine
from hmrf.inference.base import Solution
from hmrf.inference.polish import finish
from hmrf.potentials import PairwisePotential


# ----------------------------------------------------------------------- family
def bernoulli_phi(A):
    """Negative entropy of independent coins, per row: Σ_j x log x + (1 - x) log(1 - x)."""
    A = np.asarray(A.toarray() if hasattr(A, "toarray") else A, dtype=np.float64)
    return (xlogy(A, A) + xlogy(1 - A, 1 - A)).sum(axis=1)


def bernoulli_grad(M):
    """∇φ(μ) = log(μ / (1 - μ))."""
    return logit(M)


def in_unit_box(X):
    """Refuse entries outside [0, 1], naming the first."""
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X)
    bad = np.argwhere((X < 0) | (X > 1))
    if bad.size:
        r, c = bad[0]
        raise ValueError(f"Bernoulli data must lie in [0, 1]; X[{r}, {c}] = {X[r, c]}.")


class Bernoulli(BregmanFamily):
    """Bernoulli emission: the logistic loss, a Bregman divergence, on [0, 1]^d.

    Centres are kept in ``[eps, 1 - eps]`` (``∇φ`` is infinite at 0 and 1); the clipped
    mean is still the minimiser of the summed divergence over that box (the objective is
    convex and separable per coordinate). ``divergence_to`` (the one-pass data scale of
    ``w="auto"``) is the logistic loss itself, which is finite where the data's mean is 0
    or 1 in some feature.
    """

    accepts_sparse = False

    def __init__(self, eps=1e-3):
        super().__init__(bernoulli_phi, bernoulli_grad, name="bernoulli", domain=in_unit_box)
        self.eps = eps

    def _clip(self, centers):
        return np.clip(np.asarray(centers, dtype=np.float64), self.eps, 1 - self.eps)

    def init_params(self, X, centers):
        return EmissionParams(self._clip(centers))

    def update(self, stats, params=None, normalizer="constant", context=None):
        fitted = super().update(stats, params, normalizer, context)
        return fitted.replace(centers=self._clip(fitted.centers))

    def divergence_to(self, X, point):
        X = np.asarray(X, dtype=np.float64)
        mu = np.asarray(point, dtype=np.float64)[None, :]
        return (xlogy(X, X) - xlogy(X, mu) + xlogy(1 - X, 1 - X) - xlogy(1 - X, 1 - mu)).sum(axis=1)


class NaiveBernoulli(Bernoulli):
    """The family without its own ``divergence_to``: the generic Bregman form evaluates
    ``∇φ`` at the data's mean, infinite where a feature is 0 in every row."""

    divergence_to = BregmanFamily.divergence_to


class BiasedBernoulli(Bernoulli):
    """BROKEN: its M-step divides the sums by ``n + 1`` (a smoothing added without saying
    the M-step is no longer exact), so it is not the minimiser of the summed costs."""

    def update(self, stats, params=None, normalizer="constant", context=None):
        means = stats.sums / (stats.counts[:, None] + 1.0)
        return EmissionParams(self._clip(means))


# -------------------------------------------------------------------- potential
class OrdinalPotential(PairwisePotential):
    """Soft must-links between ordered categories: putting the two points ``s`` clusters
    apart costs ``weight * s`` (the table ``|a - b|``, a metric).

    The table reads the clusters as ordered (0 < 1 < ... < k-1), which EM's labels are not
    unless the initialisation fixes the order: fit with ``init=`` an array of centres in
    the intended order (docs/extending.md, "Potentials and label order").
    """

    def __init__(self, n, pairs, weight=1.0):
        self.n = int(n)
        self.pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        self.weight = float(weight)

    @property
    def n_nodes(self):
        return self.n

    def table(self, k):
        a = np.arange(k)
        return np.abs(a[:, None] - a[None, :]).astype(np.float64)

    def graph(self, X=None, params=None, n_clusters=None):
        if n_clusters is None:
            raise ValueError("OrdinalPotential needs n_clusters to build its k x k table.")
        return PairwiseGraph.from_tables(self.n, self.pairs, self.table(n_clusters), weight=self.weight)


class StaleOrdinalPotential(OrdinalPotential):
    """BROKEN: its costs scale with the distance between the clusters' centres (so they
    change after every M-step) but it does not set ``depends_on_params``, so a model
    keeps the factors of the first parameters it saw."""

    def graph(self, X=None, params=None, n_clusters=None):
        g = super().graph(X, params, n_clusters)
        if params is None:
            return g
        C = np.asarray(params.centers, dtype=np.float64)
        gap = np.abs(C[:, None, 0] - C[None, :, 0])
        return PairwiseGraph.from_tables(self.n, self.pairs, gap, weight=self.weight)


# ----------------------------------------------------------------------- engine
class SimulatedAnnealing(InferenceEngine):
    """Simulated annealing from the previous labels: Metropolis sweeps over colour classes
    at a falling temperature, keeping the best labelling seen.

    Parameters
    ----------
    n_sweeps : int, default=30
        Sweeps over every node.
    t0 : float, default=0.5
        First temperature, in units of the median spread of a node's costs.
    cooling : float, default=0.85
        Temperature factor per sweep.

    Notes
    -----
    The walk starts at ``init`` (EM's previous labels), or at each node's cheapest label,
    and the best labelling of the walk is returned, so the result is never worse than
    ``init``: ``monotone_from_init = True``. If the walk never meets every hard factor
    (no ``init``, hard constraints), :func:`hmrf.inference.polish.finish` repairs it,
    as ICM, BP and the LP rounding do, or raises :class:`~hmrf.InfeasibleError`.
    """

    monotone_from_init = True

    def __init__(self, n_sweeps=30, t0=0.5, cooling=0.85):
        self.n_sweeps = n_sweeps
        self.t0 = t0
        self.cooling = cooling

    def check_params(self):
        if not (isinstance(self.n_sweeps, (int, np.integer)) and self.n_sweeps >= 1):
            raise ValueError(f"SimulatedAnnealing: n_sweeps must be an integer >= 1; got {self.n_sweeps!r}.")
        if not self.t0 > 0 or not 0 < self.cooling <= 1:
            raise ValueError(f"SimulatedAnnealing: t0 must be > 0 and cooling in (0, 1]; got "
                             f"t0={self.t0!r}, cooling={self.cooling!r}.")

    def _start(self, unary, init):
        return unary.argmin(axis=1) if init is None else np.array(init, dtype=np.int64)

    def _keep_best(self):
        return True

    def _solve(self, unary, graph, init, rng, notify):
        n, k = unary.shape
        labels = self._start(unary, init)
        src = np.r_[graph.edges[:, 0], graph.edges[:, 1]]
        dst = np.r_[graph.edges[:, 1], graph.edges[:, 0]]
        cls = graph.edge_classes()
        must, cannot = np.r_[cls.must, cls.must], np.r_[cls.cannot, cls.cannot]
        w = np.r_[graph.weight, graph.weight]
        tab = np.flatnonzero(cls.table)
        tc = graph.table_costs()  # (m_table, k, k), weights applied
        finite = unary[np.isfinite(unary)]
        spread = np.ptp(unary.clip(finite.min(), finite.max()), axis=1)
        temperature = self.t0 * max(float(np.median(spread)), 1e-12)
        best, best_energy = labels.copy(), graph.energy(labels, unary)
        h = np.arange(k)[None, :]
        for sweep in range(int(self.n_sweeps)):
            for nodes in graph.independent_sets():  # nodes of one class share no factor
                cost = unary.copy()  # each node's cost of every label, its neighbours fixed
                other = labels[dst]
                pen = np.where(must[:, None] & (h != other[:, None]), w[:, None], 0.0)
                pen += np.where(cannot[:, None] & (h == other[:, None]), w[:, None], 0.0)
                np.add.at(cost, src, pen)
                if tab.size:
                    a, b = graph.edges[tab, 0], graph.edges[tab, 1]
                    np.add.at(cost, a, tc[np.arange(tab.size), :, labels[b]])
                    np.add.at(cost, b, tc[np.arange(tab.size), labels[a], :])
                proposal = rng.integers(0, k, nodes.size)
                with np.errstate(invalid="ignore", over="ignore"):
                    delta = cost[nodes, proposal] - cost[nodes, labels[nodes]]
                    accept = (delta <= 0) | (rng.random(nodes.size) < np.exp(-delta / temperature))
                labels[nodes[accept]] = proposal[accept]
                energy = graph.energy(labels, unary)
                if energy < best_energy or not self._keep_best():
                    best, best_energy = labels.copy(), energy
            temperature *= self.cooling
            notify(sweep + 1, best, None)
        labels, _ = finish(unary, graph, [best], type(self).__name__, rng, fallback=init)
        return Solution(labels, n_iter=int(self.n_sweeps), converged=True,
                        info={"temperature": temperature})


class ForgetfulAnnealing(SimulatedAnnealing):
    """BROKEN: it ignores ``init`` and returns where its walk ends, not the best labelling
    it met, yet keeps ``monotone_from_init = True``."""

    def __init__(self, n_sweeps=3, t0=50.0, cooling=1.0):
        super().__init__(n_sweeps, t0, cooling)

    def _start(self, unary, init):
        return unary.argmin(axis=1)

    def _keep_best(self):
        return False


hmrf.register_engine("sa", SimulatedAnnealing, replace=True)
hmrf.register_emission("bernoulli", Bernoulli, replace=True)
