"""Learning curves as in the papers: supervision from a training part, scores on the rest.

Protocols of the thesis (:data:`PROTOCOLS`, keyword arguments of :func:`learning_curve`):
``"ch3"`` seed labels, 10-fold CV (§3.5.2-3.5.3); ``"ch4"`` random constraints, 20 runs
of 2-fold CV (§4.5.2); ``"ch5"`` constraints, 10-fold CV (§5.5.2).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from .._validation import check_random_state
from ..constraints import Constraints
from ..estimators.supervision import fit_supervised
from ..metrics import evaluate
from ._progress import progress_bar
from .table import METRICS, CurveTable

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, Literal

    from numpy.typing import ArrayLike, NDArray
    from sklearn.base import BaseEstimator

    from .._typing import MatrixLike

__all__ = ["learning_curve", "make_splits", "PROTOCOLS", "SCORES"]

#: The experimental protocols of the thesis (keyword arguments of learning_curve).
PROTOCOLS = {
    "ch3": dict(supervision="labels", runs=1, folds=10),
    "ch4": dict(supervision="constraints", runs=20, folds=2),
    "ch5": dict(supervision="constraints", runs=1, folds=10),
}

#: The names of :data:`~hmrf.experiments.METRICS` a learning curve records.
SCORES = ("nmi", "ari", "pairwise_f", "pairwise_precision", "pairwise_recall", "objective",
          "n_iter")


def _seed(base: int, *keys: int) -> int:
    """An independent 32-bit seed for the stream named by ``keys`` (order-free of n_jobs)."""
    return int(np.random.SeedSequence([base, *keys]).generate_state(1)[0])


def make_splits(n: int, runs: int, folds: int | None = None, test_fraction: float | None = None,
                random_state: int = 0) -> list[tuple[int, int, NDArray[np.intp], NDArray[np.intp]]]:
    """Train/test index splits: ``runs`` × (``folds``-fold CV or one random split).

    Returns ``(run, fold, train_idx, test_idx)`` tuples: shuffled k-fold CV (fold ``f``
    the test part) or, with ``test_fraction``, one split per run holding it out.
    """
    from sklearn.model_selection import KFold, ShuffleSplit

    if (folds is None) == (test_fraction is None):
        raise ValueError("give exactly one of folds (k-fold CV) and test_fraction (one split "
                         "per run).")
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise ValueError(f"runs must be an integer >= 1; got {runs!r}.")
    if folds is not None and (isinstance(folds, bool) or not isinstance(folds, (int, np.integer))
                              or not 2 <= folds <= n):
        raise ValueError(f"folds must be an integer in [2, n={n}]; got {folds!r}.")
    if folds is None and not 0.0 < float(test_fraction) < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1); got {test_fraction!r}.")
    out = []
    for r in range(int(runs)):
        seed = _seed(random_state, 0, r)
        splitter = KFold(n_splits=int(folds), shuffle=True, random_state=seed) if folds is not None \
            else ShuffleSplit(n_splits=1, test_size=float(test_fraction), random_state=seed)
        for f, (tr, te) in enumerate(splitter.split(np.zeros((n, 1)))):
            out.append((r, f, np.sort(tr), np.sort(te)))
    return out


# ---------------------------------------------------------------- supervision
def _wrong_labels(y_true, classes, rng):
    """A uniformly random class different from ``y_true`` for every entry."""
    pos = np.searchsorted(classes, y_true)
    shift = rng.integers(1, classes.size, size=y_true.size) if classes.size > 1 else 0
    return classes[(pos + shift) % classes.size]


def _supervise(kind, y, train, point, noise, max_point, rng_seed, X):
    """The supervision at one curve point: ``("labels", y_seed)`` or ``("constraints", c)``,
    nested along the points and the noise levels (each prefix a uniform random draw)."""
    n = y.shape[0]
    rng = np.random.default_rng(rng_seed)
    info = dict(n_seeds=0, n_noisy=0, n_must_link=0, n_cannot_link=0)
    if callable(kind):
        if noise:
            raise ValueError("noise applies to the built-in supervision only, not to a callable.")
        out = kind(X, y, train, point, rng)
        if isinstance(out, Constraints):
            kind, sup = "constraints", out
        else:
            kind, sup = "labels", np.asarray(out, dtype=np.int64)
        if kind == "labels" and sup.shape != (n,):
            raise ValueError(f"the supervision callable returned shape {sup.shape}; "
                             f"expected ({n},).")
        bad = sup.constrained_points if kind == "constraints" else np.flatnonzero(sup >= 0)
        if np.setdiff1d(bad, train).size:
            raise ValueError("the supervision callable used points outside the training part.")
    elif kind == "labels":
        if not 0.0 <= point <= 1.0:
            raise ValueError("with supervision='labels' the points are seed fractions in [0, 1]; "
                             f"got {point}.")
        order = rng.permutation(train)
        seeds = order[: int(round(point * train.size))]
        classes = np.unique(y)
        wrong = _wrong_labels(y[order], classes, rng)  # fixed per point: nested in noise
        m = int(round(noise * seeds.size))
        sup = np.full(n, -1, dtype=np.int64)
        sup[seeds] = y[seeds]
        sup[seeds[:m]] = wrong[:m]
    elif kind == "constraints":
        if point < 0 or point != int(point):
            raise ValueError("with supervision='constraints' the points are numbers of pairs; "
                             f"got {point}.")
        full = Constraints.sample_from_labels(y, int(max_point), rng, among=train)
        rank = rng.permutation(len(full))
        sup = full.select(rank < int(point))
        m = int(round(noise * len(sup)))
        if m:
            flip = np.zeros(len(sup), dtype=bool)
            flip[np.argsort(rank[rank < int(point)])[:m]] = True
            sup = Constraints(n, sup.pairs, np.where(flip, -sup.kind, sup.kind), sup.weight)
    else:
        raise ValueError("supervision must be 'constraints', 'labels' or a callable; "
                         f"got {kind!r}.")
    if kind == "labels":
        seeds = np.flatnonzero(sup >= 0)
        info.update(n_seeds=int(seeds.size), n_noisy=int(np.count_nonzero(sup[seeds] != y[seeds])))
    else:
        info.update(n_must_link=sup.n_must_link, n_cannot_link=sup.n_cannot_link)
        if not callable(kind):
            info["n_noisy"] = int(np.count_nonzero(
                (y[sup.pairs[:, 0]] == y[sup.pairs[:, 1]]) != (sup.kind > 0)))
    return kind, sup, info


# ------------------------------------------------------------------ estimators
def _resolve(make_estimator) -> dict:
    """``{name: spec}`` from an estimator, a factory ``(point, run) -> estimator`` or a dict."""
    if isinstance(make_estimator, dict):
        if not make_estimator:
            raise ValueError("make_estimator is an empty dict.")
        specs = dict(make_estimator)
    elif hasattr(make_estimator, "fit"):
        specs = {type(make_estimator).__name__: make_estimator}
    elif callable(make_estimator):
        specs = {getattr(make_estimator, "__name__", "estimator"): make_estimator}
    else:
        raise TypeError("make_estimator must be an estimator, a callable (point, run) -> "
                        f"estimator, or a dict of them; got {type(make_estimator).__name__}.")
    for name, spec in specs.items():
        if not (hasattr(spec, "fit") or callable(spec)):
            raise TypeError(f"make_estimator[{name!r}] is neither an estimator nor a callable.")
    return specs


def _build(spec, point, run, seed):
    from sklearn.base import clone

    est = clone(spec) if hasattr(spec, "fit") else spec(point, run)
    if not hasattr(est, "fit"):
        raise TypeError(f"make_estimator returned {type(est).__name__}, which has no fit method.")
    params = est.get_params(deep=False) if hasattr(est, "get_params") else {}
    if "random_state" in params and params["random_state"] is None:
        est.set_params(random_state=seed)
    return est


def _run_task(task, X, y, kind, noise_levels, max_point, metrics, errors, prepare, fit_stats):
    name, spec, run, fold, train, test, point, base = task
    records = []
    for noise in noise_levels:
        kind_used, sup, info = _supervise(kind, y, train, point, noise, max_point,
                                          _seed(base, 1, run, fold), X)
        rec = dict(estimator=name,
                   supervision=getattr(kind, "__name__", "custom") if callable(kind) else kind_used,
                   point=point, noise=float(noise), run=run, fold=fold, n_train=int(train.size),
                   n_test=int(test.size), **info)
        est = _build(spec, point, run, _seed(base, 2, run, fold))
        if prepare is not None:
            rec.update(prepare(est) or {})
        t0 = time.perf_counter()
        try:
            fit_supervised(est, X, sup)
            elapsed = time.perf_counter() - t0
            scores = evaluate(y, np.asarray(est.labels_), _mask(y.shape[0], test), metrics)
            scores["objective"] = float(getattr(est, "objective_", np.nan))
            scores["n_iter"] = float(getattr(est, "n_iter_", np.nan))
            error = ""
        except Exception as exc:  # noqa: BLE001 - recorded when errors="record"
            elapsed = time.perf_counter() - t0
            if errors == "raise":
                raise
            scores, error = {}, f"{type(exc).__name__}: {exc}"
        rec["fit_time"] = elapsed
        rec.update({m: float(scores.get(m, np.nan)) for m in metrics})
        if fit_stats is not None and not error:
            rec.update(fit_stats(est))
        rec["error"] = error
        records.append(rec)
    return records


def run_tasks(function: Callable[..., Any], tasks: Any, n_jobs: int | None) -> Any:
    """``function(*task)`` of every task, in order (a generator), on joblib's workers
    unless ``n_jobs`` is None or 1; a worker first imports the ``--plugin`` modules of
    this process (:data:`hmrf._registry.PLUGIN_MODULES`), whose names the tasks may use."""
    if n_jobs in (None, 1):
        return (function(*task) for task in tasks)
    from joblib import Parallel, delayed

    from .._registry import PLUGIN_MODULES

    plugins = list(PLUGIN_MODULES)
    return Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(_with_plugins)(plugins, function, task) for task in tasks)


def _with_plugins(plugins: list[tuple[str, str]], function: Callable[..., Any], task: Any) -> Any:
    """``function(*task)`` in a worker process, after importing the ``--plugin`` modules
    ``(folder, module)`` (already imported ones are not imported again)."""
    from .._registry import import_plugin

    for folder, module in plugins:
        import_plugin(module, folder)
    return function(*task)


def _mask(n, idx):
    m = np.zeros(n, dtype=bool)
    m[idx] = True
    return m


def learning_curve(make_estimator: Callable[..., BaseEstimator], X: MatrixLike, y: ArrayLike,
                   supervision: Any = "constraints", points: Sequence[int] = (0, 100, 200, 300, 400, 500),
                   runs: int = 1, folds: int | None = 10, test_fraction: float | None = None,
                   noise: float | Sequence[float] = 0.0,
                   metrics: Sequence[str] = ("nmi", "pairwise_f", "objective"), random_state: int = 0,
                   n_jobs: int | None = None, progress: bool | str = True,
                   errors: Literal["raise", "record"] = "raise", prepare: Callable[..., Any] | None = None,
                   fit_stats: Callable[..., Any] | None = None) -> CurveTable:
    """Learning curve of one or more estimators under growing supervision.

    Parameters
    ----------
    make_estimator : estimator, callable or dict
        An unfitted estimator (cloned for every fit), a callable ``(point, run) ->
        estimator``, or a dict ``{name: either}``. A ``random_state`` of ``None`` becomes
        a seed of ``(random_state, run, fold)`` (common random numbers).
    y : array-like (n,)
        True classes: the source of the supervision and the reference of the scores.
    supervision : {"constraints", "labels"} or callable, default="constraints"
        ``"constraints"``: ``point`` random pairs among the training points, must-link
        if their classes agree (§4.5.2). ``"labels"``: a fraction ``point`` of the
        training points keep their class, the rest are ``-1`` (§3.5.3). A callable
        ``(X, y, train_idx, point, rng) -> Constraints | partial labels`` gives any other
        supervision, from training points only (:func:`hmrf.estimators.fit_supervised`).
        Draws are nested along the curve (each point's draw extends the previous one's).
    points : sequence
        Numbers of pairs, or seed fractions in [0, 1].
    folds : int or None, default=10
        ``folds``-fold cross-validation per run; ``None``: one random split per run
        holding out ``test_fraction``.
    noise : float or sequence of float, default=0.0
        Fraction of the seeds given a random wrong class (§3.5.3), or of the pairs whose
        kind is flipped; a sequence makes noise a second axis of the curve.
    metrics : sequence of str, default=("nmi", "pairwise_f", "objective")
        From :data:`SCORES`: external scores on the held-out points, ``objective_`` on
        the whole data set.
    n_jobs : int, optional
        Parallel fits with joblib (``-1``: all cores).
    progress : bool or str, default=True
        A tqdm progress bar (when tqdm is installed); a string names it.
    errors : {"raise", "record"}, default="raise"
        ``"record"`` keeps going when a fit fails: NaN scores and the message in ``error``.
    prepare, fit_stats : callable, optional
        ``prepare(estimator) -> dict | None`` before each fit and ``fit_stats(estimator)
        -> dict`` after each successful one, untimed; their entries become columns.

    Returns
    -------
    CurveTable
        One record per (estimator, run, fold, point, noise).

    References
    ----------
    Basu (2005), §3.5.2-3.5.3 (seeds, noise, 10-fold CV), §4.5.2 (20 × 2-fold CV, random
    pairs from the training half, NMI on the test half), §5.5.2.

    Examples
    --------
    >>> from hmrf.experiments import learning_curve
    >>> from hmrf import HMRFKMeans
    >>> from hmrf.datasets import load_dataset
    >>> X, y = load_dataset("iris")
    >>> t = learning_curve(HMRFKMeans(3), X, y, points=[0, 50], folds=2, progress=False)
    >>> len(t), sorted({r["point"] for r in t})
    (4, [0, 50])
    """
    y = np.asarray(y)
    if y.ndim != 1 or y.dtype.kind not in "iu":
        raise ValueError("y must be a 1-D array of integer class labels.")
    n = y.shape[0]
    if X.shape[0] != n:
        raise ValueError(f"X has {X.shape[0]} rows but y has {n} labels.")
    specs = _resolve(make_estimator)
    bad = [m for m in metrics if m not in SCORES]
    if bad:
        known = [m for m in bad if m in METRICS]
        why = f" ({', '.join(known)}: active curves only)" if known else ""
        raise ValueError(f"unknown metrics {bad}{why}; choose from {', '.join(SCORES)}.")
    if errors not in ("raise", "record"):
        raise ValueError(f"errors must be 'raise' or 'record'; got {errors!r}.")
    pts = [p.item() if isinstance(p, np.generic) else p for p in points]
    if not pts:
        raise ValueError("points is empty.")
    levels = [float(v) for v in np.atleast_1d(np.asarray(noise, dtype=np.float64))]
    if any(not 0.0 <= v <= 1.0 for v in levels):
        raise ValueError(f"noise fractions must be in [0, 1]; got {levels}.")
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        base = int(random_state)
    else:
        base = int(check_random_state(random_state).integers(np.iinfo(np.int32).max))
    splits = make_splits(n, runs, folds, test_fraction, base)
    tasks = [(name, spec, r, f, tr, te, p, base)
             for name, spec in specs.items() for r, f, tr, te in splits for p in pts]
    max_point = max(pts) if supervision == "constraints" else 0
    args = (X, y, supervision, levels, max_point, tuple(metrics), errors, prepare, fit_stats)
    bar = progress_bar(len(tasks) * len(levels), progress, "learning curve", "fit")
    records = []
    for recs in run_tasks(_run_task, ((t, *args) for t in tasks), n_jobs):
        records.extend(recs)
        if bar is not None:
            bar.update(len(recs))
    if bar is not None:
        bar.close()
    return CurveTable(records)
