"""DPRFMRegressor (the published Algorithm 1 as a scikit-learn regressor): interpolation, the
calibrations, the public n_max and label scaling, and the estimator checks."""

import math
import warnings

import numpy as np
import pytest

from pysketch.privacy import PrivacyLeakWarning
from pysketch.rfm import DPRFMRegressor, PrivateRFRegressor
from pysketch.rfm import published

BOX = dict(bounds=([0, 0], [1, 1]), target_bounds=(-1, 3))


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, 2))
    return X, np.sin(3 * X[:, 0]) + X[:, 1] ** 2


def test_nonprivate_model_interpolates_with_the_marchenko_pastur_number_of_features():
    X, y = _data(60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = DPRFMRegressor(None, n_max=60, random_state=0, **BOX).fit(X, y)
    assert m.features_.n_frequencies == 240  # ceil(60 / (1 - sqrt(1/4))^2)
    assert np.allclose(m.predict(X), y, atol=1e-8)


def test_lemma6_noise_has_the_right_units():
    X, y = _data(40)
    kw = dict(n_max=50, n_frequencies=400, random_state=0, **BOX)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        clean = DPRFMRegressor(None, **kw).fit(X, y)
        noisy = [DPRFMRegressor(1.0, insecure_seed=s, **kw).fit(X, y) for s in range(30)]
    rec = noisy[0].privacy_
    assert rec["guarantee"] == "conditional" and rec["calibration"] == "lemma6"
    # Delta = 2 / sqrt(1 - 2 eta) = 4 on normalised cos features (label norm <= 1): N-independent
    assert rec["sensitivity"] == pytest.approx(published.minnorm_sensitivity(400, 3 / 8, layout="cos"))
    assert rec["sensitivity"] == pytest.approx(4.0)
    # coefficients are reported in label units: the noise is sigma * B sqrt(n_max) per coefficient
    z = np.stack([m.coef_ - clean.coef_ for m in noisy]) / (2.0 * math.sqrt(50))
    assert np.std(z) == pytest.approx(rec["sigma"], rel=0.05)


def test_paper_calibration_warns_and_is_sqrt_n_times_smaller():
    X, y = _data(40)
    kw = dict(n_max=40, n_frequencies=400, random_state=0, **BOX)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = DPRFMRegressor(1.0, calibration="paper", insecure_seed=0, **kw).fit(X, y)
    assert any(issubclass(w.category, PrivacyLeakWarning) and "NOT differentially private" in str(w.message)
               for w in caught)
    # the data's Gram is far from the eigenvalue condition (close points, wide kernel): reported
    assert any("eigen_ok violated" in str(w.message) for w in caught)
    assert not m.conditions_["eigen_ok"]
    assert m.privacy_["guarantee"] == "none"
    assert m.privacy_["sensitivity"] == pytest.approx(4.0 / math.sqrt(400))


def test_n_max_is_public_and_checked():
    X, y = _data(30)
    with pytest.raises(ValueError, match="n_max"):
        DPRFMRegressor(1.0, n_max=10, **BOX).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPRFMRegressor(1.0, n_frequencies=200, **BOX).fit(X, y)
    assert any(issubclass(w.category, PrivacyLeakWarning) and "n_max not given" in str(w.message) for w in caught)


@pytest.mark.parametrize("kw, match", [(dict(eta=0.5), "eta"), (dict(calibration="exact"), "calibration"),
                                       (dict(solver="qr"), "method|solver"), (dict(n_frequencies=0), "n_frequencies")])
def test_bad_arguments(kw, match):
    X, y = _data(20)
    with pytest.raises(ValueError, match=match):
        DPRFMRegressor(1.0, n_max=20, **BOX, **kw).fit(X, y)


def test_check_estimator():
    pytest.importorskip("sklearn")
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(DPRFMRegressor(n_frequencies=64, random_state=0, insecure_seed=0))
        check_estimator(DPRFMRegressor(None, n_frequencies=64, random_state=0))


def test_ssp_beats_the_published_model_at_honest_calibration():
    """The point of issue 19's scope 3, on a small generated problem: at epsilon = 1 the
    published model's honest noise swamps the signal, the SSP regressor does not."""
    X, y = _data(20000)
    Xt, yt = _data(3000, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ssp = PrivateRFRegressor(1.0, n_frequencies=32, random_state=0, insecure_seed=1, **BOX).fit(X, y)
        pub = DPRFMRegressor(1.0, n_max=500, random_state=0, insecure_seed=1,
                             **BOX).fit(X[:500], y[:500])
    e_ssp, e_pub = (np.mean((m.predict(Xt) - yt) ** 2) for m in (ssp, pub))
    assert e_ssp < 0.5 * np.var(yt) < e_pub
