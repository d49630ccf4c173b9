"""Validation happens once, at the entrance of a fit (ARCHITECTURE.md, "Validation once"):
``X`` is checked once, the estimator's parameters once, the engine's parameters once per
fit, and ``random_state`` becomes one generator that every run and E-step draws on, as
many runs (``n_init``) and iterations (``max_iter``) as the fit makes. Counted with
``sys.setprofile`` on the checks' code objects, so every caller is seen whatever name
it imported them under."""

import sys

import numpy as np
import pytest
from sklearn.datasets import load_iris

from hmrf import Constraints, HMRFKMeans
from hmrf._validation import check_data, check_random_state, validate_params

X, Y = load_iris(return_X_y=True)
PAIRS = Constraints.sample_from_labels(Y, n_pairs=50, rng=0)
CHECKS = {f.__code__: f.__name__ for f in (validate_params, check_random_state, check_data)}


def calls(fit) -> dict:
    """How many times each check runs during ``fit()``."""
    counts = dict.fromkeys(CHECKS.values(), 0)

    def count(frame, event, arg):
        if event == "call" and frame.f_code in CHECKS:
            counts[CHECKS[frame.f_code]] += 1

    previous = sys.getprofile()
    sys.setprofile(count)
    try:
        fit()
    finally:
        sys.setprofile(previous)
    return counts


@pytest.mark.parametrize("n_init, max_iter", [(1, 100), (4, 2), ("auto", 100)])
def test_a_fit_checks_its_inputs_once_whatever_its_runs_and_iterations(n_init, max_iter):
    """With ICM (an engine that composes no other): the estimator's table and the engine's,
    one generator, one scan of ``X``."""
    est = HMRFKMeans(3, inference="icm", n_init=n_init, max_iter=max_iter, random_state=0)
    counts = calls(lambda: est.fit(X, constraints=PAIRS))
    assert est.n_runs_ >= (1 if n_init == 1 else 2)
    assert counts == {"validate_params": 2, "check_random_state": 1, "check_data": 1}


@pytest.mark.xfail(strict=True, reason="the default engine's parts (inference/auto.py, inference/bp/settings.py, "
                                       "inference/expansion.py) check their parameters at every E-step until "
                                       "branches cuts and bp are merged")
@pytest.mark.parametrize("n_init", [1, "auto"])
def test_a_fit_at_the_defaults_checks_its_inputs_a_few_times(n_init):
    """The default engine (``inference="auto"``) included: at most 6 parameter checks and
    3 random states in a fit, however many runs and E-steps it makes."""
    counts = calls(lambda: HMRFKMeans(3, n_init=n_init, random_state=0).fit(X, constraints=PAIRS))
    assert counts["validate_params"] <= 6 and counts["check_random_state"] <= 3
    assert counts["check_data"] == 1


def test_the_fits_generator_is_drawn_on_as_is():
    """A Generator given as ``random_state`` is the fit's generator: a fit advances it, and
    the same state gives the same result."""
    gen = np.random.default_rng(5)
    state = gen.bit_generator.state
    a = HMRFKMeans(3, inference="icm", random_state=gen).fit(X, constraints=PAIRS)
    assert gen.bit_generator.state != state
    gen.bit_generator.state = state
    b = HMRFKMeans(3, inference="icm", random_state=gen).fit(X, constraints=PAIRS)
    np.testing.assert_array_equal(a.labels_, b.labels_)
