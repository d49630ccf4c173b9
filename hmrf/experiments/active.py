"""Active learning curves: clustering quality against the number of queries.

Lives above :mod:`hmrf.active` (it scores clusterings with :mod:`hmrf.metrics` and
loads data sets by name) and is re-exported as :func:`hmrf.experiments.active_curve`.
"""

from __future__ import annotations

import csv
import numbers
import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone

from .active.base import clusterer_emission, fit_clusterer
from .active.oracles import LabelOracle
from .exceptions import InconsistentConstraintsError, InfeasibleError
from .metrics import evaluate

__all__ = ["ActiveCurve", "active_curve", "METRICS"]

#: Scores recorded per run and budget ("_unqueried": on the points no query involved).
METRICS = (
    "nmi",
    "ari",
    "pairwise_f",
    "nmi_unqueried",
    "ari_unqueried",
    "pairwise_f_unqueried",
    "n_constraints",
)

_LABELS = {
    "nmi": "NMI",
    "ari": "ARI",
    "pairwise_f": "F",
    "nmi_unqueried": "NMI unq.",
    "ari_unqueried": "ARI unq.",
    "pairwise_f_unqueried": "F unq.",
    "n_constraints": "#constr.",
}


@dataclass
class ActiveCurve:
    """Scores of one selector and clusterer over budgets and repetitions.

    Attributes
    ----------
    budgets : ndarray of shape (B,)
    scores : dict of str -> ndarray of shape (R, B)
        One array per name in :data:`METRICS` (NaN where the clusterer failed).
    selector, clusterer, dataset : str
    n_queries : ndarray of shape (R,)
        Queries actually asked per run (fewer than the largest budget if the selector
        ran out of points or pairs).
    select_seconds : ndarray of shape (R,)
        Time of each run's selection (for NPU this includes its re-clusterings).
    failures : list of str
        Messages of clusterings that failed (hard constraints infeasible).
    """

    budgets: np.ndarray
    scores: dict
    selector: str = ""
    clusterer: str = ""
    dataset: str = ""
    n_queries: np.ndarray = field(default_factory=lambda: np.empty(0))
    select_seconds: np.ndarray = field(default_factory=lambda: np.empty(0))
    failures: list = field(default_factory=list)

    @property
    def n_runs(self) -> int:
        return int(next(iter(self.scores.values())).shape[0])

    def mean(self, metric: str = "pairwise_f") -> np.ndarray:
        """Mean over runs (ignoring failed runs) per budget."""
        with np.errstate(invalid="ignore"):
            return (
                np.nanmean(self._get(metric), axis=0) if self.n_runs else np.full(self.budgets.size, np.nan)
            )

    def std(self, metric: str = "pairwise_f") -> np.ndarray:
        """Standard deviation over runs per budget."""
        with np.errstate(invalid="ignore"):
            return np.nanstd(self._get(metric), axis=0) if self.n_runs else np.full(self.budgets.size, np.nan)

    def _get(self, metric):
        if metric not in self.scores:
            raise ValueError(f"unknown metric {metric!r}; choose from {sorted(self.scores)}.")
        return self.scores[metric]

    def table(self, metrics=("pairwise_f", "pairwise_f_unqueried", "nmi", "ari", "n_constraints")) -> str:
        """The curve as a plain-text table of ``mean ± std`` per budget."""
        head = f"{'budget':>6}  " + "  ".join(f"{_LABELS.get(m, m):>15}" for m in metrics)
        lines = [head]
        for b, budget in enumerate(self.budgets):
            cells = []
            for m in metrics:
                mu, sd = self.mean(m)[b], self.std(m)[b]
                cells.append(f"{mu:.1f} ± {sd:.1f}" if m == "n_constraints" else f"{mu:.3f} ± {sd:.3f}")
            lines.append(f"{int(budget):>6}  " + "  ".join(f"{c:>15}" for c in cells))
        return "\n".join(lines)

    def to_csv(self, path) -> None:
        """One row per run and budget, one column per metric."""
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["dataset", "selector", "clusterer", "run", "budget", *self.scores])
            for r in range(self.n_runs):
                for b, budget in enumerate(self.budgets):
                    w.writerow(
                        [
                            self.dataset,
                            self.selector,
                            self.clusterer,
                            r,
                            int(budget),
                            *(f"{self.scores[m][r, b]:.6g}" for m in self.scores),
                        ]
                    )

    def plot(self, path=None, *, metrics=("pairwise_f", "nmi"), ax=None):
        """Mean ± std of ``metrics`` against the budget (matplotlib); save to ``path``."""
        import matplotlib

        if ax is None and path is not None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig = None
        if ax is None:
            fig, ax = plt.subplots(figsize=(6, 4))
        for m in metrics:
            mu, sd = self.mean(m), self.std(m)
            ax.plot(self.budgets, mu, marker="o", label=_LABELS.get(m, m))
            ax.fill_between(self.budgets, mu - sd, mu + sd, alpha=0.2)
        ax.set_xlabel("number of queries")
        ax.set_ylabel("score")
        ax.set_title(f"{self.dataset}: {self.selector} + {self.clusterer} ({self.n_runs} runs)")
        ax.grid(alpha=0.3)
        ax.legend()
        if path is not None:
            (fig or ax.figure).savefig(path, dpi=120, bbox_inches="tight")
            if fig is not None:
                plt.close(fig)
        return ax


