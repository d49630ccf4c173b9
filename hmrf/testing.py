"""Conformance checks for the library's extension points, as scikit-learn's ``check_estimator``.

:func:`check_engine`, :func:`check_emission` and :func:`check_potential` run the contracts
of docs/extending.md on any object and raise an ``AssertionError`` naming the first
contract broken at the start of its message; :func:`parametrize_with_checks` makes one
pytest test per (object, contract).
The engine and emission checks run on small problems (up to 16 nodes, 1 to 3 labels; at
most 30 points of their own data; known answers by enumerating every labelling of the smallest ones);
:func:`check_potential` runs on the potential's own ``n_nodes`` points.
"""

from __future__ import annotations

import itertools
from functools import lru_cache, partial
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .constraints import Constraints
from .emissions.base import EmissionFamily, MStepContext
from .exceptions import InfeasibleError
from .graph import PairwiseGraph
from .inference import InferenceEngine, InferenceResult
from .model import HMRF
from .potentials import PairwisePotential

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from numpy.typing import NDArray

__all__ = ["check_engine", "check_emission", "check_potential", "engine_checks", "emission_checks",
           "potential_checks", "parametrize_with_checks", "random_problem", "brute_force",
           "labelling_energies"]

#: Relative tolerance of the energies and costs compared (float64 sums of a few terms).
RTOL = 1e-7


class _Contract:
    """Raises an ``AssertionError`` naming the contract and the object that broke it."""

    def __init__(self, name: str, obj: Any) -> None:
        self.name, self.obj = name, obj

    def fail(self, detail: str) -> None:
        raise AssertionError(f"{type(self.obj).__name__} breaks the contract '{self.name}': {detail} "
                             "(docs/extending.md)")

    def holds(self, condition: Any, detail: str) -> None:
        if not condition:
            self.fail(detail)


def _largest(diff) -> str:
    """The largest absolute entry of ``diff`` (NaN if any), as text."""
    d = np.abs(np.asarray(diff, dtype=np.float64))
    return "nan" if np.isnan(d).any() else f"{float(d.max()):.3g}"


def _close(a: float, b: float) -> bool:
    return bool(a == b or abs(a - b) <= RTOL * max(1.0, abs(a), abs(b)))


