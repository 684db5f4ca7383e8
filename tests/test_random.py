"""Tests of pysketch._random.as_generator (random_state handling, as in scikit-learn)."""

import numpy as np
import pytest

from pysketch._random import as_generator


def _draw(rng):
    return rng.integers(0, 2**63, size=8)


def test_none_gives_fresh_entropy():
    a, b = as_generator(None), as_generator(None)
    assert isinstance(a, np.random.Generator)
    # Two OS-entropy seeds coincide with probability ~2^-128.
    assert not np.array_equal(_draw(a), _draw(b))


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**64 + 3, np.int64(7), np.uint8(200)])
def test_int_seed_is_default_rng(seed):
    rng = as_generator(seed)
    assert isinstance(rng, np.random.Generator)
    np.testing.assert_array_equal(_draw(rng), _draw(np.random.default_rng(int(seed))))
    # The same seed restarts the same stream.
    np.testing.assert_array_equal(_draw(as_generator(seed)), _draw(as_generator(seed)))


def test_different_seeds_differ():
    assert not np.array_equal(_draw(as_generator(1)), _draw(as_generator(2)))


def test_seed_sequence():
    rng = as_generator(np.random.SeedSequence(42))
    np.testing.assert_array_equal(
        _draw(rng), _draw(np.random.default_rng(np.random.SeedSequence(42)))
    )


def test_generator_is_returned_as_is_and_advances():
    rng = np.random.default_rng(3)
    assert as_generator(rng) is rng
    first = _draw(as_generator(rng))
    second = _draw(as_generator(rng))
    assert not np.array_equal(first, second)


def test_random_state_is_reproducible_and_advances():
    a = as_generator(np.random.RandomState(5))
    b = as_generator(np.random.RandomState(5))
    assert isinstance(a, np.random.Generator)
    np.testing.assert_array_equal(_draw(a), _draw(b))
    rs = np.random.RandomState(5)
    c, d = as_generator(rs), as_generator(rs)
    assert not np.array_equal(_draw(c), _draw(d))
    # Not the same stream as the int seed 5.
    assert not np.array_equal(_draw(as_generator(np.random.RandomState(5))), _draw(as_generator(5)))


@pytest.mark.parametrize(
    "bad",
    [True, False, np.True_, 1.0, 2.5, "1", b"1", [1], (1,), np.array(3), object(),
     np.random.PCG64(1)],
)
def test_bad_types_raise_type_error(bad):
    with pytest.raises(TypeError, match="random_state must be None, an int >= 0"):
        as_generator(bad)


@pytest.mark.parametrize("bad", [-1, np.int64(-3), -(2**70)])
def test_negative_int_raises_value_error(bad):
    with pytest.raises(ValueError, match=r"random_state must be .*negative int"):
        as_generator(bad)


def test_error_names_the_argument():
    with pytest.raises(TypeError, match="^seed must be") as info:
        as_generator("abc", name="seed")
    assert "'abc'" in str(info.value) and "str" in str(info.value)
    with pytest.raises(ValueError, match="^seed must be .* -4"):
        as_generator(-4, name="seed")
