"""Minimising a quadratic pseudo-boolean function by one s–t minimum cut (graph cut / QPBO).

Every move of :class:`~hmrf.inference.AlphaExpansion` is a binary problem

.. math::

    E(x) = \\text{const} + \\sum_p \\Delta_p x_p
           + \\sum_{(p,q)} \\theta_{pq}(x_p, x_q), \\qquad x \\in \\{0, 1\\}^n,

with ``x = 0`` the current labelling. Each pairwise table
``(A, B, C, D) = (θ(0,0), θ(0,1), θ(1,0), θ(1,1))`` is split exactly into

.. math::

    \\theta_{pq}(x_p, x_q) = A + \\tfrac{D - A + C - B}{2} x_p + \\tfrac{D - A + B - C}{2} x_q
        + \\tfrac{\\lambda}{2} [x_p \\ne x_q], \\qquad \\lambda = B + C - A - D,

so a term is *submodular* (the regularity condition of Kolmogorov & Zabih 2004: ``A + D <= B + C``) exactly
when its ``[x_p != x_q]`` weight is non-negative. If every term is submodular the cut of
one graph with ``n`` nodes gives a global minimum. Otherwise this is the QPBO graph of
Kolmogorov & Rother (2007): two nodes ``p`` and ``p̄`` per variable (``p̄``
stands for ``1 - x_p``); a submodular term joins ``p–q`` and ``p̄–q̄``, a non-submodular
one (``-λ/2 [x_p = x_q] = -λ/2 [x_p != 1 - x_q]``) joins ``p–q̄`` and ``p̄–q``, every
capacity non-negative. After the cut ``x_p = 0`` when ``p`` is on the source side and
``p̄`` on the sink side, ``x_p = 1`` in the mirror case, and ``p`` is *unlabelled*
otherwise. Unlabelled variables keep ``x_p = 0``: by the autarky (weak persistency)
property of the QPBO partial labelling (Kolmogorov & Rother 2007; Boros & Hammer
2002), fusing it with any complete labelling never raises that labelling's energy, so
fusing with the current labelling ``x = 0`` gives ``E(x) <= E(0)``.

The max-flow is PyMaxflow's Boykov–Kolmogorov solver (Boykov & Kolmogorov 2004), a
well-kept binding of the reference implementation; graphs are built from NumPy arrays
in three batch calls. (The compiled α-expansion moves whose terms are all submodular
cut with :mod:`~hmrf.inference.maxflow_numba` instead, the same algorithm on a graph
laid out once per E-step; this module's cut is its twin.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._optional import load

if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Literal

    from numpy.typing import NDArray

__all__ = ["BinaryCut", "load_maxflow", "solve_binary", "solve_split", "split_terms", "fix_dominated"]

def load_maxflow() -> ModuleType:
    """PyMaxflow, the max-flow library of α-expansion, imported on first use; an
    ``ImportError`` naming the extra if it is missing."""
    return load("maxflow", purpose="AlphaExpansion (the max-flow library)")


@dataclass
class BinaryCut:
    """Result of :func:`solve_binary`.

    Attributes
    ----------
    x : ndarray of bool, shape (n,)
        The labelling (``True`` = 1); unlabelled variables are ``False`` (kept at 0).
    labelled : ndarray of bool, shape (n,)
        Variables whose value is persistent (some global minimum agrees): all when
        every term is submodular, QPBO's labelled set otherwise, none after truncation.
    exact : bool
        Whether every pairwise term was submodular (then ``x`` is a global minimum).
    """

    x: np.ndarray
    labelled: np.ndarray
    exact: bool

    @property
    def n_unlabelled(self) -> int:
        return int(self.labelled.size - np.count_nonzero(self.labelled))


def _terminal_caps(delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Source and sink capacities of unary differences ``delta = E(x_p=1) - E(x_p=0)``:
    a node on the sink side (``x_p = 1``) cuts its source edge and vice versa."""
    return np.maximum(delta, 0.0), np.maximum(-delta, 0.0)


def split_terms(A: NDArray[np.floating], B: NDArray[np.floating], C: NDArray[np.floating],
                D: NDArray[np.floating]) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """The exact split of pairwise tables (module docstring).

    Returns
    -------
    unary_p, unary_q : ndarray (m,)
        What each term adds to ``E(x_p = 1) - E(x_p = 0)`` of its endpoints.
    half_lambda : ndarray (m,)
        Weight of ``[x_p != x_q]``; negative exactly for non-submodular terms.
    """
    da = D - A
    half_lambda = 0.5 * (B + C - A - D)
    neg = np.flatnonzero(half_lambda < 0)
    if neg.size:
        # rounding noise on terms that are submodular with equality (a metric table's
        # triangle inequality met exactly) is not non-submodularity
        noise = 1e-12 * (np.abs(A[neg]) + np.abs(B[neg]) + np.abs(C[neg]) + np.abs(D[neg]))
        half_lambda[neg[half_lambda[neg] >= -noise]] = 0.0
    return 0.5 * (da + C - B), 0.5 * (da + B - C), half_lambda


