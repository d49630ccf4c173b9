"""The declarative parameter checks and the one random-state helper (hmrf._validation)."""

from numbers import Integral, Real

import numpy as np
import pytest

from hmrf._validation import Check, Interval, Options, check_random_state, validate_params


class _Thing:
    _parameter_constraints = {
        "max_iter": [Interval(Integral, 1, None)],
        "damping": [Interval(Real, 0, 1, closed="left")],
        "mode": [Options("a", "b", None)],
        "even": [Check(lambda v: isinstance(v, int) and v % 2 == 0, "an even int")],
    }

    def __init__(self, max_iter=3, damping=0.5, mode="a", even=2):
        self.max_iter, self.damping, self.mode, self.even = max_iter, damping, mode, even


@pytest.mark.parametrize("name, value, message", [
    ("max_iter", 0, r"max_iter must be an integer in \[1, inf\); got 0"),
    ("max_iter", 2.0, "max_iter must be an integer"),
    ("max_iter", True, "max_iter must be an integer"),
    ("damping", 1.0, r"damping must be a number in \[0, 1\); got 1.0"),
    ("damping", float("nan"), "damping must be a number"),
    ("mode", "c", "mode must be one of 'a', 'b', None; got 'c'"),
    ("even", 3, "even must be an even int; got 3"),
])
def test_invalid_parameter_is_named(name, value, message):
    with pytest.raises(ValueError, match=message):
        validate_params(_Thing(**{name: value}))


def test_valid_parameters_pass():
    validate_params(_Thing())
    validate_params(_Thing(max_iter=np.int64(5), damping=0.0, mode=None, even=4))


def test_infinite_bounds():
    assert Interval(Real, 0, None).matches(np.inf)
    assert not Interval(Real, 0, 1).matches(np.inf)
    assert not Interval(Real, 0, None).matches(-np.inf)


def test_check_random_state_is_deterministic_and_leaves_global_state_alone():
    state = np.random.get_state()[1].copy()
    a, b = check_random_state(7).random(3), check_random_state(7).random(3)
    np.testing.assert_array_equal(a, b)
    check_random_state(None).random()
    np.testing.assert_array_equal(np.random.get_state()[1], state)
    g = np.random.default_rng(1)
    assert check_random_state(g) is g
    rs1, rs2 = np.random.RandomState(5), np.random.RandomState(5)
    np.testing.assert_array_equal(check_random_state(rs1).random(2), check_random_state(rs2).random(2))
    with pytest.raises(ValueError, match="random_state must be"):
        check_random_state("seed")
    with pytest.raises(ValueError, match="random_state must be an int in"):
        check_random_state(-1)
