"""The estimator registry and the supervision adapter the commands and experiments share."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from hmrf import Constraints
from hmrf.estimators import ESTIMATORS, fit_supervised, make_estimator, supervision_kind

RNG = np.random.default_rng(1)
Y = np.repeat([0, 1, 2], 10)
X = RNG.normal(size=(30, 2)) + 5.0 * Y[:, None]


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_row_builds_what_it_declares(name):
    spec = ESTIMATORS[name]
    est = make_estimator(name, 3, random_state=0)
    params = est.get_params(deep=False)
    assert type(est) is spec.load() and est.n_clusters == 3 and params["random_state"] == 0
    # COP-KMeans' inference is its own greedy assignment (a GreedyFeasible), no engine of ENGINES
    assert spec.takes_engine == ("inference" in params and name != "copkmeans")
    assert spec.takes_w == ("w" in params and "w" not in spec.params)
    assert (spec.emissions is None or spec.named_emission) == ("emission" in params)
    assert all(params[k] == v for k, v in spec.params.items())
    assert supervision_kind(est) == spec.supervision
    # the declared kind is what fit accepts: pairs are refused by label and unsupervised rows
    c = Constraints.from_pairs([(0, 1)], [(0, 29)], n=30)
    if spec.supervision == "constraints":
        est.fit(X, constraints=c)
    else:
        with pytest.raises(ValueError):
            est.fit(X, constraints=c)


def test_settings_an_estimator_does_not_have_are_refused():
    with pytest.raises(ValueError, match="copkmeans has no E-step engine to choose"):
        make_estimator("copkmeans", 3, engine="bp")
    with pytest.raises(ValueError, match="has no constraint weight"):
        make_estimator("seeded-kmeans", 3, w=2.0)
    with pytest.raises(ValueError, match="spherical-kmeans uses cosine similarity"):
        make_estimator("spherical-kmeans", 3, emission="kl")
    assert make_estimator("pckmeans", 3, emission="kl").emission == "kl"  # PCKMeans' family is free
    with pytest.raises(ValueError, match="unknown inference engine 'annealing'"):
        make_estimator("hmrf-kmeans", 3, engine="annealing")
    with pytest.raises(ValueError, match="unknown estimator 'nope'"):
        make_estimator("nope", 3)
    assert make_estimator("hmrf-kmeans", 3, emission="kl", w=2.0, engine="bp").get_params()["w"] == 2.0


def test_seed_estimators_get_the_neighbourhoods_as_seeds():
    from hmrf import SeededKMeans

    c = Constraints.from_pairs(must_link=[(0, 1), (10, 11)], cannot_link=[(0, 10), (0, 20), (10, 20)],
                               n=30)
    got = fit_supervised(SeededKMeans(3, random_state=0), X, c).labels_
    # by hand: three neighbourhoods {0, 1}, {10, 11}, {20}, pairwise cannot-linked,
    # numbered largest first (ties by smallest member)
    seeds = np.full(30, -1)
    seeds[[0, 1]], seeds[[10, 11]], seeds[20] = 0, 1, 2
    want = SeededKMeans(3, random_state=0).fit(X, seeds).labels_
    assert np.array_equal(got, want)


class Foreign(BaseEstimator):
    """A scikit-learn estimator from elsewhere: fit(X, y=None, constraints=None)."""

    def __init__(self, log=None):
        self.log = log

    def fit(self, X, y=None, constraints=None):
        self.log.append((y, constraints))
        self.labels_ = np.zeros(len(X), dtype=int)
        return self


class Declared(Foreign):
    hmrf_supervision = "constraints"


def test_foreign_estimators_get_supervision_only_when_they_declare_it():
    c = Constraints.from_pairs([(0, 1)], n=30)
    log = []
    fit_supervised(Foreign(log), X, c)
    fit_supervised(Foreign(log), X, Y)
    assert log == [(None, None), (None, None)] and supervision_kind(Foreign()) == "none"
    log = []
    fit_supervised(Declared(log), X, c)
    fit_supervised(Declared(log), X, Y)
    assert log[0][1] is c and log[1][1] is None and np.array_equal(log[1][0], Y)


def test_bad_supervision_is_a_clear_error():
    from hmrf import HMRFKMeans

    with pytest.raises(ValueError, match="1-D array of integer labels"):
        fit_supervised(HMRFKMeans(3), X, np.ones((30, 2)))

    class Wrong(Foreign):
        hmrf_supervision = "pairs"

    with pytest.raises(ValueError, match="hmrf_supervision is 'pairs'"):
        fit_supervised(Wrong([]), X, None)


def test_a_class_name_spells_its_row(tmp_path):
    """Every row is reached by its own name and by its class name, in any case, with or
    without hyphens; a class with two rows names the first; an unknown name stays unknown
    (the caller reports it) and the command line takes class names too."""
    from hmrf.cli import main
    from hmrf.estimators import estimator_key

    for key, spec in ESTIMATORS.items():
        assert estimator_key(key.upper()) == key
        first = next(k for k, s in ESTIMATORS.items() if s.class_name == spec.class_name)
        assert estimator_key(spec.class_name) == first
        assert estimator_key(spec.class_name.lower()) == first
    assert estimator_key("HMRF_KMeans") == "hmrf-kmeans" and estimator_key("hmrfkmeans-i") == "hmrf-kmeans-i"
    assert estimator_key("Nope") == "nope"
    assert type(make_estimator("SeededKMeans", 3)).__name__ == "SeededKMeans"
    assert main(["fit", "--dataset", "iris", "--estimator", "COPKMeans", "--constraints", "10",
                 "--out", str(tmp_path)]) == 0
    import json

    assert json.loads((tmp_path / "summary.json").read_text())["estimator"] == "copkmeans"