def _cut(maxflow, u, p, q, half_lambda) -> np.ndarray:
    """Minimum cut of a submodular problem in split form; ``True`` = sink side = 1."""
    n = u.shape[0]
    ids = np.arange(n, dtype=np.int64)
    src, snk = _terminal_caps(u)
    g = maxflow.GraphFloat(n, p.size)
    g.add_nodes(n)
    if p.size:
        g.add_edges(p, q, half_lambda, half_lambda)
    g.add_grid_tedges(ids, src, snk)
    g.maxflow()
    return g.get_grid_segments(ids)


def _qpbo(maxflow, u, p, q, half_lambda) -> tuple[np.ndarray, np.ndarray]:
    """QPBO partial labelling ``(x, labelled)`` (Kolmogorov & Rother 2007)."""
    n = u.shape[0]
    src, snk = _terminal_caps(u)
    non_sub = half_lambda < 0
    cap = np.abs(half_lambda)
    g = maxflow.GraphFloat(2 * n, 2 * p.size)
    g.add_nodes(2 * n)
    # submodular: p–q and p̄–q̄; non-submodular: p–q̄ and p̄–q (node p̄ is p + n)
    q_of_p = np.where(non_sub, q + n, q)
    q_of_pbar = np.where(non_sub, q, q + n)
    g.add_edges(np.r_[p, p + n], np.r_[q_of_p, q_of_pbar], np.r_[cap, cap], np.r_[cap, cap])
    # p̄ on the sink side means x_p = 0: its terminal capacities mirror p's
    ids = np.arange(n, dtype=np.int64)
    g.add_grid_tedges(np.r_[ids, ids + n], np.r_[src, snk], np.r_[snk, src])
    g.maxflow()
    seg = g.get_grid_segments(np.arange(2 * n, dtype=np.int64))
    sp, sbar = seg[:n], seg[n:]
    labelled = sp != sbar
    return sp & labelled, labelled


def _dominated(u, s):
    """0 / 1 where a variable with unary difference ``u`` and coupling ``s`` is forced there, else -1."""
    margin = 1e-9 * (s + np.abs(u))
    return np.where(u - s > margin, 0, np.where(-u - s > margin, 1, -1))


def fix_dominated(u: NDArray[Any], p: NDArray[np.intp], q: NDArray[np.intp],
                  half_lambda: NDArray[Any]) -> tuple[NDArray[np.intp], NDArray[Any]]:
    """The variables of a split-form problem that every minimiser fixes, by dominance.

    Switching ``x_i`` changes ``E(x) = const + sum_i u_i x_i + sum_e h_e [x_p != x_q]`` by
    ``±u_i`` plus at most ``s_i = sum_{e ∋ i} |h_e|`` from its terms, whatever the other
    variables are. So ``u_i > s_i`` forces ``x_i = 0`` and ``u_i < -s_i`` forces
    ``x_i = 1`` in every minimiser (a node whose own preference outweighs all its
    couplings; the simplest persistency criterion, cf. Kovtun 2003 and the "reduce"
    step of Alahari, Kohli & Torr 2008). A fixed variable's terms become unary terms of
    its neighbours (``h [x_j != 0] = h x_j``, ``h [x_j != 1] = h - h x_j``), which only
    makes their conditions easier, so fixing is repeated until nothing changes; the
    result does not depend on the order. On an expansion move most nodes far from
    ``α`` in cost are fixed this way, and only the rest needs the max-flow. A margin of
    ``1e-9`` (relative) leaves near-ties to the cut.

    Parameters
    ----------
    u : ndarray (n,)
    p, q : ndarray of int (m,)
    half_lambda : ndarray (m,)

    Returns
    -------
    state : ndarray of int (n,)
        -1 for a free variable, else its forced value.
    u_folded : ndarray (n,)
        ``u`` with the terms towards fixed variables folded in (the unary differences of
        the free variables in the reduced problem).

    Notes
    -----
    Vectorised rounds over the frontier (the free neighbours of the variables fixed in
    the previous round); :func:`~hmrf.inference.graphcut_numba.fix_dominated` is the
    compiled twin (a worklist, the same fixed point).
    """
    u = np.asarray(u, dtype=np.float64)
    n, m = u.shape[0], p.shape[0]
    a = np.abs(half_lambda)
    s = np.bincount(p, weights=a, minlength=n) + np.bincount(q, weights=a, minlength=n)
    uu = u.copy()
    state = np.full(n, -1, dtype=np.int64)
    # incident terms of every variable: (variable, term, other end), grouped by variable
    ends = np.r_[p, q]
    order = np.argsort(ends, kind="stable")
    ptr = np.searchsorted(ends[order], np.arange(n + 1))
    term = np.r_[np.arange(m), np.arange(m)][order]
    other = np.r_[q, p][order]
    cand = np.arange(n)
    while cand.size:
        v = _dominated(uu[cand], s[cand])
        fixed = cand[v >= 0]
        if not fixed.size:
            break
        state[fixed] = v[v >= 0]
        # every term of a newly fixed variable whose other end is still free
        lo, hi = ptr[fixed], ptr[fixed + 1]
        cnt = hi - lo
        at = np.repeat(lo - np.cumsum(cnt) + cnt, cnt) + np.arange(int(cnt.sum()))
        src = np.repeat(fixed, cnt)
        e, j = term[at], other[at]
        live = state[j] < 0
        e, j, src = e[live], j[live], src[live]
        h = half_lambda[e]
        s -= np.bincount(j, weights=np.abs(h), minlength=n)
        uu += np.bincount(j, weights=np.where(state[src] == 0, h, -h), minlength=n)
        cand = np.unique(j)
    return state, uu


