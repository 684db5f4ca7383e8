"""The one vocabulary of the estimators (docs/parameters.md): the page's tables against the
signatures, and the old names, which work for one version with a FutureWarning."""

import inspect
import pathlib
import re
import warnings

import numpy as np
import pytest

from pysketch import CompressiveGaussianMixture, CompressiveKMeans, CompressivePCA
from pysketch._base import CHANGING, RENAMED
from pysketch.distances import PrivateJLTransformer
from pysketch.m2m import M2MLinearRegression, M2MLogisticRegression, MarginalSynopsis
from pysketch.rfm import DPRFMRegressor, PrivateRFRegressor

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "parameters.md"
ESTIMATORS = {c.__name__: c for c in (CompressiveKMeans, CompressiveGaussianMixture, CompressivePCA, MarginalSynopsis,
                                      M2MLogisticRegression, M2MLinearRegression, PrivateRFRegressor, DPRFMRegressor,
                                      PrivateJLTransformer)}


def _table(heading):
    """The rows (lists of cells) of the first table after `heading` in the page."""
    text = DOC.read_text()
    lines = text[text.index(heading):].splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("|")):]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows[0], rows[2:]


def _signature(cls):
    return {k: v.default for k, v in inspect.signature(cls.__init__).parameters.items() if k != "self"}


def test_the_shared_words_table_names_every_column_of_the_estimators_table():
    _, words = _table("## The shared words")
    header, _ = _table("## Who takes what")
    names = {w[0].strip("`") for w in words}
    assert set(header[1:]) <= names


def test_who_takes_what_matches_the_signatures_and_defaults():
    header, rows = _table("## Who takes what")
    assert {r[0].strip("`") for r in rows} == set(ESTIMATORS)
    for row in rows:
        cls = ESTIMATORS[row[0].strip("`")]
        sig = _signature(cls)
        for param, cell in zip(header[1:], row[1:]):
            if not cell:
                assert param not in sig, f"{cls.__name__} takes {param}: the page says it does not"
                continue
            assert param in sig, f"{cls.__name__} has no parameter {param}"
            value = cell.replace("(changing)", "").strip().strip("`")
            if param == "budget_shares":
                assert sig[param] is None and cls._budget_parts == eval(value), cls.__name__  # noqa: S307
            elif "(changing)" in cell:
                assert sig[param] == CHANGING and cls._changing_defaults[param][0] == eval(value), cls.__name__
            else:
                assert repr(sig[param]) == value, f"{cls.__name__}.{param}: {sig[param]!r} against the page's {value}"


def test_the_old_names_table_is_what_the_estimators_declare():
    _, rows = _table("## Old names")
    page = {(r[0].strip("`"), r[1].strip("`"), r[2].strip("`").split("=")[0]) for r in rows}
    declared = set()
    for name, cls in ESTIMATORS.items():
        for old, target in cls._renamed_params.items():
            declared.add((name, old, target[0] if isinstance(target, tuple) else target))
            assert _signature(cls)[old] == RENAMED, f"{name}.{old} keeps a default of its own"
    assert page == declared


def _future(record):
    return [str(w.message) for w in record if issubclass(w.category, FutureWarning)]


def test_an_old_name_warns_and_fits_as_the_new_one():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 2))
    y = X @ [1.0, -2.0] + 0.1 * rng.standard_normal(400)
    box = dict(bounds=([-1, -1], [1, 1]))
    pairs = [
        (lambda **k: PrivateRFRegressor(None, **box, target_bounds=(-4, 4), random_state=0, **k),
         dict(n_frequencies=16, length_scale=1.5), dict(sketch_size=16, kernel_scale=1.5)),
        (lambda **k: M2MLinearRegression(**box, n_synthetic=2000, random_state=0, **k),
         dict(y_bounds=(-4, 4)), dict(target_bounds=(-4, 4))),
    ]
    for make, old, new in pairs:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            a = make(**old).fit(X, y)
        assert len(_future(rec)) == len(old) and all("will be removed" in m for m in _future(rec))
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            b = make(**new).fit(X, y)
        np.testing.assert_array_equal(a.coef_, b.coef_)
        assert a.get_params()[next(iter(old))] == next(iter(old.values()))  # the parameters stay as given
    # DPRFMRegressor reads its renamed parameters through the same two lines (sketch_size, kernel_scale)
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="^length_scale must be"):
        DPRFMRegressor(None, **box, target_bounds=(-4, 4), n_max=400, length_scale=-1.0).fit(X, y)


