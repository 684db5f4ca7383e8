"""A feature map defined here, in the tests, with no file under src/ edited: the sign of a
random projection, Phi(x) = sign(Omega^T x) in {-1, 0, 1}^m. It states its own
sensitivity, and then sketches, merges, saves and loads, pickles and goes through
make_private like the built-in maps; no decoder takes it."""

import math
import pickle

import numpy as np
import pytest

from pysketch import FeatureMap, Sketch, SketchAccumulator, make_operator
from pysketch.features import FEATURE_MAPS
from pysketch.decoders import DecodingProblem
from pysketch.privacy import make_private
from pysketch.privacy.sensitivity import sum_sensitivity


class SignMap(FeatureMap):
    """sign(Omega^T x): |Phi_j| <= 1, so ||Phi(x) - Phi(y)||_1 <= 2m; the sum changes by
    ||Phi(x)||_1 <= m when a record is added or removed (L2: sqrt(m)), by at most twice
    that when one is replaced."""

    kind = "test_sign"
    takes_dither = False

    def features(self, T):
        return np.sign(T).astype(np.float64)

    def new_accumulators(self):
        return (np.zeros(self.m),)

    def accumulate(self, X, accumulators, subsample=None):
        if subsample is not None:
            raise ValueError("the sign map does not subsample")
        total = accumulators[0]  # float64, added into in place
        total += np.sign(self.operator.apply(X)).sum(axis=0)

    def sums(self, accumulators):
        return {"sum": accumulators[0].copy()}

    def _sensitivity(self, norm, neighbouring, r, data_norm):
        per_record = self.m if norm == 1 else math.sqrt(self.m)
        return (2.0 if neighbouring == "replace" else 1.0) * per_record


FEATURE_MAPS.register("test_sign", SignMap)


def sign_map(seed=0, d=5, m=40):
    return SignMap(make_operator(d, m, "dense", random_state=seed))


def data(n=300, d=5, seed=1):
    return np.random.default_rng(seed).standard_normal((n, d))


def test_the_factory_and_the_state_know_the_new_kind():
    fm = sign_map()
    assert isinstance(FeatureMap(fm.operator, "test_sign"), SignMap)
    assert FeatureMap.from_state(*fm.get_state()) == fm
    assert fm != sign_map(seed=1)


def test_sketch_is_the_sum_of_signs_streamed_in_batches():
    fm, X = sign_map(), data()
    expected = np.sign(X @ fm.operator.to_dense()).sum(axis=0)
    sk = fm.sketch(X, batch_size=7)
    assert sk.count == 300 and np.array_equal(sk.sum, expected)
    acc = SketchAccumulator(fm, buffer_rows=1)
    for row in X[:10]:
        acc.update(row[None, :])
    assert np.array_equal(acc.sketch().sum, np.sign(X[:10] @ fm.operator.to_dense()).sum(axis=0))
    np.testing.assert_array_equal(fm.transform(X[:3]), np.sign(X[:3] @ fm.operator.to_dense()))


def test_merge_save_load_and_pickle(tmp_path):
    fm, X = sign_map(), data()
    a, b = fm.sketch(X[:100]), fm.sketch(X[100:])
    merged = a + b
    assert np.array_equal(merged.sum, fm.sketch(X).sum) and merged.count == 300
    path = tmp_path / "sign.npz"
    merged.save(path)
    back = Sketch.load(path)
    assert isinstance(back.feature_map, SignMap) and back == merged
    assert pickle.loads(pickle.dumps(merged)) == merged
    with pytest.raises(ValueError, match="different feature maps"):
        merged + sign_map(seed=3).sketch(X)


def test_make_private_uses_the_maps_own_sensitivity():
    fm, X = sign_map(m=40), data()
    sk = fm.sketch(X)
    assert sum_sensitivity(fm, 1) == 40 and sum_sensitivity(fm, 2, "replace") == 2 * math.sqrt(40)
    p = make_private(sk, 1.0, insecure_seed=3)
    assert p.privacy["mechanism"] == "laplace" and p.privacy["sensitivity_sum"] == 40
    # Laplace of scale sensitivity / epsilon_sum (enlarged by < 2^-30 for the grid)
    assert p.privacy["noise_scale_sum"] == pytest.approx(40 / p.privacy["epsilon_sum"], rel=1e-8)
    g = make_private(sk, 1.0, 1e-6, neighbouring="replace", insecure_seed=4)
    assert g.privacy["sensitivity_sum"] == pytest.approx(2 * math.sqrt(40)) and g.count == 300
    # the released sum is the clean one plus noise of the stated scale (not the clean one)
    assert not np.array_equal(g.sum, sk.sum)
    assert np.std(g.sum - sk.sum) == pytest.approx(g.privacy["noise_scale_sum"], rel=0.5)
    assert pickle.loads(pickle.dumps(p)) == p


def test_no_decoder_takes_it():
    fm = sign_map()
    with pytest.raises(ValueError, match="mixture decoders need Fourier features"):
        DecodingProblem(fm, fm.sketch(data()).mean())
