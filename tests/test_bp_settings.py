"""BeliefPropagation's parameters: validated once per parameter set (check_params), resolved
into the settings _solve reads, the rules between them, and the removed parameters."""

import numpy as np
import pytest

import hmrf._validation
from hmrf import Constraints
from hmrf.inference import BeliefPropagation
from hmrf.inference.bp import engine as bp_engine


def settings(**kwargs):
    bp = BeliefPropagation(**kwargs)
    bp.check_params()
    return bp._settings()


@pytest.mark.parametrize("kwargs, sequential", [
    ({}, True),
    ({"schedule": "flooding"}, False),
    ({"reweight": 0.5}, False),            # a number is one rho per edge: flooding
    ({"reweight": "trw"}, True),           # TRW-S, sequential
    ({"mode": "sum", "reweight": "trw"}, False),  # reweighted sum-product floods
    ({"mode": "sum"}, True),
    ({"reweight": None, "schedule": "sequential"}, True),
])
def test_the_schedule_follows_schedule_reweight_and_mode(kwargs, sequential):
    assert settings(**kwargs).sequential is sequential


def test_damping_max_iter_and_polish_are_resolved():
    s = settings()
    assert (s.damping, s.max_iter, s.trws_max_iter, s.polish) == (None, 100, 1000, None)
    s = settings(damping=0.25, max_iter=7, polish="icm")
    assert (s.damping, s.max_iter, s.trws_max_iter, s.polish) == (0.25, 7, 7, "icm")
    assert settings(polish="none").polish is None


def test_parameters_are_validated_once_per_parameter_set(monkeypatch):
    calls = []
    real = hmrf._validation.validate_params
    monkeypatch.setattr(bp_engine, "validate_params", lambda *a, **k: calls.append(1) or real(*a, **k))
    unary, c = np.random.default_rng(0).random((6, 3)), Constraints.from_pairs(must_link=[(0, 1)],
                                                                              cannot_link=[(2, 3)], n=6)
    bp = BeliefPropagation()
    bp.check_params()
    graph = __import__("hmrf").PairwiseGraph.from_constraints(c)
    for _ in range(3):  # what the EM loop and AutoEngine do: solve, never map
        bp.solve_validated(unary, graph, rng=np.random.default_rng(0))
    assert len(calls) == 1
    bp.rel_gap = 0.01  # a new parameter set is resolved (and validated) again, once
    bp.solve_validated(unary, graph, rng=np.random.default_rng(0))
    bp.solve_validated(unary, graph, rng=np.random.default_rng(0))
    assert len(calls) == 2 and bp._settings().rel_gap == 0.01
    bp.tol = -1.0
    with pytest.raises(ValueError, match="tol"):
        bp.solve_validated(unary, graph, rng=np.random.default_rng(0))


@pytest.mark.parametrize("kwargs, match", [
    ({"max_iter": 0}, "max_iter must be one of .auto. or an integer in"),
    ({"max_iter": 2.5}, "max_iter"),
    ({"tol": -1.0}, "tol"),
    ({"damping": "always"}, "damping"),
    ({"reweight": True}, "reweight"),      # a bool is not a number
    ({"rel_gap": 1.0}, "rel_gap"),
    ({"patience": 0}, "patience"),
    ({"polish": "greedy"}, "polish"),
])
def test_bad_settings_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BeliefPropagation(**kwargs).check_params()


@pytest.mark.parametrize("name, value, match", [
    ("kernel", "numpy", r"BeliefPropagation\(kernel=...\) was removed: the passes are always compiled"),
    ("order", "colour", r"BeliefPropagation\(order=...\) was removed: the sequential schedule visits the nodes "
                        r"breadth first"),
    ("colour", True, "unexpected keyword argument 'colour'"),
])
def test_removed_parameters_say_what_to_do(name, value, match):
    with pytest.raises(TypeError, match=match):
        BeliefPropagation(**{name: value})
