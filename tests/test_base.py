"""The estimators' base classes (pysketch._base): scikit-learn's conventions without importing
scikit-learn (importing sklearn.base costs about 1.6 s and 90 MB, over a third of the
d = 2^15 PCA's 300 MB budget)."""

import subprocess
import sys

import numpy as np
import pytest

from pysketch import CompressiveKMeans, CompressivePCA
from pysketch._base import BaseEstimator, RegressorMixin


def test_using_an_estimator_does_not_import_scikit_learn():
    code = ("import sys, numpy as np, pysketch\n"
            "est = pysketch.CompressivePCA(2, n_init=1, random_state=0).fit(np.random.default_rng(0).normal(size=(200, 6)))\n"
            "pysketch.CompressiveKMeans(3)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


class _Inner(BaseEstimator):
    def __init__(self, a=1, b="x"):
        self.a = a
        self.b = b


class _Outer(BaseEstimator):
    def __init__(self, inner=None, c=2.0, arr=None):
        self.inner = inner
        self.c = c
        self.arr = arr


def test_get_params_and_set_params_follow_scikit_learn():
    est = _Outer(inner=_Inner(a=3))
    params = est.get_params()
    assert set(params) == {"inner", "inner__a", "inner__b", "c", "arr"}
    assert params["inner__a"] == 3 and params["c"] == 2.0
    assert set(est.get_params(deep=False)) == {"inner", "c", "arr"}
    assert est.set_params(c=5.0, inner__b="y") is est
    assert est.c == 5.0 and est.inner.b == "y" and est.inner.a == 3
    with pytest.raises(ValueError, match="invalid parameter 'd' for _Outer"):
        est.set_params(d=1)
    with pytest.raises(ValueError, match="invalid parameter 'z' for _Inner"):
        est.set_params(inner__z=1)


def test_repr_shows_the_parameters_changed_from_their_defaults():
    assert repr(_Outer()) == "_Outer()"
    assert repr(_Outer(c=3.0, arr=np.zeros(2))) == "_Outer(arr=array([0., 0.]), c=3.0)"
    assert repr(CompressivePCA(3)) == "CompressivePCA(n_components=3)"


def test_varargs_in_init_are_refused():
    class Bad(BaseEstimator):
        def __init__(self, *args):
            self.args = args

    with pytest.raises(RuntimeError, match=r"takes \*args"):
        Bad().get_params()


def test_r2_score_matches_the_definition():
    class Fixed(RegressorMixin, BaseEstimator):
        def predict(self, X):
            return np.asarray(X, dtype=float)[:, 0]

    X = np.array([[1.0], [2.0], [4.0]])
    y = np.array([1.0, 3.0, 3.0])
    expected = 1.0 - np.sum((y - X[:, 0]) ** 2) / np.sum((y - y.mean()) ** 2)
    assert Fixed().score(X, y) == pytest.approx(expected, rel=1e-15)
    assert Fixed().score(X[:1], y[:1]) == 1.0  # a constant y predicted exactly


def test_scikit_learn_tools_work_on_the_estimators():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.base import clone, is_clusterer, is_regressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from pysketch.rfm import PrivateRFRegressor

    km = CompressiveKMeans(4, epsilon=1.0, random_state=1)
    twin = clone(km)
    assert twin is not km and twin.get_params() == km.get_params()
    assert is_clusterer(km) and not is_regressor(km)
    assert is_regressor(PrivateRFRegressor())
    pipe = make_pipeline(StandardScaler(), CompressivePCA(2, n_init=1, random_state=0))
    Z = pipe.fit_transform(np.random.default_rng(0).normal(size=(300, 5)))
    assert Z.shape == (300, 2)
    pipe.set_params(compressivepca__n_components=1)
    assert pipe[-1].n_components == 1
    assert sklearn.get_config()  # (scikit-learn imported by this test only)
