"""BPSettings: BeliefPropagation's parameters validated once, with the rules between them resolved."""

import dataclasses

import pytest

from hmrf.inference import BeliefPropagation
from hmrf.inference.bp import BPSettings
from hmrf.inference.bp.settings import numba_available


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
    assert BPSettings(**kwargs).sequential is sequential


def test_kernel_order_and_damping_are_resolved():
    s = BPSettings(kernel="numpy")
    assert (s.compiled, s.node_order, s.fixed_damping) == (False, "colour", None)
    assert BPSettings(mode="sum").compiled is False  # sum-product: the NumPy passes
    assert BPSettings(damping=0.25).fixed_damping == 0.25
    if numba_available():
        assert (BPSettings().compiled, BPSettings().node_order) == (True, "bfs")
        assert BPSettings(order="colour").node_order == "colour"


def test_settings_are_the_engines_parameters_and_frozen():
    engine = BeliefPropagation(max_iter=7, rel_gap=0.05, polish="icm", patience=2)
    s = engine.settings()
    assert (s.max_iter, s.rel_gap, s.polish, s.patience, s.polish_with) == (7, 0.05, "icm", 2, "icm")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.max_iter = 3


@pytest.mark.parametrize("kwargs, match", [
    ({"max_iter": 0}, "max_iter must be one of .auto. or an integer in"),
    ({"max_iter": 2.5}, "max_iter"),
    ({"tol": -1.0}, "tol"),
    ({"damping": "always"}, "damping"),
    ({"reweight": True}, "reweight"),      # a bool is not a number
    ({"rel_gap": 1.0}, "rel_gap"),
    ({"patience": 0}, "patience"),
    ({"order": "bfs", "kernel": "numpy"}, "order='bfs' needs the compiled kernel"),
])
def test_bad_settings_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BPSettings(**kwargs)