def _check_budgets(budgets) -> np.ndarray:
    b = np.asarray(list(budgets))
    if b.ndim != 1 or b.size == 0 or b.dtype.kind not in "iu" or np.any(b < 0):
        raise ValueError(f"budgets must be a non-empty sequence of non-negative integers; got {budgets!r}.")
    return np.unique(b).astype(np.int64)


def _scores(y, labels, mask) -> dict:
    out = {}
    full = evaluate(y, labels)
    out.update(nmi=full["nmi"], ari=full["ari"], pairwise_f=full["pairwise_f"])
    if mask.sum() >= 2:
        part = evaluate(y, labels, mask)
        out.update(
            nmi_unqueried=part["nmi"],
            ari_unqueried=part["ari"],
            pairwise_f_unqueried=part["pairwise_f"],
        )
    else:
        out.update(nmi_unqueried=np.nan, ari_unqueried=np.nan, pairwise_f_unqueried=np.nan)
    return out


def active_curve(
    selector,
    clusterer,
    X,
    y=None,
    *,
    budgets=range(0, 151, 10),
    n_runs=10,
    closure=True,
    noise=0.0,
    dont_know=0.0,
    oracle_factory=None,
    random_state=0,
    dataset=None,
    progress=None,
) -> ActiveCurve:
    """Learning curve of an active selector with a clusterer (Basu 2005, §5.5.2).

    Each run fits a clone of ``selector`` once with an oracle whose budget is the
    largest budget, then clusters with the constraints known after the first ``b``
    queries for every budget ``b`` (:meth:`~hmrf.active.ActiveSelector.constraints_at`:
    identical to a run with budget ``b``, since no selector looks at its budget) and
    scores the clustering against ``y`` on all points and on the points no query
    involved.

    Parameters
    ----------
    selector : ActiveSelector
        Its ``random_state`` is set per run. An :class:`~hmrf.active.NPU` without a
        clusterer gets ``clusterer``; a selector with ``emission=None`` gets the
        clusterer's ``emission`` if it has one.
    clusterer : hmrf estimator
        Fitted (a clone, ``random_state`` set per run) at every budget through
        :func:`~hmrf.active.fit_clusterer`.
    X : array-like, sparse matrix, or str
        The data, or the name of a data set of :func:`hmrf.datasets.load_dataset`.
    y : array-like of shape (n,)
        True classes (answers of the :class:`LabelOracle` and the ground truth).
    budgets : sequence of int, default=range(0, 151, 10)
    n_runs : int, default=10
    closure : bool, default=True
        Give the clusterer the transitive closure of the constraints, as Xiong et al.
        (2014, §4.1.2) and the thesis (§4.5.2) do.
    noise, dont_know : float, default=0.0
        Error and "don't know" rates of the label oracle.
    oracle_factory : callable, optional
        ``oracle_factory(run, budget) -> Oracle`` instead of a :class:`LabelOracle`
        (e.g. a :class:`TerminalOracle` for an interactive session).
    random_state : int, default=0
        Seeds every run (selector, oracle and clusterer seeds are drawn from it).
    dataset : str, optional
        Name used in tables and files.
    progress : callable, optional
        ``progress(run, n_runs)`` called after each run.

    Returns
    -------
    ActiveCurve
    """
    name = dataset
    if isinstance(X, str):
        from .datasets import load_dataset

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
    budgets = _check_budgets(budgets)
    max_b = int(budgets[-1])

    template = clone(selector)
    sel_params = template.get_params(deep=False)
    if "clusterer" in sel_params and sel_params["clusterer"] is None:
        template.set_params(clusterer=clone(clusterer))
    if "emission" in sel_params and sel_params["emission"] is None:
        template.set_params(emission=clusterer_emission(clusterer))
    has_rs = "random_state" in clusterer.get_params(deep=False)

    seeds = np.random.default_rng(random_state).integers(np.iinfo(np.int32).max, size=(n_runs, 3))
    scores = {m: np.full((n_runs, budgets.size), np.nan) for m in METRICS}
    n_queries, seconds, failures = np.zeros(n_runs, dtype=np.int64), np.zeros(n_runs), []
    n = X.shape[0]
    for r in range(n_runs):
        s_sel, s_orc, s_clu = (int(v) for v in seeds[r])
        sel = clone(template).set_params(random_state=s_sel)
        if oracle_factory is not None:
            oracle = oracle_factory(r, max_b)
        else:
            oracle = LabelOracle(y, budget=max_b, noise=noise, dont_know=dont_know, random_state=s_orc)
        t0 = time.perf_counter()
        sel.fit(X, oracle)
        seconds[r] = time.perf_counter() - t0
        n_queries[r] = sel.n_queries_
        for b, budget in enumerate(budgets):
            c = sel.constraints_at(int(budget))
            scores["n_constraints"][r, b] = len(c)
            if closure and len(c):
                c = c.closure()
            est = clone(clusterer)
            if has_rs:
                est.set_params(random_state=s_clu)
            try:
                labels = fit_clusterer(est, X, c)
            except (InfeasibleError, InconsistentConstraintsError) as exc:
                failures.append(f"run {r}, budget {int(budget)}: {exc}")
                continue
            mask = np.ones(n, dtype=bool)
            mask[sel.queried_points(int(budget))] = False
            for m, v in _scores(y, labels, mask).items():
                scores[m][r, b] = v
        if progress is not None:
            progress(r, n_runs)
    return ActiveCurve(
        budgets,
        scores,
        type(selector).__name__,
        type(clusterer).__name__,
        name or "",
        n_queries,
        seconds,
        failures,
    )
