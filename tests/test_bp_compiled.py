"""The compiled (numba) passes of BeliefPropagation against the NumPy ones, and the BFS order."""

import sys

import numpy as np
import pytest

from hmrf import PairwiseGraph
from hmrf.inference import BeliefPropagation
from hmrf.inference.bp.messages import big_cost
from hmrf.inference.bp.order import bfs_order
from hmrf.inference.bp.sequential_numpy import SequentialMessages

pytest.importorskip("numba")
from hmrf.inference.bp.kernels_numba import CompiledSequentialMessages  # noqa: E402


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


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("case", [c for c, _ in CASES])
@pytest.mark.parametrize("trws", [False, True])
@pytest.mark.parametrize("damping", [0.0, 0.5])
def test_a_compiled_pass_computes_what_a_numpy_pass_computes(seed, case, trws, damping):
    # node by node in the colour-class order is the vectorised class step: from the same
    # messages, one forward and one backward pass give the same messages, decoding,
    # lazy-update flags and TRW-S bound (up to the order of floating-point sums). The
    # two layouts number the messages differently: compare them by (factor, direction).
    rng = np.random.default_rng(1000 + seed)
    unary, g = sparse_problem(rng, 40, 4, 70, **dict(CASES)[case])
    k, big = unary.shape[1], big_cost(unary, g)
    u0 = np.where(np.isinf(unary), big, unary)
    start = rng.random((2 * g.n_edges, k))  # row 2 * edge + (towards the earlier endpoint)
    out = {}
    for name, passes in (("numpy", SequentialMessages(g, k, big, 1e-6)),
                         ("numba", CompiledSequentialMessages(g, k, big, 1e-6, order="colour"))):
        lay = passes.layout
        key = 2 * lay.edge + (np.arange(2 * g.n_edges) >= g.n_edges)
        msgs = passes.new_messages()
        msgs[:-1] = start[key]
        if name == "numba":
            passes.sync(msgs)
        passes.set_gamma(np.full(g.n_nodes, trws))
        passes.dirty[0][::3] = False  # lazy updates: these do not send in the forward pass
        u_p = np.ascontiguousarray(u0[passes.perm])
        labels = np.zeros(g.n_nodes, dtype=np.int64)
        node_e, moved_f = passes.forward(u_p, msgs, labels, damping=damping)
        node_e = node_e.copy()
        after_forward = msgs[:-1][np.argsort(key)].copy()
        moved_b, lb = passes.backward(u_p, msgs, damping=damping, bound=trws)
        back = np.empty(g.n_nodes, dtype=np.int64)
        back[passes.perm] = np.arange(g.n_nodes)
        out[name] = dict(labels=labels[back], node_e=node_e[back], fwd=after_forward, moved=(moved_f, moved_b),
                         msgs=msgs[:-1][np.argsort(key)], lb=lb, dirty=[d[back] for d in passes.dirty],
                         stale=passes.stale_label[back])
    a, b = out["numpy"], out["numba"]
    assert a["labels"].tolist() == b["labels"].tolist() and a["moved"] == b["moved"]
    np.testing.assert_allclose(a["node_e"], b["node_e"], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(a["fwd"], b["fwd"], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(a["msgs"], b["msgs"], rtol=1e-12, atol=1e-9)
    assert all(np.array_equal(x, y) for x, y in zip(a["dirty"], b["dirty"]))
    assert np.array_equal(a["stale"], b["stale"])
    if trws:
        np.testing.assert_allclose(a["lb"].sum(), b["lb"].sum(), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("case", ["must-link", "tables"])
def test_compiled_and_numpy_bp_agree_on_problems_without_frustration(seed, case):
    # with attractive factors the runs converge, so the two implementations end in the
    # same labelling and certify it with the same bound
    rng = np.random.default_rng(1050 + seed)
    unary, g = sparse_problem(rng, 40, 4, 70, **dict(CASES)[case])
    a = BeliefPropagation(kernel="numpy", order="colour").map(unary, g)
    b = BeliefPropagation(kernel="numba", order="colour").map(unary, g)
    assert a.energy == pytest.approx(b.energy, rel=1e-9)
    assert (a.lower_bound is None) == (b.lower_bound is None)
    if a.lower_bound is not None:
        assert a.lower_bound == pytest.approx(b.lower_bound, rel=1e-6)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("damping", [0.0, 0.5, "auto"])
def test_compiled_flooding_rounds_equal_numpy_rounds(seed, damping):
    # the anytime labelling of every round (per-node argmin of the beliefs); with
    # tol = 0 the lazy rounds skip only senders whose inputs did not change at all. A
    # run that reaches an exact fixed point stops; the other one may go on moving in
    # the last bits of its (differently summed) beliefs, with the same labelling.
    rng = np.random.default_rng(1100 + seed)
    unary, g = sparse_problem(rng, 30, 3, 60, p_cl=0.5)
    seen = {kernel: [] for kernel in ("numpy", "numba")}
    for kernel in seen:
        BeliefPropagation(schedule="flooding", kernel=kernel, damping=damping, tol=0.0, max_iter=40).map(
            unary, g, rng=0, callback=lambda it, y, *_, s=seen[kernel]: s.append(y.tolist()))
    short, long_ = sorted(seen.values(), key=len)
    assert long_[:len(short)] == short
    assert all(y == short[-1] for y in long_[len(short):])


def brute_force(unary, g):
    import itertools

    n, k = unary.shape
    return min(g.energy(np.array(y), unary) for y in itertools.product(range(k), repeat=n))


@pytest.mark.parametrize("seed", range(8))
def test_bfs_order_bp_is_exact_on_trees_and_trws_bounds_the_optimum(seed):
    rng = np.random.default_rng(1200 + seed)
    n, k = int(rng.integers(4, 9)), int(rng.integers(2, 4))
    parent = [int(rng.integers(0, i)) for i in range(1, n)]
    kind = np.where(rng.random(n - 1) < 0.5, -1, 1)
    g = PairwiseGraph.potts(n, np.c_[parent, np.arange(1, n)], rng.uniform(0.2, 2.0, n - 1), kind)
    unary = rng.random((n, k)) * 3
    best = brute_force(unary, g)
    plain = BeliefPropagation(order="bfs", reweight=None, tol=1e-10).map(unary, g)
    assert plain.converged and plain.energy == pytest.approx(best, abs=1e-9)
    trw = BeliefPropagation(order="bfs", reweight="trw", rel_gap=0.0, tol=1e-10).map(unary, g)
    assert trw.energy == pytest.approx(best, abs=1e-9) and trw.lower_bound == pytest.approx(best, abs=1e-6)
    # loopy, must-links only: the TRW-S bound is a bound
    unary, lg = sparse_problem(rng, 7, 3, 14, p_cl=0.0)
    res = BeliefPropagation(order="bfs", rel_gap=0.0).map(unary, lg)
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


def test_without_numba_auto_falls_back_to_numpy_and_numba_is_named(monkeypatch):
    rng = np.random.default_rng(1400)
    unary, g = sparse_problem(rng, 30, 3, 50, p_cl=0.3)
    numpy_res = BeliefPropagation(kernel="numpy").map(unary, g)
    monkeypatch.setitem(sys.modules, "numba", None)  # "import numba" now fails
    auto = BeliefPropagation().map(unary, g)
    assert auto.labels.tolist() == numpy_res.labels.tolist() and auto.info["n_colours"] is not None
    with pytest.raises(ImportError, match=r"hmrf\[fast\]"):
        BeliefPropagation(kernel="numba").map(unary, g)
    with pytest.raises(ValueError, match="order='bfs'"):
        BeliefPropagation(order="bfs").map(unary, g)


def test_sum_product_runs_the_numpy_passes_with_any_kernel():
    rng = np.random.default_rng(1500)
    unary, g = sparse_problem(rng, 12, 3, 16, p_cl=0.3)
    a = BeliefPropagation(mode="sum", kernel="numba").marginals(unary, g)
    b = BeliefPropagation(mode="sum", kernel="numpy").marginals(unary, g)
    np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 8])
@pytest.mark.parametrize("seed", range(4))
def test_compiled_potts_messages_equal_the_numpy_forms(k, seed):
    """messages_numba's one-message Potts updates = messages.py's vectorised ones (max
    mode), ties in ``h`` included (a cannot-link message is 0 under a tied minimum)."""
    import numba

    from hmrf.inference.bp.messages import must_link_messages, potts_cannot_link_min
    from hmrf.inference.bp.messages_numba import cannot_link_message, must_link_message, row_min

    @numba.njit
    def compiled(h, w, out_ml, out_cl, m1s):
        for c in range(h.shape[0]):
            m1 = row_min(h[c])
            m1s[c] = m1
            must_link_message(h[c], m1, w[c], out_ml[c])
            cannot_link_message(h[c], m1, w[c], out_cl[c])

    rng = np.random.default_rng(seed)
    c = 50
    h = rng.integers(0, 4, size=(c, k)).astype(float) * 0.25  # many ties
    h[: c // 2] += rng.random((c // 2, k))  # and rows without ties
    w = rng.uniform(0.1, 1.0, c)
    out_ml, out_cl, m1s = np.empty((c, k)), np.empty((c, k)), np.empty(c)
    compiled(h, w, out_ml, out_cl, m1s)
    np.testing.assert_array_equal(m1s, h.min(axis=1))
    np.testing.assert_allclose(out_ml, must_link_messages(h.T, w, "max", np.empty((k, c))).T, rtol=0, atol=1e-15)
    np.testing.assert_allclose(out_cl, potts_cannot_link_min(h.T, w).T, rtol=0, atol=1e-15)
    assert (out_ml.min(axis=1) == 0).all() and (out_cl.min(axis=1) == 0).all()  # normalised
