"""The low-rank generator of compressive PCA (thesis Fig. 9.7): make_low_rank and its
re-iterable stream low_rank_stream."""

import math

import numpy as np
import pytest

from pysketch.datasets import LowRankStream, low_rank_stream, make_low_rank


def _norms(X):
    return np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))


def _top_share(X, k):
    """Share of tr(X^T X / n) carried by its k largest eigenvalues."""
    X = np.asarray(X, dtype=np.float64)
    w = np.linalg.eigvalsh(X.T @ X / X.shape[0])
    return w[-k:].sum() / w.sum()


# ---------------------------------------------------------------------------------------
# make_low_rank
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_shape_dtype_and_unit_ball(dtype):
    X = make_low_rank(1500, 40, 3, random_state=0, dtype=dtype)
    assert X.shape == (1500, 40) and X.dtype == dtype
    assert np.isfinite(X).all()
    norms = _norms(X)
    # every record in the unit ball, the longest on the sphere up to rounding in its dtype
    eps = np.finfo(dtype).eps
    assert norms.max() <= 1.0
    assert norms.max() >= 1.0 - 8 * eps
    assert np.count_nonzero(norms >= 1.0 - 8 * eps) >= 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rounding_never_leaves_a_row_outside_the_ball(dtype):
    # y / max ||y|| can have a norm a few ulps above 1 once rounded (in float32 for more
    # than half of the seeds): such rows are brought just inside, for every seed
    for seed in range(20):
        X = make_low_rank(300, 30, 3, random_state=seed, dtype=dtype)
        norms = _norms(X)
        assert norms.max() <= 1.0
        assert norms.max() >= 1.0 - 8 * np.finfo(dtype).eps


def test_default_dtype_is_float64_and_the_max_row_is_exactly_one():
    X = make_low_rank(800, 25, 4, random_state=3)
    assert X.dtype == np.float64
    assert _norms(X).max() == pytest.approx(1.0, abs=4 * np.finfo(np.float64).eps)


def test_seeded_reproducibility():
    a = make_low_rank(300, 20, 2, random_state=11)
    b = make_low_rank(300, 20, 2, random_state=11)
    c = make_low_rank(300, 20, 2, random_state=12)
    assert np.array_equal(a, b)
    assert not np.allclose(a, c)
    # a Generator is advanced: two calls with one generator differ, and reproduce from its seed
    g = np.random.default_rng(5)
    first, second = make_low_rank(50, 8, 2, random_state=g), make_low_rank(50, 8, 2, random_state=g)
    assert not np.allclose(first, second)
    g = np.random.default_rng(5)
    assert np.array_equal(make_low_rank(50, 8, 2, random_state=g), first)


def test_records_do_not_depend_on_n_up_to_the_normalisation():
    # the records are made in fixed blocks from stored seeds, so the first rows agree up
    # to the scalar max-norm normalisation (which depends on n)
    small = make_low_rank(100, 30, 3, random_state=4)
    big = make_low_rank(1000, 30, 3, random_state=4)
    ratio = big[:100] / small
    assert np.allclose(ratio, ratio.flat[0], rtol=1e-12)


def test_spectrum_is_low_rank():
    # E[y y^T] = B B^T + (nu k)^2 I with tr(B B^T) ~ d k (B i.i.d. N(0, 1)): the top k
    # eigenvalues carry at least about d k / (d k + (nu k)^2 d) = 1 / (1 + nu^2 k) of the
    # trace, 0.98765 for nu = 0.05, k = 5 (the rescaling by the max norm changes no ratio).
    # Sampling moves it by about 1e-3 here (tr B B^T = chi^2_{dk} is 1000 +- 45 and the
    # top noise directions add a little), so > 0.9 is a wide margin and 5e-3 a fair one.
    d, k, nu = 200, 5, 0.05
    X = make_low_rank(4000, d, k, nu=nu, random_state=0)
    share = _top_share(X, k)
    assert share > 0.9
    assert abs(share - 1.0 / (1.0 + nu * nu * k)) < 5e-3
    # without noise the rank is exactly k
    assert _top_share(make_low_rank(500, d, k, nu=0.0, random_state=0), k) == pytest.approx(1.0, abs=1e-12)
    # power: with nu = 1 the same check fails (1 / (1 + 5) = 0.17 expected)
    assert _top_share(make_low_rank(4000, d, k, nu=1.0, random_state=0), k) < 0.5


