"""The decoder contract: a decoder defined here, in the tests, registered by name, is used by
the estimators like the built-in ones, and its declared limits are enforced before any
privacy budget is spent. One call, decode(task), the run options on construction; decoders
written to the old contract (and old calls) still work for one version, with a FutureWarning."""

import warnings

import numpy as np
import pytest

from pysketch import CompressiveGaussianMixture, CompressiveKMeans
from pysketch.datasets import make_blobs_gaussian_centers
from pysketch.decoders import (DECODERS, BurerMonteiro, Decoder, DecodingProblem, MixtureSolution, MixtureTask,
                               SubspaceProblem, SubspaceTask)
from pysketch.decoders.clompr import ClomprDecoder, clompr
from pysketch.decoders.problem import ATOMS
from pysketch.privacy import BudgetAccountant


@DECODERS.register("test_box_centre")
class BoxCentreDecoder(Decoder):
    """Every atom at the centre of the box (equal weights); clean sketches only."""

    name = "test_box_centre"
    atoms = ("dirac",)
    decodes_private = False
    calls = []

    def decode(self, task):
        self.check_task(task)
        type(self).calls.append((task.problem.count, task.problem.noise_variance))
        k = task.n_atoms
        theta = np.tile(0.5 * (task.lower + task.upper), (k, 1))
        return MixtureSolution(theta=theta, weights=np.full(k, 1.0 / k), residual=0.0, restart=0, n_iter=0)


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


def test_a_task_is_checked_against_the_decoders_declarations():
    pb = DecodingProblem.from_sketch(CompressiveKMeans(3, kernel_scale=1.0, random_state=0).fit(X).sketch_)
    with pytest.raises(TypeError, match="MixtureTask or SubspaceTask"):
        ClomprDecoder().decode(pb)
    with pytest.raises(ValueError, match="solves the 'subspace' task, not 'mixture'"):
        BurerMonteiro().decode(MixtureTask(pb, 3, -1.0, 1.0))
    with pytest.raises(ValueError, match="decodes atoms"):
        DECODERS.get("cl_amp")().decode(MixtureTask(pb, 3, -1.0, 1.0, atoms="diagonal_gaussian"))
    # the run options are the decoder's, stored unchanged; the task is what is asked
    dec = ClomprDecoder(n_init=2, random_state=5)
    assert (dec.n_init, dec.random_state) == (2, 5)
    task = MixtureTask(pb, 3, -2.0, 2.0)
    assert task.name == "mixture" and SubspaceTask(pb, 2).name == "subspace"
    a, b = dec.decode(task), ClomprDecoder(n_init=2, random_state=5).decode(task)
    assert np.array_equal(a.theta, b.theta) and np.array_equal(a.weights, b.weights)


def test_the_old_call_of_a_builtin_decoder_warns_and_gives_the_same_solution():
    pb = DecodingProblem.from_sketch(CompressiveKMeans(3, kernel_scale=1.0, random_state=0).fit(X).sketch_)
    new = ClomprDecoder(n_init=2, random_state=3).decode(MixtureTask(pb, 3, -2.0, 2.0))
    dec = ClomprDecoder()
    with pytest.warns(FutureWarning, match="old decoder call"):
        old = dec.decode(pb, 3, -2.0, 2.0, atoms="dirac", n_init=2, random_state=3)
    assert np.array_equal(old.theta, new.theta) and np.array_equal(old.weights, new.weights)
    assert (dec.n_init, dec.random_state) == (1, None)  # the old call's options went to a copy
    # a subspace decoder's old call: decode(problem, n_components, n_init=..., random_state=...)
    sk = _quadratic_sketch()
    sp = SubspaceProblem.from_sketch(sk)
    new = BurerMonteiro(n_init=1, random_state=0).decode(SubspaceTask(sp, 2))
    with pytest.warns(FutureWarning, match="old decoder call"):
        old = BurerMonteiro().decode(sp, 2, n_init=1, random_state=0)
    assert np.array_equal(old.components, new.components)


def _quadratic_sketch():
    from pysketch import CompressivePCA

    rng = np.random.default_rng(0)
    Y = rng.standard_normal((500, 6)) * [3.0, 2.0, 1.0, 0.3, 0.3, 0.3]
    return CompressivePCA(2, method="sketch", random_state=0).fit(Y).sketch_


