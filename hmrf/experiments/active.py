"""Active learning curves: clustering quality against the number of queries.

:func:`active_curve` runs an active selector (:mod:`hmrf.active`) with a clusterer
over budgets and repetitions and returns an :class:`ActiveCurve`, the
:class:`~hmrf.experiments.CurveTable` of those fits with per-run views.
"""

from __future__ import annotations

import numbers
import time
import warnings
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import clone

from ..active.base import clusterer_emission, fit_clusterer
from ..active.oracles import LabelOracle
from ..exceptions import InconsistentConstraintsError, InfeasibleError
from ..metrics import evaluate
from ._progress import progress_bar
from .learning import run_tasks
from .table import LABELS, CurveTable

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from matplotlib.axes import Axes
    from numpy.typing import ArrayLike
    from sklearn.base import BaseEstimator

    from .._typing import MatrixLike
    from ..active.base import ActiveSelector

__all__ = ["ActiveCurve", "active_curve", "ACTIVE_SCORES"]

#: The names of :data:`~hmrf.experiments.METRICS` an active curve records per budget.
ACTIVE_SCORES = ("nmi", "ari", "pairwise_f", "nmi_unqueried", "ari_unqueried",
                 "pairwise_f_unqueried", "n_constraints")


class ActiveCurve(CurveTable):
    """The records of :func:`active_curve`, one per run and budget, with per-run views.

    A :class:`~hmrf.experiments.CurveTable` whose ``point`` is the budget; its records
    also hold ``selector``, ``dataset``, ``n_queries`` and ``select_time``. The
    properties arrange the records as (run, budget) arrays.
    """

    def _runs(self) -> np.ndarray:
        return np.unique(np.asarray([r["run"] for r in self.records], dtype=np.int64))

    def _first(self, key) -> str:
        return str(self.records[0].get(key, "")) if self.records else ""

    @property
    def budgets(self) -> np.ndarray:
        """The budgets, increasing."""
        return np.unique(np.asarray([r["point"] for r in self.records], dtype=np.int64))

    @property
    def n_runs(self) -> int:
        return int(self._runs().size)

    @property
    def selector(self) -> str:
        return self._first("selector")

    @property
    def clusterer(self) -> str:
        return self._first("estimator")

    @property
    def dataset(self) -> str:
        return self._first("dataset")

    def _array(self, key) -> np.ndarray:
        runs, budgets = self._runs(), self.budgets
        out = np.full((runs.size, budgets.size), np.nan)
        for r in self.records:
            v = r.get(key, np.nan)
            out[np.searchsorted(runs, r["run"]), np.searchsorted(budgets, r["point"])] = (
                np.nan if v == "" else float(v))
        return out

    @property
    def scores(self) -> dict:
        """Metric -> array of shape (runs, budgets); NaN where the clusterer failed."""
        return {m: self._array(m) for m in ACTIVE_SCORES if m in self.columns}

    @property
    def n_queries(self) -> np.ndarray:
        """Queries actually asked per run (fewer than the largest budget if the selector
        ran out of points or pairs)."""
        return np.nanmax(self._array("n_queries"), axis=1).astype(np.int64)

    @property
    def select_seconds(self) -> np.ndarray:
        """Selection time of each run."""
        return np.nanmax(self._array("select_time"), axis=1)

    @property
    def failures(self) -> list:
        """Messages of the clusterings that failed (hard constraints infeasible)."""
        return [f"run {r['run']}, budget {r['point']}: {r['error']}" for r in self.records
                if r.get("error")]

    def mean(self, metric: str = "pairwise_f") -> np.ndarray:
        """Mean over runs (ignoring failed runs) per budget."""
        return self._over_runs(np.nanmean, metric)

    def std(self, metric: str = "pairwise_f") -> np.ndarray:
        """Sample standard deviation over runs (ddof=1, as :meth:`CurveTable.summary
        <hmrf.experiments.CurveTable.summary>`; ignoring failed runs) per budget; 0 with
        one run."""
        return self._over_runs(_sample_std, metric)

    def _over_runs(self, reduce, metric):
        if metric not in ACTIVE_SCORES or metric not in self.columns:
            raise ValueError(f"unknown metric {metric!r}; choose from {sorted(self.scores)}.")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a budget where every run failed
            return reduce(self._array(metric), axis=0)

    def table(self, metrics: Sequence[str] = ("pairwise_f", "pairwise_f_unqueried", "nmi", "ari",
                                              "n_constraints")) -> str:
        """The curve as a plain-text table of ``mean ± std`` per budget."""
        width = max(15, *(len(LABELS.get(m, m)) for m in metrics))
        head = f"{'budget':>6}  " + "  ".join(f"{LABELS.get(m, m):>{width}}" for m in metrics)
        lines = [head]
        stats = {m: (self.mean(m), self.std(m)) for m in metrics}
        for b, budget in enumerate(self.budgets):
            cells = []
            for m in metrics:
                mu, sd = stats[m][0][b], stats[m][1][b]
                cells.append(f"{mu:.1f} ± {sd:.1f}" if m == "n_constraints" else f"{mu:.3f} ± {sd:.3f}")
            lines.append(f"{int(budget):>6}  " + "  ".join(f"{c:>{width}}" for c in cells))
        return "\n".join(lines)

    def plot(self, metric: str | Sequence[str] = ("pairwise_f", "nmi"), **kwargs: Any) -> Axes:
        """:meth:`CurveTable.plot <hmrf.experiments.CurveTable.plot>` of ``metric``
        against the number of queries, titled with the data set, selector and clusterer."""
        kwargs.setdefault("title", f"{self.dataset}: {self.selector} + {self.clusterer} "
                                   f"({self.n_runs} runs)")
        return super().plot(metric, **kwargs)


