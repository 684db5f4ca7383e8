"""The decoder contract: a decoder defined here, in the tests, registered by name, is used by
the estimators like the built-in ones, and its declared limits are enforced before any
privacy budget is spent."""

import numpy as np
import pytest

from pysketch import CompressiveGaussianMixture, CompressiveKMeans
from pysketch.datasets import make_blobs_gaussian_centers
from pysketch.decoders import DECODERS, Decoder, MixtureSolution
from pysketch.privacy import BudgetAccountant


@DECODERS.register("test_box_centre")
class BoxCentreDecoder(Decoder):
    """Every atom at the centre of the box (equal weights); clean sketches only."""

    name = "test_box_centre"
    atoms = ("dirac",)
    decodes_private = False
    calls = []

    def decode(self, problem, n_atoms, lower, upper, *, atoms="dirac", n_init=1, random_state=None):
        self.check(atoms=atoms, private=problem.private)
        type(self).calls.append((problem.count, problem.noise_variance))
        theta = np.tile(0.5 * (lower + upper), (n_atoms, 1))
        return MixtureSolution(theta=theta, weights=np.full(n_atoms, 1.0 / n_atoms), residual=0.0, restart=0,
                               n_iter=0)


X = make_blobs_gaussian_centers(2000, 3, 2, random_state=0)[0]


def test_a_registered_decoder_is_chosen_by_name():
    est = CompressiveKMeans(3, decoder="test_box_centre", kernel_scale=1.0, random_state=0).fit(X)
    np.testing.assert_allclose(est.cluster_centers_, np.tile(0.5 * (X.min(0) + X.max(0)), (3, 1)))
    assert BoxCentreDecoder.calls[-1] == (2000, 0.0)  # the problem carries the count and no noise


def test_its_limits_are_enforced_before_the_budget_is_charged():
    acc = BudgetAccountant(10.0)
    with pytest.raises(ValueError, match="does not decode private sketches"):
        CompressiveKMeans(3, decoder="test_box_centre", epsilon=1.0, bounds=(-20, 20), accountant=acc).fit(X)
    assert acc.spent == (0.0, 0.0)
    with pytest.raises(ValueError, match="decodes atoms"):
        BoxCentreDecoder.check(atoms="diagonal_gaussian")


def test_the_builtin_names_and_the_earlier_name_of_cl_amp():
    assert {"clompr", "cl_amp", "coreset"} <= set(DECODERS.names())
    assert DECODERS.get("clamp") is DECODERS.get("cl_amp")
    a = CompressiveKMeans(3, decoder="cl_amp", n_init=1, kernel_scale=1.0, random_state=0).fit(X)
    b = CompressiveKMeans(3, decoder="clamp", n_init=1, kernel_scale=1.0, random_state=0).fit(X)
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    with pytest.raises(ValueError, match="decoder must be 'auto' or one of"):
        CompressiveKMeans(3, decoder="nope").fit(X)
    # the GMM decodes Gaussian atoms with CL-OMPR
    assert CompressiveGaussianMixture(2, n_init=1, random_state=0).fit(X).means_.shape == (2, 2)