def test_a_decoder_written_to_the_old_contract_is_adapted_with_a_future_warning():
    with pytest.warns(FutureWarning, match="old decoder contract"):
        @DECODERS.register("test_old_clompr")
        class OldClompr(Decoder):
            """CL-OMPR as a user would have registered it before decode(task)."""

            name = "test_old_clompr"
            atoms = ("dirac", "diagonal_gaussian")

            def decode(self, problem, n_atoms, lower, upper, *, atoms="dirac", n_init=1, random_state=None):
                self.check(atoms=atoms)
                return clompr(ATOMS[atoms](problem, lower, upper), n_atoms, n_init=n_init, random_state=random_state)

    with pytest.warns(FutureWarning, match="old decoder contract"):
        @DECODERS.register("test_old_centre")
        class OldCentre(Decoder):
            """An old decoder with an __init__ of its own, without run options."""

            name = "test_old_centre"

            def __init__(self):
                self.shift = 0.0

            def decode(self, problem, n_atoms, lower, upper, *, atoms="dirac", n_init=1, random_state=None):
                theta = np.tile(0.5 * (lower + upper) + self.shift, (n_atoms, 1))
                return MixtureSolution(theta=theta, weights=np.full(n_atoms, 1.0 / n_atoms), residual=0.0,
                                       restart=0, n_iter=n_init)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # using an adapted decoder warns no more
        for est in (CompressiveKMeans, CompressiveGaussianMixture):
            kw = dict(n_init=2, kernel_scale=1.0, random_state=0)
            old = est(3, decoder="test_old_clompr", **kw).fit(X)
            new = est(3, decoder="clompr", **kw).fit(X)
            assert old.decoder_ == "test_old_clompr"
            for attr in ("weights_", "cluster_centers_", "means_", "covariances_"):
                if hasattr(new, attr):
                    assert np.array_equal(getattr(old, attr), getattr(new, attr)), attr
        est = CompressiveKMeans(3, decoder="test_old_centre", n_init=4, kernel_scale=1.0, random_state=0).fit(X)
        np.testing.assert_allclose(est.cluster_centers_, np.tile(0.5 * (X.min(0) + X.max(0)), (3, 1)))
        assert est.n_iter_ == 4  # the estimator's n_init reached the old decode
        # decode(task) and the old call both reach it
        pb = DecodingProblem.from_sketch(est.sketch_)
        a = OldCentre(n_init=2).decode(MixtureTask(pb, 2, -1.0, 3.0))
        b = OldCentre().decode(pb, 2, -1.0, 3.0, n_init=2)
        c = OldCentre(n_init=2).decode(task=MixtureTask(pb, 2, -1.0, 3.0))
        assert np.array_equal(a.theta, b.theta) and np.array_equal(a.theta, c.theta) and a.n_iter == b.n_iter == 2


@DECODERS.register("test_multiscale")
class MultiscaleClompr(ClomprDecoder):
    """CL-OMPR declaring the coreset decoder's preferences: a multi-scale law at the data's spread."""

    name = "test_multiscale"
    frequency_law = "log_uniform"
    scale_rule = "spread"


def test_the_estimators_read_a_decoders_preferences_not_its_name(monkeypatch):
    import pysketch.privacy.moments
    from pysketch.frequencies import LogUniformLaw
    from pysketch.kernel_scale import KMEANS_SEPARATION_FACTOR, expected_separation

    kw = dict(n_init=1, random_state=0)
    mine = CompressiveKMeans(3, decoder="test_multiscale", **kw).fit(X)
    coreset = CompressiveKMeans(3, decoder="coreset", **kw).fit(X)
    plain = CompressiveKMeans(3, decoder="clompr", **kw).fit(X)
    assert isinstance(mine.sketch_.feature_map.operator.law, LogUniformLaw)
    # the same scale (the data's spread) and the same sketch as the coreset decoder's
    assert mine.kernel_scale_ == coreset.kernel_scale_ != plain.kernel_scale_
    assert np.array_equal(mine.sketch_.sum, coreset.sketch_.sum)
    # private: the private pilot's spread (here fixed at 2) is the scale itself, or goes
    # through the separation rule
    monkeypatch.setattr(pysketch.privacy.moments, "private_mean_and_spread", lambda *a, **k: (None, 2.0))
    kw = dict(n_init=1, random_state=0, epsilon=2.0, bounds=(X.min(0) - 1, X.max(0) + 1))
    assert CompressiveKMeans(3, decoder="test_multiscale", **kw).fit(X).kernel_scale_ == 2.0
    assert CompressiveKMeans(3, decoder="clompr", **kw).fit(X).kernel_scale_ == pytest.approx(
        KMEANS_SEPARATION_FACTOR * expected_separation(3, 2, 2.0), rel=1e-12)
    # the GMM takes any registered decoder of its Gaussian atoms, and names them when refusing
    assert CompressiveGaussianMixture(2, decoder="test_multiscale", n_init=1, random_state=0).fit(X).decoder_ \
        == "test_multiscale"
    with pytest.raises(ValueError, match="decoder must be 'auto' or 'clompr' or .*'test_multiscale'.*, got 'coreset'"):
        CompressiveGaussianMixture(2, decoder="coreset").fit(X)