def _sample_std(values: np.ndarray, axis: int) -> np.ndarray:
    """``nanstd`` with ``ddof=1``, 0 where fewer than two runs succeeded (not NaN)."""
    n = np.sum(~np.isnan(values), axis=axis)
    return np.where(n > 1, np.nanstd(values, axis=axis, ddof=1), 0.0)


def _check_budgets(budgets) -> np.ndarray:
    b = np.asarray(list(budgets))
    if b.ndim != 1 or b.size == 0 or b.dtype.kind not in "iu" or np.any(b < 0):
        raise ValueError(f"budgets must be a non-empty sequence of non-negative integers; got {budgets!r}.")
    return np.unique(b).astype(np.int64)


def _scores(y, labels, mask) -> dict:
    full = evaluate(y, labels)
    part = evaluate(y, labels, mask) if mask.sum() >= 2 else {}
    out = {m: full[m] for m in ("nmi", "ari", "pairwise_f")}
    return out | {f"{m}_unqueried": part.get(m, np.nan) for m in out}


def _one_run(r, seeds, template, clusterer, X, y, budgets, closure, noise, dont_know,
             oracle_factory, names):
    """The records of run ``r``: select once with the largest budget, cluster at each."""
    s_sel, s_orc, s_clu = (int(v) for v in seeds)
    max_b = int(budgets[-1])
    sel = clone(template).set_params(random_state=s_sel)
    if oracle_factory is not None:
        oracle = oracle_factory(r, max_b)
    else:
        oracle = LabelOracle(y, budget=max_b, noise=noise, dont_know=dont_know, random_state=s_orc)
    t0 = time.perf_counter()
    sel.fit(X, oracle)
    select_time = time.perf_counter() - t0
    params = {} if clusterer is None else clusterer.get_params(deep=False)
    n = X.shape[0]
    records = []
    for budget in (int(b) for b in budgets):
        c = sel.constraints_at(budget)
        rec = dict(estimator=names[1], selector=names[0], dataset=names[2], supervision="active",
                   point=budget, noise=float(noise), run=r, fold=0,
                   n_queries=min(budget, int(sel.n_queries_)), select_time=select_time,
                   n_must_link=c.n_must_link, n_cannot_link=c.n_cannot_link,
                   n_constraints=float(len(c)))
        t1 = time.perf_counter()
        if clusterer is None:  # the selector's own clustering (COBRAS)
            labels, error = sel.labels_at(budget), ""
        else:
            est = clone(clusterer)
            if "random_state" in params:
                est.set_params(random_state=s_clu)
            if "closure" in params:  # the curve decides on the closure, once
                est.set_params(closure=False)
            try:
                labels = fit_clusterer(est, X, sel.clusterer_constraints(budget, closure))
                error = ""
            except (InfeasibleError, InconsistentConstraintsError) as exc:
                labels, error = None, str(exc)
        rec["fit_time"] = time.perf_counter() - t1
        if labels is None:
            rec.update({m: np.nan for m in ACTIVE_SCORES if m != "n_constraints"})
        else:
            mask = np.ones(n, dtype=bool)
            mask[sel.queried_points(budget)] = False
            rec.update(_scores(y, labels, mask))
        rec["error"] = error
        records.append(rec)
    return records


