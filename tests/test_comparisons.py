"""Comparisons a paper can use: wins judged in each metric's direction with round-off ties,
the spread named the same in text, CSV and plot, and the E-steps EM rejected per fit."""

import numpy as np
import pytest

from hmrf import Constraints, HMRFKMeans
from hmrf.experiments import CurveTable
from hmrf.experiments.engines import (
    SUMMARY_COLUMNS,
    RecordingEngine,
    compare_engines,
    format_engine_summary,
    summarise_engines,
)
from hmrf.experiments.table import SPREADS
from hmrf.inference import InferenceEngine
from hmrf.inference.base import Solution


def paired(values_a, values_b, metric):
    recs = []
    for run, (va, vb) in enumerate(zip(values_a, values_b)):
        for est, v in (("a", va), ("b", vb)):
            recs.append(dict(estimator=est, supervision="constraints", point=10, noise=0.0, run=run,
                             fold=0, error="", **{metric: v}))
    return CurveTable(recs)


def test_a_lower_objective_wins_and_a_higher_nmi_wins():
    J = paired([1.0, 5.0, 3.0], [2.0, 4.0, 6.0], "objective").compare("a", "b", "objective")[0]
    assert (J["wins"], J["losses"], J["ties"], J["direction"]) == (2, 1, 0, "lower")
    N = paired([0.9, 0.5, 0.7], [0.8, 0.6, 0.6], "nmi").compare("a", "b", "nmi")[0]
    assert (N["wins"], N["losses"], N["ties"], N["direction"]) == (2, 1, 0, "higher")
    assert N["mean_diff"] == pytest.approx(np.mean([0.1, -0.1, 0.1]))


def test_round_off_is_a_tie_not_a_win():
    a = [0.1 + 0.2, 1234.5678, 0.5]
    b = [0.3, 1234.5678 * (1 + 3e-16), 0.5 - 3e-17]
    row = paired(a, b, "nmi").compare("a", "b", "nmi")[0]
    assert (row["wins"], row["losses"], row["ties"], row["p_value"]) == (0, 0, 3, 1.0)
    # a real difference is still one, and the tolerance is a parameter
    row = paired([0.5, 0.5], [0.5 - 1e-6, 0.5 - 1e-6], "nmi").compare("a", "b", "nmi")[0]
    assert (row["wins"], row["ties"], row["p_value"]) == (2, 0, 0.0)
    assert paired([0.5], [0.5 - 1e-6], "nmi").compare("a", "b", "nmi", rtol=1e-5)[0]["ties"] == 1


def test_the_spread_is_named_the_same_in_summary_text_and_plot(tmp_path):
    t = paired([0.2, 0.4, 0.9], [0.1, 0.1, 0.1], "nmi")
    row = next(r for r in t.summary(["nmi"]) if r["estimator"] == "a")
    sd = np.std([0.2, 0.4, 0.9], ddof=1)
    assert row["nmi_std"] == pytest.approx(sd) and row["nmi_sem"] == pytest.approx(sd / np.sqrt(3))
    for spread in ("std", "sem"):
        text = t.format_summary(["nmi"], spread=spread)
        assert f"nmi ± {spread}" in text and text.endswith(f"± {spread}: {SPREADS[spread]}")
        assert f"{row['nmi_' + spread]:.2g}" in text
    with pytest.raises(ValueError, match="spread must be one of"):
        t.format_summary(["nmi"], spread="iqr")
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    ax = t.plot("nmi", band="sem")
    assert ax.get_ylabel() == "NMI (mean ± sem)"
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.max() == pytest.approx(row["nmi_mean"] + row["nmi_sem"])


class WorseThanInit(InferenceEngine):
    """Argmin labels without ``init``; from ``init``, ``init`` with node 0 moved to its most
    expensive label: always worse than the previous labels."""

    def _solve(self, unary, graph, init, rng, notify):
        if init is None:
            return Solution(unary.argmin(axis=1))
        labels = init.copy()
        labels[0] = int(np.argmax(np.where(np.isfinite(unary[0]), unary[0], -np.inf)))
        return Solution(labels)


def test_the_rejected_e_steps_are_the_ones_em_rejects():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 30)
    X = rng.normal(size=(90, 2)) + 4.0 * y[:, None]
    c = Constraints.sample_from_labels(y, n_pairs=30, rng=1)
    recorder = RecordingEngine(WorseThanInit())
    est = HMRFKMeans(3, inference=recorder, n_init=1, w=1.0, random_state=0).fit(X, constraints=c)
    # an engine that spoils its init: EM keeps the previous labels, and with no other point
    # moving, stops at the second E-step
    assert [t["rejected"] for t in est.em_result_.trace] == [False, True]
    assert recorder.rejected == [False, True] and est.n_iter_ == 2


def test_compare_records_rejected_e_steps_and_both_spreads():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 30)
    X = rng.normal(size=(90, 2)) + 4.0 * y[:, None]
    table = compare_engines(X, y, {"icm": "icm", "worse": WorseThanInit()}, points=[20], runs=1,
                            bound="none", progress=False)
    for r in table:  # ICM never returns worse labels than its init; the spoiler after its first E-step
        assert r["estep_rejected"] == 0 if r["estimator"] == "icm" else 0 < r["estep_rejected"] < r["n_estep"]
    rows = summarise_engines(table)
    assert set(rows[0]) == set(SUMMARY_COLUMNS)
    for r in rows:
        nmis = [f["nmi"] for f in table if f["estimator"] == r["engine"]]
        assert r["nmi_sem"] == pytest.approx(np.std(nmis, ddof=1) / np.sqrt(len(nmis)))
    worse = next(r for r in rows if r["engine"] == "worse")
    assert worse["estep_rejected"] >= 1
    text = format_engine_summary(rows)
    assert "± s.e.m." in text and "E rej." in text
    assert f"{worse['nmi_mean']:.3f} ± {worse['nmi_sem']:.3f}" in text
