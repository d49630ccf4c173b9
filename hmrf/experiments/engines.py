"""The engine study: E-step engines inside one estimator, on the same splits.

:func:`compare_engines` runs the protocol of Basu (2005), §4.5.2 and Fig. 4.13 — random
2-fold splits, random pairs from the training half, every engine on the same splits and
constraints and running EM once from the same initial state (``n_init=1``) — and
records, besides NMI, what distinguishes engines when their NMI curves are about the same (as
on Iris):

* the final objective J of each fit, and (:func:`summarise_engines`) its excess over the
  best engine on the same split, ``(J_e - min_e J_e) / |min_e J_e|``;
* for every E-step, the energy the engine returned minus the best lower bound
  available on that same problem: the engine's own bound (LP value, TRW-S bound,
  MILP bound) or, with ``bound="lp"``, the value of the Kleinberg–Tardos LP relaxation
  (Appendix A.2) solved on it. A gap of 0 proves the E-step optimal;
* the E-steps whose labelling EM rejected as worse than the previous labels (an engine
  that is not monotone from its ``init``, or ignores it, has them; EM then keeps the
  constrained points' previous labels, so an engine whose every later E-step is rejected
  moves them only once);
* EM iterations, the time spent in the engine's ``map`` (E-step time) and the whole fit.

Timings exclude compilation: before the first timed fit of each estimator in each
process (joblib workers included) clones are fitted on the data with the study's
smallest and largest number of pairs (:func:`warm_up`), so numba kernels are compiled
or loaded from the disk cache untimed; the first fits' extra time is recorded as
``warm_time`` and reported as compile time. The E-step
problems are recorded during the fit and their reference bounds computed after it, so
they are not timed either.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from .._optional import load
from ..constraints import Constraints
from ..estimators import fit_supervised, make_estimator
from ..inference import InferenceEngine, LPRelaxation, get_engine, reduce_problem
from .learning import learning_curve
from .table import CurveTable

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Sequence
    from typing import Any, Literal

    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike, NDArray
    from sklearn.base import BaseEstimator

    from .._typing import MatrixLike, RandomLike
    from ..emissions.base import EmissionFamily
    from ..graph import PairwiseGraph
    from ..inference.base import InferenceResult

__all__ = ["compare_engines", "summarise_engines", "format_engine_summary", "plot_engine_summary",
           "estep_stats", "RecordingEngine", "warm_up", "BOUNDS", "SUMMARY_COLUMNS"]

#: Reference lower bounds of the E-step gap: "lp" solves the LP relaxation of every
#: E-step of engines that give no bound as good; "none" uses the engines' own bounds.
BOUNDS = ("lp", "none")

#: Columns of :func:`summarise_engines`, with what each holds.
SUMMARY_COLUMNS = {
    "engine": "engine name (hmrf.inference.ENGINES)",
    "constraints": "number of random pairs from the training half",
    "n_fits": "successful fits (runs x folds)",
    "n_failed": "fits that raised (e.g. InfeasibleError)",
    "nmi_mean": "mean NMI on the held-out half",
    "nmi_std": "its sample standard deviation over the fits (ddof=1)",
    "nmi_sem": "its standard error, nmi_std / sqrt(n_fits)",
    "objective_mean": "mean final objective J (eq. 4.10)",
    "objective_excess": "mean of (J - best J on the same split) / |best J| (0: best engine)",
    "best_share": "share of splits on which the engine reached the best J (rel. 1e-9)",
    "estep_gap": "mean over E-steps of energy - best lower bound on that E-step",
    "estep_gap_rel": "mean over E-steps of that gap / |bound|",
    "estep_optimal": "share of E-steps proven optimal (gap <= 1e-9 |bound|)",
    "estep_rejected": "mean E-steps per fit whose labelling EM rejected (worse than the previous labels)",
    "n_iter_mean": "mean EM iterations",
    "estep_time_mean": "mean time in the engine per fit (s), all E-steps",
    "fit_time_mean": "mean time per fit (s)",
    "compile_time": "time of the engine's first, compiling warm-up fit beyond a warm one (s)",
    "startup_time": "process start-up of the first warm-up fit (imports, emission kernels; s)",
}

_TOL = 1e-9


class RecordingEngine(InferenceEngine):
    """An engine that runs another and keeps every E-step problem and result it saw.

    Behaves exactly as ``engine`` (same arguments, same random stream); ``calls`` holds
    ``(unary, graph, result, seconds)`` per :meth:`map` (or E-step of a fit, through
    :meth:`solve_validated`), ``seconds`` being the time of the wrapped engine's call, and
    ``rejected`` whether EM's rule rejects that result: an energy above that of ``init``
    (the previous labels; :func:`hmrf.em.loop.run_em` then keeps them).

    Parameters
    ----------
    engine : str or InferenceEngine
    """

    def __init__(self, engine: InferenceEngine) -> None:
        self.engine = engine
        self.calls = []
        self.rejected = []

    def _record(self, unary, graph, init, res, seconds):
        self.calls.append((unary, graph, res, seconds))
        self.rejected.append(init is not None and res.energy > graph.energy(init, unary))

    @property
    def monotone_from_init(self) -> bool:
        return getattr(get_engine(self.engine), "monotone_from_init", False)

    def map(self, unary: ArrayLike, graph: PairwiseGraph | Constraints | None = None,
            init: ArrayLike | None = None, rng: RandomLike = None,
            callback: Callable[..., Any] | None = None) -> InferenceResult:
        engine = get_engine(self.engine)
        t0 = time.perf_counter()
        res = engine.map(unary, graph, init=init, rng=rng, callback=callback)
        self._record(unary, graph, init, res, time.perf_counter() - t0)
        return res

    def solve_validated(self, unary: NDArray[np.float64], graph: PairwiseGraph,
                        init: NDArray[np.intp] | None = None, rng: np.random.Generator | None = None,
                        callback: Callable[..., Any] | None = None, *,
                        started: float | None = None) -> InferenceResult:
        engine = get_engine(self.engine)
        t0 = time.perf_counter()
        if isinstance(engine, InferenceEngine):
            res = engine.solve_validated(unary, graph, init, rng, callback)
        else:
            res = engine.map(unary, graph, init=init, rng=rng, callback=callback)
        self._record(unary, graph, init, res, time.perf_counter() - t0)
        return res

    def check_params(self) -> None:
        engine = get_engine(self.engine)
        if isinstance(engine, InferenceEngine):
            engine.check_params()

    def __repr__(self) -> str:
        return f"RecordingEngine({self.engine!r})"


#: per process: the LP bound of every E-step problem solved so far, by its digest
#: (:func:`_problem_key`), at most ``_MAX_BOUNDS`` of them (the oldest are dropped)
_BOUNDS: OrderedDict[bytes, float] = OrderedDict()
_MAX_BOUNDS = 100_000


def _problem_key(unary, graph) -> bytes:
    """A digest of an E-step problem: its unary costs and every array of its graph."""
    digest = hashlib.blake2b(digest_size=20)
    arrays = (unary, graph.edges, graph.weight, graph.kind, graph.tables, graph.table_index)
    for a in arrays:
        if a is None:
            digest.update(b"-")
            continue
        a = np.ascontiguousarray(a)
        digest.update(f"{a.dtype.str}{a.shape}".encode())
        digest.update(a.view(np.uint8).ravel())
    return digest.digest()


def _lp_bound(unary, graph) -> float:
    """Value of the LP relaxation (Appendix A.2) of one E-step problem: a lower bound.

    Solved once per distinct problem in a process: engines that start from the same
    state meet the same first E-step, and a fit that has converged meets its last one
    again. The relaxation of a graph stays loaded in HiGHS on the graph
    (:func:`~hmrf.inference.lp.solve_lp`), so the E-steps of one fit start from the
    previous E-step's optimal basis.
    """
    key = _problem_key(unary, graph)
    value = _BOUNDS.get(key)
    if value is None:
        red = reduce_problem(unary, graph)
        value = float(red.offset) if red.active.size == 0 else \
            float(LPRelaxation().relax(red.unary, red.graph)[1] + red.offset)
        _remember_bound(key, value)
    return value


def _remember_bound(key: bytes, value: float) -> None:
    _BOUNDS[key] = value
    if len(_BOUNDS) > _MAX_BOUNDS:
        _BOUNDS.popitem(last=False)


def _solves_reference_lp(engine) -> bool:
    """Whether ``engine``'s lower bound is the value of the reference LP (:func:`_lp_bound`):
    the Kleinberg–Tardos relaxation solved by HiGHS."""
    return isinstance(engine, LPRelaxation) and engine.solver == "highs"


def estep_stats(estimator: BaseEstimator, bound: str = "lp") -> dict:
    """E-step statistics of a fitted estimator whose engine is a :class:`RecordingEngine`.

    Returns ``n_estep``, ``estep_time`` (s; NaN when the engine never ran),
    ``estep_gap`` (mean of energy minus the best lower bound available),
    ``estep_gap_rel`` (the same over ``|bound|``), ``estep_optimal`` (share of
    E-steps with a gap of at most ``1e-9 |bound|``) and ``estep_rejected`` (E-steps whose
    labelling EM rejected,
    :class:`RecordingEngine`).
    """
    recorder = estimator.inference
    engine = get_engine(recorder.engine)
    gaps, rel = [], []
    reference = _solves_reference_lp(engine)
    for unary, graph, res, _ in recorder.calls:  # a handful of E-steps per fit
        if reference:  # its bound is the reference bound of this problem: keep it
            _remember_bound(_problem_key(unary, graph), res.lower_bound)
        bounds = [] if res.lower_bound is None else [res.lower_bound]
        proven = bounds and res.energy - bounds[0] <= _TOL * max(1.0, abs(bounds[0]))
        if bound == "lp" and not proven and not isinstance(engine, LPRelaxation):
            bounds.append(_lp_bound(unary, graph))
        if not bounds:
            continue
        best = max(bounds)
        gap = max(0.0, res.energy - best)
        gaps.append(gap)
        rel.append(gap / max(abs(best), np.finfo(float).tiny))
    gaps, rel = np.asarray(gaps), np.asarray(rel)
    return dict(n_estep=len(recorder.calls),
                estep_time=float(sum(c[3] for c in recorder.calls)) if recorder.calls else np.nan,
                estep_gap=float(gaps.mean()) if gaps.size else np.nan,
                estep_gap_rel=float(rel.mean()) if rel.size else np.nan,
                estep_optimal=float(np.mean(rel <= _TOL)) if rel.size else np.nan,
                estep_rejected=int(sum(recorder.rejected)))


_WARMED = {}  # per process: estimator settings -> seconds of compilation measured


def _fit_twice(estimator, Xs, c) -> float:
    """Excess time of a first fit of a clone of ``estimator`` over a second, identical one."""
    from sklearn.base import clone

    times = []
    for _ in range(2):
        est = clone(estimator)
        if "random_state" in est.get_params(deep=False):
            est.set_params(random_state=0)
        t0 = time.perf_counter()
        try:
            fit_supervised(est, Xs, c)
        except ImportError:  # a missing optional dependency: one clear error, not one per fit
            raise
        except Exception:  # noqa: BLE001 - a failing warm-up fit is retried by the timed fit
            pass
        times.append(time.perf_counter() - t0)
    return max(0.0, times[0] - times[1])


def warm_up(estimator: BaseEstimator, X: MatrixLike, y: ArrayLike | None = None, *,
            n_pairs: Sequence[int] = (40,), max_points: int = 2000) -> dict:
    """Fit clones of ``estimator`` on ``X`` so that later fits run warm.

    The first fit in a process imports modules and compiles (or loads from numba's disk
    cache) the kernels of the emission family; an engine compiles its kernels when it
    first meets a kind of problem (e.g. belief propagation's node order on a large
    component). Both happen here, on the data itself (at most ``max_points`` rows of it)
    with each number of random pairs in ``n_pairs`` (a study's smallest and largest):
    first with ICM as the engine (process start-up), then with the estimator's own
    engine, each fit twice. Returns ``startup_time`` and ``warm_time``, the excess of
    the first fits over the second ones, once per process and estimator setting (0.0
    when already warm).
    """
    params = estimator.get_params(deep=False)
    key = (type(estimator).__name__, repr(sorted((k, repr(v)) for k, v in params.items()
                                                 if k != "random_state")))
    if key in _WARMED:
        return {"startup_time": 0.0, "warm_time": 0.0}
    rng = np.random.default_rng(0)
    n = X.shape[0]
    idx = np.sort(rng.choice(n, size=min(n, max_points), replace=False))
    Xs = X[idx]
    half = rng.permutation(idx.size)[: max(2, idx.size // 2)]  # pairs from a training half
    supervision = [Constraints.sample_from_labels(np.asarray(y)[idx], int(m), rng, among=half)
                   if y is not None and m else Constraints.empty(idx.size) for m in n_pairs]
    startup = 0.0
    if "startup" not in _WARMED:
        from sklearn.base import clone

        base = clone(estimator)
        if "inference" in params:
            base.set_params(inference="icm")
        _WARMED["startup"] = startup = sum(_fit_twice(base, Xs, c) for c in supervision)
    _WARMED[key] = sum(_fit_twice(estimator, Xs, c) for c in supervision)
    return {"startup_time": startup, "warm_time": _WARMED[key]}


def _prepare(estimator, X, y, n_pairs):
    return warm_up(estimator, X, y, n_pairs=n_pairs)


def _fit_stats(estimator, bound):
    return estep_stats(estimator, bound)


def compare_engines(X: MatrixLike, y: ArrayLike, engines: Any = ("icm", "bp", "lp"), *,
                    estimator: str = "hmrf-kmeans", emission: str | EmissionFamily | None = None,
                    w: float | None = None, points: Sequence[int] = (0, 10, 25, 50, 100, 200, 400),
                    runs: int = 10, folds: int = 2, bound: Literal["lp", "none"] = "lp",
                    n_init: int | Literal["auto"] = 1, random_state: int = 0,
                    n_jobs: int | None = None, progress: bool | str = True) -> CurveTable:
    """E-step engines inside one estimator on the protocol of Basu (2005), §4.5.2.

    Parameters
    ----------
    X : array-like or sparse matrix (n, d)
    y : array-like (n,)
        True classes: the source of the random pairs and the reference of NMI.
    engines : sequence of str or dict
        Names of :data:`hmrf.inference.ENGINES`, or ``{name: engine}``.
    estimator : str, default="hmrf-kmeans"
        A name of :data:`hmrf.estimators.ESTIMATORS` that takes an engine.
    emission, w : optional
        Passed to :func:`~hmrf.estimators.make_estimator`.
    points : sequence of int
        Numbers of random pairs.
    runs, folds : int
        ``runs`` repetitions of ``folds``-fold cross-validation (the thesis: 2 folds).
    bound : {"lp", "none"}, default="lp"
        Reference lower bound of the E-step gap (:data:`BOUNDS`).
    n_init : int or "auto", default=1
        EM runs per fit. With 1 (the protocol of Fig. 4.13) every engine runs EM once
        from the same initial state on a split, so that the engines alone differ;
        ``"auto"`` (the estimators' default) lets each engine keep the best of several
        starts.
    random_state : int, default=0
    n_jobs : int, optional
        Parallel fits (joblib); each worker warms up on its own.
    progress : bool or str, default=True

    Returns
    -------
    CurveTable
        One record per (engine, run, fold, point), ``estimator`` being the engine
        name, with ``nmi``, ``objective``, ``n_iter``, ``fit_time``, ``warm_time`` and
        the columns of :func:`estep_stats`; :func:`summarise_engines` condenses it.

    Examples
    --------
    >>> from hmrf.experiments import compare_engines, summarise_engines
    >>> from hmrf.datasets import load_dataset
    >>> X, y = load_dataset("iris")
    >>> t = compare_engines(X, y, ["icm", "exact"], points=[20], runs=1, progress=False)
    >>> rows = summarise_engines(t)
    >>> [r["engine"] for r in rows], [r["estep_optimal"] for r in rows][1]
    (['icm', 'exact'], 1.0)
    """
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {BOUNDS}; got {bound!r}.")
    named = dict(engines) if isinstance(engines, dict) else {e: e for e in engines}
    if not named:
        raise ValueError("engines is empty.")
    y = np.asarray(y)
    k = int(np.unique(y).shape[0])
    nonzero = [int(p) for p in points if p]
    n_pairs = sorted({min(nonzero), max(nonzero)}) if nonzero else [0]
    engines = {name: get_engine(eng) for name, eng in named.items()}
    # engines whose own bound is the reference LP fit first, so that the engines after
    # them find the bounds of the E-steps they share (often all) already solved
    first = sorted(engines, key=lambda name: not _solves_reference_lp(engines[name]))
    models = {name: make_estimator(estimator, k, emission, w, RecordingEngine(engines[name]))
              .set_params(n_init=n_init) for name in first}
    table = learning_curve(models, X, y, supervision="constraints", points=points, runs=runs,
                           folds=folds, metrics=("nmi", "objective", "n_iter"),
                           random_state=random_state, n_jobs=n_jobs, progress=progress,
                           errors="record", prepare=partial(_prepare, X=X, y=y, n_pairs=n_pairs),
                           fit_stats=partial(_fit_stats, bound=bound))
    order = {name: i for i, name in enumerate(named)}
    return CurveTable(sorted(table, key=lambda r: order[r["estimator"]]))


def summarise_engines(table: Any) -> list[dict[str, Any]]:
    """One row per (engine, number of constraints) with :data:`SUMMARY_COLUMNS`.

    The objective excess compares engines on the same (run, fold, point): the best J
    there is the smallest among the engines whose fit succeeded.
    """
    recs = list(table)
    best = {}
    for r in recs:
        if not r.get("error"):
            key = (r["run"], r["fold"], r["point"])
            best[key] = min(best.get(key, np.inf), float(r["objective"]))
    engines = list(dict.fromkeys(r["estimator"] for r in recs))
    points = sorted({r["point"] for r in recs})
    def most(name, e=None):
        return max((float(r.get(name, 0.0) or 0.0) for r in recs
                    if e is None or r["estimator"] == e), default=0.0)

    compile_time = {e: most("warm_time", e) for e in engines}
    startup = most("startup_time")
    rows = []
    for point in points:
        for e in engines:
            group = [r for r in recs if r["estimator"] == e and r["point"] == point]
            ok = [r for r in group if not r.get("error")]

            def col(name, rs=ok):
                return np.array([float(r[name]) for r in rs], dtype=np.float64)

            def mean(v):
                v = v[np.isfinite(v)]
                return float(v.mean()) if v.size else np.nan

            J = col("objective")
            Jb = np.array([best[(r["run"], r["fold"], r["point"])] for r in ok])
            excess = (J - Jb) / np.maximum(np.abs(Jb), np.finfo(float).tiny)
            nmi = col("nmi")
            nmi_std = float(nmi.std(ddof=1)) if nmi.size > 1 else 0.0
            rows.append(dict(
                engine=e, constraints=point, n_fits=len(ok), n_failed=len(group) - len(ok),
                nmi_mean=mean(nmi), nmi_std=nmi_std, nmi_sem=nmi_std / np.sqrt(max(nmi.size, 1)),
                objective_mean=mean(J), objective_excess=mean(excess),
                best_share=mean((excess <= _TOL).astype(float)),
                estep_gap=mean(col("estep_gap")), estep_gap_rel=mean(col("estep_gap_rel")),
                estep_optimal=mean(col("estep_optimal")),
                estep_rejected=mean(col("estep_rejected")) if ok and "estep_rejected" in ok[0] else np.nan,
                n_iter_mean=mean(col("n_iter")),
                estep_time_mean=mean(col("estep_time")), fit_time_mean=mean(col("fit_time", group)),
                compile_time=compile_time[e], startup_time=startup))
    return rows


#: printed columns of :func:`format_engine_summary`: (header, key, format, legend)
_PRINTED = (
    ("NMI", "nmi_mean", "{:.3f}", "mean NMI on the held-out half ± s.e.m. (its standard error, "
                                  "std / sqrt(fits); the CSV has both)"),
    ("J excess", "objective_excess", "{:.3%}", "final objective J above the best engine's on "
                                               "the same split (mean; 0 %: always the best)"),
    ("best J", "best_share", "{:.0%}", "share of splits on which the engine reached the best J"),
    ("E gap", "estep_gap_rel", "{:.3%}", "E-step energy above the best lower bound on the "
                                        "same problem (mean over E-steps, % of the bound)"),
    ("E opt.", "estep_optimal", "{:.0%}", "share of E-steps proven optimal (gap 0)"),
    ("E rej.", "estep_rejected", "{:.1f}", "E-steps per fit whose labelling EM rejected as worse "
                                          "than the previous labels (mean)"),
    ("EM it.", "n_iter_mean", "{:.1f}", "EM iterations (mean)"),
    ("E-step s", "estep_time_mean", "{:.4f}", "time in the engine per fit, all E-steps (mean)"),
    ("fit s", "fit_time_mean", "{:.4f}", "time per fit (mean), compilation excluded"),
)


def format_engine_summary(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`summarise_engines` as a text table, one line per (constraints,
    engine), followed by a legend of the columns and each engine's compile time."""
    head = ["constraints", "engine", *(h for h, *_ in _PRINTED)]
    body = []
    for r in rows:
        cells = [str(r["constraints"]), r["engine"]]
        for _h, key, fmt, _ in _PRINTED:
            v = r[key]
            text = "-" if not np.isfinite(v) else fmt.format(v)
            if key == "nmi_mean" and np.isfinite(v):
                text += f" ± {r['nmi_sem']:.3f}"
            cells.append(text)
        if r["n_failed"]:
            cells[1] += f" ({r['n_failed']} failed)"
        body.append(cells)
    width = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(x.rjust(w) for x, w in zip(line, width)) for line in [head, *body]]
    lines.append("")
    lines += [f"  {h}: {legend}" for h, _, _, legend in _PRINTED]
    compile_times = {r["engine"]: r["compile_time"] for r in rows}
    lines.append("  compile time, not in any timed fit: " + ", ".join(
        f"{e} {t:.2f} s" for e, t in compile_times.items())
        + (f"; process start-up {rows[0]['startup_time']:.2f} s" if rows else ""))
    lines.append("  -: the engine never ran (no constraints: every point takes its nearest centre)")
    return "\n".join(lines)


def plot_engine_summary(rows: list[dict[str, Any]], path: str | os.PathLike[str] | None = None,
                        title: str = "E-step engines") -> Figure:
    """Four panels against the number of constraints: NMI, J excess over the best engine,
    E-step gap to the best bound, and time (E-step solid, whole fit dashed).

    The constraint counts are equally spaced categories; engines get distinct markers
    and small horizontal offsets, so curves that coincide (as NMI often does) stay
    visible. Returns the matplotlib Figure (saved to ``path`` if given).
    """
    Figure = load("matplotlib.figure", purpose="plot_engines").Figure

    engines = list(dict.fromkeys(r["engine"] for r in rows))
    points = sorted({r["constraints"] for r in rows})
    markers = "osD^vP*Xh<>"
    fig = Figure(figsize=(10, 7), layout="constrained")
    axes = fig.subplots(2, 2)
    panels = [(axes[0, 0], "nmi_mean", "NMI on the held-out half (± s.e.m.)"),
              (axes[0, 1], "objective_excess", "J above the best engine on the split (%)"),
              (axes[1, 0], "estep_gap_rel", "E-step energy above the best bound (%)"),
              (axes[1, 1], "estep_time_mean", "time per fit (s): E-steps solid, fit dashed")]
    width = 0.5 / max(len(engines), 1)
    for e_i, e in enumerate(engines):
        rs = sorted((r for r in rows if r["engine"] == e), key=lambda r: r["constraints"])
        x = np.array([points.index(r["constraints"]) for r in rs], dtype=float)
        x = x + (e_i - (len(engines) - 1) / 2) * width  # keep coinciding curves apart
        mk = markers[e_i % len(markers)]
        for ax, key, _label in panels:
            v = np.array([r[key] for r in rs], dtype=float)
            if key in ("objective_excess", "estep_gap_rel"):
                v = 100 * v
            if key == "estep_time_mean":
                v[v <= 0] = np.nan  # the engine never ran
            (line,) = ax.plot(x, v, marker=mk, ms=5, mfc="none", label=e)
            if key == "nmi_mean":
                sem = np.array([r["nmi_sem"] for r in rs])
                ax.errorbar(x, v, yerr=sem, fmt="none", ecolor=line.get_color(), capsize=2, lw=0.8)
            if key == "estep_time_mean":
                ax.plot(x, [r["fit_time_mean"] for r in rs], marker=mk, ms=4, ls="--",
                        color=line.get_color(), mfc="none")
    for ax, key, label in panels:
        if key in ("objective_excess", "estep_gap_rel"):
            top = max([100 * r[key] for r in rows if np.isfinite(r[key])], default=0.0)
            ax.set_yscale("symlog", linthresh=1e-3)
            ax.set_ylim(-1e-4, max(1e-2, 3 * top))
        elif key == "estep_time_mean":
            ax.set_yscale("log")
        ax.set_xticks(range(len(points)), [str(p) for p in points])
        ax.set(xlabel="number of constraints", ylabel=label)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(title="engine", fontsize=8)
    fig.suptitle(title)
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig
