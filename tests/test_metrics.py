"""Metrics: NMI (eq. 2.4), pairwise F (eq. 2.5) from the contingency table, objective."""

import itertools

import numpy as np
import pytest
from scipy.stats import entropy

from hmrf import Constraints
from hmrf.metrics import ari, evaluate, nmi, objective, pairwise_f_measure, pairwise_precision_recall_f


def pairs_by_enumeration(y_true, y_pred):
    same_c = same_k = both = 0
    for i, j in itertools.combinations(range(len(y_true)), 2):
        a, b = y_pred[i] == y_pred[j], y_true[i] == y_true[j]
        same_c += a
        same_k += b
        both += a and b
    p = both / same_c if same_c else 1.0
    r = both / same_k if same_k else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def test_pairwise_f_equals_enumeration():
    rng = np.random.default_rng(0)
    for _ in range(20):
        t, p = rng.integers(0, 3, 40), rng.integers(0, 4, 40)
        np.testing.assert_allclose(pairwise_precision_recall_f(t, p), pairs_by_enumeration(t, p))


def test_pairwise_f_hand_example_and_edge_cases():
    # pairs predicted together: (0,1),(0,2),(1,2); truly together: (0,1),(2,3) -> TP = 1
    assert pairwise_precision_recall_f([0, 0, 1, 1], [0, 0, 0, 1]) == pytest.approx((1 / 3, 1 / 2, 0.4))
    assert pairwise_f_measure([0, 1, 2], [0, 1, 2]) == 1.0  # no same-cluster pairs at all
    assert pairwise_f_measure([0, 0], [0, 1]) == 0.0
    with pytest.raises(ValueError, match="different lengths"):
        pairwise_f_measure([0, 1], [0])


def test_nmi_is_eq_2_4():
    rng = np.random.default_rng(1)
    t, p = rng.integers(0, 3, 200), rng.integers(0, 3, 200)
    joint = np.histogram2d(t, p, bins=(3, 3))[0] / 200
    hc, hk = entropy(joint.sum(0)), entropy(joint.sum(1))
    mi = hc + hk - entropy(joint.ravel())
    assert nmi(t, p) == pytest.approx(mi / ((hc + hk) / 2))
    assert nmi(t, t) == pytest.approx(1.0) and ari(t, t) == pytest.approx(1.0)


def test_objective_and_evaluate():
    X = np.array([[0.0], [1.0], [10.0]])
    c = Constraints.from_pairs(must_link=[(1, 2)], n=3, weight=3.0)
    # labels (0, 0, 1), centres 0.5 and 10: distortion 0.25 + 0.25 + 0; ML violated: 3 * w
    assert objective(X, [0, 0, 1], [[0.5], [10.0]], c, w=2.0) == pytest.approx(0.5 + 6.0)
    res = evaluate([0, 0, 1, 1], [1, 1, 0, 0], mask=[True, True, True, False])
    assert res["nmi"] == pytest.approx(1.0) and res["pairwise_f"] == pytest.approx(1.0)
    # only the scores asked for (a learning curve's metrics; other names are not scores here)
    some = evaluate([0, 0, 1, 1], [1, 1, 0, 0], mask=[True, True, True, False], scores=["nmi", "objective"])
    assert some == {"nmi": res["nmi"]}
