"""pysketch.fwht: the transform's values (definition, rounding order, algebraic properties)."""

import numpy as np
import pytest
import scipy.linalg
from fwht_reference import fwht_reference, seeded_batch, sylvester_signs
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pysketch import fwht

DTYPES = [np.float32, np.float64]


@pytest.mark.parametrize("log_n", range(13))
@pytest.mark.parametrize("dtype", DTYPES)
def test_equals_scipy_hadamard_matrix_exactly(log_n, dtype):
    # Small integers: every partial sum is exact in both dtypes, so H @ x is exact too.
    n = 1 << log_n
    x = np.random.default_rng(log_n).integers(-8, 9, size=(5, n)).astype(dtype)
    expected = x.astype(np.float64) @ scipy.linalg.hadamard(n).T
    y = fwht(x)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, expected.astype(dtype))


@pytest.mark.parametrize("log_n", range(9))
def test_equals_popcount_definition(log_n):
    # y[i] = sum_j (-1)^popcount(i & j) x[j], the docstring's definition, on one vector.
    n = 1 << log_n
    x = np.random.default_rng(7).integers(-100, 101, size=n).astype(np.float64)
    np.testing.assert_array_equal(fwht(x), sylvester_signs(n) @ x)


def test_reference_is_the_definition():
    # The NumPy reference used below equals the definition on exact (integer) data.
    x = np.random.default_rng(3).integers(-50, 51, size=(3, 256)).astype(np.float64)
    np.testing.assert_array_equal(fwht_reference(x), x @ sylvester_signs(256).T)


@pytest.mark.parametrize("log_n", range(21))
@pytest.mark.parametrize("dtype", DTYPES)
def test_bit_identical_to_reference_butterflies(log_n, dtype):
    # Random real data: rounding happens, and must happen exactly as in the reference.
    x = seeded_batch(log_n, dtype)  # 2**14 elements, or one row above that
    np.testing.assert_array_equal(fwht(x), fwht_reference(x))


@pytest.mark.parametrize("log_n", [0, 1, 3, 5, 10, 15])
@pytest.mark.parametrize("dtype", DTYPES)
def test_normalized_is_reference_times_scale(log_n, dtype):
    # One rounding for the scale, after the transform: (H x) * float(1/sqrt(n)).
    x = seeded_batch(log_n, dtype, seed=1)
    scale = dtype(1.0 / np.sqrt(1 << log_n))
    np.testing.assert_array_equal(fwht(x, normalized=True), fwht_reference(x) * scale)


@pytest.mark.parametrize("log_n", [0, 1, 4, 11])
def test_twice_is_n_times_identity_exactly(log_n):
    n = 1 << log_n
    x = np.random.default_rng(0).integers(-1000, 1001, size=(4, n)).astype(np.float64)
    np.testing.assert_array_equal(fwht(fwht(x)), n * x)


@pytest.mark.parametrize("log_n", [0, 1, 2, 7, 10, 13])
@pytest.mark.parametrize("dtype", DTYPES)
def test_normalized_is_orthonormal_involution(log_n, dtype):
    x = seeded_batch(log_n, dtype, seed=2)
    y = fwht(x, normalized=True)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), rtol=tol)
    np.testing.assert_allclose(fwht(y, normalized=True), x, rtol=tol * 10, atol=tol * 10)


def test_small_cases_by_hand():
    np.testing.assert_array_equal(fwht([5.0]), [5.0])
    np.testing.assert_array_equal(fwht([3.0, 1.0]), [4.0, 2.0])
    np.testing.assert_array_equal(fwht([1.0, 2.0, 3.0, 4.0]), [10.0, -2.0, -4.0, 0.0])
    np.testing.assert_array_equal(fwht([[1.0, 0.0], [0.0, 1.0]], normalized=True), np.array([[1, 1], [1, -1]]) / np.sqrt(2))


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    log_n=st.integers(0, 9),
    rows=st.integers(1, 4),
    a=st.integers(-8, 8),
    b=st.integers(-8, 8),
)
def test_linearity(data, log_n, rows, a, b):
    # Integer-valued data keep every operation exact, so linearity holds with ==.
    shape = (rows, 1 << log_n)
    elements = st.integers(-(2**10), 2**10).map(float)
    x = data.draw(hnp.arrays(np.float64, shape, elements=elements))
    z = data.draw(hnp.arrays(np.float64, shape, elements=elements))
    np.testing.assert_array_equal(fwht(a * x + b * z), a * fwht(x) + b * fwht(z))


@settings(max_examples=60, deadline=None)
@given(
    x=hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 3), st.sampled_from([1, 2, 4, 8, 32, 128])),
        elements=st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    )
)
def test_matches_reference_on_arbitrary_finite_data(x):
    np.testing.assert_array_equal(fwht(x), fwht_reference(x))
    np.testing.assert_array_equal(fwht(x.astype(np.float32)), fwht_reference(x.astype(np.float32)))


def test_input_is_not_modified():
    x = seeded_batch(10, np.float64)
    before = x.copy()
    fwht(x)
    fwht(x, normalized=True)
    np.testing.assert_array_equal(x, before)


def test_docstring_examples():
    import doctest

    import pysketch.hadamard

    result = doctest.testmod(pysketch.hadamard, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