def active_curve(selector: ActiveSelector, clusterer: BaseEstimator, X: MatrixLike,
                 y: ArrayLike | None = None, *, budgets: Sequence[int] = range(0, 151, 10), n_runs: int = 10,
                 closure: bool = True, noise: float = 0.0, dont_know: float = 0.0,
                 oracle_factory: Callable[..., Any] | None = None, random_state: int = 0,
                 dataset: str | None = None, progress: Any = None, n_jobs: int | None = None) -> ActiveCurve:
    """Learning curve of an active selector with a clusterer (Basu 2005, §5.5.2).

    Each run fits a clone of ``selector`` once with the largest budget, then clusters
    with :meth:`~hmrf.active.ActiveSelector.clusterer_constraints` after the first ``b``
    queries for every budget ``b`` (the clusterer's own ``closure`` off) and scores the
    clustering against ``y`` on all points and on the points no query involved: an
    :class:`ActiveCurve`, one record per (run, budget).

    Parameters
    ----------
    selector : ActiveSelector
        Its ``random_state`` is set per run. An :class:`~hmrf.active.NPU` without a
        clusterer gets ``clusterer``; ``emission=None`` becomes the clusterer's.
    clusterer : hmrf estimator or None
        A clone is fitted at every budget (:func:`~hmrf.active.fit_clusterer`);
        ``None``: the selector's own clustering (:meth:`COBRAS.labels_at
        <hmrf.active.COBRAS.labels_at>`).
    X : array-like, sparse matrix, or str
        The data, or the name of a data set of :func:`hmrf.datasets.load_dataset`.
    y : array-like of shape (n,)
        True classes (answers of the :class:`LabelOracle` and the ground truth).
    closure : bool, default=True
        Give the clusterer the transitive closure of the constraints (Xiong et al. 2014,
        §4.1.2; Basu 2005, §4.5.2); ``False``: the answered pairs only.
    noise, dont_know : float, default=0.0
        Error and "don't know" rates of the label oracle.
    oracle_factory : callable, optional
        ``oracle_factory(run, budget) -> Oracle`` instead of a :class:`LabelOracle`.
    random_state : int, default=0
        Seeds every run (selector, oracle and clusterer seeds are drawn from it).
    progress : bool, str or callable, optional
        A tqdm progress bar over the runs (a string names it), or ``progress(run,
        n_runs)`` called after each run.
    n_jobs : int, optional
        Runs in parallel with joblib (``-1``: all cores); not with ``oracle_factory``.
    """
    name = dataset
    if isinstance(X, str):
        from ..datasets import load_dataset

        name = name or X
        X, y_loaded = load_dataset(X, random_state=random_state)
        y = y_loaded if y is None else y
    if y is None:
        raise ValueError("active_curve needs the true labels y to answer queries and score clusterings.")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have one label per row of X ({X.shape[0]}); got shape {y.shape}.")
    if isinstance(n_runs, bool) or not isinstance(n_runs, numbers.Integral) or n_runs < 1:
        raise ValueError(f"n_runs must be a positive integer; got {n_runs!r}.")
    if oracle_factory is not None and n_jobs not in (None, 1):
        raise ValueError("oracle_factory runs one selection at a time: use n_jobs=None.")
    budgets = _check_budgets(budgets)

    template = clone(selector)
    sel_params = template.get_params(deep=False)
    if clusterer is None:
        if not callable(getattr(template, "labels_at", None)):
            raise ValueError(f"clusterer=None uses the selector's own clustering, and "
                             f"{type(selector).__name__} has none (labels_at); give a clusterer.")
    else:
        if "clusterer" in sel_params and sel_params["clusterer"] is None:
            template.set_params(clusterer=clone(clusterer))
        if "emission" in sel_params and sel_params["emission"] is None:
            template.set_params(emission=clusterer_emission(clusterer))

    seeds = np.random.default_rng(random_state).integers(np.iinfo(np.int32).max, size=(n_runs, 3))
    names = (type(selector).__name__, type(selector if clusterer is None else clusterer).__name__,
             name or "")
    args = (template, clusterer, X, y, budgets, closure, noise, dont_know, oracle_factory, names)
    results = run_tasks(_one_run, ((r, seeds[r], *args) for r in range(n_runs)), n_jobs)
    bar = None if callable(progress) else progress_bar(n_runs, progress, "active curve", "run")
    records = []
    for r, recs in enumerate(results):
        records.extend(recs)
        if callable(progress):
            progress(r, n_runs)
        elif bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return ActiveCurve(records)
