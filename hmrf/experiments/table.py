"""The one result table of every experiment: one record (dict) per fit.

:func:`~hmrf.experiments.learning_curve` (supervision drawn at random),
:func:`~hmrf.experiments.active_curve` (supervision chosen by an active selector) and
the ``hmrf compare`` / ``curve`` / ``active`` commands all return or write a
:class:`CurveTable`: CSV round trip, per-point summaries, paired comparisons and a
matplotlib plot. :data:`METRICS` names and explains every score a record can hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._optional import load

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable, Sequence
    from typing import Any, Literal

    from matplotlib.axes import Axes

__all__ = ["CurveTable", "METRICS", "LOWER_IS_BETTER", "SPREADS"]

#: Scores and fit statistics a record can hold, with what each measures. External
#: scores compare the clustering with the true classes on the points the protocol
#: names (held-out points for learning curves; all points, or the points no query
#: involved, ``_unqueried``, for active curves).
METRICS = {
    "nmi": "normalised mutual information with the true classes (Basu 2005, eq. 2.4)",
    "ari": "adjusted Rand index with the true classes",
    "pairwise_f": "pairwise F-measure: harmonic mean of pairwise precision and recall (eq. 2.5)",
    "pairwise_precision": "same-class pairs among same-cluster pairs",
    "pairwise_recall": "same-cluster pairs among same-class pairs",
    "objective": "final HMRF objective J of the fit (eq. 4.10; lower is better)",
    "n_iter": "EM iterations of the fit",
    "nmi_unqueried": "NMI on the points that no query involved",
    "ari_unqueried": "ARI on the points that no query involved",
    "pairwise_f_unqueried": "pairwise F on the points that no query involved",
    "n_constraints": "constraints known after the queries (before the closure)",
}

#: Metrics of which lower is better (:meth:`CurveTable.compare`); higher is better for the
#: others.
LOWER_IS_BETTER = frozenset({"objective", "n_iter"})

#: How the spread of a metric over the fits of one point is reported: the name printed
#: after "±" in text tables, CSV column suffixes and plot labels alike.
SPREADS = {"std": "sample standard deviation over the fits (ddof=1)",
           "sem": "standard error of the mean over the fits, std / sqrt(n)"}

#: Short column labels of printed tables and plots
LABELS = {
    "nmi": "NMI", "ari": "ARI", "pairwise_f": "pairwise F", "pairwise_precision": "pairwise P",
    "pairwise_recall": "pairwise R", "objective": "objective J", "n_iter": "EM iterations",
    "nmi_unqueried": "NMI unqueried", "ari_unqueried": "ARI unqueried",
    "pairwise_f_unqueried": "F unqueried", "n_constraints": "constraints",
}


#: columns read back from CSV as text even when they look like numbers
_TEXT_COLUMNS = ("estimator", "supervision", "error", "selector", "dataset")


def legend(metrics) -> str:
    """One line per metric: its printed label and what it measures."""
    return "\n".join(f"  {LABELS.get(m, m)}: {METRICS.get(m, m)}" for m in metrics)


class CurveTable:
    """Tidy results of an experiment: one record (dict) per fit.

    Every record has ``estimator``, ``supervision``, ``point`` (the amount of
    supervision: pairs, seed fraction or queries), ``noise``, ``run``, ``fold``,
    ``fit_time``, its scores (names of :data:`METRICS`) and ``error`` (empty unless the
    fit failed and was recorded). :func:`~hmrf.experiments.learning_curve` adds
    ``n_train``, ``n_test``, ``n_seeds``, ``n_noisy``, ``n_must_link`` and
    ``n_cannot_link``; :func:`~hmrf.experiments.active_curve` adds ``selector``,
    ``dataset``, ``n_queries`` and ``select_time``; a caller's ``fit_stats`` adds its
    own columns.
    """

    def __init__(self, records: Iterable[dict[str, Any]] = ()) -> None:
        self.records = [dict(r) for r in records]

    def __len__(self):
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def __getitem__(self, i):
        return self.records[i]

    def __add__(self, other):
        return type(self)([*self.records, *other.records])

    def __repr__(self):
        return f"{type(self).__name__}({len(self)} records, estimators={self.estimators})"

    @property
    def columns(self) -> list:
        cols = []
        for r in self.records:
            cols.extend(c for c in r if c not in cols)
        return cols

    @property
    def estimators(self) -> list:
        return list(dict.fromkeys(r["estimator"] for r in self.records))

    @property
    def metrics(self) -> list:
        return [c for c in self.columns if c in METRICS]

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write the records as CSV (floats in full precision; read back by :meth:`from_csv`)."""
        import csv

        cols = self.columns
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            for r in self.records:
                w.writerow({c: repr(float(v)) if isinstance(v, float) else v for c, v in r.items()})

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str]) -> CurveTable:
        """Read a table written by :meth:`to_csv` (numbers parsed as int, then float)."""
        import csv

        def parse(s):
            for typ in (int, float):
                try:
                    return typ(s)
                except ValueError:
                    pass
            return s

        with open(path, newline="", encoding="utf-8") as f:
            return cls([{k: (v if k in _TEXT_COLUMNS else parse(v))
                         for k, v in row.items()} for row in csv.DictReader(f)])

    def _groups(self, keys):
        out = {}
        for r in self.records:
            out.setdefault(tuple(r[k] for k in keys), []).append(r)
        return out

    def summary(self, metrics: Sequence[str] | None = None) -> list:
        """Mean, standard deviation and standard error of each metric per (estimator,
        point, noise): columns ``<metric>_mean``, ``<metric>_std``, ``<metric>_sem``.

        Failed fits (``error`` not empty) are counted in ``n_failed`` and left out of
        the statistics. ``std`` is the sample standard deviation (ddof=1; 0 for one fit),
        ``sem`` the standard error of the mean, ``std / sqrt(n)`` (:data:`SPREADS`).
        """
        metrics = self.metrics if metrics is None else list(metrics)
        rows = []
        for (est, point, noise), recs in self._groups(("estimator", "point", "noise")).items():
            ok = [r for r in recs if not r.get("error")]
            row = dict(estimator=est, point=point, noise=noise, n=len(ok),
                       n_failed=len(recs) - len(ok))
            for m in metrics:
                v = np.array([r[m] for r in ok], dtype=np.float64)
                row[f"{m}_mean"] = float(v.mean()) if v.size else np.nan
                row[f"{m}_std"] = float(v.std(ddof=1)) if v.size > 1 else 0.0
                row[f"{m}_sem"] = row[f"{m}_std"] / np.sqrt(max(v.size, 1))
            rows.append(row)
        return rows

    def format_summary(self, metrics: Sequence[str] | None = None,
                       spread: Literal["std", "sem"] = "std") -> str:
        """The summary as a fixed-width text table of ``mean ± spread`` (``spread`` one of
        :data:`SPREADS`, named in the header and a last line)."""
        if spread not in SPREADS:
            raise ValueError(f"spread must be one of {tuple(SPREADS)}; got {spread!r}.")
        metrics = self.metrics if metrics is None else list(metrics)
        rows = self.summary(metrics)
        head = ["estimator", "point", "noise", "n", *(f"{m} ± {spread}" for m in metrics)]
        body = [[r["estimator"], f"{r['point']:g}", f"{r['noise']:g}",
                 str(r["n"]) + (f" ({r['n_failed']} failed)" if r["n_failed"] else ""),
                 *(f"{r[m + '_mean']:.4g} ± {r[m + '_' + spread]:.2g}" for m in metrics)] for r in rows]
        width = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
        lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, width, strict=True))
                 for line in [head, *body]]
        return "\n".join([*lines, f"± {spread}: {SPREADS[spread]}"])

    def compare(self, a: str, b: str, metric: str = "nmi", rtol: float | None = None) -> list:
        """Paired comparison of estimators ``a`` and ``b`` at every (point, noise).

        Pairs the fits of the same (run, fold); returns per point ``mean_diff`` (a - b),
        ``wins`` / ``losses`` / ``ties`` of ``a`` and the two-tailed paired t-test
        p-value (Basu 2005, §3.5.4 and §4.5.3; 1.0 when all are ties, 0.0 when all
        differences are equal and non-zero). A win is a lower value for
        :data:`LOWER_IS_BETTER` (``direction``), else a higher one; values within ``rtol ·
        max(1, |a|, |b|)`` (default the EM loop's ``RISE_RTOL``) are a tie.
        """
        from scipy.stats import ttest_rel

        if rtol is None:
            from ..em.loop import RISE_RTOL as rtol
        sign = -1.0 if metric in LOWER_IS_BETTER else 1.0

        ga = self._groups(("estimator", "point", "noise", "run", "fold"))
        rows = []
        for (point, noise), recs in self._groups(("point", "noise")).items():
            da, db = [], []
            for r in recs:
                if r["estimator"] != a:
                    continue
                other = ga.get((b, point, noise, r["run"], r["fold"]))
                if other and not r.get("error") and not other[0].get("error"):
                    da.append(r[metric])
                    db.append(other[0][metric])
            if not da:
                continue
            va, vb = np.asarray(da, dtype=np.float64), np.asarray(db, dtype=np.float64)
            d = va - vb
            tie = np.abs(d) <= rtol * np.maximum(1.0, np.maximum(np.abs(va), np.abs(vb)))
            better = sign * d > 0
            if tie.all():
                p = 1.0
            elif np.ptp(d) == 0:
                p = 0.0
            else:
                p = float(ttest_rel(va, vb).pvalue)
            rows.append(dict(point=point, noise=noise, n=d.size, mean_diff=float(d.mean()),
                             wins=int((better & ~tie).sum()), losses=int((~better & ~tie).sum()),
                             ties=int(tie.sum()), p_value=p,
                             direction="lower" if sign < 0 else "higher"))
        return rows

    def plot(self, metric: str | Sequence[str] = "nmi", *, x: Literal["point", "noise"] | None = None,
             ax: Axes | None = None, band: Literal["std", "sem"] = "std", title: str | None = None,
             path: str | os.PathLike[str] | None = None) -> Axes:
        """Mean curve of each ``metric`` (one or several) per estimator, with a ± std
        (or ± sem) band, named in the axis label as :meth:`format_summary` names it.
        ``x`` defaults to ``noise`` when there is a single point and several noise
        levels, else ``point``; ``path`` saves the figure (format by its extension).
        """
        metrics = [metric] if isinstance(metric, str) else list(metric)
        rows = self.summary(metrics)
        if x is None:
            one_point = len({r["point"] for r in rows}) == 1
            x = "noise" if one_point and len({r["noise"] for r in rows}) > 1 else "point"
        fig = None
        if ax is None and path is not None:
            Figure = load("matplotlib.figure", purpose="CurveTable.plot").Figure

            fig = Figure(figsize=(6, 4), layout="constrained")
            ax = fig.add_subplot()
        elif ax is None:
            plt = load("matplotlib.pyplot", purpose="CurveTable.plot")

            _, ax = plt.subplots()
        sup = {r["supervision"] for r in self.records}
        xlabel = {"noise": "noise fraction",
                  "point": {frozenset({"labels"}): "seed fraction",
                            frozenset({"active"}): "number of queries"}.get(
                                frozenset(sup), "number of constraints")}[x]
        for est in self.estimators:
            rs = sorted((r for r in rows if r["estimator"] == est),
                        key=lambda r: (r[x], r["noise"]))
            xs = np.array([r[x] for r in rs], dtype=float)
            for m in metrics:
                mu = np.array([r[f"{m}_mean"] for r in rs])
                sd = np.array([r[f"{m}_{band}"] for r in rs]) if band else None
                label = est if len(metrics) == 1 else (
                    LABELS.get(m, m) if len(self.estimators) == 1 else f"{est}: {LABELS.get(m, m)}")
                (line,) = ax.plot(xs, mu, marker="o", ms=3, label=label)
                if band:
                    ax.fill_between(xs, mu - sd, mu + sd, color=line.get_color(), alpha=0.15, lw=0)
        ax.set_xlabel(xlabel)
        ylabel = LABELS.get(metrics[0], metrics[0]) if len(metrics) == 1 else "score"
        ax.set_ylabel(f"{ylabel} (mean ± {band})" if band else ylabel)
        ax.grid(alpha=0.3)
        ax.legend()
        if title is not None:
            ax.set_title(title)
        if path is not None:
            ax.figure.savefig(path, dpi=120)
        return ax