def _reduce(u, p, q, half_lambda, compiled):
    """Fix the dominated variables (:func:`fix_dominated`); returns ``(state, free, u, p, q,
    half_lambda)`` of the reduced problem over the free variables."""
    if compiled:
        from .graphcut_numba import fix_dominated as fix

        state, uu = fix(u, p, q, half_lambda)
    else:
        state, uu = fix_dominated(u, p, q, half_lambda)
    free = np.flatnonzero(state < 0)
    if free.size == u.shape[0]:
        return state, free, u, p, q, half_lambda
    pos = np.full(u.shape[0], -1, dtype=np.int64)
    pos[free] = np.arange(free.size)
    keep = (pos[p] >= 0) & (pos[q] >= 0)
    return state, free, uu[free], pos[p[keep]], pos[q[keep]], half_lambda[keep]


def solve_split(u: NDArray[Any], p: Any, q: NDArray[Any], half_lambda: Any, method: str = "qpbo",
                compiled: bool = False, reduce: bool = True) -> BinaryCut:
    """:func:`solve_binary` for a problem already in split form.

    ``E(x) - E(0) = sum_p u_p x_p + sum_e half_lambda_e [x_p != x_q]`` (see
    :func:`split_terms`); the form in which :class:`~hmrf.inference.AlphaExpansion`
    builds its moves. With ``reduce`` the variables every minimiser fixes by dominance
    are fixed first (:func:`fix_dominated`; by the compiled twin with ``compiled``), and
    only the others reach the max-flow.
    """
    if method not in ("qpbo", "truncate"):
        raise ValueError(f"method must be 'qpbo' or 'truncate'; got {method!r}.")
    maxflow = load_maxflow()
    u = np.asarray(u, dtype=np.float64)
    p = np.asarray(p, dtype=np.int64)
    q = np.asarray(q, dtype=np.int64)
    half_lambda = np.asarray(half_lambda, dtype=np.float64)
    exact = not (half_lambda < 0).any()
    if not reduce or (method == "truncate" and not exact):  # truncation alone: nothing is fixed first
        return _solve_reduced(maxflow, u, p, q, half_lambda, method)
    state, free, u_r, p_r, q_r, h_r = _reduce(u, p, q, half_lambda, compiled)
    if free.size == u.shape[0]:
        return _solve_reduced(maxflow, u, p, q, half_lambda, method)
    x = state == 1
    labelled = np.ones(u.shape[0], dtype=bool)
    if free.size:
        sub = _solve_reduced(maxflow, u_r, p_r, q_r, h_r, method)
        x[free] = sub.x
        labelled[free] = sub.labelled
    return BinaryCut(x=x, labelled=labelled, exact=exact)


