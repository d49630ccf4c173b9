"""BeliefPropagation's compiled passes (hmrf.inference.bp.kernels) against their NumPy oracles
(tests/oracles/bp_numpy.py), message by message, and the breadth-first order."""

import numba
import numpy as np
import pytest
from mrf_problems import enumerate_energies
from oracles.bp_numpy import (
    FloodingRounds,
    SequentialMessages,
    cannot_link_messages,
    must_link_messages,
    potts_cannot_link_min,
    table_messages,
)

from hmrf import PairwiseGraph
from hmrf.inference import BeliefPropagation
from hmrf.inference.bp import kernels
from hmrf.inference.bp.schedules import BPProblem
from hmrf.inference.bp.trws import ChainLayout, bfs_order, big_cost


def sparse_problem(rng, n, k, m, p_cl, tables=False, p_hard=0.0):
    """Random pairs (mean degree 2m/n < 8: no flooding run in the "auto" schedule)."""
    pairs = rng.integers(0, n, size=(m, 2))
    pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)
    m = len(pairs)
    weight = np.where(rng.random(m) < p_hard, np.inf, rng.uniform(0.2, 2.0, m))
    unary = rng.random((n, k)) * 3
    if not tables:
        return unary, PairwiseGraph.potts(n, pairs, weight, np.where(rng.random(m) < p_cl, -1, 1))
    tabs = rng.random((3, k, k)) * 2
    return unary, PairwiseGraph.from_tables(n, pairs, tabs, rng.integers(0, 3, m), rng.uniform(0.5, 1.5, m))


CASES = [("must-link", dict(p_cl=0.0)), ("mixed", dict(p_cl=0.4)), ("hard", dict(p_cl=0.4, p_hard=0.3)),
         ("tables", dict(p_cl=0.0, tables=True))]