# ------------------------------------------------------------------ small problems
def random_problem(rng: np.random.Generator, n: int, k: int, m: int, *, p_cl: float = 0.5,
                   p_hard: float = 0.0, tables: bool = False) -> tuple[np.ndarray, PairwiseGraph]:
    """Random unary costs (n, k) in [0, 3) and up to ``m`` random Potts factors (``m`` draws
    of a pair, those with ``i == j`` dropped; a share ``p_cl`` of cannot-links, each hard
    with probability ``p_hard``), and with ``tables`` factors of
    two random semi-metric (k, k) tables as well (symmetric, zero diagonal: the class
    α-expansion accepts)."""
    unary = rng.random((n, k)) * 3
    pairs = rng.integers(0, n, size=(m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    kind = np.where(rng.random(len(pairs)) < p_cl, -1, 1)
    w = rng.random(len(pairs)) * 2
    w[(rng.random(len(pairs)) < p_hard) & (kind == -1)] = np.inf
    g = PairwiseGraph.potts(n, pairs, w, kind)
    if tables:
        te = rng.integers(0, n, size=(m // 2 + 1, 2))
        te = te[te[:, 0] != te[:, 1]]
        T = rng.random((2, k, k)) * 2
        T = T + T.transpose(0, 2, 1)
        T[:, np.arange(k), np.arange(k)] = 0.0
        g = PairwiseGraph.concatenate([g, PairwiseGraph.from_tables(n, te, T, rng.integers(0, 2, len(te)))])
    return unary, g


def labelling_energies(unary: NDArray[np.floating],
                       graph: PairwiseGraph) -> tuple[np.ndarray, np.ndarray]:
    """Every labelling of an ``(n, k)`` problem (``k**n`` rows, in ``itertools.product``
    order) and its energy ``Σ_i U[i, y_i] + Σ_(i,j) θ_ij(y_i, y_j)``, computed for all
    labellings at once."""
    n, k = unary.shape
    ys = np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64).reshape(-1, n)
    energies = np.asarray(unary)[np.arange(n), ys].sum(axis=1)
    if graph.n_edges:
        a, b = ys[:, graph.edges[:, 0]], ys[:, graph.edges[:, 1]]  # (k**n, m)
        cls, w = graph.edge_classes(), graph.weight
        cost = np.where(cls.must & (a != b), w, 0.0) + np.where(cls.cannot & (a == b), w, 0.0)
        tab = np.flatnonzero(cls.table)
        if tab.size:
            cost[:, tab] = graph.table_costs()[np.arange(tab.size), a[:, tab], b[:, tab]]
        energies = energies + cost.sum(axis=1)
    return ys, energies


def brute_force(unary: NDArray[np.floating], graph: PairwiseGraph) -> tuple[float, np.ndarray]:
    """The minimum energy and a minimiser, by enumerating all ``k**n`` labellings
    (:func:`labelling_energies`)."""
    ys, energies = labelling_energies(unary, graph)
    best = int(np.argmin(energies))
    return float(energies[best]), ys[best]


def _problems() -> list:
    """The problems the engine checks solve, fresh copies."""
    return [(u.copy(), g, best, y.copy()) for u, g, best, y in _make_problems()]


@lru_cache(maxsize=1)
def _make_problems(seed: int = 0) -> list:
    """Trees and loops, Potts and table factors, soft and hard, with forbidden labels; each
    with its optimum by enumeration."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(8):
        n, k = int(rng.integers(3, 8)), int(rng.integers(2, 4))
        unary, g = random_problem(rng, n, k, int(rng.integers(3, 12)), tables=i % 2 == 1,
                                  p_hard=0.4 if i % 4 == 2 else 0.0)
        if i == 6:
            unary[rng.random(unary.shape) < 0.2] = np.inf
            unary[np.all(np.isinf(unary), axis=1), 0] = 0.0
        out.append((unary, g, *brute_force(unary, g)))
    return out


def _run(contract: _Contract, engine: Any, unary, graph, **kw) -> InferenceResult:
    """``engine.map`` on a problem, checking that it leaves its inputs as they were and
    returns an :class:`~hmrf.inference.InferenceResult` of labels in ``[0, k)``."""
    n, k = unary.shape
    before = (unary.copy(), graph.weight.copy(), None if kw.get("init") is None else kw["init"].copy())
    try:
        res = engine.map(unary, graph, **kw)
    finally:
        _Contract("inputs untouched", engine).holds(
            np.array_equal(unary, before[0]) and np.array_equal(graph.weight, before[1])
            and (before[2] is None or np.array_equal(kw["init"], before[2])),
            "map modified its unary costs, graph or init")
    contract.holds(isinstance(res, InferenceResult), f"map returned {type(res).__name__}, not an "
                   "InferenceResult")
    labels = np.asarray(res.labels)
    contract.holds(labels.shape == (n,) and labels.dtype.kind in "iu" and labels.min() >= 0
                   and labels.max() < k, f"labels {labels!r} are not n={n} integers in [0, {k})")
    return res


# ---------------------------------------------------------------------- engines
def _engine_result(engine):
    """Labels in [0, k); the energy reported is the energy of the labels, recomputed."""
    for unary, g, _, _ in _problems():
        c = _Contract("energy reported = energy recomputed", engine)
        try:
            res = _run(c, engine, unary, g, rng=0)
        except InfeasibleError:
            continue  # the hard-constraint check judges this
        energy = g.energy(res.labels, unary)
        if np.isfinite(energy):  # broken hard factors: the next contract's business
            c.holds(_close(res.energy, energy), f"reported {res.energy!r}, the labels cost {energy!r}")


def _engine_hard(engine):
    """Hard factors kept, or InfeasibleError naming a point; infeasible problems raise."""
    c = _Contract("hard constraints kept or InfeasibleError", engine)
    rng = np.random.default_rng(3)
    for _ in range(10):
        n, k = int(rng.integers(3, 7)), int(rng.integers(1, 4))
        unary, g = random_problem(rng, n, k, int(rng.integers(2, 12)), p_cl=0.8, p_hard=0.7)
        best, _ = brute_force(unary, g)
        try:
            res = _run(c, engine, unary, g, rng=0)
        except InfeasibleError as exc:
            c.holds(exc.point is not None and 0 <= exc.point < n,
                    f"InfeasibleError without a point in [0, {n}): point={exc.point!r}")
            continue
        c.holds(np.isfinite(best), "returned labels on a problem that enumeration shows infeasible")
        c.holds(np.isfinite(g.energy(res.labels, unary)),
                f"labels {res.labels.tolist()} break a hard factor")
    # three points pairwise hard-cannot-linked, two labels: no labelling exists
    tri = Constraints.from_pairs(cannot_link=[(0, 1), (1, 2), (0, 2)], n=3, weight=np.inf)
    try:
        res = engine.map(np.zeros((3, 2)), PairwiseGraph.from_constraints(tri), rng=0)
    except InfeasibleError as exc:
        c.holds(exc.point in (0, 1, 2), f"InfeasibleError names point {exc.point!r}, not one of 0, 1, 2")
    else:
        c.fail(f"returned {np.asarray(res.labels).tolist()} for three points pairwise hard-cannot-"
               "linked in two clusters")


def _engine_optimum(engine):
    """No energy below the optimum, no bound above it (nor above the energy)."""
    c = _Contract("energy >= the exact optimum", engine)
    for unary, g, best, _ in _problems():
        try:
            res = _run(c, engine, unary, g, rng=0)
        except InfeasibleError:
            continue
        c.holds(res.energy >= best - RTOL * max(1.0, abs(best)),
            f"energy {res.energy!r} below the optimum {best!r} found by enumeration")
        if res.lower_bound is not None:
            c = _Contract("lower bound <= exact optimum <= energy", engine)
            c.holds(res.lower_bound <= best + RTOL * max(1.0, abs(best)),
                    f"bound {res.lower_bound!r} above the optimum {best!r} found by enumeration")


def _engine_init(engine):
    """Never worse than init when monotone_from_init is declared (EM rejects worse E-steps)."""
    if not getattr(engine, "monotone_from_init", False):
        return
    c = _Contract("monotone from init", engine)
    rng = np.random.default_rng(7)
    for unary, g, _, y in _problems():
        if not np.isfinite(g.energy(y, unary)):
            continue
        for init in (y, rng.integers(0, unary.shape[1], unary.shape[0])):
            start = g.energy(init, unary)
            if not np.isfinite(start):
                continue
            res = _run(c, engine, unary, g, init=init, rng=0)
            c.holds(res.energy <= start + RTOL * max(1.0, abs(start)),
                    f"monotone_from_init is True but from init energy {start!r} it returned "
                    f"{res.energy!r}")


def _engine_reproducible(engine):
    """The same rng gives the same labels (16 nodes: agreement by chance is negligible)."""
    unary, g = random_problem(np.random.default_rng(11), 16, 3, 24)
    c = _Contract("same rng, same result", engine)
    init = np.zeros(16, dtype=np.int64)
    a, b = (_run(c, engine, unary, g, init=init, rng=5) for _ in range(2))
    c.holds(np.array_equal(a.labels, b.labels), f"{np.asarray(a.labels).tolist()} then "
            f"{np.asarray(b.labels).tolist()}")


def _engine_isolated(engine):
    """Without factors every node takes the argmin of its costs."""
    unary = np.random.default_rng(9).random((12, 3))
    c = _Contract("no factors: the argmin of each row", engine)
    res = _run(c, engine, unary, PairwiseGraph.empty(12), rng=0)
    c.holds(
        np.array_equal(res.labels, unary.argmin(axis=1)) and _close(res.energy, unary.min(axis=1).sum()),
        f"labels {np.asarray(res.labels).tolist()}")


def _engine_callback(engine):
    """callback(iteration, labels, energy, bound) is given the energy of its labels."""
    unary, g, _, _ = _problems()[1]
    seen = []
    engine.map(unary, g, rng=0, callback=lambda it, labels, energy, bound: seen.append((labels, energy)))
    c = _Contract("callback energies = energies of its labels", engine)
    for labels, energy in seen:
        c.holds(_close(energy, g.energy(labels, unary)), f"callback reported {energy!r} for labels "
                f"costing {g.energy(labels, unary)!r}")


_ENGINE_CHECKS = {"result": _engine_result, "hard": _engine_hard, "optimum": _engine_optimum,
                  "init": _engine_init, "reproducible": _engine_reproducible,
                  "isolated": _engine_isolated, "callback": _engine_callback}


def engine_checks() -> dict[str, Callable[[Any], None]]:
    """The engine contracts, ``{short name: check(engine)}`` (see :func:`check_engine`)."""
    return dict(_ENGINE_CHECKS)


def check_engine(engine: Any) -> None:
    """Run every engine contract (:func:`engine_checks`, docs/extending.md "The engine
    contract") on ``engine``, an :class:`~hmrf.inference.InferenceEngine` or anything with
    its ``map``."""
    for check in _ENGINE_CHECKS.values():
        check(engine)


# --------------------------------------------------------------------- families
def _default_data(n: int = 30, d: int = 4, seed: int = 0) -> np.ndarray:
    """Points in (0.05, 0.95)^d: inside the domain of every built-in family."""
    return np.random.default_rng(seed).uniform(0.05, 0.95, size=(n, d))


def _fitted(family, X, k=3):
    """``X`` prepared, random labels (no empty cluster), and the M-step's parameters, the
    statistics and their shift."""
    X = family.prepare(X)
    y = np.random.default_rng(1).integers(0, k, X.shape[0])
    y[:k] = np.arange(k)
    shift = family.default_shift(X) if family.second_moment("constant") is not None else None
    stats = family.statistics(X, y, k, "constant", shift)
    params = family.update(stats, None, "constant", MStepContext(X=X, labels=y, n_clusters=k))
    return X, y, params, stats, shift


def _summed(family, X, params, y) -> float:
    U = family.unary(X, params, "constant")
    return float(np.asarray(U, dtype=np.float64)[np.arange(y.shape[0]), y].sum())


def _emission_prepare(family, X, bad_X):
    """prepare keeps the shape, modifies nothing, refuses bad_X with a ValueError."""
    c = _Contract("prepare checks the domain and modifies nothing", family)
    X0 = X.copy()
    P = family.prepare(X)
    c.holds(np.array_equal(X, X0), "prepare modified its input")
    c.holds(P.shape == X.shape, f"prepare changed the shape {X.shape} to {P.shape}")
    if bad_X is not None:
        try:
            family.prepare(np.array(bad_X, dtype=np.float64))
        except ValueError as exc:
            c.holds(str(exc), "a ValueError without a message")
        else:
            c.fail("data outside the domain (bad_X) were accepted: raise a ValueError naming the entry")


def _emission_costs(family, X, bad_X):
    """Costs (n, k), non-negative divergences; unary = distortion + cluster cost."""
    k = 3
    X, _, params, _, _ = _fitted(family, X, k)
    D = family.divergence(X, params.centers)
    c = _Contract("divergence: (n, k), finite, >= 0", family)
    c.holds(D.shape == (X.shape[0], k), f"shape {D.shape}, not {(X.shape[0], k)}")
    c.holds(np.all(np.isfinite(D)) and D.min() >= -1e-9 * max(1.0, np.abs(D).max()),
            f"min {np.nanmin(D)!r}, finite: {bool(np.all(np.isfinite(D)))}")
    U = family.unary(X, params, "constant")
    expected = family.distortion(X, params) + family.cluster_cost(params, "constant")[None, :]
    _Contract("unary = distortion + cluster_cost", family).holds(
        U.shape == expected.shape and np.allclose(U, expected, rtol=RTOL, atol=1e-9),
        f"largest difference {_largest(U - expected) if U.shape == expected.shape else U.shape}")
    data = family.data_terms(X)
    if data is not None:
        _Contract("data_terms passed back give the same costs", family).holds(
            np.allclose(family.unary(X, params, "constant", data=data), U, rtol=RTOL, atol=1e-9),
            "unary(X, params, data=data_terms(X)) differs from unary(X, params)")


def _emission_m_step(family, X, bad_X):
    """The M-step minimises the summed costs of the labels, from additive statistics."""
    k = 3
    X, y, params, stats, shift = _fitted(family, X, k)
    n = X.shape[0]
    c = _Contract("statistics add up over blocks of rows", family)
    half = n // 2
    parts = (family.statistics(X[:half], y[:half], k, "constant", shift)
             + family.statistics(X[half:], y[half:], k, "constant", shift))
    again = family.update(parts, None, "constant", MStepContext(X=X, labels=y, n_clusters=k))
    c.holds(np.allclose(again.centers, params.centers, rtol=1e-6, atol=1e-9),
            "update of the summed statistics of two blocks differs from that of all rows")
    if not family.exact_m_step:
        return
    c = _Contract("M-step is the minimiser of the summed costs", family)
    best = _summed(family, X, params, y)
    c.holds(np.isfinite(best), f"summed cost {best!r} at the M-step's parameters")
    C0 = np.asarray(params.centers, dtype=np.float64)
    unit = np.abs(C0).mean() or 1.0
    # each centre moved along each of (at most 10) coordinates, both ways, by two step
    # sizes, then projected into the domain by init_params: none may cost less
    for h, j in itertools.product(range(k), range(min(C0.shape[1], 10))):
        for step in (1e-3 * unit, -1e-3 * unit, 3e-2 * unit, -3e-2 * unit):
            C = C0.copy()
            C[h, j] += step
            cost = _summed(family, X, params.replace(centers=family.init_params(X, C).centers), y)
            c.holds(cost >= best - RTOL * max(1.0, abs(best)),
                    f"centre {h} moved by {step:.3g} along coordinate {j} (projected by "
                    f"init_params) costs {cost!r} < {best!r}")


def _emission_optional(family, X, bad_X):
    """The optional members, where given, agree with ``unary`` and ``divergence``."""
    k = 3
    X, y, params, stats, _ = _fitted(family, X, k)
    U = np.asarray(family.unary(X, params, "constant"), dtype=np.float64)
    lin = family.linear_costs(params, "constant", np.float64)
    point = np.asarray(params.centers[0], dtype=np.float64)  # a point inside the domain
    div = family.divergence_to(X, point)
    _Contract("data_terms with linear_costs need divergence_to", family).holds(
        lin is None or family.data_terms(X) is None or div is not None,
        "the one-pass data scale of w='auto' adds the information of the data terms, which "
        "divergence_to gives; without it the scale is wrong")
    if lin is not None:
        a = family.data_terms(X)
        inner = (0.0 if a is None else a[:, None]) + lin.bias[None, :] + np.asarray(X @ lin.weights)
        G = np.clip(inner, lin.lo, lin.hi) * (1.0 if lin.scale is None else lin.scale[None, :]) + lin.offset
        _Contract("linear_costs = unary", family).holds(
            np.allclose(G, U, rtol=1e-6, atol=1e-9), f"largest difference {_largest(G - U)}")
    total = family.summed_cost(params, stats, "constant")
    if total is not None:
        _Contract("summed_cost = the summed unary costs", family).holds(
            _close(total, float(U[np.arange(y.shape[0]), y].sum())),
            f"{total!r} against {float(U[np.arange(y.shape[0]), y].sum())!r}")
    if div is not None:
        ref = family.divergence(np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64),
                                point[None, :])[:, 0]
        _Contract("divergence_to = divergence to one point", family).holds(
            np.allclose(div, ref, rtol=1e-6, atol=1e-9), f"largest difference {_largest(div - ref)}")
    c = _Contract("a finite data scale (w='auto')", family)
    try:
        scale = HMRF(X, k, emission=family, validated=True).data_scale()
    except ValueError as exc:  # the model names the method that gave a non-finite value
        c.fail(str(exc))
    c.holds(scale >= 0, f"data_scale() is {scale!r}")


def _emission_float32(family, X, bad_X):
    """float32 data give float32 costs; sparse data, where accepted, the dense costs."""
    X, _, params, _, _ = _fitted(family, X)
    X32 = family.prepare(X.astype(np.float32))
    U32 = family.unary(X32, params, "constant")
    _Contract("float32 kept", family).holds(U32.dtype == np.float32, f"float32 data gave {U32.dtype} costs")
    if family.accepts_sparse:
        Us = family.unary(family.prepare(sp.csr_matrix(X)), params, "constant")
        _Contract("sparse data give the dense costs", family).holds(
            isinstance(Us, np.ndarray) and np.allclose(Us, family.unary(X, params, "constant"),
                                                       rtol=1e-6, atol=1e-9),
            "unary of the CSR form of X differs from unary of X")


def _emission_fit(family, X, bad_X):
    """EM with the family: a finite objective that never rises (exact M-step)."""
    from .estimators import HMRFKMeans

    n = X.shape[0]
    c = Constraints.from_pairs(must_link=[(0, 1), (2, 3)], cannot_link=[(0, 2)], n=n)
    est = HMRFKMeans(3, emission=family, inference="icm", w=1.0, n_init=1, random_state=0)
    est.fit(X, constraints=c)
    contract = _Contract("EM: finite objective, never rising", family)
    contract.holds(np.isfinite(est.objective_), f"objective {est.objective_!r}")
    if family.exact_m_step:
        rise = np.diff(est.history_)
        contract.holds(np.all(rise <= 1e-9 * np.abs(est.history_[:-1]).clip(1.0)),
                       f"history {est.history_.tolist()}")


_EMISSION_CHECKS = {"prepare": _emission_prepare, "costs": _emission_costs, "m_step": _emission_m_step,
                    "optional": _emission_optional, "float32": _emission_float32, "fit": _emission_fit}


def emission_checks() -> dict[str, Callable[..., None]]:
    """The family contracts, ``{short name: check(family, X, bad_X)}`` (see
    :func:`check_emission`)."""
    return dict(_EMISSION_CHECKS)


def check_emission(family: EmissionFamily, X: NDArray[np.floating] | None = None,
                   bad_X: NDArray[np.floating] | None = None) -> None:
    """Run every emission-family contract (:func:`emission_checks`, docs/extending.md "The
    family protocol") on ``family``.

    Parameters
    ----------
    X : array of shape (n, d), optional
        Data inside the family's domain, at least 10 rows; by default 30 points uniform in
        ``(0.05, 0.95)^4``.
    bad_X : array, optional
        Data outside the domain, which ``prepare`` must refuse.
    """
    X = _default_data() if X is None else np.asarray(X, dtype=np.float64)
    for check in _EMISSION_CHECKS.values():
        check(family, X, bad_X)


# ------------------------------------------------------------------- potentials
def _potential_data(potential, X):
    return _default_data(potential.n_nodes, 2) if X is None else X


def _potential_graph(potential, X, n_clusters):
    """graph() gives the same factors on n_nodes nodes, with k x k tables, at every call."""
    c = _Contract("graph: factors on n_nodes nodes, k x k tables", potential)
    X = _potential_data(potential, X)
    n = potential.n_nodes
    c.holds(isinstance(n, (int, np.integer)) and n >= 1, f"n_nodes is {n!r}")
    model = HMRF(X, n_clusters)
    params = model.emission.init_params(model.X, model.X[:n_clusters])
    g = potential.graph(model.X, params, n_clusters)
    c.holds(isinstance(g, PairwiseGraph), f"graph returned {type(g).__name__}")
    c.holds(g.n_nodes == n, f"a graph on {g.n_nodes} nodes for n_nodes={n}")
    c.holds(g.n_labels in (None, n_clusters), f"{g.n_labels}x{g.n_labels} tables for {n_clusters} clusters")
    again = potential.graph(model.X, params, n_clusters)
    c.holds(np.array_equal(g.edges, again.edges) and np.array_equal(g.weight, again.weight),
            "two calls with the same arguments gave different factors")


def _potential_params(potential, X, n_clusters):
    """Without depends_on_params, the same factors under any emission parameters."""
    if potential.depends_on_params:
        return
    X = _potential_data(potential, X)
    model = HMRF(X, n_clusters)
    a = model.emission.init_params(model.X, model.X[:n_clusters])
    b = model.emission.init_params(model.X, model.X[-n_clusters:] * 2.0 + 1.0)
    ga, gb = potential.graph(model.X, a, n_clusters), potential.graph(model.X, b, n_clusters)
    same = np.array_equal(ga.edges, gb.edges) and np.array_equal(ga.weight, gb.weight) and (
        (ga.tables is None and gb.tables is None)
        or (ga.tables is not None and gb.tables is not None and np.array_equal(ga.tables, gb.tables)))
    _Contract("depends_on_params declared", potential).holds(
        same, "the factors change with the emission parameters but depends_on_params is False: the "
              "model would keep the first graph")


def _potential_energy(potential, X, n_clusters):
    """In an HMRF, J = unary costs + the factors; the exact E-step reaches the optimum."""
    from .inference import ExactMILP

    X = _potential_data(potential, X)
    n = potential.n_nodes
    X0 = X.copy()
    model = HMRF(X, n_clusters, potentials=[potential])
    params = model.emission.init_params(model.X, model.X[:n_clusters])
    unary, g = model.unary(params), model.graph(params)
    c = _Contract("energy = unary + the potential's factors", potential)
    y = np.random.default_rng(0).integers(0, n_clusters, n)
    own = potential.graph(model.X, params, n_clusters).pairwise_energy(y)
    c.holds(_close(model.energy(y, params), float(unary[np.arange(n), y].sum()) + own),
            f"model.energy {model.energy(y, params)!r} against {float(unary[np.arange(n), y].sum()) + own!r}")
    c.holds(np.array_equal(X, X0), "the potential modified X")
    if n_clusters ** n <= 5000:
        best, _ = brute_force(unary, g)
        res = ExactMILP().map(unary, g)
        _Contract("the exact E-step reaches the optimum", potential).holds(
            _close(res.energy, best), f"ExactMILP {res.energy!r}, enumeration {best!r}")


_POTENTIAL_CHECKS = {"graph": _potential_graph, "params": _potential_params, "energy": _potential_energy}


def potential_checks() -> dict[str, Callable[..., None]]:
    """The potential contracts, ``{short name: check(potential, X, n_clusters)}`` (see
    :func:`check_potential`)."""
    return dict(_POTENTIAL_CHECKS)


def check_potential(potential: PairwisePotential, X: NDArray[np.floating] | None = None,
                    n_clusters: int = 3) -> None:
    """Run every pairwise-potential contract (:func:`potential_checks`, docs/extending.md
    "Potentials and label order") on ``potential``; the exact E-step is checked when
    ``n_clusters ** n_nodes <= 5000``, on the points ``X`` (n_nodes, d) (random ones by
    default)."""
    for check in _POTENTIAL_CHECKS.values():
        check(potential, X, n_clusters)


# ----------------------------------------------------------------------- pytest
def _table(obj: Any) -> tuple:
    """The checks of ``obj``'s kind, and a function giving their arguments after ``obj``."""
    if isinstance(obj, EmissionFamily):
        return _EMISSION_CHECKS, lambda: (_default_data(), None)
    if isinstance(obj, PairwisePotential):
        return _POTENTIAL_CHECKS, lambda: (None, 3)
    if isinstance(obj, InferenceEngine) or callable(getattr(obj, "map", None)):
        return _ENGINE_CHECKS, tuple
    raise TypeError(f"{obj!r} is neither an engine, an emission family nor a pairwise potential.")


def _call(check: Callable[..., None], arguments: Callable[[], tuple], obj: Any) -> None:
    check(obj, *arguments())


def parametrize_with_checks(objects: Iterable[Any]) -> Any:
    """A pytest decorator that runs every contract on every object, one test each.

    Each test receives ``obj`` and ``check``; its id is ``<class>-<contract>``. Families
    are checked on the default data, potentials with 3 clusters.

    Examples
    --------
    ::

        from hmrf.inference import ICM
        from hmrf.testing import parametrize_with_checks

        @parametrize_with_checks([ICM(), MyEngine(), MyFamily()])
        def test_contracts(obj, check):
            check(obj)
    """
    import pytest

    params = []
    for obj in objects:
        table, arguments = _table(obj)
        params += [pytest.param(obj, partial(_call, check, arguments), id=f"{type(obj).__name__}-{name}")
                   for name, check in table.items()]
    return pytest.mark.parametrize("obj, check", params)
