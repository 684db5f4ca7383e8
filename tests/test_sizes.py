"""Sizes at the edges (issue 33): every size-like argument is checked before anything is
allocated for it, by one helper (pysketch._checks.check_size) that refuses what is not an
int in its range and what implies more memory than the machine has.

The helper is tested with a monkeypatched memory source (nothing here depends on the
machine's memory); the walk gives every public estimator, feature map, operator,
transformer, generator and decoder a 10^12 size (no machine holds the terabytes that
implies) and asserts a ValueError whose message begins with the argument's name, with
the address space capped so that a missing check ends in a quick MemoryError instead of a
machine brought to its knees, and with the numpy memory traced so that a check that comes
after an allocation fails too.
"""

import math
import re
import time
import tracemalloc

import numpy as np
import pytest

import fuzz_targets
import pysketch
from pysketch import _checks
from pysketch._checks import FALLBACK_MEMORY, MAX_INT, MAX_INT32, check_size

BIG = 10**12
GIB = 1 << 30


# ----------------------------------------------------------------------------------- the helper


@pytest.fixture
def memory(monkeypatch):
    """Sets the machine's memory seen by check_size: memory(total, available)."""
    def set_memory(total, available=None):
        monkeypatch.setattr(_checks, "total_memory", lambda: total)
        monkeypatch.setattr(_checks, "available_memory", lambda: available)
    return set_memory


def test_the_helper_returns_an_int_in_its_range():
    assert check_size(5, "m") == 5
    assert type(check_size(np.int64(7), "m")) is int
    assert check_size(0, "r", minimum=0) == 0
    assert check_size(MAX_INT32, "k", maximum=MAX_INT32) == MAX_INT32


@pytest.mark.parametrize("value", [True, np.bool_(False), 1.0, 1e12, "3", None, 2.5, np.float64(4)])
def test_the_helper_refuses_what_is_not_an_int_with_a_type_error_naming_it(value):
    with pytest.raises(TypeError, match=r"^n_bins must be an int"):
        check_size(value, "n_bins")


@pytest.mark.parametrize("value, minimum, maximum", [(0, 1, MAX_INT), (-1, 1, MAX_INT), (-5, 0, 10), (11, 0, 10),
                                                     (2**63, 1, MAX_INT), (2**31, 1, MAX_INT32)])
def test_the_helper_refuses_values_outside_its_range_naming_the_argument_and_the_range(value, minimum, maximum):
    with pytest.raises(ValueError, match=r"^k must be an int") as info:
        check_size(value, "k", minimum=minimum, maximum=maximum)
    assert str(value) in str(info.value)
    if value > maximum and maximum != MAX_INT:
        assert f"[{minimum}, {maximum}]" in str(info.value)


def test_the_range_message_says_where_the_maximum_comes_from():
    with pytest.raises(ValueError, match=r"in \[1, 2147483647\] \(int32 indices\); got 2147483648"):
        check_size(2**31, "k", maximum=MAX_INT32, why=" (int32 indices)")


def test_the_helper_compares_the_bytes_with_the_total_memory(memory):
    memory(1000, 600)
    assert check_size(10, "n", nbytes=lambda v: 100 * v) == 10  # exactly the memory: accepted
    assert check_size(10, "n", nbytes=1000) == 10
    with pytest.raises(ValueError) as info:
        check_size(11, "n", nbytes=lambda v: 100 * v, what="for the points")
    message = str(info.value)
    assert message.startswith("n = 11 would need 1,100 bytes (1.07 KiB) of memory for the points")
    assert "1,000 bytes" in message and "600 bytes available now" in message
    assert message.endswith("use a smaller n")
    with pytest.raises(ValueError, match=r"n = 3 would need 1,001 bytes"):
        check_size(3, "n", nbytes=1001)


def test_the_bytes_are_given_in_binary_units_too(memory):
    memory(8 * GIB, 2 * GIB)
    with pytest.raises(ValueError) as info:
        check_size(BIG, "sketch_size", nbytes=lambda v: 8 * v)
    message = str(info.value)
    assert "8,000,000,000,000 bytes (7.28 TiB)" in message
    assert "8,589,934,592 bytes (8 GiB)" in message and "2,147,483,648 bytes (2 GiB) available now" in message


