"""icml25_shared.random: scikit-learn's check_random_state semantics, independent streams, the seed rename."""


import numpy as np
import pytest
from icml25_shared.random import check_random_state, child_seeds, spawn


def test_none_draws_fresh_entropy():
    a, b = check_random_state(None), check_random_state(None)
    assert isinstance(a, np.random.Generator) and a is not b
    assert a.integers(0, 2**62) != b.integers(0, 2**62)


@pytest.mark.parametrize("seed", [0, 7, np.int64(7), np.uint32(7), 2**70])
def test_int_seeds_are_reproducible_whatever_their_integer_type(seed):
    first = check_random_state(seed).random(5)
    np.testing.assert_array_equal(first, check_random_state(seed).random(5))
    np.testing.assert_array_equal(first, np.random.default_rng(int(seed)).random(5))


def test_generator_is_passed_through_and_seed_sequence_seeds():
    rng = np.random.default_rng(3)
    assert check_random_state(rng) is rng
    sequence = np.random.SeedSequence(11)
    np.testing.assert_array_equal(check_random_state(sequence).random(3), np.random.default_rng(11).random(3))


def test_random_state_is_wrapped_sharing_its_state():
    legacy = np.random.RandomState(5)
    wrapped = check_random_state(legacy)
    reference = np.random.RandomState(5)
    reference.random_sample()  # one draw through the wrapper advances the legacy object too
    wrapped.random()
    assert legacy.random_sample() == reference.random_sample()


@pytest.mark.parametrize("bad", [1.0, "0", True, np.bool_(True), [1], object()])
def test_other_types_raise_type_error(bad):
    with pytest.raises(TypeError, match="random_state must be"):
        check_random_state(bad)


@pytest.mark.parametrize("bad", [-1, np.int64(-3)])
def test_negative_ints_raise_value_error(bad):
    with pytest.raises(ValueError, match="non-negative"):
        check_random_state(bad)


def test_spawn_streams_are_reproducible_independent_and_differ_from_the_next_seed():
    a = [g.random(1000) for g in spawn(4, 3)]
    again = [g.random(1000) for g in spawn(np.int64(4), 3)]
    for x, y in zip(a, again, strict=True):
        np.testing.assert_array_equal(x, y)
    nxt = [g.random(1000) for g in spawn(5, 3)]
    draws = a + nxt
    for i in range(len(draws)):
        for j in range(i + 1, len(draws)):
            assert not np.any(draws[i] == draws[j])
            assert abs(np.corrcoef(draws[i], draws[j])[0, 1]) < 0.15  # 1000 draws: |r| ~ 0.03
    # unlike default_rng(s + k): seed 4's second stream is not seed 5's first
    assert not np.array_equal(a[1], nxt[0])
    # a prefix does not depend on how many streams were asked for
    np.testing.assert_array_equal(spawn(4, 1)[0].random(1000), a[0])


def test_spawn_from_a_generator_follows_and_advances_it():
    rng = np.random.default_rng(9)
    first = spawn(rng, 2)[0].random(4)
    second = spawn(rng, 2)[0].random(4)
    assert not np.array_equal(first, second)  # the generator moved on
    np.testing.assert_array_equal(spawn(np.random.default_rng(9), 2)[0].random(4), first)
    assert spawn(None, 2)[0].random() != spawn(None, 2)[0].random()


@pytest.mark.parametrize("bad_n", [-1, 1.5, True, "2"])
def test_spawn_and_child_seeds_reject_bad_counts(bad_n):
    with pytest.raises(ValueError, match="n must be"):
        spawn(0, bad_n)
    with pytest.raises(ValueError, match="n must be"):
        child_seeds(0, bad_n)


def test_zero_streams():
    assert spawn(0, 0) == [] and child_seeds(0, 0) == []


def test_child_seeds_are_reproducible_distinct_63_bit_ints():
    seeds = child_seeds(0, 50)
    assert seeds == child_seeds(np.int32(0), 50)
    assert all(isinstance(s, int) and 0 <= s < 2**63 for s in seeds)
    assert len(set(seeds)) == 50 and not set(seeds) & set(child_seeds(1, 50))
    assert max(seeds) > 2**60  # the high bits are used
    with pytest.raises(ValueError):
        child_seeds(-1, 2)