def test_model_scale_before_normalisation():
    # the stream exposes B and the max norm, so y = x * max_norm can be checked against the
    # model: E||y||^2 = ||B||_F^2 + (nu k)^2 d. With n = 4000 records the mean of ||y||^2
    # has a standard error of about sqrt(2 (||B^T B||_F^2 + (nu k)^4 d) / n); 5 of them.
    n, d, k, nu = 4000, 50, 4, 0.3
    stream = low_rank_stream(n, d, k, nu=nu, batch_size=n, random_state=9, dtype=np.float64)
    Y = next(iter(stream)) * stream.max_norm
    B = stream.basis
    expected = np.sum(B * B) + (nu * k) ** 2 * d
    se = math.sqrt(2 * (np.sum((B.T @ B) ** 2) + (nu * k) ** 4 * d) / n)
    assert abs(np.mean(np.sum(Y * Y, axis=1)) - expected) <= 5 * se
    assert _norms(Y).max() == pytest.approx(stream.max_norm, rel=1e-14)


@pytest.mark.parametrize("kwargs, name", [
    ({"n": 0}, "n"), ({"d": 0}, "d"), ({"k": 0}, "k"), ({"k": 11}, "k must be <= d"),
    ({"nu": -0.1}, "nu"), ({"nu": float("nan")}, "nu"), ({"nu": float("inf")}, "nu"), ({"nu": True}, "nu"),
    ({"nu": "0.1"}, "nu"), ({"dtype": np.int64}, "dtype"), ({"dtype": "complex128"}, "dtype"),
])
def test_errors_name_the_argument(kwargs, name):
    args = {"n": 10, "d": 10, "k": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        make_low_rank(args.pop("n"), args.pop("d"), args.pop("k"), **args)
    args = {"n": 10, "d": 10, "k": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        low_rank_stream(args.pop("n"), args.pop("d"), args.pop("k"), **args)


def test_non_integer_sizes_are_type_errors():
    with pytest.raises(TypeError, match="n must be an int"):
        make_low_rank(10.0, 5, 2)
    with pytest.raises(TypeError, match="k must be an int"):
        make_low_rank(10, 5, 2.5)
    with pytest.raises(ValueError, match="batch_size"):
        low_rank_stream(10, 5, 2, batch_size=0)


# ---------------------------------------------------------------------------------------
# low_rank_stream
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [250, 1000, 7, 333, 5000])
def test_stream_equals_array(batch_size):
    # identical numbers for the same seed and dtype, whether or not batch_size divides n
    n, d, k = 1000, 30, 3
    X = make_low_rank(n, d, k, random_state=21, dtype=np.float64)
    stream = low_rank_stream(n, d, k, batch_size=batch_size, random_state=21, dtype=np.float64)
    assert np.array_equal(np.vstack(list(stream)), X)


def test_stream_equals_array_in_float32_and_across_blocks():
    # d = 2^10 gives 256 rows per generation block, so batches of 300 cut blocks in two
    n, d, k = 700, 1024, 4
    X = make_low_rank(n, d, k, random_state=2, dtype=np.float32)
    stream = low_rank_stream(n, d, k, batch_size=300, random_state=2)
    batches = list(stream)
    assert [b.shape for b in batches] == [(300, d), (300, d), (100, d)]
    assert all(b.dtype == np.float32 for b in batches)
    assert np.array_equal(np.vstack(batches), X)
    assert _norms(X).max() <= 1.0


def test_stream_is_reiterable_and_batches_are_addressable():
    stream = low_rank_stream(1050, 12, 2, batch_size=100, random_state=8)
    assert isinstance(stream, LowRankStream)
    assert len(stream) == 11 and stream.n == 1050 and stream.n_batches == 11
    first = [b.copy() for b in stream]
    second = list(stream)
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    assert np.array_equal(stream.batch(10), first[10]) and first[10].shape == (50, 12)
    with pytest.raises(IndexError):
        stream.batch(11)
    assert stream.basis.shape == (12, 2)
    assert "LowRankStream(n=1050, d=12, k=2" in repr(stream)


def test_stream_finds_the_max_norm_lazily_and_keeps_it():
    stream = low_rank_stream(500, 10, 2, batch_size=64, random_state=1)
    assert stream._max_norm is None   # nothing generated at construction
    m = stream.max_norm
    assert m > 0 and stream.max_norm == m
    X = np.vstack(list(stream))
    assert _norms(X).max() == pytest.approx(1.0, abs=1e-6)