def test_the_function_of_the_bytes_gets_the_checked_int(memory):
    memory(10**6)
    seen = []
    check_size(np.int32(12), "m", nbytes=lambda v: seen.append(v) or 0)
    assert seen == [12] and type(seen[0]) is int
    with pytest.raises(TypeError):  # the type first: the function never sees a float
        check_size(2.0, "m", nbytes=lambda v: seen.append(v) or 0)
    assert seen == [12]


def test_a_loaded_machine_refuses_nothing_ordinary(memory):
    # 16 GiB of memory, almost nothing available now (other programs, caches): a size of a
    # few GiB is still accepted (the kernel swaps and drops caches), only more than the
    # whole memory is refused
    memory(16 * GIB, 4096)
    assert check_size(10**9, "n_synthetic", nbytes=lambda v: 8 * v) == 10**9
    with pytest.raises(ValueError, match=r"4,096 bytes \(4 KiB\) available now"):
        check_size(3 * 10**9, "n_synthetic", nbytes=lambda v: 8 * v)


def test_an_unknown_memory_stands_for_the_documented_cap(memory):
    memory(None, None)
    assert check_size(FALLBACK_MEMORY // 8, "m", nbytes=lambda v: 8 * v) == FALLBACK_MEMORY // 8
    with pytest.raises(ValueError, match=r"assumed where the system does not tell its memory: use a smaller m$"):
        check_size(FALLBACK_MEMORY // 8 + 1, "m", nbytes=lambda v: 8 * v)


def test_the_memory_sources_read_this_machine():
    total, available = _checks.total_memory(), _checks.available_memory()
    assert total is None or (isinstance(total, int) and total > 0)
    assert available is None or (isinstance(available, int) and available >= 0)


# ----------------------------------------------------------------------------------- the walk

X = np.random.default_rng(0).uniform(-1.0, 1.0, size=(40, 3))
Y = X.sum(axis=1)
BOUNDS = (-np.ones(3), np.ones(3))


def _fm(kind="complex", m=16):
    return pysketch.make_feature_map(3, m, kind, random_state=0)


def _accountant():
    from pysketch.privacy import BudgetAccountant

    return BudgetAccountant(100.0, 0.5)


def _private(make):
    """make(accountant)'s call, then the accountant must be untouched (a refusal before
    anything is charged)."""
    def call():
        acc = _accountant()
        try:
            make(acc)
        finally:
            assert acc.spent == (0.0, 0.0), f"charged {acc.spent} before the refusal"
    return call


def _kmeans_family():
    from pysketch.decoders import DecodingProblem, DiracAtoms

    sk = _fm().sketch(X)
    return DiracAtoms(DecodingProblem(sk.feature_map, sk.mean()), -np.ones(3), np.ones(3))


def _cases():
    """(label, call, the argument its message must name, the public classes it covers)."""
    from pysketch import datasets
    from pysketch.baselines import (AnalyzeGaussPCA, DPLloyd, EUGkM, ExactPCA, LaplaceCovariancePCA, WishartPCA,
                                    laplace_histogram)
    from pysketch.cluster import kmeans_plus_plus, weighted_kmeans
    from pysketch.decoders import cl_amp, clompr, mixture_kmeans
    from pysketch.distances import PrivateJLTransformer, gaussian_jl_operator
    from pysketch.features import GridMap, HistogramMap, RaceMap, SecondMomentMap, make_box_map
    from pysketch.kernel_scale import estimate_sigma2_sketch
    from pysketch.m2m import M2M, Domain, M2MLinearRegression, M2MLogisticRegression, MarginalSynopsis
    from pysketch.operators import FastJLOperator, SparseJLOperator
    from pysketch.privacy.mechanisms import sample_discrete_gaussian, sample_discrete_laplace
    from pysketch.rfm import DPRFMRegressor, PrivateRFRegressor, RandomFeatures, excess_risk

    law = pysketch.GaussianLaw(1.0)
    labels = (X[:, 0] > 0).astype(float)
    sk = _fm().sketch(X)
    quad = pysketch.make_feature_map(3, 6, "quadratic", law=pysketch.OrthonormalBasesLaw(),
                                     random_state=0).sketch(X)
    return [
        # operators and laws
        ("make_operator m", lambda: pysketch.make_operator(2, BIG), "m", ()),
        ("make_operator d", lambda: pysketch.make_operator(BIG, 2), "d", ()),
        ("dense m", lambda: pysketch.DenseOperator.draw(2, BIG, law), "m", ("dense",)),
        ("dense d", lambda: pysketch.DenseOperator.draw(BIG, 2, law), "d", ("dense",)),
        ("r3 m", lambda: pysketch.StructuredOperator.draw(4, BIG, "r3"), "m", ("r3",)),
        ("gr2 d", lambda: pysketch.StructuredOperator.draw(BIG, 4, "gr2"), "d", ("gr2",)),
        ("fastfood m", lambda: pysketch.make_operator(4, BIG, "fastfood"), "m", ("fastfood",)),
        ("sjlt d", lambda: SparseJLOperator.draw(BIG, 8, 2), "d", ("sjlt_block",)),
        ("sjlt k", lambda: SparseJLOperator.draw(8, BIG, 2), "k", ("sjlt_block",)),
        ("sjlt s", lambda: SparseJLOperator.draw(8, 16, BIG), "s", ("sjlt_block",)),
        ("sjlt independence", lambda: SparseJLOperator.draw(8, 16, 2, independence=BIG), "independence", ()),
        ("sjlt graph k", lambda: SparseJLOperator.draw(8, 2**31 - 1, 2, construction="graph"), "k", ("sjlt_graph",)),
        ("fjlt d", lambda: FastJLOperator.draw(BIG, 8, 0.5), "d", ("fjlt",)),
        ("fjlt k", lambda: FastJLOperator.draw(8, BIG, 0.5), "k", ("fjlt",)),
        ("law sample m", lambda: law.sample(2, BIG), "m", ()),
        ("law radii m", lambda: law.radii(BIG, 2), "m", ()),
        ("orthonormal bases d", lambda: pysketch.OrthonormalBasesLaw().sample(BIG, BIG), "d", ()),
        ("empty_aligned", lambda: pysketch.empty_aligned((BIG, 8)), "shape", ()),
        # feature maps and sketching
        ("make_feature_map m", lambda: pysketch.make_feature_map(3, BIG), "m", ("complex",)),
        ("make_feature_map d", lambda: pysketch.make_feature_map(BIG, 3, "real"), "d", ("real",)),
        ("quantized m", lambda: pysketch.make_feature_map(3, BIG, "quantized"), "m", ("quantized",)),
        ("quadratic m", lambda: pysketch.make_feature_map(3, 3 * BIG, "quadratic", law=pysketch.OrthonormalBasesLaw()),
         "m", ("quadratic",)),
        ("second_moment d", lambda: SecondMomentMap(BIG), "d", ("second_moment",)),
        ("hist n_bins", lambda: make_box_map("hist", -np.ones(3), np.ones(3), n_bins=BIG), "n_bins", ("hist",)),
        ("HistogramMap n_bins", lambda: HistogramMap(-np.ones(3), np.ones(3), n_bins=BIG), "n_bins", ("hist",)),
        ("grid n_bins", lambda: GridMap(-np.ones(3), np.ones(3), n_bins=BIG), "n_bins", ("grid",)),
        ("marginals n_bins", lambda: make_box_map("marginals", -np.ones(3), np.ones(3), n_bins=BIG), "n_bins",
         ("marginals",)),
        ("race n_hashes", lambda: make_box_map("race", -np.ones(3), np.ones(3), n_hashes=BIG), "n_hashes", ("race",)),
        ("race n_buckets", lambda: make_box_map("race", -np.ones(3), np.ones(3), n_buckets=BIG), "n_buckets",
         ("race",)),
        ("RaceMap n_buckets", lambda: RaceMap(pysketch.make_operator(3, 8, "dense"), n_buckets=BIG), "n_buckets",
         ("race",)),
        ("box real n_frequencies", lambda: make_box_map("real", -np.ones(3), np.ones(3), n_frequencies=BIG),
         "n_frequencies", ("real",)),
        ("sketch_subsampled r", lambda: _fm().sketch_subsampled(X, BIG, random_state=0), "r", ()),
        ("accumulator buffer_rows", lambda: pysketch.SketchAccumulator(_fm(), buffer_rows=BIG), "buffer_rows", ()),
        # estimators
        ("kmeans sketch_size", lambda: pysketch.CompressiveKMeans(3, sketch_size=BIG).fit(X), "sketch_size",
         ("CompressiveKMeans",)),
        ("kmeans n_init", lambda: pysketch.CompressiveKMeans(3, n_init=BIG, kernel_scale=1.0).fit(X), "n_init",
         ("CompressiveKMeans",)),
        ("kmeans n_clusters", lambda: pysketch.CompressiveKMeans(BIG).fit_sketch(sk, BOUNDS), "n_clusters",
         ("CompressiveKMeans",)),
        ("kmeans private sketch_size", _private(lambda acc: pysketch.CompressiveKMeans(
            3, sketch_size=BIG, kernel_scale=1.0, epsilon=1.0, bounds=BOUNDS, accountant=acc).fit(X)), "sketch_size",
         ("CompressiveKMeans",)),
        ("gmm sketch_size", lambda: pysketch.CompressiveGaussianMixture(2, sketch_size=BIG).fit(X), "sketch_size",
         ("CompressiveGaussianMixture",)),
        ("gmm n_init", _private(lambda acc: pysketch.CompressiveGaussianMixture(
            2, n_init=BIG, kernel_scale=1.0, epsilon=1.0, bounds=BOUNDS, accountant=acc).fit(X)), "n_init",
         ("CompressiveGaussianMixture",)),
        ("gmm n_components", lambda: pysketch.CompressiveGaussianMixture(BIG).fit_sketch(sk, BOUNDS),
         "n_components", ("CompressiveGaussianMixture",)),
        ("pca sketch_size", lambda: pysketch.CompressivePCA(2, sketch_size=BIG).fit(X), "sketch_size",
         ("CompressivePCA",)),
        ("pca private sketch_size", _private(lambda acc: pysketch.CompressivePCA(
            2, sketch_size=BIG, epsilon=1.0, data_norm=2.0, accountant=acc).fit(X)), "sketch_size",
         ("CompressivePCA",)),
        ("pca n_components", lambda: pysketch.CompressivePCA(BIG).fit_sketch(quad), "n_components",
         ("CompressivePCA",)),
        # M2M
        ("M2M n_synthetic", lambda: M2M(Domain.unit(3), n_synthetic=BIG), "n_synthetic", ("M2M",)),
        ("M2M the map's real_dim", lambda: M2M(Domain.unit(3), n_synthetic=10).fit(
            make_box_map("real", -np.ones(3), np.ones(3), n_frequencies=10**5).sketch(X)), "real_dim", ("M2M",)),
        ("Domain.unit d", lambda: Domain.unit(BIG), "d", ()),
        ("Domain.sample n", lambda: Domain.unit(3).sample(BIG), "n", ()),
        ("m2m linear n_synthetic", _private(lambda acc: M2MLinearRegression(
            bounds=BOUNDS, y_bounds=(-3, 3), epsilon=1.0, n_synthetic=BIG, accountant=acc).fit(X, Y)), "n_synthetic",
         ("M2MLinearRegression",)),
        ("m2m linear hist n_bins", _private(lambda acc: M2MLinearRegression(
            bounds=BOUNDS, y_bounds=(-3, 3), epsilon=1.0, sketch="hist", sketch_params={"n_bins": BIG},
            accountant=acc).fit(X, Y)), "n_bins", ("M2MLinearRegression",)),
        ("synopsis n_synthetic", _private(lambda acc: MarginalSynopsis(
            BOUNDS, epsilon=1.0, n_synthetic=BIG, accountant=acc).fit(X)), "n_synthetic", ("MarginalSynopsis",)),
        ("synopsis fine_bins", _private(lambda acc: MarginalSynopsis(
            BOUNDS, epsilon=1.0, fine_bins=BIG, accountant=acc).fit(X)), "fine_bins", ("MarginalSynopsis",)),
        ("synopsis n_bins", _private(lambda acc: MarginalSynopsis(
            BOUNDS, epsilon=1.0, n_bins=BIG, accountant=acc).fit(X)), "n_bins", ("MarginalSynopsis",)),
        ("m2m logistic n_synthetic", _private(lambda acc: M2MLogisticRegression(
            bounds=BOUNDS, epsilon=1.0, n_synthetic=BIG, accountant=acc).fit(X, labels)), "n_synthetic",
         ("M2MLogisticRegression",)),
        ("m2m logistic real_dim", _private(lambda acc: M2MLogisticRegression(
            bounds=BOUNDS, epsilon=1.0, sketch_params={"n_frequencies": 10**5}, accountant=acc).fit(X, labels)),
         "real_dim", ("M2MLogisticRegression",)),
        # private distances
        ("jl n_components", lambda: PrivateJLTransformer(BIG).fit(X), "n_components", ("PrivateJLTransformer",)),
        ("jl n_components released", _private(lambda acc: PrivateJLTransformer(
            2**30, accountant=acc).fit(X).transform(X)), "n_components", ("PrivateJLTransformer",)),
        ("jl sparsity", lambda: PrivateJLTransformer(2**30, sparsity=2**29).fit(np.zeros((2, 100))), "sparsity",
         ("PrivateJLTransformer",)),
        ("gaussian jl k", lambda: gaussian_jl_operator(3, BIG), "k", ()),
        # random-feature regression
        ("RandomFeatures n_frequencies", lambda: RandomFeatures(3, BIG, frequency_std=1.0), "n_frequencies", ()),
        ("RandomFeatures d", lambda: RandomFeatures(BIG, 3, frequency_std=1.0, operator="r3"), "d", ()),
        ("rf regressor n_frequencies", _private(lambda acc: PrivateRFRegressor(
            bounds=BOUNDS, target_bounds=(-3, 3), n_frequencies=BIG, accountant=acc).fit(X, Y)), "n_frequencies",
         ("PrivateRFRegressor",)),
        ("dprfm n_frequencies", _private(lambda acc: DPRFMRegressor(
            bounds=BOUNDS, target_bounds=(-3, 3), n_max=100, n_frequencies=BIG, accountant=acc).fit(X, Y)),
         "n_frequencies", ("DPRFMRegressor",)),
        ("dprfm n_max", _private(lambda acc: DPRFMRegressor(
            bounds=BOUNDS, target_bounds=(-3, 3), n_max=BIG, accountant=acc).fit(X, Y)), "n_max", ("DPRFMRegressor",)),
        # baselines
        ("dp lloyd n_clusters", _private(lambda acc: DPLloyd(BIG, 1.0, BOUNDS, accountant=acc).fit(X)), "n_clusters",
         ("DPLloyd",)),
        ("eugkm n_clusters", _private(lambda acc: EUGkM(BIG, 1.0, BOUNDS, accountant=acc).fit(X)), "n_clusters",
         ("EUGkM",)),
        ("exact pca n_components", lambda: ExactPCA(BIG).fit(X), "n_components", ("ExactPCA",)),
        ("laplace pca n_components", _private(lambda acc: LaplaceCovariancePCA(
            BIG, 1.0, data_norm=2.0, accountant=acc).fit(X)), "n_components", ("LaplaceCovariancePCA",)),
        ("wishart pca n_components", _private(lambda acc: WishartPCA(
            BIG, 1.0, data_norm=2.0, accountant=acc).fit(X)), "n_components", ("WishartPCA",)),
        ("analyze gauss n_components", _private(lambda acc: AnalyzeGaussPCA(
            BIG, 1.0, 1e-5, data_norm=2.0, accountant=acc).fit(X)), "n_components", ("AnalyzeGaussPCA",)),
        ("laplace_histogram bins", _private(lambda acc: laplace_histogram(
            X, BOUNDS, 1.0, bins=BIG, accountant=acc)), "bins", ()),
        # decoders, clustering, kernel scale
        ("clompr n_init", lambda: clompr(_kmeans_family(), 2, n_init=BIG), "n_init", ()),
        ("cl_amp n_clusters", lambda: cl_amp(sk, n_clusters=BIG), "n_clusters", ()),
        ("cl_amp n_init", lambda: cl_amp(sk, n_clusters=2, n_init=BIG), "n_init", ()),
        ("mixture_kmeans n_draws", lambda: mixture_kmeans(X[:4], np.ones(4), np.ones(4), 2, n_draws=BIG), "n_draws",
         ()),
        ("weighted_kmeans k", lambda: weighted_kmeans(X, np.ones(len(X)), BIG), "k", ()),
        ("discrete laplace size", lambda: sample_discrete_laplace(1, BIG), "size", ()),
        ("discrete gaussian size", lambda: sample_discrete_gaussian(1, BIG), "size", ()),
        ("excess risk n_draws", lambda: excess_risk(X, Y, np.zeros(3), draws=lambda rng, T: np.zeros((T, 3)),
                                                   n_draws=BIG), "n_draws", ()),
        ("kmeans++ n_local_trials", lambda: kmeans_plus_plus(X, 2, n_local_trials=BIG), "n_local_trials", ()),
        ("sketch kernel scale m0", lambda: estimate_sigma2_sketch(X, m0=BIG, random_state=0), "m0", ()),
        # data sets
        ("make_gmm n", lambda: datasets.make_gmm(BIG, 2, 3, separation=2.0), "n", ()),
        ("make_gmm k", lambda: datasets.make_gmm(10, BIG, 3, separation=2.0), "k", ()),
        ("make_gmm d", lambda: datasets.make_gmm(10, 2, BIG, separation=2.0), "d", ()),
        ("make_gmm_diag n", lambda: datasets.make_gmm_diag(BIG, 2, 3), "n", ()),
        ("make_blobs n", lambda: datasets.make_blobs_gaussian_centers(BIG, 2, 3), "n", ()),
        ("gmm_stream batch_size", lambda: datasets.gmm_stream(BIG, 2, 2, 3, separation=2.0), "batch_size", ()),
        ("make_low_rank n", lambda: datasets.make_low_rank(BIG, 8, 2), "n", ()),
        ("low_rank_stream batch_size", lambda: datasets.low_rank_stream(BIG, 8, 2, batch_size=BIG), "batch_size", ()),
        ("make_random10 n", lambda: datasets.make_random10(BIG), "n", ()),
        ("make_dprfm_synthetic n", lambda: datasets.make_dprfm_synthetic(n=BIG), "n", ()),
        ("load_image_patches n_patches", lambda: datasets.load_image_patches(n_patches=BIG), "n_patches", ()),
    ]


CASES = _cases()


@pytest.fixture(scope="module")
def capped():
    """The tests below with 64 GiB of machine memory (whatever this machine has) and, where
    the system has the limit (Linux), an address space capped 3 GiB above this process's:
    a size that reached numpy would fail at once with MemoryError (an allocation of
    terabytes is refused by the cap) instead of paging."""
    with fuzz_targets.memory_cap(64 * GIB, headroom=3 * GIB):
        yield


@pytest.mark.filterwarnings("ignore:WishartPCA is not differentially private")
@pytest.mark.parametrize("label, call, name", [c[:3] for c in CASES], ids=[c[0] for c in CASES])
def test_a_huge_size_is_refused_naming_it_before_anything_is_allocated(capped, label, call, name):
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ValueError) as info:
            call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert re.match(rf"{re.escape(name)}(?![A-Za-z_])", str(info.value)), str(info.value)  # named first
    assert peak < 64 << 20, f"{peak / 2**20:.0f} MiB traced before the refusal"
    assert time.perf_counter() - start < 10.0


def test_the_walk_covers_every_public_estimator_operator_and_feature_map():
    import pysketch.baselines
    import pysketch.distances
    import pysketch.m2m
    import pysketch.rfm
    from pysketch.features import FEATURE_MAPS
    from pysketch.operators import OPERATORS

    covered = {cls for case in CASES for cls in case[3]}
    public = set()
    for module in (pysketch, pysketch.m2m, pysketch.rfm, pysketch.distances, pysketch.baselines):
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and hasattr(obj, "fit"):
                public.add(name)
    # the package's own kinds (other test modules register toy ones in the same registries)
    public |= {name for registry in (OPERATORS, FEATURE_MAPS) for name in registry.names()
               if registry.get(name).__module__.startswith("pysketch.")}
    assert public - covered == set(), "public classes or kinds without a huge-size case"


XL = np.random.default_rng(1).uniform(-1.0, 1.0, size=(600, 3))
ACCEPTED = [
    # sizes that only bound a chunk or a sample: larger than the data, they give the result of the data's size
    ("batch_size", lambda: _fm().sketch(XL, batch_size=BIG), lambda r: r.count == len(XL)
     and np.allclose(r.sum, _fm().sketch(XL).sum)),  # more rows than the buffer: read in batches
    ("pilot_size", lambda: pysketch.CompressiveKMeans(2, pilot_size=BIG, random_state=0).fit(X),
     lambda r: r.cluster_centers_.shape == (2, 3)),
    ("max_columns", lambda: _fm().operator.column_ranges(BIG), lambda r: len(r) == 1),
    ("chunk_size", lambda: pysketch.metrics.sse(X, X[:2], chunk_size=BIG), lambda r: math.isfinite(r)),
]


@pytest.mark.parametrize("name, call, ok", ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_a_huge_bound_on_a_chunk_gives_the_ordinary_result(capped, name, call, ok):
    assert ok(call())


def test_private_jl_transformer_names_n_components_not_an_internal_overflow():
    from pysketch.distances import PrivateJLTransformer

    for k in (BIG, 2**31):
        with pytest.raises(ValueError, match=r"^n_components must be an int in \[1, 2147483647\]"):
            PrivateJLTransformer(k).fit(X)
    assert PrivateJLTransformer(8, sparsity=2, random_state=0).fit(X).operator_.m == 8


def test_a_huge_product_of_an_operator_is_refused_naming_its_size(capped):
    op = pysketch.make_operator(2, 10**6, "dense", random_state=0)
    with pytest.raises(ValueError, match=r"^m = 1000000 would need .* for the products of the 100000 rows of X"):
        op.apply(np.zeros((10**5, 2)))


# The command line: a size of 10^12 on the command line ends in the one-line error (exit 2,
# no traceback, nothing written), never in numpy's MemoryError.
HUGE = str(10**12)
CLI_CASES = [
    ("sketch --sketch-size", ["sketch", "{csv}", "-o", "{out}", "--kernel-scale", "1", "--sketch-size", HUGE]),
    ("sketch --bins", ["sketch", "{csv}", "-o", "{out}", "--map", "hist", "--bounds", "0", "1", "--bins", HUGE]),
    ("sketch --hashes", ["sketch", "{csv}", "-o", "{out}", "--map", "race", "--bounds", "0", "1", "--hashes", HUGE]),
    ("sketch --buckets", ["sketch", "{csv}", "-o", "{out}", "--map", "race", "--bounds", "0", "1", "--buckets",
                          HUGE]),
    ("fit --k", ["fit", "{sk}", "--task", "kmeans", "--bounds", "0", "1", "--k", HUGE, "-o", "{json}"]),
    ("fit --n-init", ["fit", "{sk}", "--task", "kmeans", "--bounds", "0", "1", "--k", "2", "--n-init", HUGE,
                      "-o", "{json}"]),
    ("query --n-synthetic", ["query", "{hist}", "--n-synthetic", HUGE, "-o", "{json}", "mean"]),
    ("demo --sketch-size", ["demo", "--data", "{csv}", "--sketch-size", HUGE, "--output", "none", "--no-baseline"]),
]


@pytest.mark.parametrize("label, argv", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_the_command_line_refuses_a_huge_size_in_one_line(tmp_path, capsys, capped, label, argv):
    from pysketch.cli import main

    rng = np.random.default_rng(0)
    csv = tmp_path / "x.csv"
    np.savetxt(csv, rng.uniform(0.0, 1.0, size=(50, 3)), delimiter=",")
    sk, hist = tmp_path / "s.npz", tmp_path / "h.npz"
    assert main(["sketch", str(csv), "-o", str(sk), "--kernel-scale", "1", "--sketch-size", "40", "-q"]) == 0
    assert main(["sketch", str(csv), "-o", str(hist), "--map", "hist", "--bins", "4", "--bounds", "0", "1",
                 "-q"]) == 0
    capsys.readouterr()
    out, json = tmp_path / "out.npz", tmp_path / "out.json"
    args = [a.format(csv=csv, sk=sk, hist=hist, out=out, json=json) for a in argv]
    with pytest.raises(SystemExit) as done:
        main(args)
    err = capsys.readouterr().err
    assert done.value.code == 2, err
    assert err.count("\n") == 1 and err.startswith(f"pysketch {args[0]}: error: "), err
    assert "Traceback" not in err and "MemoryError" not in err and "Unable to allocate" not in err
    assert not out.exists() and not json.exists()
    flag = label.split()[1]  # the option named first, then the library's refusal of the size
    assert err.startswith(f"pysketch {args[0]}: error: {flag}: ") and HUGE in err, err