def test_old_share_names_set_the_same_parts_as_budget_shares():
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, size=(3000, 3))
    y = (X[:, 0] > 0.5).astype(float)
    with pytest.warns(FutureWarning, match="'mean_share' is now 'budget_shares'"):
        old = CompressivePCA(1, method="sketch", epsilon=1.0, data_norm=2.0, mean_share=0.3, random_state=0).fit(X)
    new = CompressivePCA(1, method="sketch", epsilon=1.0, data_norm=2.0, budget_shares={"mean": 0.3},
                         random_state=0).fit(X)
    assert old.privacy_["parts"]["mean"]["epsilon"] == new.privacy_["parts"]["mean"]["epsilon"] == 0.3
    with pytest.warns(FutureWarning, match="'pilot_share'"):
        old = MarginalSynopsis(([0] * 3, [1] * 3), epsilon=1.0, n_lower=1000, pilot_share=0.4, random_state=0).fit(X)
    new = MarginalSynopsis(([0] * 3, [1] * 3), epsilon=1.0, n_lower=1000, budget_shares={"pilot": 0.4},
                           random_state=0).fit(X)
    assert old.privacy_["parts"]["pilot"]["epsilon"] == new.privacy_["parts"]["pilot"]["epsilon"] == 0.4
    Xy = dict(bounds=([0] * 3, [1] * 3), epsilon=1.0, n_synthetic=2000, random_state=0)
    with pytest.warns(FutureWarning, match="'split'"):
        old = M2MLogisticRegression(**Xy, split=0.9).fit(X, y)
    new = M2MLogisticRegression(**Xy, budget_shares={"count": 0.1}).fit(X, y)
    assert old.privacy_["epsilon_count"] == pytest.approx(new.privacy_["epsilon_count"]) == pytest.approx(0.1)


def test_budget_shares_are_checked_before_anything_is_spent():
    from pysketch.privacy import BudgetAccountant

    X = np.random.default_rng(2).uniform(0, 1, size=(500, 3))
    acc = BudgetAccountant(10.0)
    for shares, match in (({"mea": 0.2}, "has no part 'mea'.*'mean'"), ({"mean": 1.0}, r"\(0, 1\)"),
                          ({"mean": True}, r"\(0, 1\)"), ([0.2], "must be a dict")):
        with pytest.raises((ValueError, TypeError), match=match):
            CompressivePCA(1, method="sketch", epsilon=1.0, data_norm=2.0, budget_shares=shares,
                           accountant=acc).fit(X)
    from pysketch._base import BaseEstimator

    class TwoParts(BaseEstimator):  # shares of two parts must leave some budget to the main part
        _budget_parts = {"a": 0.5, "b": 0.3}

        def __init__(self, budget_shares=None):
            self.budget_shares = budget_shares

    assert TwoParts({"b": 0.4})._budget_shares() == {"a": 0.5, "b": 0.4}
    with pytest.raises(ValueError, match="sum must be below 1"):
        TwoParts({"a": 0.7})._budget_shares()
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="disagree"):
        CompressivePCA(1, method="sketch", epsilon=1.0, data_norm=2.0, mean_share=0.3, budget_shares={"mean": 0.2},
                       accountant=acc).fit(X)
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="not both"):
        M2MLinearRegression(bounds=([0] * 3, [1] * 3), target_bounds=(0, 1), y_bounds=(0, 2),
                            accountant=acc).fit(X, X[:, 0])
    assert acc.spent == (0.0, 0.0)


def test_an_error_names_the_parameter_as_given():
    X = np.random.default_rng(3).uniform(0, 1, size=(50, 2))
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="^n_frequencies"):
        PrivateRFRegressor(None, bounds=([0, 0], [1, 1]), target_bounds=(0, 1), n_frequencies=0).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="^sketch_size"):
        PrivateRFRegressor(None, bounds=([0, 0], [1, 1]), target_bounds=(0, 1), sketch_size=0).fit(X, X[:, 0])


def test_a_changing_default_warns_and_keeps_this_versions_value():
    X = np.random.default_rng(4).uniform(0, 1, size=(300, 2))
    with pytest.warns(FutureWarning, match="epsilon is not given; its default is 1.0 in this version and will be None"):
        est = PrivateRFRegressor(bounds=([0, 0], [1, 1]), target_bounds=(0, 1), sketch_size=8).fit(X, X[:, 0])
    assert est.epsilon == CHANGING and est.privacy_["epsilon"] == 1.0
    assert re.search(r"epsilon", inspect.getdoc(PrivateRFRegressor))
