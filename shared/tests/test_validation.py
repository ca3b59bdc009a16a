import numpy as np
import pytest
from icml25_shared.random import int_seed
from icml25_shared.validation import Interval, Options, check_param, check_params, validate_params


@pytest.mark.parametrize(
    ("value", "constraints", "error", "text"),
    [
        ("3", [Interval(int, 1, None)], TypeError, "n must be an int >= 1; got str '3'"),
        (0, [Interval(int, 1, None)], ValueError, "n must be an int >= 1; got 0"),
        (True, [Interval(int, 1, None)], TypeError, "got True"),
        (2.0, [Interval(int, 1, None)], TypeError, "an int >= 1"),
        (float("nan"), [Interval(float, 0, 1)], ValueError, "a float in [0, 1]; got nan"),
        (1.0, [Interval(float, 0, 1, closed="left")], ValueError, "a float in [0, 1)"),
        (0.0, [Interval(float, 0, None, closed="neither")], ValueError, "a float > 0"),
        ("abc", [Options(str, {"aps", "lac"})], ValueError, "one of 'aps', 'lac'; got str 'abc'"),
        (3, [Options(str, {"aps", "lac"})], TypeError, "one of 'aps', 'lac'; got 3"),
        (-2, [Interval(int, 1, None), {-1}], ValueError, "an int >= 1 or one of -1; got -2"),
        ("x", [Interval(int, 1, None), None], TypeError, "an int >= 1 or None"),
        (-1, ["random_state"], ValueError, "random_state must be None, a non-negative int"),
        (1.5, ["random_state"], TypeError, "random_state"),
        ("yes", ["boolean"], TypeError, "a bool; got str 'yes'"),
        (["a"], ["array-like"], TypeError, "an array-like of numbers"),
    ],
)
def test_rejections_name_parameter_accepted_and_given(value, constraints, error, text):
    name = "random_state" if constraints == ["random_state"] else "n"
    with pytest.raises(error) as info:
        check_param(name, value, constraints, owner="Thing")
    assert str(info.value).startswith(f"Thing: {name} must be ")
    assert text in str(info.value)


@pytest.mark.parametrize(
    ("value", "constraints"),
    [
        (np.int64(3), [Interval(int, 1, None)]),
        (3, [Interval(float, 0, None)]),
        (np.float32(0.5), [Interval(float, 0, 1)]),
        (None, [Interval(int, 1, None), None]),
        (-1, [Interval(int, 1, None), {-1}]),
        (np.bool_(True), ["boolean"]),
        (np.random.default_rng(0), ["random_state"]),
        ([1, 2.5], ["array-like"]),
        (len, ["callable"]),
        ((1, 2), [(list, tuple)]),
    ],
)
def test_accepted_values_pass_through(value, constraints):
    assert check_param("p", value, constraints) is value


def test_check_params_checks_named_parameters_in_order_and_skips_absent():
    constraints = {"a": [Interval(int, 0, None)], "b": [str], "c": [str]}
    with pytest.raises(ValueError, match="a must be"):
        check_params({"a": -1, "b": 3}, constraints)
    check_params({"a": 1, "b": "x"}, constraints)


def test_validate_params_binds_defaults_and_positional_arguments():
    @validate_params({"k": [Interval(int, 1, 5)], "mode": [Options(str, {"x", "y"})]})
    def f(k, *, mode="x"):
        return k

    assert f(2) == 2
    with pytest.raises(ValueError, match=r"f: k must be an int in \[1, 5\]; got 6"):
        f(6)
    with pytest.raises(ValueError, match="mode must be one of 'x', 'y'"):
        f(1, mode="z")
    with pytest.raises(TypeError, match="has no parameters"):
        validate_params({"nope": [int]})(lambda k: k)


def test_interval_rejects_bad_definitions():
    with pytest.raises(TypeError):
        Interval(str, 0, 1)
    with pytest.raises(ValueError):
        Interval(int, 0, 1, closed="open")  # type: ignore[arg-type]


def test_int_seed_passes_ints_and_derives_from_generators():
    assert int_seed(5) == 5
    a, b = int_seed(np.random.default_rng(1)), int_seed(np.random.default_rng(1))
    assert a == b and 0 <= a < 2**63
    assert int_seed(np.random.SeedSequence(3)) == int_seed(np.random.SeedSequence(3))
    with pytest.raises(ValueError):
        int_seed(-1)
    with pytest.raises(TypeError):
        int_seed(1.5)


def test_assert_rejects_reports_each_failure_mode():
    from icml25_shared.testing import assert_rejects

    @validate_params({"k": [Interval(int, 1, None)]})
    def good(*, k=1):
        return k

    assert_rejects(good, "k", wrong_type="1", wrong_value=0)

    def silent(*, k=1):
        return k

    with pytest.raises(AssertionError, match="raised nothing"):
        assert_rejects(silent, "k", wrong_type="1", wrong_value=0)

    def wrong_kind(*, k=1):
        raise ValueError("k is bad")

    with pytest.raises(AssertionError, match="raised ValueError, expected TypeError"):
        assert_rejects(wrong_kind, "k", wrong_type="1", wrong_value=0)

    def unnamed(*, k=1):
        raise TypeError("bad")

    with pytest.raises(AssertionError, match="without naming"):
        assert_rejects(unnamed, "k", wrong_type="1", wrong_value=0)