def _solve_reduced(maxflow, u, p, q, half_lambda, method) -> BinaryCut:
    """The cut (submodular) or QPBO then truncation (module docstring) of a split problem."""
    n = u.shape[0]
    non_sub = half_lambda < 0
    if not non_sub.any():  # submodular: one graph, exact
        return BinaryCut(x=_cut(maxflow, u, p, q, half_lambda), labelled=np.ones(n, dtype=bool), exact=True)
    # truncation: a non-submodular term λ/2 [x_p != x_q] (λ < 0) is at most 0, with
    # equality at x_p = x_q: dropping it is the submodular upper bound tight at x = 0
    truncated = np.maximum(half_lambda, 0.0)
    if method == "truncate":
        return BinaryCut(x=_cut(maxflow, u, p, q, truncated), labelled=np.zeros(n, dtype=bool), exact=False)
    x, labelled = _qpbo(maxflow, u, p, q, half_lambda)
    rest = np.flatnonzero(~labelled)
    if rest.size:
        # fix the labelled variables: a term with one labelled end x_q becomes the unary
        # term λ/2 [x_p != x_q], i.e. ±λ/2 on E(x_p = 1) - E(x_p = 0)
        lp, lq = labelled[p], labelled[q]
        sign = np.where(x, -1.0, 1.0)
        d = u.copy()
        on_p = ~lp & lq
        d += np.bincount(p[on_p], weights=(half_lambda * sign[q])[on_p], minlength=n)
        on_q = lp & ~lq
        d += np.bincount(q[on_q], weights=(half_lambda * sign[p])[on_q], minlength=n)
        both = ~lp & ~lq
        pos = np.cumsum(~labelled) - 1
        x[rest] = _cut(maxflow, d[rest], pos[p[both]], pos[q[both]], truncated[both])
    return BinaryCut(x=x, labelled=labelled, exact=False)


def solve_binary(delta: NDArray[Any], p: NDArray[np.intp], q: NDArray[np.intp], A: NDArray[Any],
                 B: NDArray[Any], C: NDArray[Any], D: NDArray[Any],
                 method: Literal["qpbo", "truncate"] = "qpbo") -> BinaryCut:
    """Minimise a quadratic pseudo-boolean function by graph cut; QPBO if not submodular.

    Parameters
    ----------
    delta : ndarray of shape (n,)
        ``E_p(1) - E_p(0)`` of every variable's unary term (finite).
    p, q : ndarray of int, shape (m,)
        Endpoints of the pairwise terms (``p != q``).
    A, B, C, D : ndarray of shape (m,)
        ``θ(0,0), θ(0,1), θ(1,0), θ(1,1)`` of every term (finite).
    method : {"qpbo", "truncate"}, default="qpbo"
        Treatment of non-submodular terms. ``"truncate"`` replaces each by a submodular
        upper bound equal to it at ``x = 0`` (its ``[x_p != x_q]`` part, negative, is
        dropped: the truncation of Rother, Kumar, Kolmogorov & Blake 2005, in its
        majorising form) and cuts once: ``E(x) <= E'(x) <= E'(0) = E(0)``. ``"qpbo"``
        cuts the QPBO graph first; the unlabelled variables are then solved by the
        truncated cut with the labelled ones fixed (their terms with labelled variables
        become unary terms). By autarky the QPBO step gives ``E(x_L, 0) <= E(0)`` and
        the truncated step cannot raise that.

    Returns
    -------
    BinaryCut
        A global minimum when every term is submodular (``A + D <= B + C``);
        otherwise a labelling with ``E(x) <= E(0)`` (module docstring).

    References
    ----------
    Kolmogorov & Zabih (2004), "What energy functions can be minimized via graph cuts?",
    TPAMI 26(2). Kolmogorov & Rother (2007), "Minimizing nonsubmodular
    functions with graph cuts — a review", TPAMI 29(7). Boros & Hammer (2002),
    "Pseudo-Boolean optimization", Discrete Applied Mathematics 123. Rother, Kumar,
    Kolmogorov & Blake (2005), "Digital tapestry", CVPR.

    Examples
    --------
    Two variables that prefer 1 and 0 alone, and a term that wants them equal:

    >>> import numpy as np
    >>> from hmrf.inference.qpbo import solve_binary
    >>> cut = solve_binary(np.array([-1.0, 0.5]), np.array([0]), np.array([1]),
    ...                    np.array([0.0]), np.array([2.0]), np.array([2.0]), np.array([0.0]))
    >>> cut.x.astype(int).tolist(), cut.exact
    ([1, 1], True)
    """
    delta = np.asarray(delta, dtype=np.float64)
    p = np.asarray(p, dtype=np.int64)
    q = np.asarray(q, dtype=np.int64)
    A, B, C, D = (np.asarray(t, dtype=np.float64) for t in (A, B, C, D))
    up, uq, half_lambda = split_terms(A, B, C, D)
    n = delta.shape[0]
    u = delta + np.bincount(p, weights=up, minlength=n) + np.bincount(q, weights=uq, minlength=n)
    return solve_split(u, p, q, half_lambda, method)