class Compiled:
    """The compiled sequential passes on the layout of ``perm`` (the oracle's colour order)."""

    def __init__(self, g, unary, perm, tol):
        n, k = unary.shape
        big = big_cost(unary, g)
        self.lay = ChainLayout(g, perm)
        self.fac = self.lay.factors(g, k, big)
        self.u = np.ascontiguousarray(np.where(np.isinf(unary), big, unary)[perm])
        self.tol = tol
        self.into_f, self.into_b = np.zeros((n, k)), np.zeros((n, k))
        self.flags = tuple(np.ones(n, dtype=bool) for _ in range(3)) + (np.zeros(n, dtype=bool),)
        self.labels, self.node_e = np.zeros(n, dtype=np.int64), np.zeros(n)
        m = g.n_edges
        self.key = 2 * np.r_[self.lay.edge, self.lay.edge] + (np.arange(2 * m) >= m)  # (edge, backward)

    def load(self, msgs_by_key):
        self.msgs = np.ascontiguousarray(msgs_by_key[self.key])
        kernels.bp_sums(self.msgs, self.fac, np.ones(self.lay.lo.size), self.into_f, self.into_b)

    def by_key(self):
        return self.msgs[np.argsort(self.key)]

    def iteration(self, damping, sum_mode):
        f = kernels.bp_forward(self.u, self.msgs, self.into_f, self.into_b, self.labels, self.node_e, self.fac,
                               self.flags, damping, self.tol, True, sum_mode)
        after = self.by_key()
        b = kernels.bp_backward(self.u, self.msgs, self.into_f, self.into_b, self.fac, self.flags, damping,
                                self.tol, sum_mode)
        return (f, b), after


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("case", [c for c, _ in CASES])
@pytest.mark.parametrize("mode", ["max", "sum"])
@pytest.mark.parametrize("damping", [0.0, 0.5])
def test_a_compiled_pass_computes_what_a_numpy_pass_computes(seed, case, mode, damping):
    # node by node in the colour-class order is the vectorised class step: from the same
    # messages, each forward and backward pass gives the same messages, decoding, node
    # energies and lazy-update flags (up to the order of floating-point sums). The two
    # layouts number the messages differently: compare them by (factor, direction).
    rng = np.random.default_rng(1000 + seed)
    unary, g = sparse_problem(rng, 40, 4, 70, **dict(CASES)[case])
    k, big = unary.shape[1], big_cost(unary, g)
    oracle = SequentialMessages(g, k, big, 1e-6)
    lay = oracle.layout
    okey = 2 * lay.edge + (np.arange(2 * g.n_edges) >= g.n_edges)
    compiled = Compiled(g, unary, oracle.perm, 1e-6)
    start = rng.random((2 * g.n_edges, k))  # row 2 * edge + (towards the earlier endpoint)
    msgs = oracle.new_messages()
    msgs[:-1] = start[okey]
    compiled.load(start)
    u_p = np.ascontiguousarray(np.where(np.isinf(unary), big, unary)[oracle.perm])
    labels = np.zeros(g.n_nodes, dtype=np.int64)
    oracle.dirty[0][::3] = compiled.flags[0][::3] = False  # lazy updates: these do not send forward
    for _ in range(3):
        node_e, moved_f = oracle.forward(u_p, msgs, labels, mode=mode, damping=damping)
        after = msgs[:-1][np.argsort(okey)].copy()
        moved_b = oracle.backward(u_p, msgs, mode=mode, damping=damping)
        moved, c_after = compiled.iteration(damping, mode == "sum")
        assert moved == (moved_f, moved_b)
        np.testing.assert_allclose(c_after, after, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(compiled.by_key(), msgs[:-1][np.argsort(okey)], rtol=1e-12, atol=1e-9)
        assert all(np.array_equal(a, b) for a, b in zip(oracle.dirty, compiled.flags[:2]))
        if mode == "max":
            assert labels.tolist() == compiled.labels.tolist()
            np.testing.assert_allclose(node_e, compiled.node_e, rtol=1e-12, atol=1e-9)
            assert np.array_equal(oracle.stale_label, compiled.flags[2])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mode", ["max", "sum"])
@pytest.mark.parametrize("damping", [0.0, 0.5])
@pytest.mark.parametrize("reweighted", [False, True])
def test_compiled_flooding_rounds_equal_numpy_rounds(seed, mode, damping, reweighted):
    # every round's messages and (max mode) per-node argmin labelling; with tol = 0 the
    # lazy rounds skip only senders none of whose inputs changed, whose messages the
    # oracle recomputes unchanged; tree-reweighted rounds (rho < 1) too
    rng = np.random.default_rng(1100 + seed)
    unary, g = sparse_problem(rng, 30, 3, 60, p_cl=0.5, tables=seed == 3)
    problem = BPProblem.build(unary, g)
    rho = rng.uniform(0.3, 1.0, g.n_edges) if reweighted else None
    oracle = FloodingRounds(problem, rho, mode, 0.0, np.random.default_rng(0))
    fm = oracle.fm
    perm = bfs_order(g)
    pos = np.empty(g.n_nodes, dtype=np.int64)
    pos[perm] = np.arange(g.n_nodes)
    okey = 2 * fm.edge + (pos[fm.dst] < pos[fm.src])
    lay = ChainLayout(g, perm)
    fac = lay.factors(g, unary.shape[1], problem.big)
    m = g.n_edges
    ckey = 2 * np.r_[lay.edge, lay.edge] + (np.arange(2 * m) >= m)
    r = np.ones(m) if rho is None else rho[lay.edge]
    u = np.ascontiguousarray(problem.u0[perm])
    n, k = u.shape
    msgs, old, beliefs = np.zeros((2 * m, k)), np.zeros((2 * m, k)), np.zeros((n, k))
    into_f, into_b, labels = np.zeros((n, k)), np.zeros((n, k)), np.zeros(n, dtype=np.int64)
    wake, scratch = np.ones(n, dtype=bool), np.zeros(n, dtype=bool)
    flags = (np.zeros(n, dtype=bool), scratch, scratch, np.zeros(n, dtype=bool))
    for _ in range(12):
        moved, o_labels, _ = oracle.step(damping)
        c_moved, energy = kernels.bp_flood(u, msgs, old, into_f, into_b, beliefs, labels, fac, r, wake, flags,
                                           damping, 0.0, mode == "sum")
        wake, flags = flags[0], (wake, scratch, scratch, flags[3])
        flags[0][:] = False
        np.testing.assert_allclose(msgs[np.argsort(ckey)], oracle.msgs.T[np.argsort(okey)], rtol=1e-10, atol=1e-9)
        if mode == "max":
            assert labels[pos].tolist() == o_labels.tolist()
            assert energy + float(unary.min(axis=1).sum()) == pytest.approx(g.energy(o_labels, unary))
        if not moved:
            break


@pytest.mark.parametrize("seed", range(3))
def test_sum_product_marginals_equal_the_oracles_fixed_point(seed):
    # loopy sum-product run to convergence by the engine (compiled, breadth-first order)
    # and by the oracle's colour-class passes: the same fixed point
    rng = np.random.default_rng(1500 + seed)
    unary, g = sparse_problem(rng, 12, 3, 16, p_cl=0.3, tables=seed == 2)
    marg = BeliefPropagation(mode="sum", tol=1e-12, max_iter=500).marginals(unary, g)
    problem = BPProblem.build(unary, g)
    oracle = SequentialMessages(g, 3, problem.big, 1e-12)
    msgs, u_p = oracle.new_messages(), problem.u0[oracle.perm]
    for _ in range(500):
        moved_f = oracle.forward(u_p, msgs, np.zeros(12, dtype=np.int64), mode="sum")[1]
        if not (oracle.backward(u_p, msgs, mode="sum") or moved_f):
            break
    lay = oracle.layout
    b = u_p + np.stack([msgs[:-1][lay.dst == i].sum(axis=0) for i in range(12)])
    want = np.exp(-(b - b.min(axis=1, keepdims=True)))
    want = (want / want.sum(axis=1, keepdims=True))[np.argsort(oracle.perm)]
    nodes = g.constrained_part()[0]
    np.testing.assert_allclose(marg[nodes], want[nodes], atol=1e-8)


@numba.njit(cache=True)
def _messages_compiled(h, kind, w, tcost, sum_mode, towards_hi, out, low):
    for c in range(h.shape[0]):
        low[c] = kernels._message(h[c], kind, w[c], tcost, c, 1.0, towards_hi, sum_mode, out[c])


@pytest.mark.parametrize("k", [1, 2, 3, 8])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mode", ["max", "sum"])
def test_compiled_messages_equal_the_numpy_forms(k, seed, mode):
    """kernels._message, one message at a time = the oracle's vectorised forms: must-link,
    cannot-link (ties in ``h`` included: a max-product cannot-link message is 0 under a
    tied minimum) and tables; every message normalised to minimum 0."""
    rng = np.random.default_rng(seed)
    c = 50
    h = rng.integers(0, 4, size=(c, k)).astype(float) * 0.25  # many ties
    h[: c // 2] += rng.random((c // 2, k))  # and rows without ties
    h[:3] *= 300.0  # dominant terms (no cancellation in sum-product)
    w = rng.uniform(0.1, 1.0, c)
    w[0] = 1e3  # a BIG weight: exp(-w) underflows
    tcost = rng.random((c, k, k)) * 2
    low = np.empty(c)
    for code, ref in ((1, must_link_messages), (-1, cannot_link_messages), (0, table_messages)):
        out = np.empty((c, k))
        _messages_compiled(h, code, w, tcost, mode == "sum", True, out, low)
        want = np.empty((k, c))
        if code == 0:
            ref(h.T, np.ascontiguousarray(tcost.transpose(1, 2, 0)), mode, want)
        else:
            ref(h.T, w, mode, want)
        np.testing.assert_allclose(out, want.T, rtol=1e-12, atol=1e-12)
        assert (out.min(axis=1) == 0).all()
    if mode == "max":
        out = np.empty((c, k))
        _messages_compiled(h, -1, w, tcost, False, True, out, low)
        np.testing.assert_array_equal(out, potts_cannot_link_min(h.T, w).T)


def brute_force(unary, g):
    return enumerate_energies(unary, g)[1].min()


@pytest.mark.parametrize("seed", range(8))
def test_bp_is_exact_on_trees_and_trws_bounds_the_optimum(seed):
    rng = np.random.default_rng(1200 + seed)
    n, k = int(rng.integers(4, 9)), int(rng.integers(2, 4))
    parent = [int(rng.integers(0, i)) for i in range(1, n)]
    kind = np.where(rng.random(n - 1) < 0.5, -1, 1)
    g = PairwiseGraph.potts(n, np.c_[parent, np.arange(1, n)], rng.uniform(0.2, 2.0, n - 1), kind)
    unary = rng.random((n, k)) * 3
    best = brute_force(unary, g)
    plain = BeliefPropagation(reweight=None, tol=1e-10).map(unary, g)
    assert plain.converged and plain.energy == pytest.approx(best, abs=1e-9)
    trw = BeliefPropagation(reweight="trw", rel_gap=0.0, tol=1e-10).map(unary, g)
    assert trw.energy == pytest.approx(best, abs=1e-9) and trw.lower_bound == pytest.approx(best, abs=1e-6)
    # loopy, must-links only: the TRW-S bound is a bound
    unary, lg = sparse_problem(rng, 7, 3, 14, p_cl=0.0)
    res = BeliefPropagation(rel_gap=0.0).map(unary, lg)
    assert res.lower_bound <= brute_force(unary, lg) + 1e-9 <= res.energy + 2e-9


@pytest.mark.parametrize("seed", range(10))
def test_bfs_order_is_breadth_first_from_each_components_highest_degree_node(seed):
    rng = np.random.default_rng(1300 + seed)
    n = int(rng.integers(1, 40))
    pairs = rng.integers(0, n, size=(int(rng.integers(0, 2 * n + 1)), 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    g = PairwiseGraph.potts(n, pairs, np.ones(len(pairs)), np.ones(len(pairs), int))
    order = bfs_order(g)
    assert sorted(order.tolist()) == list(range(n))
    pos = np.empty(n, dtype=int)
    pos[order] = np.arange(n)
    adj = [set() for _ in range(n)]
    for a, b in pairs:
        adj[a].add(b)
        adj[b].add(a)
    dist, roots = {}, []
    for v in order:  # every node but a component's first has a neighbour before it
        if not [u for u in adj[v] if pos[u] < pos[v]]:  # a root: a new component
            roots.append(v)
            comp, layer, d = {v}, [v], 0
            while layer:
                dist.update({u: d for u in layer})
                layer = sorted({w for u in layer for w in adj[u]} - comp)
                comp |= set(layer)
                d += 1
            # the highest degree of its component (ties: lowest index)
            assert v == min(comp, key=lambda u: (-len(adj[u]), u))
    assert len(dist) == n
    for r in roots:  # breadth first: the distance to the root never decreases along the order
        members = [v for v in order if _root_of(v, adj, roots) == r]
        assert [dist[v] for v in members] == sorted(dist[v] for v in members)


def _root_of(v, adj, roots):
    comp, todo = {v}, [v]
    while todo:
        for u in adj[todo.pop()] - comp:
            comp.add(u)
            todo.append(u)
    return next(r for r in roots if r in comp)
